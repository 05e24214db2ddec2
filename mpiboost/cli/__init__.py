"""The ``mpiboost`` command line: :mod:`.commands` (the commands and the entry point), :mod:`.train` (``train``'s
options, made from the algorithms' declarations), :mod:`.parser` (the error policy of every parser).

The command line is a layer over the library: it parses, checks what needs no data, and calls the
drivers (:mod:`mpiboost.driver`), which know nothing of it (tests/test_layers.py).
"""
from .commands import build_parser, guarded, launch_rank, main

__all__ = ["build_parser", "guarded", "launch_rank", "main"]
