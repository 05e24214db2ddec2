"""Per-round time of mpiboost at many ranks, predicted from measured latency and bandwidth.

Three steps, each a subcommand:

``probe``   (run under ``mpiexec -n P``; across two nodes to measure a network) times an 8-byte
            and a 4 MiB int64 ``Allreduce`` and the 1 KiB "sum, then max" reduction mpiboost's
            exact statistics use, and prints the fitted latency ``alpha`` (s), inverse bandwidth
            ``beta`` (s/byte) and the cost of one step of the user-defined operation.
``predict`` trains a few rounds of each algorithm on one rank's rows at ``-n 1`` (the compute of a
            round) and on twice as many at ``-n 2`` with ``--metrics`` (each round's collectives: calls
            and bytes per primitive), and prints the measured round times and the predicted one at P
            ranks with the same rows per rank (weak scaling):

                T(P) = compute + sum over calls of cost(collective, P, bytes)

            with the textbook costs of the algorithms MPI libraries use (Thakur, Rabenseifner and
            Gropp 2005): binomial trees ``L (alpha + m beta)`` for small messages,
            ``2 L alpha + 2 (P-1)/P m beta`` (reduce-scatter + allgather) for large, ``L = ceil(log2 P)``;
            allgather and gather ``L alpha + (P-1) m beta``.
``all``     both, with the probe run here at ``-n 2``.

Usage::

    python scripts/bench/cost_model.py all --ranks 2 64 1024
    mpiexec -n 2 -ppn 1 -hosts a,b python scripts/bench/cost_model.py probe   # a network's alpha, beta
    python scripts/bench/cost_model.py predict --alpha 1.5e-6 --beta 8e-11 --ranks 64 1024
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# what MPI collective each primitive's calls are, and how the metrics of rank 0 give the bytes m of one call
KIND = {
    "reduce_histograms": "reduce", "tree_histograms": "reduce", "broadcast_hypothesis": "bcast",
    "reduce_stats": "allreduce", "signal_check": "allreduce", "weight_sums": "allgather",
    "proportional_sample": "gather", "tree_splits": "allgather", "block_labels": "allreduce",
}


def probe(reps: int = 200) -> dict:
    """Collective: time the probes on ``COMM_WORLD``; rank 0 returns the fit."""
    import numpy as np
    from mpi4py import MPI

    from mpiboost.comm import Comm

    comm = MPI.COMM_WORLD
    P = comm.Get_size()
    L = max(1, math.ceil(math.log2(P)))

    def timed(fn) -> float:
        times = []
        for _ in range(reps):
            comm.Barrier()
            t0 = MPI.Wtime()
            fn()
            times.append(MPI.Wtime() - t0)
        return statistics.median(times[reps // 5 :])  # the first fifth warms up

    small = np.ones(1, dtype=np.int64)
    out1 = np.empty_like(small)
    big = np.ones(1 << 19, dtype=np.int64)  # 4 MiB
    outb = np.empty_like(big)
    t_small = timed(lambda: comm.Allreduce(small, out1, op=MPI.SUM))
    t_big = timed(lambda: comm.Allreduce(big, outb, op=MPI.SUM))
    wrapped = Comm(comm)
    kib = np.ones(120, dtype=np.int64)
    t_kib = timed(lambda: comm.Allreduce(kib, np.empty_like(kib), op=MPI.SUM))
    t_op = timed(lambda: wrapped.allreduce_exact(kib, np.ones(8, dtype=np.int64)))
    alpha = t_small / L
    m = big.nbytes
    beta = max(0.0, (t_big - 2 * L * alpha) / (2 * (P - 1) / P * m))
    op_step = max(0.0, (t_op - t_kib) / L)
    return {"ranks": P, "alpha": alpha, "beta": beta, "op_step": op_step,
            "allreduce_8B": t_small, "allreduce_4MiB": t_big, "sum_max_1KiB": t_op}


def cost(kind: str, P: int, m: float, alpha: float, beta: float, op_step: float = 0.0) -> float:
    """Seconds of one collective of ``m`` bytes (per rank's part, for the gathers) on ``P`` ranks."""
    if P <= 1:
        return 0.0
    L = math.ceil(math.log2(P))
    tree = L * (alpha + m * beta)
    split = 2 * L * alpha + 2 * (P - 1) / P * m * beta
    if kind in ("reduce", "bcast"):
        return min(tree, split)
    if kind == "allreduce":
        return min(tree, split) + L * op_step
    if kind in ("allgather", "gather"):
        return L * alpha + (P - 1) * m * beta
    raise ValueError(kind)


def round_profile(metrics_path: Path, P: int) -> dict:
    """Median compute seconds of a round and, per primitive, (kind, calls, bytes per call) from ``--metrics``."""
    rows = [json.loads(line) for line in metrics_path.read_text().splitlines()]
    rounds = [r for r in rows if "round" in r and "bytes" in r][1:]
    compute, prims = [], {}
    for r in rounds:
        mpi = sum(v.get("seconds", 0.0) for v in r["bytes"].values())
        compute.append(max(0.0, sum(r["seconds"].values()) - mpi))
        for name, v in r["bytes"].items():
            calls = v.get("calls", 0)
            if not calls:
                continue
            kind = KIND.get(name, "allreduce")
            if kind == "reduce":
                m = v["received"] / (P - 1) / calls  # rank 0 is the root
            elif kind in ("bcast", "allgather"):
                m = v["sent"] / (P - 1) / calls
            elif kind == "gather":
                m = v["received"] / (P - 1) / calls
            else:
                m = v["sent"] / calls
            prims.setdefault(name, []).append((kind, calls, m))
    profile = {name: (v[0][0], statistics.median(c for _, c, _ in v), statistics.median(m for _, _, m in v))
               for name, v in prims.items()}
    measured = statistics.median(sum(r["seconds"].values()) for r in rounds)
    return {"compute": statistics.median(compute), "primitives": profile, "measured": measured}


def predict(profile: dict, P: int, net: dict, anchor: int = 2) -> float:
    """The round measured at ``anchor`` ranks plus what its collectives cost more at ``P`` ranks.

    Anchoring at a measured round keeps what the formulas leave out (the compute, Python's and
    mpi4py's time per call, imbalance) as measured; only the growth with P is modelled.
    """
    def comm_cost(p: int) -> float:
        return sum(calls * cost(kind, p, m, net["alpha"], net["beta"],
                                net.get("op_step", 0.0) if name == "reduce_stats" else 0.0)
                   for name, (kind, calls, m) in profile["primitives"].items())

    return profile["measured"] + comm_cost(P) - comm_cost(anchor)


def _bin(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("probe", "predict", "all"))
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 64, 1024])
    ap.add_argument("--alpha", type=float, help="latency, seconds (default: probed here at -n 2)")
    ap.add_argument("--beta", type=float, help="seconds per byte (default: probed here)")
    ap.add_argument("--op-step", type=float, default=None, help="seconds per step of the sum-max operation")
    ap.add_argument("--rows-per-rank", type=int, default=100_000)
    ap.add_argument("--only", nargs="*", help="algorithms (first word of a case name)")
    a = ap.parse_args(argv)
    if a.what == "probe":
        res = probe()
        from mpi4py import MPI

        if MPI.COMM_WORLD.Get_rank() == 0:
            print(json.dumps(res))
        return 0
    net = {}
    if a.what == "all" or a.alpha is None or a.beta is None:
        out = subprocess.run([_bin("mpiexec"), "-n", "2", sys.executable, __file__, "probe"],
                             capture_output=True, text=True, check=True).stdout
        net = json.loads(out.strip().splitlines()[-1])
        print(f"probed at -n 2 here: alpha {net['alpha'] * 1e6:.2f} us, bandwidth {1e-9 / max(net['beta'], 1e-30):.2f} "
              f"GB/s, sum-max step {net['op_step'] * 1e6:.2f} us (Allreduce 8 B {net['allreduce_8B'] * 1e6:.1f} us, "
              f"4 MiB {net['allreduce_4MiB'] * 1e3:.2f} ms)")
    net["alpha"] = a.alpha if a.alpha is not None else net["alpha"]
    net["beta"] = a.beta if a.beta is not None else net["beta"]
    if a.op_step is not None:
        net["op_step"] = a.op_step
    from bench_collectives import _synth, cases

    print(f"model: alpha {net['alpha'] * 1e6:.2f} us, {1e-9 / max(net['beta'], 1e-30):.2f} GB/s; "
          f"{a.rows_per_rank:,} rows per rank (weak scaling); seconds per round")
    header = "".join(f"{'P=' + str(p):>11s}" for p in a.ranks)
    print(f"{'algorithm':34s}{'coll.':>6s}{'-n 1':>10s}{'-n 2':>10s}{header}   (-n 1, -n 2: measured; P=: predicted)")
    with tempfile.TemporaryDirectory() as d:
        one, two = Path(d) / "one", Path(d) / "two"
        one.mkdir(), two.mkdir()
        cases_one = cases(_synth(one, n=a.rows_per_rank))
        cases_two = cases(_synth(two, n=2 * a.rows_per_rank))
        for name, args in cases_two.items():
            if a.only and name.split()[0] not in a.only:
                continue
            profs = []
            for P, run_args, where in ((1, cases_one[name], one), (2, args, two)):
                met = where / "met.jsonl"
                met.unlink(missing_ok=True)
                proc = subprocess.run([_bin("mpiexec"), "-n", str(P), _bin("mpiboost"), "train", *run_args,
                                       "--rounds", "20", "--threads", "1", "--model", str(where / "m.h5"),
                                       "--metrics", str(met), "--quiet"], capture_output=True, text=True)
                if proc.returncode != 0:
                    print(f"{name:34s} failed at -n {P}: {proc.stderr.strip().splitlines()[-1:]}")
                    break
                profs.append(round_profile(met, max(P, 2)))
            else:
                prof = dict(profs[1], compute=profs[0]["measured"])  # one rank's rows, no MPI: the compute
                n_coll = sum(c for _, c, _ in prof["primitives"].values())
                cells = "".join(f"{predict(prof, p, net):11.4f}" for p in a.ranks)
                print(f"{name:34s}{n_coll:6g}{prof['compute']:10.4f}{prof['measured']:10.4f}{cells}", flush=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
