"""Callbacks of the training loop: progress, metrics log, checkpoints.

The loop in :mod:`mpiboost.driver.batch` knows nothing of logging or files; it calls
every callback at three points with a :class:`RoundEnv`:

- ``on_train_begin(env)``: after loading, before round 1 (``env.t`` = rounds already done);
  return True if training must not go on (a resumed run already stopped);
- ``on_round_end(env)``: after each round; return True to stop training;
- ``on_train_end(env)``: once, after the last round;
- ``on_fit_end(env)``: after each training of a selection phase before the rounds (the ``auto``
  search, SmoothBoost's noise check, the transfer algorithms' source screen and ``--source-trust
  cv`` folds), with a :class:`FitEnv`: the phase, ``done`` of ``total`` trainings, the candidate, its
  rounds and seconds. By default it calls ``on_search(what, done, total, is_center)``, the older hook.

Callbacks run on every rank; those that write (files, the terminal) act on the
center only (``env.is_center``). A callback that stops training must decide
from values that are the same on every rank (the metrics are).

As in LightGBM, each callback has an ``order``: the driver calls them sorted
by it (stable), so :class:`BestRound` (order 30) has decided whether to stop
before the writers (order 40+) see the round.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from .model import Model


@dataclass
class RoundEnv:
    """What a callback sees."""

    t: int  # rounds completed
    rounds: int  # rounds asked for
    model: Model
    is_center: bool
    metrics: dict = field(default_factory=dict)  # the last round's metrics
    summary: dict = field(default_factory=dict)  # filled for on_train_end
    run: dict = field(default_factory=dict)  # what the model belongs to: seed, data fingerprint (checkpoints)
    valid_history: list = field(default_factory=list)  # validation errors of the rounds replayed from a checkpoint


@dataclass
class FitEnv:
    """What a callback sees after one training of a selection phase (:meth:`Callback.on_fit_end`)."""

    what: str  # the phase: "noise check", "search of --epsilon auto", ...
    done: int  # trainings of the phase done, this one included
    total: int  # trainings the phase makes
    is_center: bool
    candidate: str = ""  # what this training was: "AdaBoost", "--epsilon 0.1", "fold 2: target", ...
    rounds: int = 0  # rounds it trained
    seconds: float = 0.0  # its time


class Callback:
    """Base class: override what you need; ``order`` sorts the callbacks (lower first)."""

    order: int = 50

    def on_train_begin(self, env: RoundEnv) -> None:
        pass

    def on_round_end(self, env: RoundEnv) -> Optional[bool]:
        return None

    def on_train_end(self, env: RoundEnv) -> None:
        pass

    def on_fit_end(self, env: FitEnv) -> None:
        self.on_search(env.what, env.done, env.total, env.is_center)

    def on_search(self, what: str, done: int, total: int, is_center: bool) -> None:
        pass


class ProgressBar(Callback):
    """A tqdm bar on the center, silent when stderr is not a terminal."""

    order = 10

    def __init__(self, enabled: Optional[bool] = None) -> None:
        self.enabled = enabled
        self.bar = None

    def on_train_begin(self, env: RoundEnv) -> None:
        if not env.is_center:
            return
        from tqdm import tqdm

        disable = (not sys.stderr.isatty()) if self.enabled is None else not self.enabled
        self.bar = tqdm(total=env.rounds, initial=env.t, desc=env.model.algorithm, unit="round", disable=disable, file=sys.stderr)

    def on_round_end(self, env: RoundEnv) -> None:
        if self.bar is not None:
            post = {"train": f"{env.metrics.get('train_error', env.metrics.get('train_metric', float('nan'))):.4g}"}
            if "valid_error" in env.metrics:
                post["valid"] = f"{env.metrics['valid_error']:.4f}"
            self.bar.set_postfix(post, refresh=False)
            self.bar.update(1)

    def on_train_end(self, env: RoundEnv) -> None:
        if self.bar is not None:
            self.bar.close()

    def on_search(self, what: str, done: int, total: int, is_center: bool) -> None:
        if not is_center:
            return
        if self.bar is None or getattr(self.bar, "total", None) != total or done == 1:
            from tqdm import tqdm

            disable = (not sys.stderr.isatty()) if self.enabled is None else not self.enabled
            self.bar = tqdm(total=total, desc=what, unit="fit", disable=disable, file=sys.stderr)
        self.bar.update(1)
        if done == total:
            self.bar.close()
            self.bar = None


class RoundLog(Callback):
    """A line on stderr every ``every`` rounds, on the center: for batch logs, where no progress bar draws.

    ``round t/T, train error, valid error, seconds, rounds/s, ETA``. ``every`` None: a tenth of the rounds
    when stderr is not a terminal (a job's log), else nothing (the progress bar shows it); 0: never.
    """

    order = 11

    def __init__(self, every: Optional[int] = None, stream=None) -> None:
        self.every = every
        self.stream = stream
        self.start = 0.0
        self.t0 = 0

    def on_train_begin(self, env: RoundEnv) -> None:
        import time

        stream = self.stream or sys.stderr
        if self.every is None:
            self.every = 0 if stream.isatty() else max(1, (env.rounds - env.t) // 10)
        self.stream = stream
        self.start, self.t0 = time.perf_counter(), env.t

    def on_round_end(self, env: RoundEnv) -> None:
        if not env.is_center or not self.every or (env.t % self.every and env.t != env.rounds):
            return
        import time

        m = env.metrics
        seconds = time.perf_counter() - self.start
        rate = (env.t - self.t0) / seconds if seconds > 0 else float("inf")
        eta = (env.rounds - env.t) / rate if rate > 0 else float("inf")
        parts = [f"round {env.t}/{env.rounds}"]
        if m.get("train_error") is not None:
            parts.append(f"train error {m['train_error']:.4f}")
        from .boost.losses import METRIC_NAMES

        name = METRIC_NAMES.get(m.get("metric"))
        if m.get("train_metric") is not None:  # a regression's objective metric (RMSE, MAE ...)
            parts.append(f"train {name} {m['train_metric']:.6g}")
        if m.get("valid_error") is not None:
            measure = (env.run or {}).get("valid_metric")  # what the validation rows measure, where not the error
            if "train_metric" in m:
                parts.append(f"valid {name} {m['valid_error']:.6g}")
            elif measure == "logloss":
                parts.append(f"valid log-loss {m['valid_error']:.6g}")
            elif measure == "auc":
                parts.append(f"valid AUC {1.0 - m['valid_error']:.4f}")
            else:
                parts.append(f"valid error {m['valid_error']:.4f}")
        parts += [f"{seconds:.1f} s", f"{rate:.2f} rounds/s", f"ETA {eta:.0f} s"]
        print("mpiboost: " + ", ".join(parts), file=self.stream, flush=True)

    def on_fit_end(self, env: FitEnv) -> None:
        """A line per training of a selection phase, with the phase's ETA (its trainings take about alike)."""
        import time

        if not env.is_center:
            return
        stream = self.stream or sys.stderr
        # before the rounds, on_train_begin has not chosen yet: a terminal has the progress bar
        if self.every == 0 or (self.every is None and stream.isatty()):
            return
        now = time.perf_counter()
        if env.done == 1 or getattr(self, "_phase", None) != env.what:
            self._phase, self._phase_start = env.what, now - env.seconds
        elapsed = now - self._phase_start
        eta = elapsed / env.done * (env.total - env.done)
        what = f" ({env.candidate})" if env.candidate else ""
        print(f"mpiboost: {env.what} {env.done}/{env.total}{what}: {env.rounds} rounds in {env.seconds:.2f} s, "
              f"phase {elapsed:.1f} s, ETA {eta:.0f} s", file=stream, flush=True)


class _Writer(Callback):
    """A callback that writes a file on the center; a failed write is recorded, never fatal.

    A full disk or a lost mount must not end hours of training: the writer
    warns once, stops writing, and :attr:`failure` says what happened, so the
    command can save the model and then exit with code 2 naming the file.
    """

    option = "output"

    def __init__(self) -> None:
        self.failure: Optional[str] = None

    def _failed(self, path: str, exc: Exception) -> None:
        if self.failure is None:
            from .atomic import why

            self.failure = f"{self.option} {path}: {why(exc)}"
            from . import log

            log.warning(f"{self.failure}; no longer written, training goes on")


class MetricsLog(_Writer):
    """Write one JSON object per round (and a final summary object) to a JSONL file.

    With ``append`` (a resumed run), the records of rounds after the
    checkpoint, which the resumed run repeats, and the earlier summaries are
    dropped first, so the file holds each round once; ``keep`` (the
    checkpoint's rounds) keeps those even when this run stops before them.
    """

    option = "--metrics"
    order = 40

    def __init__(self, path: str | os.PathLike, append: bool = False) -> None:
        super().__init__()
        self.path = os.fspath(path)
        self.append = append
        self.keep = 0
        self.file: Any = None

    def on_train_begin(self, env: RoundEnv) -> None:
        if not env.is_center:
            return
        if self.path == "-":  # standard output: the records go to the job's log, beside the summary line
            import sys

            self.file = _Unclosed(sys.stdout)
            return
        try:
            if self.append and os.path.exists(self.path):
                keep_rounds_up_to(self.path, max(env.t, self.keep))
            self.file = open(self.path, "a" if self.append else "w", encoding="utf-8")
        except OSError as exc:
            self._failed(self.path, exc)

    def _write(self, record: dict) -> None:
        if self.file is None:
            return
        try:
            self.file.write(json.dumps(record, sort_keys=True) + "\n")
            self.file.flush()
        except OSError as exc:
            self._close()
            self._failed(self.path, exc)

    def _close(self) -> None:
        f, self.file = self.file, None
        if f is not None:
            try:
                f.close()
            except OSError:
                pass

    def on_round_end(self, env: RoundEnv) -> None:
        self._write(env.metrics)

    def on_train_end(self, env: RoundEnv) -> None:
        self._write({"summary": env.summary})
        if self.file is not None:
            try:
                self.file.close()
            except OSError as exc:
                self._failed(self.path, exc)
            self.file = None


class _Unclosed:
    """A stream the log writes to but does not own (standard output): ``close`` only flushes."""

    def __init__(self, stream) -> None:
        self.stream = stream

    def write(self, text: str) -> None:
        self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()

    def close(self) -> None:
        self.stream.flush()


def keep_rounds_up_to(path: str, t: int) -> None:
    """Rewrite a metrics log (atomically) keeping the round records of rounds ``<= t`` only."""
    from .atomic import atomic_path

    with open(path, "rb") as f:
        lines = f.read().splitlines()
    kept = []
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # a line cut short when the earlier run was killed
        if isinstance(rec, dict) and isinstance(rec.get("round"), int) and rec["round"] <= t:
            kept.append(line)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(b"".join(line + b"\n" for line in kept))


class Checkpoint(_Writer):
    """Save the partial model every ``every`` rounds (atomically) on the center.

    The run's record (``env.run``: seed, data fingerprint) is stored in the
    checkpoint's ``info["checkpoint"]``, so ``--resume`` can refuse a
    checkpoint of another run. A checkpoint never loses rounds: with ``keep`` (the rounds
    of the checkpoint being resumed) a shorter model is not saved over it.
    """

    option = "--checkpoint"
    order = 45

    def __init__(self, path: str | os.PathLike, every: int = 10, keep: int = 0) -> None:
        super().__init__()
        if every < 1:
            raise ValueError("checkpoint interval must be at least 1")
        self.path = os.fspath(path)
        self.every = every
        self.keep = int(keep)

    def _save(self, env: RoundEnv) -> None:
        model = env.model
        if self.failure is not None or model.n_rounds < self.keep:
            return
        ckpt = Model(**{**{k: v for k, v in model.__dict__.items() if not k.startswith("_")}, "info": {**model.info, "checkpoint": env.run}})
        try:
            ckpt.save(self.path)
        except (OSError, RuntimeError) as exc:
            self._failed(self.path, exc)

    def on_round_end(self, env: RoundEnv) -> None:
        if env.is_center and env.t % self.every == 0:
            self._save(env)

    def on_train_end(self, env: RoundEnv) -> None:
        if env.is_center:
            self._save(env)


def sorted_callbacks(callbacks) -> list:
    """The callbacks in the order the driver calls them (by ``order``, stable)."""
    return sorted(callbacks, key=lambda cb: getattr(cb, "order", 50))


class BestRound(Callback):
    """Track the validation error of every round; the best round; optionally stop early.

    The best round is the one with the lowest validation error, the earliest
    of equal ones (fewer stumps for the same error). With ``patience`` K,
    training stops once K rounds in a row have not improved on it (LightGBM's
    ``early_stopping``). The errors come from collective reductions, the same
    on every rank, so every rank stops at the same round.

    A resumed run passes the errors of the replayed rounds in
    ``env.valid_history``, so the choice is the uninterrupted run's.
    """

    order = 30

    def __init__(self, patience: Optional[int] = None) -> None:
        if patience is not None and patience < 1:
            raise ValueError("patience must be at least 1 round")
        self.patience = patience
        self.errors: list = []

    def on_train_begin(self, env: RoundEnv) -> Optional[bool]:
        self.errors = [float(e) for e in env.valid_history]
        # A checkpoint of a run that stopped early holds every round it trained: resuming it
        # must stop where it stopped, not train one more round before checking the patience.
        return self.patience is not None and bool(self.errors) and len(self.errors) - self.best_round >= self.patience

    def _note(self, t: int, err: float) -> None:
        # rounds are 1..t in order; a replayed prefix may already hold some of them
        del self.errors[t - 1:]
        self.errors.append(float(err))

    @property
    def best_round(self) -> int:
        """The earliest round of the lowest validation error (0 before any round)."""
        if not self.errors:
            return 0
        return int(np.argmin(np.asarray(self.errors))) + 1

    @property
    def best_error(self) -> Optional[float]:
        return float(min(self.errors)) if self.errors else None

    def on_round_end(self, env: RoundEnv) -> Optional[bool]:
        err = env.metrics.get("valid_error")
        if err is None:
            return None
        self._note(env.t, err)
        return self.patience is not None and env.t - self.best_round >= self.patience

    def summary(self, points: int = 12) -> dict:
        """The validation curve in brief: best round and error, last error, errors at ~log-spaced rounds."""
        if not self.errors:
            return {"best_round": 0, "best_error": None, "rounds_trained": 0, "curve": {}}
        n = len(self.errors)
        marks = sorted({int(round(x)) for x in np.geomspace(1, n, num=min(points, n))} | {self.best_round, n})
        return {
            "best_round": self.best_round,
            "best_error": self.best_error,
            "last_error": float(self.errors[-1]),
            "rounds_trained": n,
            "curve": {str(t): float(self.errors[t - 1]) for t in marks},
        }
