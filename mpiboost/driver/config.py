"""One batch run's configuration: built and checked once at the border (the command line, the Python API),
then passed down whole to the driver (:func:`mpiboost.driver.batch.train`), which checks nothing again.

As LightGBM resolves its parameters once before ``train``, every option of a run is checked here against the
others and against the algorithm's declarations before any file is read or any rank is waited for: an error
names the option, on every rank alike (:class:`mpiboost.errors.CollectiveError`).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Optional

from ..errors import CollectiveError
from .algorithm import MAX_ROUNDS, make_algorithm
from .validation import VALID_METRICS, check_validation

MAX_SEED = 2**63 - 1  # seeds of numpy's generators are any non-negative integer; a 64-bit one round-trips a file


@dataclass(frozen=True)
class RunConfig:
    """What to train and how to choose it (:meth:`build` makes one, checked).

    Attributes
    ----------
    algorithm : str
        The algorithm's name (:data:`mpiboost.boost.ALGORITHMS`).
    rounds : int
        Boosting rounds, the one place they are given (the algorithms that need them get them from here).
    params : dict
        The algorithm's own parameters as asked for (``"auto"`` values included), by their declared names.
    seed : int
        The seed of every random choice.
    valid_fraction : float or None
        Hold out this fraction of the training rows as validation rows.
    valid_metric : str
        What the validation rows measure (:data:`mpiboost.driver.validation.VALID_METRICS`).
    best_round : bool
        Keep the model truncated to its round of lowest validation error.
    early_stop : int or None
        Stop once this many rounds in a row did not improve on the best.
    threads : int or None
        OpenMP threads per rank (None or 0: the cores of the node shared by its ranks).
    dedicated_coordinator : bool
        Rank 0 holds no rows (the center of the protocol alone).
    has_valid : bool
        Validation files are given (``--valid``); the driver refuses a run whose files say otherwise.
    """

    algorithm: str
    rounds: int
    params: dict = field(default_factory=dict)
    seed: int = 0
    valid_fraction: Optional[float] = None
    valid_metric: str = "error"
    best_round: bool = False
    early_stop: Optional[int] = None
    threads: Optional[int] = None
    dedicated_coordinator: bool = False
    has_valid: bool = False

    @classmethod
    def build(cls, algorithm: str, rounds, params: Optional[dict] = None, *, has_valid: bool = False,
              **run) -> "RunConfig":
        """The configuration of a run, every option checked against the others (no data needed).

        Parameters
        ----------
        algorithm, rounds, params
            What to train: ``params`` by the algorithm's declared names, checked against its declarations.
        has_valid : bool
            Whether the run is given validation files (``--valid``): the round choice and ``auto`` values
            need validation rows, and ``valid_fraction`` excludes them.
        **run
            The run's options (the attributes of this class).

        Raises
        ------
        CollectiveError
            Naming the option, on every rank alike.
        """
        unknown = sorted(set(run) - set(cls.__dataclass_fields__) - {"algorithm", "rounds", "params", "has_valid"})
        if unknown:
            raise CollectiveError(f"unknown run option(s): {', '.join(unknown)}")
        if isinstance(rounds, bool) or not isinstance(rounds, numbers.Integral) or not 1 <= rounds <= MAX_ROUNDS:
            raise CollectiveError(f"--rounds must be an integer in 1..{MAX_ROUNDS:,}, got {rounds!r}")
        seed = run.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed <= MAX_SEED:
            raise CollectiveError(f"--seed must be an integer in 0..{MAX_SEED}, got {seed!r}")
        fraction = run.get("valid_fraction")
        if fraction is not None and (isinstance(fraction, bool) or not isinstance(fraction, numbers.Real)
                                     or not math.isfinite(fraction)):
            raise CollectiveError(f"--valid-fraction must be a number in (0, 0.5], got {fraction!r}")
        metric = run.get("valid_metric", "error")
        if metric not in VALID_METRICS:
            raise CollectiveError(f"--valid-metric must be one of {', '.join(VALID_METRICS)}, got {metric!r}")
        patience = run.get("early_stop")
        if patience is not None and (isinstance(patience, bool) or not isinstance(patience, numbers.Integral)):
            raise CollectiveError(f"--early-stop must be a number of rounds, got {patience!r}")
        threads = run.get("threads")
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, numbers.Integral)
                                    or threads < 0):
            raise CollectiveError(f"--threads must be 0 (automatic) or a number of threads, got {threads!r}")
        params = dict(params or {})
        make_algorithm(algorithm, params, int(rounds))  # the algorithm's own options, by its declarations
        check_validation(algorithm, params, valid=has_valid, valid_fraction=fraction,
                         best_round=bool(run.get("best_round", False)), patience=patience)
        return cls(algorithm=algorithm, rounds=int(rounds), params=params, seed=int(seed),
                   valid_fraction=None if fraction is None else float(fraction), valid_metric=metric,
                   best_round=bool(run.get("best_round", False)),
                   early_stop=None if patience is None else int(patience), threads=int(threads) if threads else None,
                   dedicated_coordinator=bool(run.get("dedicated_coordinator", False)), has_valid=bool(has_valid))


__all__ = ["MAX_SEED", "RunConfig"]
