"""Pictures of training runs from their ``--metrics`` logs (``mpiboost plot``).

A batch log holds one JSON record per round and a ``summary`` record; an
online log holds one record per block of examples. The figure shows, per
log: the training and validation error by round; the weight statistics and
step sizes the algorithm reports (SmoothBoost's largest weight, the edge, the
vote coefficient); the seconds each round took, by phase; and the error of
each domain or task — by round when a model and labelled data are given
(:func:`group_curves`), else whatever per-domain figures the log itself holds
(MultiBoost's domain losses, the transfer algorithms' source errors).

The logs are untrusted input: a line that is not a JSON object is skipped and
counted (a run killed mid-line, or a job log of ``--metrics -`` with other
lines), a log without any record is an error naming the file.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from .errors import InputError

# Scalar per-round figures shown in the "weights and steps" panel, with their legend text.
WEIGHT_KEYS = {
    "max_weight_eps_n": "largest weight × εn (SmoothBoost; ≤ 1 is smooth)",
    "edge": "edge of the round's hypothesis",
    "weak_error": "weighted error of the weak learner",
    "coef": "vote coefficient",
    "eps_t_raw": "target error ε_t",
}
# Per-domain (per-source, per-task) lists a log may hold, with what they are.
GROUP_KEYS = {
    "eps_domains": "domain's weighted error ε_k",
    "phi": "domain loss φ_k",
    "eps_sources": "source error ε_k",
    "own_errors": "source's own error",
}
MAX_POINTS = 200  # staged errors at this many rounds at most (each point scores every row once)


@dataclass
class RunLog:
    """One metrics log: its round (or block) records and its summary."""

    path: str
    label: str
    records: list = field(default_factory=list)
    summary: Optional[dict] = None
    skipped: int = 0

    @property
    def online(self) -> bool:
        return bool(self.records) and "examples" in self.records[0] and "round" not in self.records[0]

    def series(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """``(x, values)`` of a scalar key over the records that hold a finite number for it."""
        xs, vs = [], []
        xkey = "examples" if self.online else "round"
        for r in self.records:
            v = r.get(key)
            if isinstance(v, bool):
                v = float(v)
            if isinstance(v, (int, float)) and math.isfinite(v) and isinstance(r.get(xkey), (int, float)):
                xs.append(r[xkey])
                vs.append(float(v))
        return np.asarray(xs, dtype=np.float64), np.asarray(vs, dtype=np.float64)


def read_log(path: str) -> RunLog:
    """Read a metrics log (``train --metrics`` or ``train-online --metrics``).

    Raises
    ------
    InputError
        The file cannot be read, or holds no round record.
    """
    log = RunLog(path=path, label=os.path.splitext(os.path.basename(path))[0] or path)
    try:
        with open(path, "rb") as f:
            lines = f.read().splitlines()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the metrics log ({exc.strerror or exc})") from None
    for line in lines:
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (ValueError, UnicodeDecodeError):
            log.skipped += 1
            continue
        if not isinstance(rec, dict):
            log.skipped += 1
        elif isinstance(rec.get("summary"), dict):
            log.summary = rec["summary"]
        elif isinstance(rec.get("round"), int) or isinstance(rec.get("examples"), int):
            log.records.append(rec)
        else:
            log.skipped += 1
    if not log.records:
        raise InputError(f"{path}: no round records (is it the file given to train --metrics?)")
    key = "examples" if log.online else "round"
    kept = [r for r in log.records if isinstance(r.get(key), int)]  # one kind of record: the first one's
    log.skipped += len(log.records) - len(kept)
    log.records = kept
    log.records.sort(key=lambda r: r[key])
    return log


@dataclass
class GroupCurves:
    """Errors per domain (or task) of a model on labelled data: ``errors[g, i]`` after ``rounds[i]``."""

    names: list
    rounds: np.ndarray
    errors: np.ndarray
    counts: np.ndarray
    staged: bool  # False: only the final model's errors (its vote depends on every round trained)


def group_curves(model, paths: Sequence[str], max_points: int = MAX_POINTS) -> GroupCurves:
    """Each domain's (task's) error of ``model`` on the labelled ``paths``, by round where the rounds'
    scores are the model's (see ``curve_scores_model`` in the algorithm's capabilities).

    Serial: reads every row of ``paths`` in this process.
    """
    from . import boost
    from .comm import single
    from .data.load import load
    from .evaluate import _task, check_features
    from .model import Scorer

    if getattr(model, "kind", None) == "online":
        raise InputError("--model: per-domain curves need a batch model (an online model has no rounds)")
    check_features(model, paths)
    shard = load(single(), paths, task=_task(model), classes=model.classes, bins=model.bins,
                 keep_raw=model.needs_raw)
    if shard.y is None or getattr(shard, "unlabelled", False):
        raise InputError(f"{paths[0]}: per-domain curves need labelled rows")
    G = max(int(shard.n_domains), 1)
    names = list(shard.domain_names or [str(g) for g in range(G)])[:G]
    group = np.asarray(shard.domain, dtype=np.int64) if len(shard.domain) else np.zeros(0, dtype=np.int64)
    counts = np.bincount(group, minlength=G)
    try:
        staged = boost.get(model.algorithm).curve_scores_model and model.first_voting_round() <= 1
    except (KeyError, ValueError):
        staged = False
    task = shard.domain if model.takes_task else None
    T = model.n_rounds
    if not staged or T == 0:
        scorer = Scorer(model.truncated(T), shard.cols, shard.X, task)
        scorer.model.coef = model.vote_coefficients().copy()
        scorer.update()
        wrong = scorer.errors_by_group(shard.y, group, G)
        return GroupCurves(names, np.array([T]), (wrong / np.maximum(counts, 1))[:, None], counts, False)
    points = np.unique(np.linspace(1, T, min(T, max_points)).round().astype(np.int64))
    scorer = Scorer(model.truncated(0), shard.cols, shard.X, task)
    errs = np.zeros((G, len(points)))
    for i, t in enumerate(points):
        scorer.model = model.truncated(int(t))  # the members of rounds <= t; update adds the new ones
        scorer.update()
        errs[:, i] = scorer.errors_by_group(shard.y, group, G) / np.maximum(counts, 1)
    return GroupCurves(names, points, errs, counts, True)


def _panel_errors(ax, logs: Sequence[RunLog]) -> None:
    for i, log in enumerate(logs):
        color = f"C{i}"
        name = "" if len(logs) == 1 else f"{log.label}: "
        if log.online:
            for key, text, ls in (("acc_all", "accuracy", "-"), ("argmax_all", "argmax accuracy", "--"),
                                  ("exp_all", "expected accuracy", ":")):
                x, v = log.series(key)
                if len(x):
                    ax.plot(x, v, color=color, ls=ls, label=f"{name}{text}")
            ax.set_xlabel("examples seen")
            ax.set_ylabel("prequential accuracy")
            continue
        x, v = log.series("train_error")
        if len(x):
            ax.plot(x, v, color=color, label=f"{name}training error")
        x, v = log.series("valid_error")
        if len(x):
            ax.plot(x, v, color=color, ls="--", label=f"{name}validation error")
        best = (log.summary or {}).get("best_round")
        if isinstance(best, int) and best > 0:
            ax.axvline(best, color=color, ls=":", lw=1, label=f"{name}best round {best}")
        ax.set_xlabel("round")
        ax.set_ylabel("error")
    ax.set_title("error by round" if not logs[0].online else "accuracy over the stream")


def _panel_weights(ax, logs: Sequence[RunLog]) -> bool:
    shown = False
    styles = ["-", "--", ":", "-."]
    for i, log in enumerate(logs):
        name = "" if len(logs) == 1 else f"{log.label}: "
        for j, (key, text) in enumerate(WEIGHT_KEYS.items()):
            x, v = log.series(key)
            if len(x) and np.any(v != 0):
                ax.plot(x, v, color=f"C{i}", ls=styles[j % len(styles)], lw=1, label=f"{name}{text}")
                shown = True
    if shown:
        lo = [np.min(line.get_ydata()) for line in ax.get_lines()]
        hi = [np.max(line.get_ydata()) for line in ax.get_lines()]
        if min(lo) > 0 and max(hi) / min(lo) > 100:  # figures of different scales: a log axis shows each
            ax.set_yscale("log")
    ax.set_xlabel("round")
    ax.set_title("weights and steps")
    return shown


def _panel_time(ax, logs: Sequence[RunLog]) -> bool:
    shown, tops = False, []
    for i, log in enumerate(logs):
        name = "" if len(logs) == 1 else f"{log.label}: "
        if log.online:  # the stream's speed
            x, v = log.series("examples_per_s")
            if len(x) > 1:
                ax.plot(x[1:], v[1:], color=f"C{i}", lw=1, label=f"{name}examples per second")
                ax.set_xlabel("examples seen")
                ax.set_title("speed")
                shown = True
            continue
        rounds, phases = [], {}
        for r in log.records:
            s = r.get("seconds")
            if isinstance(s, dict) and isinstance(r.get("round"), int):
                rounds.append(r["round"])
                for k in ("select", "apply", "valid"):
                    v = s.get(k, 0.0)
                    phases.setdefault(k, []).append(float(v) if isinstance(v, (int, float)) else 0.0)
        if not rounds:
            continue
        shown = True
        x = np.asarray(rounds)
        total_ms = 1e3 * sum(np.asarray(phases[k]) for k in phases)
        tops.append(1.5 * float(np.percentile(total_ms, 98)) if len(total_ms) > 20 else 1.05 * float(total_ms.max()))
        if len(logs) == 1:
            ax.stackplot(x, *[1e3 * np.asarray(phases[k]) for k in phases], labels=list(phases), alpha=0.7)
        else:
            ax.plot(x, total_ms, color=f"C{i}", lw=1, label=f"{name}all phases")
    if tops:  # the first round (set-up, first touch of the data) can take many times the others: cut the axis
        top = max(tops)
        if np.isfinite(top) and top > 0:
            ax.set_ylim(0, top)
    if not logs[0].online:
        ax.set_xlabel("round")
        ax.set_ylabel("milliseconds")
        ax.set_title("time per round")
    return shown


def _panel_groups(ax, logs: Sequence[RunLog], curves: Optional[GroupCurves]) -> bool:
    if curves is not None:
        used = [g for g in range(len(curves.names)) if curves.counts[g] > 0]
        labels = [f"{curves.names[g]} ({int(curves.counts[g]):,} rows)" for g in used]
        if curves.staged:
            for g, label in zip(used, labels):
                ax.plot(curves.rounds, curves.errors[g], lw=1, label=label)
            ax.set_xlabel("round")
            ax.set_ylabel("error on the data given")
            ax.set_title("error by domain / task")
        else:  # the vote depends on every round trained: the final model's errors only
            y = np.arange(len(used))
            ax.barh(y, [curves.errors[g, -1] for g in used], color=[f"C{i}" for i in range(len(used))])
            ax.set_yticks(y, labels, fontsize=7)
            ax.invert_yaxis()
            ax.set_xlabel("error on the data given")
            ax.set_title(f"error by domain / task (the model of {int(curves.rounds[-1])} rounds)")
        return True
    log = logs[0]
    for key, text in GROUP_KEYS.items():
        rows = [(r["round"], r[key]) for r in log.records
                if isinstance(r.get(key), list) and isinstance(r.get("round"), int)
                and all(isinstance(v, (int, float)) for v in r[key])]
        width = {len(v) for _, v in rows}
        if not rows or len(width) != 1 or 0 in width:
            continue
        x = np.asarray([t for t, _ in rows])
        vals = np.asarray([v for _, v in rows], dtype=np.float64)
        for g in range(vals.shape[1]):
            ax.plot(x, vals[:, g], lw=1, label=f"{text}, {g}")
        ax.set_xlabel("round")
        ax.set_title(f"{text} by round" + ("" if len(logs) == 1 else f" ({log.label})"))
        return True
    return False


def draw(logs: Sequence[RunLog], out: str, curves: Optional[GroupCurves] = None, title: Optional[str] = None,
         dpi: int = 120) -> list[str]:
    """Draw the panels into ``out`` (its suffix names the format: .png, .pdf, .svg); the panels drawn.

    The file is written atomically.
    """
    import matplotlib

    matplotlib.use("Agg")  # no display on a cluster node
    import matplotlib.pyplot as plt

    from .atomic import atomic_path

    fig, axes = plt.subplots(2, 2, figsize=(12, 8.5))
    ax_err, ax_w, ax_t, ax_g = axes.ravel()
    drawn = ["errors"]
    _panel_errors(ax_err, logs)
    if _panel_weights(ax_w, logs):
        drawn.append("weights")
    else:
        ax_w.text(0.5, 0.5, "no weight statistics in this log", ha="center", va="center", transform=ax_w.transAxes)
    if _panel_time(ax_t, logs):
        drawn.append("time")
    else:
        ax_t.text(0.5, 0.5, "no timings in this log", ha="center", va="center", transform=ax_t.transAxes)
    if _panel_groups(ax_g, logs, curves):
        drawn.append("groups")
    else:
        ax_g.text(0.5, 0.5, "no per-domain figures in this log:\ngive --model and --data for them",
                  ha="center", va="center", transform=ax_g.transAxes)
    for ax in axes.ravel():
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="best")
        ax.grid(alpha=0.3)
    s = logs[0].summary or {}
    if title is None:
        bits = [str(s[k]) for k in ("algorithm",) if k in s]
        if not logs[0].online:
            bits.append(f"{max(r['round'] for r in logs[0].records):,} rounds")
        else:
            bits.append(f"{max(r['examples'] for r in logs[0].records):,} examples")
        title = " · ".join([", ".join(log.label for log in logs)] + bits)
    fig.suptitle(title)
    fig.tight_layout()
    fmt = os.path.splitext(out)[1].lstrip(".").lower() or "png"
    with atomic_path(out) as tmp:
        fig.savefig(tmp, format=fmt, dpi=dpi)
    plt.close(fig)
    return drawn


def draw_importance(model, out: str, kind: str = "gain", top: int = 20, title: Optional[str] = None,
                    dpi: int = 120) -> list[str]:
    """A bar chart of the ``top`` features by importance (``kind``: ``gain`` or ``split``, see
    :meth:`mpiboost.model.Model.feature_importances`) into ``out`` (.png, .pdf, .svg), written atomically;
    the features drawn, most important first."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .atomic import atomic_path

    imp = model.feature_importances(kind)
    names = model.feature_names or [f"x{j}" for j in range(model.n_features)]
    order = [j for j in sorted(range(len(imp)), key=lambda j: (-imp[j], j)) if imp[j] > 0][:top]
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.3 * max(len(order), 1)))
    if order:
        ax.barh(range(len(order))[::-1], [imp[j] for j in order], color="tab:blue")
        ax.set_yticks(range(len(order))[::-1], [str(names[j]) for j in order], fontsize=8)
    else:
        ax.text(0.5, 0.5, f"no {kind} importance in this model", ha="center", va="center", transform=ax.transAxes)
    what = "sum of the split gains" if kind == "gain" else "number of splits"
    ax.set_xlabel(f"{kind} importance ({what})")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title or f"{model.algorithm}: the {len(order)} most important features by {kind}")
    fig.tight_layout()
    fmt = os.path.splitext(out)[1].lstrip(".").lower() or "png"
    with atomic_path(out) as tmp:
        fig.savefig(tmp, format=fmt, dpi=dpi)
    plt.close(fig)
    return [str(names[j]) for j in order]


FORMATS = ("png", "pdf", "svg")


def check_format(out: str) -> None:
    """``--out``'s suffix must name a format the figure can be written in."""
    fmt = os.path.splitext(out)[1].lstrip(".").lower()
    if fmt not in FORMATS:
        raise InputError(f"--out {out}: the figure's format comes from the suffix: one of "
                         f"{', '.join('.' + f for f in FORMATS)}")
