"""Prediction and evaluation of a model on data spread over the ranks, in the user's labels."""
from __future__ import annotations

from typing import Optional, Sequence, TYPE_CHECKING

import numpy as np

from .atomic import atomic_path
from .data import labels as lab
from .data.load import load, load_raw
from .errors import CollectiveError
from .metrics import auc
from .model import Model, index_of_scores

if TYPE_CHECKING:  # annotations only
    from .comm import Comm
    from .data.load import Shard


def _task(model: Model) -> str:
    if getattr(model, "is_regression", False):
        return "regression"
    return "binary" if model.output == "sign" else "multiclass"


def regression_report(comm: Comm, model: Model, shard: Shard, score: np.ndarray) -> Optional[dict]:
    """Collective: RMSE, MAE, R^2 (and the objective's metric) of a regression model's scores, from exact sums
    over all ranks' rows (weighted by the rows' weights if the files have them); the report on the center.

    Parameters
    ----------
    comm : Comm
        The ranks holding the rows.
    model : Model
        The regression model whose scores these are (its ``objective`` and ``alpha`` choose the extra metric).
    shard : Shard
        This rank's rows: their targets ``y`` and, if the files have them, their weights.
    score : numpy.ndarray of shape (n_local,)
        The model's predicted values of this rank's rows.

    Returns
    -------
    dict or None
        On the center, ``{n, rmse, mae, r2, objective}``, the objective's metric when it is not the RMSE, and
        ``weighted`` when the means are weighted (a figure is None when the rows weigh nothing); None on the
        other ranks.
    """
    from .boost.losses import REGRESSION

    y, w = np.asarray(shard.y, dtype=np.float64), shard.weight
    d = score - y
    ones = np.ones_like(y) if w is None else w
    objective = REGRESSION[model.params.get("objective", "regression")]
    alpha = float(model.params.get("alpha") or 0.9)
    terms = [d * d, np.abs(d), y, y * y, np.ones_like(y), objective.loss(d, alpha)]
    groups = np.repeat(np.arange(len(terms), dtype=np.int32), y.size)  # one exact reduction for all six sums
    sq, ab, sy, syy, sw, loss = (float(v) for v in comm.sum_exact_grouped(np.concatenate([t * ones for t in terms]),
                                                                          groups, len(terms)))
    if not comm.is_center:
        return None
    var = syy / sw - (sy / sw) ** 2 if sw > 0 else 0.0
    report = {"n": int(shard.n_global), "rmse": float(np.sqrt(sq / sw)) if sw > 0 else None,
              "mae": ab / sw if sw > 0 else None, "r2": 1.0 - (sq / sw) / var if sw > 0 and var > 0 else None,
              "objective": objective.name}
    if objective.metric != "rmse":  # the objective's own metric beside them (L1's "l1" is the MAE again)
        report[objective.metric] = loss / sw if sw > 0 else None
    if w is not None:
        report["weighted"] = True  # every mean above is weighted by the rows' weights
    return report


def _index(model, score: np.ndarray) -> np.ndarray:
    """The predicted class indices of the scores (an online model: the argmax of its distribution)."""
    return model.index_of(score) if hasattr(model, "index_of") else index_of_scores(score)


def check_features(model, paths: Sequence[str]) -> None:
    """Refuse data whose named columns are not the model's, in the model's order (CollectiveError naming them).

    Every rank reads the same file headers, so the refusal is agreed. A file without feature names, or a
    model without them, is checked by the number of features only (when the rows are read).
    """
    from .data.format import inspect
    from .errors import CollectiveError

    want = list(model.feature_names or [])
    if not want:
        return
    for path in paths:
        have = list(inspect(path).feature_names or [])
        if not have or have == want:
            continue
        missing = [c for c in want if c not in have]
        extra = [c for c in have if c not in want]
        if missing or extra:
            raise CollectiveError(f"{path}: its features are not the model's (missing: {', '.join(missing[:5]) or 'none'}; "
                                  f"not the model's: {', '.join(extra[:5]) or 'none'})")
        moved = [f"{c!r} is column {have.index(c)} here, {j} in the model" for j, c in enumerate(want) if have[j] != c]
        raise CollectiveError(f"{path}: the model's features in another order ({'; '.join(moved[:4])}): convert the "
                              "file with the training file's columns in their order")


