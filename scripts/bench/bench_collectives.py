"""MPI collectives and bytes per round of every batch algorithm, from ``--metrics``.

Each algorithm trains a few rounds on generated data under ``mpiexec -n P``;
the script prints, per algorithm, the median over the rounds of the collective
calls a round makes (each costs at least one network latency), the primitives
they come from, and the bytes rank 0 sends per round. With ``--ranks`` several
sizes are run; the counts of a round do not depend on P, its bytes may.

Usage::

    python scripts/bench/bench_collectives.py --ranks 2 4
    python scripts/bench/bench_collectives.py --only adaboost smoothboost --json out.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROUNDS = 6


def _bin(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def _synth(tmp: Path, n: int = 4000) -> dict:
    """Data files for each task (small by default: the counts per round do not depend on the size)."""
    cli = [_bin("mpiboost"), "synth"]
    files = {
        "binary": (["longservedio", "--n", str(n), "--noise", "0.1"], tmp / "binary.h5"),
        "multiclass": (["multiclass", "--n", str(n), "--classes", "4"], tmp / "multiclass.h5"),
        "domains": (["multisource", "--n", str(n), "--domains", "3"], tmp / "domains.h5"),
        "multitask": (["multitask", "--n", str(n)], tmp / "multitask.h5"),
    }
    for args, out in files.values():
        subprocess.run(cli + args + ["--seed", "1", "--out", str(out)], check=True, capture_output=True)
    subprocess.run(cli + ["transfer", "--n", str(n // 4), "--target-n", str(max(100, n // 40)), "--sources", "2", "--seed", "1",
                          "--out", str(tmp / "tr.h5"), "--split-domains"], check=True, capture_output=True)
    return {k: v[1] for k, v in files.items()} | {"target": tmp / "tr-target.h5",
                                                   "sources": [tmp / "tr-source1.h5", tmp / "tr-source2.h5"]}


def cases(files: dict) -> dict:
    """Algorithm (and weak learner) -> its data arguments."""
    binary, mc, dom = ["--data", str(files["binary"])], ["--data", str(files["multiclass"])], ["--data", str(files["domains"])]
    transfer = ["--target", str(files["target"]), "--source", *map(str, files["sources"])]
    return {
        "adaboost (stumps)": ["--algo", "adaboost", *binary],
        "smoothboost (stumps)": ["--algo", "smoothboost", "--noise-check", "off", *binary],
        "samme (stumps)": ["--algo", "samme", *mc],
        "softmax (trees)": ["--algo", "softmax", *mc],
        "agnostic-batch": ["--algo", "agnostic-batch", *mc],
        "adaboost logistic 31-leaf trees": ["--algo", "adaboost", "--loss", "logistic", "--weak-learner", "tree",
                                            *binary],
        "multiboost (stumps)": ["--algo", "multiboost", *dom],
        "fedmultiboost": ["--algo", "fedmultiboost", *dom],
        "tradaboost": ["--algo", "tradaboost", *transfer],
        "msdtra": ["--algo", "msdtra", "--source-trust", "algorithm", *transfer],
        "is-multitask": ["--algo", "is-multitask", "--data", str(files["multitask"])],
    }


def measure(args: list, ranks: int, tmp: Path) -> dict:
    met = tmp / "met.jsonl"
    met.unlink(missing_ok=True)
    cmd = [_bin("mpiexec"), "-n", str(ranks), _bin("mpiboost"), "train", *args, "--rounds", str(ROUNDS),
           "--model", str(tmp / "m.h5"), "--metrics", str(met), "--quiet"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"}
    rows = [json.loads(line) for line in met.read_text().splitlines()]
    rounds = [r for r in rows if "collectives" in r and "round" in r][1:]  # round 1 may set things up
    if not rounds:
        return {"error": "no rounds in --metrics"}
    calls: dict = {}
    for r in rounds:
        for prim, v in r.get("bytes", {}).items():
            calls.setdefault(prim, []).append(v.get("calls", 0))
    return {
        "collectives": statistics.median(r["collectives"] for r in rounds),
        "sent_bytes": statistics.median(sum(v["sent"] for v in r.get("bytes", {}).values()) for r in rounds),
        "calls": {p: statistics.median(c) for p, c in sorted(calls.items())},
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[2])
    ap.add_argument("--only", nargs="*", help="algorithms to run (first word of a case name)")
    ap.add_argument("--json", help="write the results here too")
    a = ap.parse_args(argv)
    out = {}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        files = _synth(tmp)
        for name, args in cases(files).items():
            if a.only and name.split()[0] not in a.only:
                continue
            for p in a.ranks:
                r = measure(args, p, tmp)
                out[f"{name} @ {p}"] = r
                if "error" in r:
                    print(f"{name:34s} -n {p}: failed: {r['error']}")
                    continue
                detail = ", ".join(f"{k} {v:g}" for k, v in r["calls"].items() if v)
                print(f"{name:34s} -n {p}: {r['collectives']:g} collectives/round, rank 0 sends "
                      f"{r['sent_bytes']:g} B/round  ({detail})", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
