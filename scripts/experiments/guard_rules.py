#!/usr/bin/env python
"""Other baseline-guard rules applied to the recorded validation counts of ``guard_table.py``.

The guard (``--baseline-guard holdout``) keeps the algorithm unless a baseline has fewer validation errors by
more than one standard error of the paired per-row differences (of several such, the larger gain wins). Its
record keeps every candidate's errors and, for every pair of candidates, the rows where exactly one of them
errs (``differ_from``), so any rule that chooses by paired counts can be applied to the same validation rows
without training again. Each rule's choice is scored by the test error of that candidate, which the same
table trained on its own (the "no guard" rows and the baselines' rows: the same training rows, seed and
validation rows, so the same models). Rules:

* ``default``: the recorded choice;
* ``argmin``: the fewest validation errors (ties: the algorithm, then the baselines in their declared order);
* ``pooled-first``: the pooled baseline is the incumbent (the simplest use of the rows), the others switch as
  in the default rule;
* ``best-switcher``: as the default, but among the baselines that beat the algorithm by a standard error, the
  one of fewest validation errors, each against the others by the same rule;
* ``specific-first``: among the baselines that beat the algorithm by a standard error, the most specific one
  (per domain or task, then pooled with the domain, then pooled) unless another beats it by a standard error;
* ``baseline-first``: the baseline of fewest validation errors is the incumbent, and the algorithm is kept only
  where it beats that baseline by more than a standard error (the algorithm earns its place by evidence).

    python scripts/experiments/guard_table.py --workdir W
    python scripts/experiments/guard_rules.py --results W/results.json
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

# the table's row that trains each candidate of each guarded method alone
CANDIDATES = {
    "multiboost": {"algorithm": "multiboost, no guard", "pooled": "pooled (logistic trees)",
                   "pooled-id": "pooled + task id (logistic trees)", "per-domain": "each task alone (AdaBoost trees)"},
    "fedmultiboost": {"algorithm": "fedmultiboost, no guard", "pooled": "pooled (logistic trees)",
                      "pooled-id": "pooled + task id (logistic trees)",
                      "per-domain": "each task alone (AdaBoost trees)"},
    "is-multitask": {"algorithm": "is-multitask, no guard", "pooled": "pooled + task id (logistic trees)",
                     "per-task": "each task alone (AdaBoost)"},
}


def gain_se(rec: dict, a: str, b: str) -> tuple[float, float]:
    """The gain of ``b`` over ``a`` (errors of a minus errors of b, per row) and its standard error."""
    n, t = rec["held_out"], rec["tried"]
    total = t[a]["errors"] - t[b]["errors"]
    squares = t[a]["differ_from"][b] if a != b else 0
    var = max(squares - total ** 2 / n, 0.0) / max(n - 1, 1)
    return total / n, math.sqrt(var / n)


# the order the algorithms declare their baselines in, the algorithm first: the guard's order of ties (a
# record's keys come back sorted by name from JSON)
DECLARED = ["algorithm", "pooled", "pooled-id", "per-domain", "per-task"]


def declared(rec: dict) -> list:
    """The record's candidates in the guard's order."""
    return sorted(rec["tried"], key=DECLARED.index)


def by_incumbent(rec: dict, incumbent: str) -> str:
    chosen, best = incumbent, 0.0
    for k in declared(rec):
        if k == incumbent:
            continue
        g, se = gain_se(rec, incumbent, k)
        if g > 0 and g > se and g > best:
            chosen, best = k, g
    return chosen


def rules(rec: dict) -> dict:
    names = declared(rec)
    errors = {k: rec["tried"][k]["errors"] for k in names}
    argmin = min(names, key=lambda k: (errors[k], names.index(k)))
    switchers = [k for k in names[1:] if (lambda g: g[0] > 0 and g[0] > g[1])(gain_se(rec, "algorithm", k))]
    best = "algorithm"
    if switchers:
        best = min(switchers, key=lambda k: (errors[k], names.index(k)))
    # the most specific baseline first: a model per domain, then pooled with the domain, then pooled
    order = [k for k in ("per-domain", "per-task", "pooled-id", "pooled") if k in switchers]
    specific = "algorithm"
    if order:
        specific = order[0]
        for k in order[1:]:
            g, se = gain_se(rec, specific, k)
            if g > 0 and g > se:
                specific = k
    # the baselines first: the one of fewest validation errors (ties: declared order) is the incumbent, and the
    # algorithm must beat it by a standard error to be kept
    incumbent = min(names[1:], key=lambda k: (errors[k], names.index(k)))
    g, se = gain_se(rec, incumbent, "algorithm")
    baseline_first = "algorithm" if g > 0 and g > se else incumbent
    return {"default": rec["chosen"], "argmin": argmin, "specific-first": specific,
            "baseline-first": baseline_first,
            "pooled-first": by_incumbent(rec, "pooled") if "pooled" in names else rec["chosen"],
            "best-switcher": best}


RULES = ("default", "argmin", "pooled-first", "best-switcher", "specific-first", "baseline-first")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", type=Path, required=True, help="guard_table.py's results.json")
    p.add_argument("--out", type=Path, help="also write the table here")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    results = json.loads(args.results.read_text())
    rows = []
    for name, out in results.items():
        for method, cands in CANDIDATES.items():
            if method not in out or not all(v in out for v in cands.values()):
                continue
            picked: dict = {}
            best_possible = []
            for r, rep in enumerate(out[method]):
                rec = rep.get("record") or {}
                if "differ_from" not in next(iter(rec.get("tried", {}).values()), {}):
                    break
                test = {k: float(np.mean(out[row][r]["errors"])) for k, row in cands.items()}
                for rule, k in rules(rec).items():
                    picked.setdefault(rule, []).append(test[k])
                best_possible.append(min(test.values()))
            if not picked:
                continue
            base = {k: np.array([float(np.mean(x["errors"])) for x in out[row]]) for k, row in cands.items()
                    if k != "algorithm"}
            cells = [name, method]
            for rule in RULES:
                e = np.array(picked[rule])
                worst = max(base, key=lambda k: float(np.mean(e - base[k])))
                d = e - base[worst]
                cells.append(f"{e.mean():.4f} ({worst} {d.mean():+.4f} ± {d.std(ddof=1) / math.sqrt(d.size):.4f})")
            cells.append(f"{np.mean(best_possible):.4f}")
            rows.append(cells)
    table = C.markdown_table(["set", "method", *RULES, "best candidate (oracle)"], rows)
    C.publish("Test error of each rule's choice, mean over the repetitions (in brackets: the baseline it is "
              "furthest behind, the paired difference and its standard error).\n\n" + table + "\n", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
