#!/usr/bin/env python
"""Other source-trust rules applied to the recorded fold outcomes of ``transfer_claims.py``.

The default rule (``--source-trust cv``) keeps an incumbent (pooling when every source alone passes the
screen, else the transfer algorithm) unless another way to use the sources gains more than one standard
error on the held-out target rows. Its records hold every way's paired counts against the incumbent and
against the target alone (``vs_target``), so rules with another incumbent can be applied to the same folds
without training again. Each rule's choice is then scored by the test error of that way trained on every
row, which the same records hold (``msdtra:source_trust=algorithm``, ``adaboost-pooled``,
``adaboost-target``). Rules:

* ``default``: the recorded choice;
* ``target-first``: the target alone is the incumbent whenever the folds run (a prior toward the target rows);
* ``weak-L``: the target alone is the incumbent when no screened model passes the screen at the stricter
  family-wise level L (the screen's evidence for the sources is weak), the default rule otherwise.

    python scripts/experiments/transfer_claims.py --datasets digits-shift0 digits-shift1 digits-shift2 \\
        digits-shift3 synth helpful unrelated adversarial --reps 10 \\
        --methods msdtra msdtra:source_trust=algorithm adaboost-target adaboost-pooled
    python scripts/experiments/trust_rules.py --records <workdir>/records.jsonl
"""
from __future__ import annotations

import argparse
import collections
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

WAYS = {"algorithm": "msdtra:source_trust=algorithm", "pooled": "adaboost-pooled", "target": "adaboost-target"}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=Path, default=C.DEFAULT_WORKDIR / "transfer-claims" / "records.jsonl",
                   help="transfer_claims.py's records (JSONL)")
    p.add_argument("--levels", type=float, nargs="+", default=[0.01, 0.001], help="the weak-L rules' levels")
    p.add_argument("--out", type=Path, help="also write the table here")
    return p.parse_args(argv)


def with_target_incumbent(rec: dict) -> str:
    """The one-standard-error rule with the target alone as the incumbent (the larger gain wins)."""
    chosen, best = "target", 0.0
    for way in ("algorithm", "pooled"):
        g, se = rec["vs_target"][way]["gain"], rec["vs_target"][way]["se"]
        if g > 0 and g > se and g > best:
            chosen, best = way, g
    return chosen


def strong(rec: dict, level: float) -> bool:
    """Whether some screened model passes the screen's one-sided t-test at the family-wise ``level``."""
    from scipy.stats import t as student

    n, screen = rec["n_target"], rec["screen"]
    each = 1.0 - (1.0 - level) ** (1.0 / max(len(screen), 1))
    cut = student.ppf(1.0 - each, max(n - 1, 1))
    return any(v["t"] is not None and v["t"] > cut for v in screen.values())


def choose(rec: dict, rule: str) -> str:
    if rec.get("folds", 0) == 0 or rule == "default":
        return rec["chosen"]  # no folds: the screen's (or the too-few-rows) choice, the same under every rule
    if rule == "target-first":
        return with_target_incumbent(rec)
    return rec["chosen"] if strong(rec, float(rule.split("-", 1)[1])) else with_target_incumbent(rec)


def main(argv=None) -> int:
    args = parse_args(argv)
    rows = [json.loads(x) for x in args.records.read_text().splitlines() if x.strip()]
    runs = collections.defaultdict(dict)
    for r in rows:
        runs[(r["dataset"], r["nb"], r["rep"])][r["method"]] = r
    rules = ["default", "target-first", *(f"weak-{lv:g}" for lv in args.levels)]
    cells = collections.defaultdict(lambda: collections.defaultdict(list))
    for (dataset, nb, _), m in sorted(runs.items()):
        rec = (m.get("msdtra") or {}).get("source_trust_record")
        if rec is None or any(w not in m for w in WAYS.values()):
            continue
        test = {way: m[name]["error"] for way, name in WAYS.items()}
        for rule in rules:
            cells[(dataset, nb)][rule].append(test[choose(rec, rule)])
        for way in ("target", "pooled"):
            cells[(dataset, nb)]["way:" + way].append(test[way])
    table = []
    for (dataset, nb), c in sorted(cells.items()):
        better = min(("way:target", "way:pooled"), key=lambda w: np.mean(c[w]))
        row = [dataset, str(nb), str(len(c["default"]))]
        row += [f"{np.mean(c[r]):.3f}" for r in rules]
        row += [f"{better[4:]} {np.mean(c[better]):.3f}"]
        for r in rules:
            d = np.array(c[r]) - np.array(c[better])
            row.append(f"{d.mean():+.3f} ({d.std(ddof=1) / math.sqrt(len(d)) if len(d) > 1 else 0.0:.3f})")
        table.append(row)
    head = ["set", "n_b", "reps", *rules, "better baseline", *(f"{r} − baseline (SE)" for r in rules)]
    C.publish(C.markdown_table(head, table), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
