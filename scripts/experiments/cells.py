"""The cached result cells of the online experiments (online_table1.py, online_defaults.py).

A cell is one (data set, method, setting, shuffle) run; a :class:`Store`
keeps them in a JSON file, so a rerun skips the cells it holds, and
:func:`run_tasks` runs the missing ones in worker processes.
"""
from __future__ import annotations

import json
import math
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Callable

import numpy as np

import common as C


class Store:
    """Every cell of one experiment, keyed by its name, in a JSON file (replaced atomically on each save)."""

    def __init__(self, path: Path):
        self.path = path
        self.cells = json.loads(path.read_text()).get("cells", {}) if path.exists() else {}

    def save(self, meta: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"meta": meta, "cells": self.cells}, indent=1, sort_keys=True))
        tmp.replace(self.path)


def run_tasks(tasks: list[dict], store: Store, meta: dict, jobs: int, what: str,
              worker: Callable[[dict], tuple[str, dict]]) -> None:
    """Run the tasks whose key ``store`` lacks on ``jobs`` processes (``worker(task) -> (key, result)``)."""
    todo = [t for t in tasks if t["key"] not in store.cells]
    C.log(f"{what}: {len(tasks)} cells, {len(tasks) - len(todo)} cached, {len(todo)} to run on {jobs} processes")
    if not todo:
        return
    t0, done = time.perf_counter(), 0
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(worker, t) for t in todo]
        for fut in as_completed(futures):
            key, res = fut.result()
            done += 1
            if "error" in res:
                C.log(f"[{done}/{len(todo)}] {key}: FAILED {res['error']}")  # not cached: retried next run
                continue
            store.cells[key] = res
            store.save(meta)
            C.log(f"[{done}/{len(todo)}] {key}: acc_test {100 * (res['acc_test'] or 0):.1f}% "
                  f"{res['seconds']:.1f} s ({time.perf_counter() - t0:.0f} s so far)")


def mean(values) -> float:
    v = [x for x in values if x is not None]
    return float(np.mean(v)) if v else math.nan


def acc(values) -> str:
    """'mean ± std' in percent over the shuffles (sample std)."""
    v = [100 * x for x in values if x is not None]
    if not v:
        return "–"
    return f"{np.mean(v):.1f}" if len(v) == 1 else f"{np.mean(v):.1f} ± {np.std(v, ddof=1):.1f}"


def gstr(g) -> str:
    return "–" if g is None else f"{g:g}"