def check_tasks(model: Model, shard) -> None:
    """Refuse rows a task model cannot score (CollectiveError naming the file): it scores each row with its
    task's ensemble, so the rows must carry tasks (a ``domain`` column, or one file per task), and those of the
    model, by id and, where both name them, by name."""
    path = shard.files[0].path
    if len(shard.files) == 1 and not shard.files[0].has_domain:
        raise CollectiveError(f"{path}: a {model.algorithm} model scores each row with its task's ensemble (a model "
                              "per task or domain), and the file has no 'domain' column")
    names = list(model.domain_names or [])
    J = len(names) or 1
    if shard.n_domains > J:
        raise CollectiveError(f"{path}: the rows hold {shard.n_domains} tasks (domains), the model {J}")
    have = list(shard.domain_names or [])
    if names and have and have[: len(names)] != names[: len(have)]:
        raise CollectiveError(f"{path}: the rows' tasks (domains) {have[:6]} are not the model's {names[:6]} (in "
                              "that order)")


def _scores(comm: Comm, model: Model, paths: Sequence[str], task: Optional[str], dedicated: bool, unseen=None):
    check_features(model, paths)
    if getattr(model, "kind", None) == "online":  # raw features, no bins
        shard = load_raw(comm, paths, task=task, classes=model.classes if task else None, unseen=unseen,
                         dedicated_coordinator=dedicated)
        return shard, model.distribution(shard.X)
    shard = load(comm, paths, task=task, classes=model.classes if task else None, unseen=unseen, bins=model.bins,
                 dedicated_coordinator=dedicated, keep_raw=model.needs_raw)
    if getattr(model, "takes_task", False):  # one ensemble per task: each row scored by its own task's
        check_tasks(model, shard)
        return shard, model.decision_binned(shard.cols, shard.X, shard.domain)
    return shard, model.decision_binned(shard.cols, shard.X)


def class_report(confusion: np.ndarray, classes: Sequence) -> dict:
    """Accuracy, macro-F1, per-class recall/precision/F1 and the confusion matrix (rows: true, columns: predicted)."""
    n = int(confusion.sum())
    right = int(np.trace(confusion))
    per_class, f1s = {}, []
    for c, name in enumerate(classes):
        tp = int(confusion[c, c])
        support, predicted = int(confusion[c].sum()), int(confusion[:, c].sum())
        recall = tp / support if support else None
        precision = tp / predicted if predicted else None
        f1 = 2 * tp / (support + predicted) if support + predicted else None
        if support:
            f1s.append(f1)
        per_class[lab.text(name)] = {"n": support, "recall": recall, "precision": precision, "f1": f1}
    return {
        "n": n,
        "error": (n - right) / n if n else None,
        "accuracy": right / n if n else None,
        "macro_f1": float(np.mean(f1s)) if f1s else None,
        "per_class": per_class,
        "confusion": {"classes": [lab.plain(c) for c in classes], "matrix": confusion.tolist()},
    }


