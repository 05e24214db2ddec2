"""The argument parser of every mpiboost command: argparse with mpiboost's error policy."""
from __future__ import annotations

import argparse

from ..errors import CollectiveError


class Parser(argparse.ArgumentParser):
    """argparse with mpiboost's error policy: exit 2 and one ``mpiboost: error:`` line, printed by rank 0 only.

    Under ``mpiexec -n K`` every rank parses the same arguments, so a usage
    error is agreed without communication (a CollectiveError: no MPI needed).
    """

    def error(self, message: str):
        raise CollectiveError(f"{self.prog}: {message} (`{self.prog} --help` lists the options)")
