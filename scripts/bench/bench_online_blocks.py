#!/usr/bin/env python
"""Block-online throughput of `mpiboost train --algo online-agnostic`: examples/s and bytes per block.

For each number of ranks (``--ranks``, default 1 2) and block size
(``--blocks``, default 1 16 256) the stream is trained through the CLI
under mpiexec, N = 100 learners, fractional relabelling; printed: the
median examples per second of the stream phase over ``--repeat`` runs,
its ratio to one rank with B = 1, the bytes exchanged per block (all ranks
together: B x N labels of 2 bytes), and acc_test (the same for a given B
on any number of ranks: checked). The stream is the UCI satimage data (the
6,435 rows of sat.trn + sat.tst, k = 6, 36 numeric features) written to
``--workdir``, or ``--data F.h5``.

    python scripts/bench/bench_online_blocks.py                       # ~2 minutes
    python scripts/bench/bench_online_blocks.py --ranks 1 2 4 --blocks 1 16 256 --repeat 3
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "experiments"))
import benchutil as U  # noqa: E402


def _stream(workdir: str) -> str:
    import online_data  # noqa: E402  (scripts/experiments)

    from mpiboost.data.format import write_dataset

    path = os.path.join(workdir, "satimage.h5")
    if not os.path.exists(path):
        X, y = online_data.load("satimage", online_data.C.DATASETS)[:2]
        write_dataset(path, X, y)
    return path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", help="an mpiboost data file (default: satimage, written to --workdir)")
    p.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    p.add_argument("--blocks", type=int, nargs="+", default=[1, 16, 256])
    p.add_argument("--learners", type=int, default=100)
    p.add_argument("--gamma", type=float, default=0.5)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "mpiboost-bench-online"))
    p.add_argument("--mpiexec")
    p.add_argument("--json", help="write the rows here")
    args = p.parse_args(argv)
    U.make_workdir(args.workdir)
    data = args.data or _stream(args.workdir)
    mpiexec = U.find_mpiexec(args.mpiexec)
    print(U.load_line(), file=sys.stderr)
    rows, base, acc_of_block = [], None, {}
    for B in args.blocks:
        for n in args.ranks:
            rates, last = [], None
            for r in range(args.repeat):
                model = os.path.join(args.workdir, f"m-{n}-{B}.h5")
                cmd = [mpiexec, "-n", str(n), sys.executable, "-m", "mpiboost", "train", "--algo", "online-agnostic",
                       "--data", data, "--model", model, "--n-learners", str(args.learners), "--gamma",
                       str(args.gamma), "--block-size", str(B), "--shuffle", "1", "--quiet"]
                _, out, err, code = U.run_cmd(cmd, timeout=3600)
                if code != 0:
                    sys.exit(f"failed: {' '.join(cmd)}\n{err[-2000:]}")
                last = json.loads(out.strip().splitlines()[-1])
                rates.append(last["examples_per_s"])
            rate = float(np.median(rates))
            if base is None:
                base = rate
            acc_of_block.setdefault(B, last["acc_test"])
            same = acc_of_block[B] == last["acc_test"]
            rows.append({"ranks": n, "block_size": B, "examples_per_s": rate, "speedup": rate / base,
                         "bytes_per_block": last["bytes_per_block"], "bytes_per_example": last["bytes_per_block"] / B,
                         "acc_test": last["acc_test"], "same_as_1_rank": same})
            print(f"  -n {n} B {B}: {rate:,.0f} examples/s", file=sys.stderr)
    print(f"\nonline-agnostic, N = {args.learners}, gamma {args.gamma}, fractional, {data}; median of {args.repeat}")
    print("| ranks | B | examples/s | vs -n 1 B 1 | bytes/block | bytes/example | acc_test | same run as -n 1 |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['ranks']} | {r['block_size']} | {r['examples_per_s']:,.0f} | {r['speedup']:.2f}x | "
              f"{r['bytes_per_block']:,.0f} | {r['bytes_per_example']:,.0f} | {100 * r['acc_test']:.1f} | "
              f"{'yes' if r['same_as_1_rank'] else 'NO'} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if all(r["same_as_1_rank"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