def evaluate(comm: Comm, model: Model, paths: Sequence[str], *, dedicated_coordinator: bool = False) -> Optional[dict]:
    """Collective: the model's quality on ``paths`` (the report on the center).

    Binary models: ``{n, error, accuracy, auc, classes}``; multiclass models:
    ``{n, error, accuracy, macro_f1, per_class, confusion, classes}`` with
    classes named by the user's labels. With several domains (several files
    or a domain column) the report also has per-domain errors,
    ``uniform_error`` (their mean) and ``agnostic_error`` (their max).
    Rows whose label is not one of the model's classes (a rare class absent
    from the training data) count as errors and are listed in ``unseen``
    (per label); the confusion matrix and the AUC leave them out.

    Parameters
    ----------
    comm : Comm
        The ranks that read the rows, each its block.
    model : Model or OnlineModel
        The model to evaluate.
    paths : sequence of str
        The data files, their rows in order; their features must be the model's.
    dedicated_coordinator : bool
        Rank 0 holds no rows.

    Returns
    -------
    dict or None
        The report on the center (a regression model's is :func:`regression_report`'s); None on the other
        ranks.
    """
    task = _task(model)
    if task == "regression":
        shard, score = _scores(comm, model, paths, task, dedicated_coordinator)
        return regression_report(comm, model, shard, score)
    unseen: dict = {}
    shard, score = _scores(comm, model, paths, task, dedicated_coordinator, unseen)
    index = _index(model, score)
    truth = np.where(shard.y == 1, 1, np.where(shard.y == -1, 0, -1)) if task == "binary" else shard.y
    wrong = index != truth
    known = truth >= 0
    k = shard.n_domains
    per_domain = comm.allreduce_int(np.bincount(shard.domain[wrong], minlength=k).astype(np.int64))
    K = model.n_classes
    cells = truth[known].astype(np.int64) * K + index[known]
    confusion = comm.allreduce_int(np.bincount(cells, minlength=K * K).astype(np.int64)).reshape(K, K)
    weighted = None
    if shard.weight is not None:  # the files' sample weights: the weighted error too (exact sums)
        w = np.asarray(shard.weight, dtype=np.float64)
        weighted = comm.sum_exact_grouped(np.concatenate([np.where(wrong, w, 0.0), w]),
                                          np.repeat(np.array([0, 1], dtype=np.int32), w.size), 2)
    if task == "binary":
        all_scores = comm.gatherv(score[known]) if comm.size > 1 else score[known]
        all_y = comm.gatherv(shard.y[known]) if comm.size > 1 else shard.y[known]
        if shard.weight is not None:
            mine = np.ascontiguousarray(np.asarray(shard.weight, dtype=np.float64)[known])
            all_w = comm.gatherv(mine) if comm.size > 1 else mine
    if not comm.is_center:
        return None
    n = shard.n_global
    errors = int(per_domain.sum())
    if task == "binary":
        report = {"n": n, "error": errors / n, "accuracy": 1 - errors / n, "auc": auc(all_scores, all_y)}
        full = class_report(confusion, model.classes)  # precision, recall and F1 of each class, the matrix
        report.update(per_class=full["per_class"], confusion=full["confusion"], macro_f1=full["macro_f1"])
    else:
        report = class_report(confusion, model.classes)
        report.update(n=n, error=errors / n, accuracy=1 - errors / n)  # unseen labels count as errors
    report["classes"] = [lab.plain(c) for c in model.classes]
    if weighted is not None and weighted[1] > 0:
        report["weighted_error"] = float(weighted[0] / weighted[1])  # sum(w [wrong]) / sum(w)
        if task == "binary":
            report["weighted_auc"] = auc(all_scores, all_y, all_w)  # each pair counts w_pos w_neg
    if hasattr(model, "feature_importances"):  # split counts, normalised, most used first (LightGBM's "split")
        imp = model.feature_importances_
        names = list(model.feature_names_in_)
        order = sorted(range(len(imp)), key=lambda j: (-imp[j], j))
        report["feature_importance"] = {str(names[j]): round(float(imp[j]), 6) for j in order if imp[j] > 0}
    if unseen:
        report["unseen"] = {lab.text(v): c for v, c in sorted(unseen.items(), key=lambda kv: str(kv[0]))}
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
    comm: Comm, model: Model, paths: Sequence[str], *, scores: bool = False, dedicated_coordinator: bool = False,
    proba: bool = False, contrib: bool = False,
) -> Optional[np.ndarray]:
    """Collective: every row's predicted label (the user's values) or scores, in file order, on the center.

    Scores: ``sum_t coef_t h_t(x)`` per row for a binary model (>= 0 means
    the second class), per row and class ``(n, K)`` for a multiclass one.
    ``contrib``: each feature's TreeSHAP contribution and the expected score
    (:meth:`mpiboost.model.Model.contributions`) instead.

    Parameters
    ----------
    comm : Comm
        The ranks that read the rows, each its block.
    model : Model or OnlineModel
        The model that predicts (an online model's scores are its class distributions).
    paths : sequence of str
        The data files, their rows in order; their features must be the model's.
    scores : bool
        The scores instead of the labels (a regression model's predicted values are its scores).
    dedicated_coordinator : bool
        Rank 0 holds no rows.
    proba : bool
        The class probabilities, ``(n, K)`` (:meth:`mpiboost.model.Model.proba_of_scores`), instead of the labels.
    contrib : bool
        The TreeSHAP contributions instead of the labels.

    Returns
    -------
    numpy.ndarray or None
        On the center, one entry (or row) per row of ``paths``, in file order; None on the other ranks.
    """
    if contrib:
        check_features(model, paths)
        shard = load(comm, paths, task=None, bins=model.bins, dedicated_coordinator=dedicated_coordinator)
        out = model.contributions_binned(shard.cols)
        return comm.gatherv(out) if comm.size > 1 else out
    _, score = _scores(comm, model, paths, None, dedicated_coordinator)
    if getattr(model, "is_regression", False):
        if proba:
            from .errors import InputError

            raise InputError("--proba: a regression model predicts values, not class probabilities")
        scores = True  # the predicted values are the scores
    if proba:
        scores, score = True, model.proba_of_scores(score)
    out = score if scores else _index(model, score)
    if comm.size > 1:
        out = comm.gatherv(out)
    if not comm.is_center:
        return None
    return out if scores else model.labels_of(out)


