"""A declared parameter: one :class:`Param` per option of an algorithm, batch or online, or of the run.

Neutral ground for every family (the batch algorithms, the online boosters, the stream options): from
these declarations come the ``train`` options and their checks, ``--help``, the options table of the
docs, the API's keys and the estimators' constructor arguments.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

ORIGINS = ("paper", "beyond")  # the algorithm's paper; or mpiboost's own, beyond the paper


class _Same:
    """The ``paper`` of a parameter whose default is its paper's value."""

    def __repr__(self) -> str:
        return "SAME"


SAME = _Same()
PRESETS = ("default", "paper")  # --preset: mpiboost's defaults, or every declared paper value

_TYPES = (bool, int, float, str, list)


@dataclass(frozen=True)
class Param:
    """One declared parameter of an algorithm.

    Parameters
    ----------
    name
        Key in the algorithm's parameter dict (and in the model file).
    type
        ``bool`` (a flag), ``int``, ``float``, ``str`` or ``list`` (of file
        names).
    default
        Value when not given; ``None`` means "derived" (``help`` says from what).
    help
        One line for ``--help`` and the docs.
    choices
        Allowed values, if a fixed set.
    low, high, low_open, high_open
        Allowed range of a number (``None``: unbounded); ``*_open`` excludes the end.
    option
        The ``train`` option; default ``--`` + name with ``-`` for ``_``.
        ``None`` with ``cli=False``: not a command-line option (set by the
        driver, e.g. the number of rounds).
    when
        ``(other, value)``: the parameter only applies when parameter
        ``other`` has ``value`` (giving it otherwise is an error).
    metavar
        Placeholder in ``--help``.
    grid
        Values tried when the parameter is given as ``"auto"``: the driver
        trains once per value and keeps the one of lowest validation error
        (see :func:`mpiboost.driver.batch.train`); ``None``: no ``auto``. A
        companion ``str`` parameter named ``<name>_grid`` (e.g. ``lam_grid``,
        ``--lambda-grid``), if declared, lets the user give other values,
        comma-separated (:meth:`Algorithm.grid_values`).
    rank_dependent
        Set, the model depends on how the rows are spread over the ranks
        when this parameter is given (e.g. a start with the same mass per
        rank, as a paper has it): the one exception to "the same model on
        any number of ranks", declared so the docs and the tests know it.
    origin
        ``"paper"``: the parameter is the algorithm's paper's (its ``paper``
        declaration names it); ``"beyond"``: mpiboost's own, beyond the
        paper (trees, the logistic loss, validated choices, safeguards).
    paper
        The value the algorithm's paper uses, where mpiboost's default is
        another (``--preset paper`` takes it); :data:`SAME` (the default):
        the default is the paper's.
    """

    name: str
    type: type
    default: Any
    help: str
    choices: Optional[tuple] = None
    low: Optional[float] = None
    high: Optional[float] = None
    low_open: bool = False
    high_open: bool = False
    option: Optional[str] = None
    cli: bool = True
    when: Optional[tuple] = None
    metavar: Optional[str] = None
    grid: Optional[tuple] = None
    rank_dependent: bool = False
    origin: str = "paper"
    paper: Any = None  # replaced by SAME below (None is a value too); set it where the paper's value differs

    def __post_init__(self) -> None:
        if self.paper is None:
            object.__setattr__(self, "paper", SAME)
        self._check()

    @property
    def paper_value(self) -> Any:
        """The paper's value of this parameter (its default where the paper's is the default)."""
        return self.default if self.paper is SAME else self.paper

    def _check(self) -> None:
        if self.type not in _TYPES:
            raise TypeError(f"parameter {self.name}: type must be one of {_TYPES}")
        if self.origin not in ORIGINS:
            raise TypeError(f"parameter {self.name}: origin must be one of {ORIGINS}")

    @property
    def flag(self) -> str:
        """The command-line option."""
        return self.option or "--" + self.name.replace("_", "-")

    def range_text(self) -> str:
        """The allowed values, in words (for errors and docs)."""
        if self.choices is not None:
            return "one of " + ", ".join(str(c) for c in self.choices)
        if self.low is None and self.high is None:
            return ""
        lo = "(" if self.low_open else "["
        hi = ")" if self.high_open else "]"
        if self.high is None:
            return f"> {_num(self.low)}" if self.low_open else f">= {_num(self.low)}"
        if self.low is None:
            return f"< {_num(self.high)}" if self.high_open else f"<= {_num(self.high)}"
        return f"in {lo}{_num(self.low)}, {_num(self.high)}{hi}"

    def check(self, value: Any, algorithm: str) -> Any:
        """``value`` converted to the declared type and checked; ValueError naming the option and algorithm."""
        if value is None:
            return None
        if self.grid and isinstance(value, str) and value == "auto":
            return "auto"
        where = f"{self.flag} {value!r}" if self.cli else f"parameter {self.name}={value!r}"
        try:
            if self.type is bool:
                if not isinstance(value, (bool, np.bool_)) and value not in (0, 1):
                    raise ValueError
                v = bool(value)
            elif self.type is int:
                if isinstance(value, (bool, np.bool_)) or (isinstance(value, float) and not value.is_integer()):
                    raise ValueError
                v = int(value)
            elif self.type is float:
                if isinstance(value, (bool, np.bool_)):
                    raise ValueError
                v = float(value)
            elif self.type is list:
                v = [str(x) for x in ([value] if isinstance(value, str) else value)]
            else:
                v = str(value)
        except (TypeError, ValueError):
            raise ValueError(f"{where}: {algorithm} expects a{'n' if self.type is int else ''} "
                             f"{self.type.__name__}") from None
        if self.type is float and not math.isfinite(v):
            raise ValueError(f"{where}: {algorithm} needs a finite number")
        if self.choices is not None and v not in self.choices:
            raise ValueError(f"{where}: {algorithm} needs {self.range_text()}")
        if self.type in (int, float):
            bad = (
                (self.low is not None and (v < self.low or (self.low_open and v == self.low)))
                or (self.high is not None and (v > self.high or (self.high_open and v == self.high)))
            )
            if bad:
                raise ValueError(f"{where}: {algorithm} needs a value {self.range_text()}")
        return v


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)
