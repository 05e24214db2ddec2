"""The run's summary: rounds, errors, times, bytes per primitive, memory, and the chance-level warning."""
from __future__ import annotations

import math
from typing import Optional, TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # annotations only
    from ..boost.base import Algorithm
    from ..model import Model
    from .inputs import Inputs
    from ..comm import Comm
    from ..protocol import Protocol
    from ..data.load import Shard


def peak_rss_bytes() -> int:
    """This process's peak resident set size so far."""
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


# ----------------------------------------------------------------- summary
def summarize(comm: Comm, proto: Protocol, algo: Algorithm, model: Model, inputs: Inputs, *, stop_reason: str,
              last: dict, phase: dict, threads: int, seconds: dict, sent_before: int) -> dict:
    """Collective: the run's summary (rows, rounds, errors, time per phase, bytes, memory).

    Parameters
    ----------
    comm : Comm
        The ranks of the run: their byte counts are summed and their peak memory gathered.
    proto : Protocol
        The protocol the rounds ran over.
    algo : Algorithm
        The algorithm after its rounds.
    model : Model
        The model kept (its rounds and classes are reported).
    inputs : Inputs
        The training rows (their count, features and load timings).
    stop_reason : str
        Why the rounds ended (``"rounds"``: all of them ran).
    last : dict
        The last round's metrics (its training and validation errors are reported).
    phase : dict
        Seconds per phase of the rounds (select, apply, valid).
    threads : int
        The threads each rank used.
    seconds : dict
        The run's other seconds (total, load, selection, rounds).
    sent_before : int
        Bytes this rank had sent before round 1: the rounds' bytes are those sent since.

    Returns
    -------
    dict
        The summary: its ``seconds`` and ``bytes_center`` are this rank's, the rest the same on every rank.
    """
    shard = inputs.shard
    totals = comm.bytes.totals()
    all_ranks = proto.reduce_counts(np.array([comm.bytes.sent, comm.bytes.received, comm.bytes.sent - sent_before]))
    row = np.array([peak_rss_bytes(), shard.n_local], dtype=np.int64)
    rss = comm.allgather_array(row) if comm.size > 1 else row[None, :]
    comm_seconds = sum(v["seconds"] for k, v in totals.items() if k not in ("binning", "other"))
    return {
        "algorithm": algo.name,
        "rounds": model.n_rounds,
        "members": model.n_stumps,  # with a fitted start (round 0), a model of 0 rounds is not empty
        "stop_reason": stop_reason,
        "n": algo.n_train(shard),
        "d": shard.d,
        "classes": model.n_classes,
        "ranks": comm.size,
        "threads": threads,
        "train_error": last.get("train_error"),
        "valid_error": last.get("valid_error"),
        **({"metric": metric_of(model), "train_metric": last.get("train_metric")} if model.is_regression else {}),
        "warning": chance_warning(last.get("train_error"), shard, algo, model),
        "seconds": {
            **seconds,
            "read": shard.timings.get("read", 0.0),
            "bin_edges": shard.timings.get("bin_edges", 0.0),
            "bin": shard.timings.get("bin", 0.0),
            "communication": comm_seconds,
            **phase,
        },
        "peak_rss_bytes": {"per_rank": rss[:, 0].tolist(), "rows_per_rank": rss[:, 1].tolist()},
        "bytes_center": totals,
        "bytes_all_ranks": {"sent": int(all_ranks[0]), "received": int(all_ranks[1])},
        "bytes_rounds_all_ranks": int(all_ranks[2]),  # sent during the rounds (no loading, binning, setup)
    }


def metric_of(model: Model) -> str:
    """The training metric of a regression model: its objective's (rmse, l1, huber, quantile)."""
    from ..boost.losses import REGRESSION

    return REGRESSION[model.params["objective"]].metric


def chance_warning(train_error: Optional[float], shard: Shard, algo: Algorithm, model: Model) -> Optional[str]:
    """A message when the model is no better on its own training rows than a coin (error 1 - 1/K) or
    than predicting the majority class, whichever is lower (within two standard errors); None otherwise (or for an empty model,
    which has its own message)."""
    if train_error is None or model.n_stumps == 0 or not np.isfinite(train_error):
        return None
    K = max(2, int(model.n_classes))
    chance, what = 1.0 - 1.0 / K, "a coin" if K == 2 else "a uniform guess"
    counts = [int(v) for v in (shard.label_counts or {}).values()]
    if counts and sum(counts) == algo.n_train(shard) and sum(counts) > 0:
        majority = 1.0 - max(counts) / sum(counts)
        if majority < chance:
            chance, what = majority, "predicting the majority class"
    # no better means within two standard errors of the guess's error over these rows (a vote that
    # cancels lands there, however many rounds went into it)
    n = max(1, algo.n_train(shard))
    if train_error < chance - 2.0 * math.sqrt(chance * (1.0 - chance) / n):
        return None
    hint = algo.chance_hint(model.n_rounds) if hasattr(algo, "chance_hint") else ""
    return (f"the model's training error {train_error:.4f} is no better than {what} ({chance:.4f}) on its own "
            f"training rows{': ' + hint if hint else ''}")
