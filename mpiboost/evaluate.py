"""Prediction and evaluation of a model on data spread over the ranks."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from .atomic import atomic_path
from .data.load import load
from .model import Model


def auc(scores: np.ndarray, y: np.ndarray) -> Optional[float]:
    """Area under the ROC curve (Mann-Whitney, ties count one half); None if one class is absent."""
    from scipy.stats import rankdata

    pos = y > 0
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    if n_pos == 0 or n_neg == 0:
        return None
    ranks = rankdata(scores)
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def _scores(comm, model: Model, paths: Sequence[str], task: Optional[str], dedicated: bool):
    shard = load(comm, paths, task=task, bins=model.bins, dedicated_coordinator=dedicated, keep_raw=model.needs_raw)
    return shard, model.decision_function(shard.cols, shard.X)


def evaluate(comm, model: Model, paths: Sequence[str], *, dedicated_coordinator: bool = False) -> Optional[dict]:
    """Collective: error, accuracy and AUC of ``model`` on ``paths`` (the report on the center).

    With several domains (several files or a domain column) the report also
    has per-domain errors, ``uniform_error`` (their mean) and
    ``agnostic_error`` (their max).
    """
    shard, score = _scores(comm, model, paths, "binary", dedicated_coordinator)
    wrong = (np.where(score >= 0, 1, -1) != shard.y)
    k = shard.n_domains
    per_domain = comm.allreduce_int(np.bincount(shard.domain[wrong], minlength=k).astype(np.int64))
    all_scores = comm.gatherv(score) if comm.size > 1 else score
    all_y = comm.gatherv(shard.y) if comm.size > 1 else shard.y
    if not comm.is_center:
        return None
    n = shard.n_global
    errors = int(per_domain.sum())
    report = {"n": n, "error": errors / n, "accuracy": 1 - errors / n, "auc": auc(all_scores, all_y)}
    if k > 1:
        names = shard.domain_names or [str(i) for i in range(k)]
        counts = shard.domain_counts
        dom = {
            str(names[i]): {"n": int(counts[i]), "error": (int(per_domain[i]) / int(counts[i])) if counts[i] else None}
            for i in range(k)
        }
        errs = [v["error"] for v in dom.values() if v["error"] is not None]
        report.update(per_domain=dom, uniform_error=float(np.mean(errs)), agnostic_error=float(np.max(errs)))
    return report


def predict(
    comm, model: Model, paths: Sequence[str], *, scores: bool = False, dedicated_coordinator: bool = False
) -> Optional[np.ndarray]:
    """Collective: predicted labels (or scores) of every row, in file order, on the center."""
    _, score = _scores(comm, model, paths, None, dedicated_coordinator)
    out = score if scores else np.where(score >= 0, 1, -1).astype(np.int8)
    if comm.size > 1:
        return comm.gatherv(out)
    return out


def write_predictions(path: str, values: np.ndarray, header: str) -> None:
    """Write ``.npy`` or ``.csv`` (one column), atomically."""
    with atomic_path(path) as tmp:
        if path.endswith(".npy"):
            with open(tmp, "wb") as f:
                np.save(f, values)
        else:
            fmt = "%d" if values.dtype.kind in "iu" else "%.17g"
            np.savetxt(tmp, values, fmt=fmt, header=header, comments="")
