"""The run's algorithm, made from its declared parameters; which of them are ``auto`` (searched)."""
from __future__ import annotations

from typing import Optional, TYPE_CHECKING

from .. import boost
from ..errors import CollectiveError

if TYPE_CHECKING:  # annotations only
    from ..boost.base import Algorithm
    from ..model import Model


MAX_ROUNDS = 10**6  # the model holds up to 2^24 stumps, several per round for the multi-source algorithms


# ------------------------------------------------------------------ set-up
# The checks below decide from what every rank knows alike (arguments, global counts), so every rank
# raises the same error at the same point: a CollectiveError, printed once, every rank exits cleanly.
def make_algorithm(algorithm: str, params: Optional[dict], rounds: int,
                   resume: Optional[Model] = None) -> Algorithm:
    """The algorithm object with its parameters checked (an error naming the option).

    Parameters left unset whose default depends on ``rounds``
    (:meth:`Algorithm.defaults_for_rounds`) take the value ``resume``, a
    checkpoint, recorded, else the one for ``rounds``.
    """
    if not 1 <= rounds <= MAX_ROUNDS:
        raise CollectiveError(f"--rounds must be in 1..{MAX_ROUNDS:,}, got {rounds}")
    cls = boost.get(algorithm)
    params = dict(params or {})
    for name, grid in auto_params(algorithm, params).items():
        params[name] = grid[0]  # "auto" is resolved by the search; the other parameters are checked with a value
    try:
        by_rounds = cls.defaults_for_rounds(params, int(rounds))
    except ValueError as exc:
        raise CollectiveError(str(exc)) from None
    recorded = resume.params if resume is not None and isinstance(resume.params, dict) else {}
    for name, value in by_rounds.items():
        if params.get(name) is None:
            params[name] = recorded[name] if recorded.get(name) is not None else value
    if cls.needs_rounds:
        params["rounds"] = int(rounds)  # part of the algorithm (the transfer algorithms' source factor)
    try:
        algo = cls(params)
    except ValueError as exc:
        raise CollectiveError(str(exc)) from None
    algo.planned_rounds = int(rounds)  # for defaults that follow the rounds and the data (set in setup)
    return algo


def auto_params(algorithm: str, params: Optional[dict]) -> dict:
    """The parameters given as ``"auto"``: name -> the grid of values to choose from on validation data."""
    cls = boost.get(algorithm)
    params = params or {}
    out = {}
    for p in cls.parameters:
        if not p.grid:
            continue
        is_auto = isinstance(params.get(p.name), str) and params[p.name] == "auto"
        custom = params.get(p.name + "_grid") if cls.has(p.name + "_grid") else None
        if is_auto:
            try:
                out[p.name] = cls.grid_values(p.name, custom)
            except ValueError as exc:
                raise CollectiveError(str(exc)) from None
    return out


def _with(params: Optional[dict], values: dict) -> dict:
    return {**(params or {}), **values}