ARROW_SUFFIXES = (".parquet", ".feather", ".arrow")  # written through pyarrow (the optional ``parquet`` extra)


def check_output_format(path: str, option: str = "--out") -> None:
    """Refuse, before any work, an output whose suffix needs a library that is not installed."""
    from .errors import InputError

    if path.lower().endswith(ARROW_SUFFIXES):
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise InputError(f"{option} {path}: Parquet and Arrow files are written with pyarrow, which is not "
                             "installed (pip install 'mpiboost[parquet]'), or give .csv or .npy") from None


def write_predictions(path: str, values: np.ndarray, header: str, chunk_rows: int = 1 << 18) -> None:
    """Write what the suffix says, atomically: ``.npy``, ``.parquet`` / ``.feather`` / ``.arrow`` (pyarrow:
    one column per value of a row, named by ``header``), or CSV (any other suffix).

    CSV is written in chunks of rows, each one a sign of progress to the
    watchdog (a large prediction file takes minutes to format).
    """
    from . import watchdog

    with atomic_path(path) as tmp:
        if path.endswith(".npy"):
            with open(tmp, "wb") as f:
                np.save(f, values)
            return
        if path.lower().endswith(ARROW_SUFFIXES):
            import pyarrow as pa

            cols = values.reshape(len(values), -1)
            names = header.split(",")
            table = pa.table({n: (cols[:, j].tolist() if cols.dtype.kind in "UO" else cols[:, j])
                              for j, n in enumerate(names)})
            if path.lower().endswith(".parquet"):
                import pyarrow.parquet as pq

                pq.write_table(table, tmp)
            else:
                import pyarrow.feather as feather

                feather.write_feather(table, tmp)
            return
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            if values.dtype.kind in "UO":
                import csv

                # text labels may hold commas or quotes: the csv module quotes them
                w = csv.writer(f, lineterminator="\n")
                w.writerow(header.split(","))
                for start in range(0, len(values), chunk_rows):
                    w.writerows([v] for v in values[start:start + chunk_rows].tolist())
                    watchdog.tick()
            else:
                fmt = "%d" if values.dtype.kind in "iu" else "%.17g"
                f.write(header + "\n")
                for start in range(0, len(values), chunk_rows):
                    np.savetxt(f, values[start:start + chunk_rows], fmt=fmt, delimiter=",")
                    watchdog.tick()
