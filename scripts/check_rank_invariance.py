"""Train every batch algorithm on 1 rank and on N ranks (oversubscribed is fine) and compare the models byte for byte.

The test suite checks 1 to 4 ranks; this script takes the same runs to more ranks than the machine has
cores (``mpiexec -n 16`` on a laptop), where blocks get small, some ranks may hold a handful of rows,
and the MPI library switches to its algorithms for larger communicators.

Usage::

    python scripts/check_rank_invariance.py --ranks 16
    python scripts/check_rank_invariance.py --ranks 8 16 --rounds 30 --only adaboost msdtra
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "bench"))

from bench_collectives import _bin, _synth, cases  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[16])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--rows", type=int, default=4000, help="rows of each generated data set")
    ap.add_argument("--only", nargs="*", help="algorithms to run (first word of a case name)")
    ap.add_argument("--mpiexec-args", default="", help="extra mpiexec arguments (Open MPI: --oversubscribe)")
    a = ap.parse_args(argv)
    bad = 0
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for name, args in cases(_synth(tmp, n=a.rows)).items():
            if a.only and name.split()[0] not in a.only:
                continue
            models = {}
            for p in [1, *a.ranks]:
                out = tmp / f"m{p}.h5"
                t0 = time.perf_counter()
                proc = subprocess.run([_bin("mpiexec"), *a.mpiexec_args.split(), "-n", str(p), _bin("mpiboost"),
                                       "train", *args, "--rounds", str(a.rounds), "--threads", "1",
                                       "--model", str(out), "--quiet"], capture_output=True, text=True)
                if proc.returncode != 0:
                    print(f"{name:34s} -n {p}: exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}")
                    bad += 1
                    break
                models[p] = (out.read_bytes(), time.perf_counter() - t0)
            else:
                ref = models[1][0]
                verdicts = ", ".join(f"-n {p}: {'identical' if models[p][0] == ref else 'DIFFERENT'} "
                                     f"({models[p][1]:.1f} s)" for p in a.ranks)
                bad += sum(models[p][0] != ref for p in a.ranks)
                print(f"{name:34s} model of -n 1 ({len(ref):,} bytes) vs {verdicts}", flush=True)
    print("all identical" if not bad else f"{bad} run(s) differ or failed")
    return 1 if bad else 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
