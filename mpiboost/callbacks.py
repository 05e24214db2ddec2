"""Callbacks of the training loop: progress, metrics log, checkpoints.

The loop in :mod:`mpiboost.train` knows nothing of logging or files; it calls
every callback at three points with a :class:`RoundEnv`:

``on_train_begin(env)``  after loading, before round 1 (``env.t`` = rounds already done);
``on_round_end(env)``    after each round; return True to stop training;
``on_train_end(env)``    once, after the last round.

Callbacks run on every rank; those that write (files, the terminal) act on the
center only (``env.is_center``). A callback that stops training must decide
from values that are the same on every rank (the metrics are).
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Optional

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


class Callback:
    """Base class: override what you need."""

    def on_train_begin(self, env: RoundEnv) -> None:
        pass

    def on_round_end(self, env: RoundEnv) -> Optional[bool]:
        return None

    def on_train_end(self, env: RoundEnv) -> None:
        pass


class ProgressBar(Callback):
    """A tqdm bar on the center, silent when stderr is not a terminal."""

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
            post = {"train": f"{env.metrics.get('train_error', float('nan')):.4f}"}
            if "valid_error" in env.metrics:
                post["valid"] = f"{env.metrics['valid_error']:.4f}"
            self.bar.set_postfix(post, refresh=False)
            self.bar.update(1)

    def on_train_end(self, env: RoundEnv) -> None:
        if self.bar is not None:
            self.bar.close()


class MetricsLog(Callback):
    """Write one JSON object per round (and a final summary object) to a JSONL file."""

    def __init__(self, path: str | os.PathLike, append: bool = False) -> None:
        self.path = os.fspath(path)
        self.append = append
        self.file: Any = None

    def on_train_begin(self, env: RoundEnv) -> None:
        if env.is_center:
            self.file = open(self.path, "a" if self.append else "w", encoding="utf-8")

    def on_round_end(self, env: RoundEnv) -> None:
        if self.file is not None:
            self.file.write(json.dumps(env.metrics, sort_keys=True) + "\n")
            self.file.flush()

    def on_train_end(self, env: RoundEnv) -> None:
        if self.file is not None:
            self.file.write(json.dumps({"summary": env.summary}, sort_keys=True) + "\n")
            self.file.close()
            self.file = None


class Checkpoint(Callback):
    """Save the partial model every ``every`` rounds (atomically) on the center."""

    def __init__(self, path: str | os.PathLike, every: int = 10) -> None:
        if every < 1:
            raise ValueError("checkpoint interval must be at least 1")
        self.path = os.fspath(path)
        self.every = every

    def on_round_end(self, env: RoundEnv) -> None:
        if env.is_center and env.t % self.every == 0:
            env.model.save(self.path)

    def on_train_end(self, env: RoundEnv) -> None:
        if env.is_center:
            env.model.save(self.path)
