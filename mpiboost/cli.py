"""The ``mpiboost`` command line.

Exit codes: 0 success, 2 bad input or arguments (the message names the file,
row or rank), 1 an internal error. Under ``mpiexec`` an error on one rank ends
every rank: agreed input errors exit cleanly with code 2 everywhere, anything
else aborts the whole job.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from typing import Optional, Sequence

import numpy as np

from . import __version__
from .errors import CollectiveError, InputError

_RANK_VARS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID")


def launch_rank() -> int:
    """This process's rank as the launcher set it (0 when not launched by MPI).

    Lets the serial commands (synth, convert, info) run once under
    ``mpiexec -n K`` without initializing MPI.
    """
    for var in _RANK_VARS:
        value = os.environ.get(var)
        if value and value.isdigit():
            return int(value)
    return 0


def _serial(func):
    """Run a serial command on launch rank 0 only."""

    def wrapper(args: argparse.Namespace) -> int:
        if launch_rank() != 0:
            return 0
        return func(args)

    return wrapper


# ----------------------------------------------------------------- commands
@_serial
def cmd_synth(args: argparse.Namespace) -> int:
    from .data import format as fmt
    from .data import synth

    gen = synth.module(args.generator)
    options = {k: v for k, v in vars(args).items() if k not in _COMMON_SYNTH}
    if args.n < 1:
        raise InputError(f"--n must be at least 1, got {args.n}")
    if not 0.0 <= args.noise <= 1.0:
        raise InputError(f"--noise must be in [0, 1], got {args.noise}")
    try:
        data = gen.generate(n=args.n, noise=args.noise, seed=args.seed, task_seed=args.task_seed, **options)
    except ValueError as exc:
        raise InputError(f"synth {args.generator}: {exc}") from None
    outputs = _write_synth(fmt, data, args.out, args.split_domains)
    for path in outputs:
        print(path)
    return 0


_COMMON_SYNTH = {"command", "func", "generator", "n", "noise", "seed", "task_seed", "out", "split_domains"}


def _write_synth(fmt, data, out: str, split: bool) -> list[str]:
    extra = {f"synth/{k}": v for k, v in data.extra.items()}
    if not split or data.domain is None:
        fmt.write_dataset(
            out,
            data.X,
            data.y,
            data.domain,
            feature_names=data.feature_names,
            domain_names=data.domain_names,
            attrs=data.attrs,
            extra=extra,
        )
        return [out]
    stem, ext = os.path.splitext(out)
    n = len(data.y)
    # Arrays with one entry per row are split with the rows; distribution
    # parameters (any other shape) are copied into every part.
    per_row = {k: v for k, v in extra.items() if np.ndim(v) and len(v) == n}
    shared = {k: v for k, v in extra.items() if k not in per_row}
    n_dom = len(data.domain_names) if data.domain_names else int(data.domain.max()) + 1
    paths = []
    for k in range(n_dom):
        rows = data.domain == k
        name = data.domain_names[k] if data.domain_names else str(k)
        path = f"{stem}-{name}{ext or '.h5'}"
        fmt.write_dataset(
            path,
            data.X[rows],
            data.y[rows],
            feature_names=data.feature_names,
            attrs=dict(data.attrs, domain_name=name, domain_id=k),
            extra=dict(shared, **{key: np.asarray(v)[rows] for key, v in per_row.items()}),
        )
        paths.append(path)
    return paths


@_serial
def cmd_convert(args: argparse.Namespace) -> int:
    from .data import convert

    return convert.run(args)


@_serial
def cmd_info(args: argparse.Namespace) -> int:
    from .data import format as fmt

    for path in args.files:
        summary = fmt.summarize(path)
        if args.json:
            print(json.dumps(summary, sort_keys=True))
            continue
        print(f"{summary['file']}:")
        print(f"  rows        {summary['n']:,}")
        print(f"  features    {summary['d']} ({summary['X_dtype']}, {summary['missing_values']:,} missing values)")
        labels = ", ".join(f"{k}: {v:,}" for k, v in summary["labels"].items())
        print(f"  labels      {labels} ({summary['y_dtype']})")
        if "domains" in summary:
            doms = ", ".join(f"{k}: {v:,}" for k, v in summary["domains"].items())
            print(f"  domains     {doms}")
        else:
            print("  domains     none (one domain)")
        if "feature_names" in summary:
            names = summary["feature_names"]
            shown = ", ".join(names[:8]) + (f", ... ({len(names)} in all)" if len(names) > 8 else "")
            print(f"  names       {shown}")
        for k, v in summary.get("attrs", {}).items():
            print(f"  {k:<11} {v}")
    return 0


def _comm(args: argparse.Namespace):
    from . import comm as comm_mod

    return comm_mod.world()


TRANSFER = ("msdtra", "mstra", "dtradaboost", "tradaboost")


def _training_files(args: argparse.Namespace) -> list:
    """``--data``, or ``--target`` followed by the ``--source`` files (domain 0 is the target)."""
    if args.target:
        if args.data:
            raise InputError("give either --data or --target/--source, not both")
        if not args.source:
            raise InputError("--target needs at least one --source file")
        return [args.target, *args.source]
    if args.source:
        raise InputError("--source needs --target T.h5")
    if not args.data:
        raise InputError("give the training data: --data F.h5 [...] or --target T.h5 --source S.h5 [...]")
    return list(args.data)


def cmd_train(args: argparse.Namespace) -> int:
    from . import callbacks as cb
    from .model import Model
    from .train import train

    comm = _comm(args)
    data = _training_files(args)
    params = {"weak_learner": args.weak_learner}
    if args.algo in TRANSFER:
        if args.target:
            params["target_domain"] = 0
        elif args.target_domain is not None:
            params["target_domain"] = args.target_domain
        params["high_error"] = args.high_error
        if args.vote_from:
            params["vote_from"] = args.vote_from
        if args.algo == "msdtra":
            params["hard_error"] = bool(args.hard_error)
        elif args.hard_error:
            raise InputError("--hard-error is an MSDTrA option (the other algorithms vote with one stump per round)")
    elif args.target_domain is not None or args.vote_from or args.hard_error:
        raise InputError("--target-domain, --vote-from and --hard-error are for the transfer algorithms "
                         f"({', '.join(TRANSFER)})")
    elif args.target:
        if args.algo != "adaboost":
            raise InputError(f"--target/--source are for the transfer algorithms ({', '.join(TRANSFER)}) "
                             "and adaboost (trained on the target rows only)")
        params["train_domain"] = 0
    if args.entity_balanced:
        params["entity_balanced"] = True
    if args.train_domain is not None:
        if args.algo in ("multiboost", "fedmultiboost", *TRANSFER):
            raise InputError("--train-domain is for the single-domain baselines (adaboost, smoothboost)")
        params["train_domain"] = args.train_domain
    if args.algo == "smoothboost":
        params.update(epsilon=args.epsilon, beta=args.beta, vote=args.vote, weight_store=args.weight_store)
        if args.gamma is not None:
            params["gamma"] = args.gamma
    elif args.algo == "adaboost" and args.weak_learner == "sample":
        params["beta"] = args.beta
    elif args.algo == "multiboost":
        params.update(step=args.step, active_tol=args.active_tol, q_l2=args.q_l2, temperature=args.temperature)
        if args.step == "sqrt":
            params["step_c"] = args.step_c
    elif args.algo == "fedmultiboost":
        params.update(
            active_tol=args.active_tol,
            q_l2=args.q_l2,
            client_size=args.client_size,
            clients_per_round=args.clients_per_round,
            candidates_per_round=args.candidates_per_round,
        )
    if args.q_data:
        params["q_data"] = [os.path.basename(str(f)) for f in args.q_data]  # a resumed run must use the same rows
    if args.weak_learner == "sample":
        if args.samples:
            params["n_samples"] = args.samples
        else:
            params["sample_factor"] = args.sample_factor
    callbacks = [cb.ProgressBar(False if args.quiet else None)]
    if args.metrics:
        callbacks.append(cb.MetricsLog(args.metrics, append=args.resume))
    if args.checkpoint:
        callbacks.append(cb.Checkpoint(args.checkpoint, args.checkpoint_every))
    resume = None
    if args.resume:
        if not args.checkpoint:
            raise InputError("--resume needs --checkpoint FILE")
        if os.path.exists(args.checkpoint):
            with comm.collective_guard():
                resume = Model.load(args.checkpoint)
    result = train(
        comm,
        data,
        algorithm=args.algo,
        rounds=args.rounds,
        params=params,
        seed=args.seed,
        valid=args.valid,
        callbacks=callbacks,
        dedicated_coordinator=args.dedicated_coordinator,
        threads=args.threads,
        resume=resume,
        q_data=args.q_data,
    )
    if comm.is_center:
        result.model.save(args.model)
        s = result.summary
        sec = s["seconds"]
        line = (
            f"mpiboost: {s['algorithm']} {s['rounds']} rounds on {s['n']:,} rows x {s['d']} features, "
            f"{s['ranks']} rank(s) x {s['threads']} thread(s): {sec['total']:.2f} s "
            f"(load {sec['load']:.2f}, rounds {sec['rounds']:.2f}, communication {sec['communication']:.2f}); "
            f"train error {s['train_error'] if s['train_error'] is not None else float('nan'):.4f}"
        )
        if s.get("valid_error") is not None:
            line += f", valid error {s['valid_error']:.4f}"
        line += f"; {s['bytes_all_ranks']['sent']:,} bytes sent; model -> {args.model}"
        if s["stop_reason"] != "rounds":
            line += f" (stopped early: {s['stop_reason']})"
            if s["rounds"] == 0:
                line += "; the model is EMPTY and predicts +1 for every row"
        print(line, flush=True)
    return 0


def _truncate(model, rounds: int):
    if not rounds:
        return model
    if rounds < 0 or rounds > model.n_rounds:
        raise InputError(f"--rounds {rounds}: the model has {model.n_rounds} rounds")
    return model.truncated(rounds)


def cmd_predict(args: argparse.Namespace) -> int:
    from .evaluate import predict, write_predictions
    from .model import Model

    comm = _comm(args)
    with comm.collective_guard():
        model = _truncate(Model.load(args.model), args.rounds)
    values = predict(comm, model, args.data, scores=args.scores, dedicated_coordinator=args.dedicated_coordinator)
    if comm.is_center:
        write_predictions(args.out, values, "score" if args.scores else "prediction")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from .evaluate import evaluate
    from .model import Model

    comm = _comm(args)
    with comm.collective_guard():
        model = _truncate(Model.load(args.model), args.rounds)
    report = evaluate(comm, model, args.data, dedicated_coordinator=args.dedicated_coordinator)
    if comm.is_center:
        print(json.dumps(report, sort_keys=True))
    return 0


@_serial
def cmd_export(args: argparse.Namespace) -> int:
    from .model import Model

    print(Model.load(args.model).to_json())
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    """Collective: load, validate and bin the data as training would, and report."""
    import time

    from . import comm as comm_mod
    from .data.load import load

    comm = comm_mod.world()
    t0 = time.perf_counter()
    shard = load(
        comm,
        args.data,
        task=None if args.task == "none" else args.task,
        domains=args.domains,
        dedicated_coordinator=args.dedicated_coordinator,
    )
    seconds = time.perf_counter() - t0
    blocks = comm.gather((comm.rank, shard.start, shard.stop))
    if comm.is_center:
        n_bins = shard.bins.n_bins
        report = {
            "files": [f.path for f in shard.files],
            "n": shard.n_global,
            "d": shard.d,
            "ranks": comm.size,
            "rows_per_rank": {str(r): b - a for r, a, b in blocks},
            "labels": {str(k): v for k, v in shard.label_counts.items()},
            "domains": {
                (shard.domain_names[k] if shard.domain_names and k < len(shard.domain_names) else str(k)): int(c)
                for k, c in enumerate(shard.domain_counts)
            },
            "value_bins": {"min": int(n_bins.min()), "max": int(n_bins.max()), "mean": float(n_bins.mean())},
            "constant_features": int((n_bins == 1).sum()),
            "seconds": round(seconds, 3),
            "bytes": comm.bytes.totals(),
        }
        print(json.dumps(report, sort_keys=True))
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    """Check the MPI set-up: one line per rank, then an exact-sum round trip."""
    import platform

    from . import comm as comm_mod
    from ._ext import _openmp

    comm = comm_mod.world()
    threads = args.threads or comm.default_threads()
    _openmp.set_num_threads(threads)
    MPI = comm_mod._mpi()
    row = {
        "rank": comm.rank,
        "host": platform.node(),
        "pid": os.getpid(),
        "threads": threads,
        "openmp": _openmp.openmp_enabled(),
        "local_ranks": comm.local_ranks(),
    }
    rows = comm.gather(row)
    values = np.full(comm.rank + 1, 0.1)
    total = comm.sum_exact(values)
    expected = sum([0.1] * (comm.size * (comm.size + 1) // 2))
    if comm.is_center:
        lib = MPI.Get_library_version().replace("\x00", "").strip().splitlines()[0]
        print(f"mpiboost {__version__}, {comm.size} rank(s), MPI: {lib}")
        for r in rows:
            print(
                f"rank {r['rank']:>4}  host {r['host']}  pid {r['pid']}  threads {r['threads']}"
                f"  openmp {'yes' if r['openmp'] else 'no'}  ranks on node {r['local_ranks']}"
            )
        import math

        exact = math.fsum([0.1] * (comm.size * (comm.size + 1) // 2))
        print(f"exact sum check: {'ok' if total == exact else 'FAILED'} ({total!r}; naive float sum {expected!r})")
    comm.barrier()
    return 0


# ------------------------------------------------------------------- parser
def boost_names() -> list[str]:
    from .boost import ALGORITHMS

    return list(ALGORITHMS)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mpiboost",
        description="Distributed boosting over the ranks of an MPI job.",
        epilog="Run `mpiboost COMMAND --help` for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"mpiboost {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("synth", help="generate synthetic data", description="Generate synthetic data into an HDF5 file.")
    gens = p.add_subparsers(dest="generator", metavar="GENERATOR", required=True)
    from .data import synth

    for name in synth.NAMES:
        mod = synth.module(name)
        g = gens.add_parser(
            name,
            help=(mod.__doc__ or "").strip().splitlines()[0],
            description=(mod.__doc__ or "").strip(),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        g.add_argument("--n", type=int, required=True, help="number of rows")
        g.add_argument("--noise", type=float, default=0.0, help="label noise rate in [0, 1] (default 0)")
        g.add_argument("--seed", type=int, default=0, help="sample seed (default 0)")
        g.add_argument(
            "--task-seed", type=int, default=0, help="seed of the distribution itself; keep it fixed for train/test (default 0)"
        )
        g.add_argument("--out", required=True, help="output HDF5 file")
        g.add_argument(
            "--split-domains", action="store_true", help="write one file per domain: OUT-<domain>.h5 instead of a domain column"
        )
        mod.add_arguments(g)
        g.set_defaults(func=cmd_synth)

    from .data import convert

    p = sub.add_parser(
        "convert",
        help="convert LIBSVM, CSV or Amazon-review files to HDF5",
        description=(convert.__doc__ or "").strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    convert.add_arguments(p)
    p.set_defaults(func=cmd_convert)

    p = sub.add_parser("info", help="describe data files", description="Shape, dtypes, label and domain counts of data files.")
    p.add_argument("files", nargs="+", metavar="FILE.h5")
    p.add_argument("--json", action="store_true", help="one JSON object per file")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser(
        "train",
        help="train a model (run under mpiexec/srun)",
        description="Train a boosted stump ensemble on data spread over the ranks. "
        "The same seed gives the same model on any number of ranks.",
    )
    p.add_argument("--algo", required=True, choices=sorted(boost_names()), help="algorithm")
    p.add_argument("--data", nargs="+", metavar="F.h5", help="training files (several = several domains)")
    p.add_argument("--target", metavar="T.h5",
                   help="transfer algorithms: the target domain's rows (with --source; replaces --data)")
    p.add_argument("--source", nargs="+", metavar="S.h5", help="transfer algorithms: one file per source domain")
    p.add_argument("--rounds", type=int, required=True, metavar="T", help="boosting rounds")
    p.add_argument("--model", required=True, metavar="M.h5", help="output model file (written atomically)")
    p.add_argument("--weak-learner", choices=("sample", "histogram"), default="histogram",
                   help="sample: the paper's weighted sample of N rows; histogram: exact (default)")
    p.add_argument("--epsilon", type=float, default=0.1, help="SmoothBoost smoothness epsilon in (0, 1] (default 0.1)")
    p.add_argument("--beta", type=float, default=0.2, help="weak learner slack beta (default 0.2): gamma and N follow from it")
    p.add_argument("--gamma", type=float, default=None, help="SmoothBoost weight shrink (default (1/2 - beta)/2)")
    p.add_argument("--vote", choices=("majority", "weighted"), default="majority",
                   help="SmoothBoost vote: unweighted majority (paper, default) or alpha-weighted")
    p.add_argument("--weight-store", choices=("cells", "rows"), default="cells",
                   help="SmoothBoost weights: one value per cell of rows with the same history (fast, default) "
                   "or one per row; both give the same model")
    p.add_argument("--step", choices=("line-search", "lemma1", "closed-form", "sqrt"), default="line-search",
                   help="MultiBoost step size: exact line search on max_k F_k (default), the Lemma-1 bound, "
                   "AdaBoost's closed form, or C/sqrt(t)")
    p.add_argument("--step-c", type=float, default=1.0, help="MultiBoost: C of --step sqrt (default 1)")
    p.add_argument("--temperature", type=float, default=0.1,
                   help="MultiBoost: soft-max temperature relative to the loss (default 0.1); 0 = the exact max "
                   "of the paper, which stops when coordinate descent is stuck")
    p.add_argument("--active-tol", type=float, default=1e-3,
                   help="MultiBoost: domains whose soft-max weight is at least this fraction of the largest "
                   "propose stumps (default 1e-3)")
    p.add_argument("--q-l2", type=float, default=1.0, help="MultiBoost: L2 penalty of the domain classifier (default 1)")
    p.add_argument("--q-data", nargs="+", metavar="U.h5",
                   help="MultiBoost/FedMultiBoost: extra rows that only train the domain classifier Q "
                        "(labels unused; domains matched to the training domains by name)")
    p.add_argument("--target-domain", metavar="K",
                   help="transfer algorithms with --data: the target domain (index or name; default: the one "
                        "named 'target'); every other domain is a source")
    p.add_argument("--vote-from", choices=("first", "half"),
                   help="transfer algorithms: the final vote counts rounds 1..M ('first') or ceil(M/2)..M "
                        "('half'); default: half for tradaboost/dtradaboost, first for msdtra/mstra")
    p.add_argument("--hard-error", action="store_true",
                   help="MSDTrA: a row's error is that of the mixture thresholded at 1/2 (default: soft error)")
    p.add_argument("--high-error", choices=("stop", "clip"), default="stop",
                   help="transfer algorithms: a round with target error >= 1/2 ends training (stop, the default) "
                        "or goes on with error 0.499 (clip)")
    p.add_argument("--client-size", type=int, default=100, help="FedMultiBoost: rows per client (default 100)")
    p.add_argument("--clients-per-round", type=int, default=10,
                   help="FedMultiBoost: clients sampled per domain per round (default 10)")
    p.add_argument("--candidates-per-round", type=int, default=20,
                   help="FedMultiBoost: candidate stumps sampled per domain per round (default 20)")
    p.add_argument("--samples", type=int, default=0, metavar="N", help="sample mode: rows per round (default from d and beta)")
    p.add_argument("--sample-factor", type=float, default=1.0,
                   help="sample mode: N = factor * (d / beta^2) ln(1/beta) (default 1)")
    p.add_argument("--seed", type=int, default=0, help="seed of every random choice (default 0)")
    p.add_argument("--valid", nargs="+", metavar="V.h5", help="validation files: error reported every round")
    p.add_argument("--metrics", metavar="M.jsonl", help="per-round metrics, one JSON object per line")
    p.add_argument("--checkpoint", metavar="C.h5", help="save the partial model here during training")
    p.add_argument("--checkpoint-every", type=int, default=10, metavar="K", help="checkpoint interval in rounds (default 10)")
    p.add_argument("--resume", action="store_true", help="continue from --checkpoint if it exists")
    p.add_argument("--dedicated-coordinator", action="store_true", help="rank 0 coordinates and holds no rows")
    p.add_argument("--train-domain", metavar="K",
                   help="train on the rows of one domain only (index or name): the AdaBoost-k baseline of MultiBoost")
    p.add_argument("--entity-balanced", action="store_true",
                   help="start every rank with the same total weight (the paper's Algorithm 4; "
                   "the model then depends on the number of ranks)")
    p.add_argument("--threads", type=int, default=0, help="OpenMP threads per rank (default: cores / ranks on the node)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("predict", help="predict labels or scores", description="Predict every row of the data files.")
    p.add_argument("--model", required=True, metavar="M.h5")
    p.add_argument("--data", required=True, nargs="+", metavar="F.h5")
    p.add_argument("--out", required=True, metavar="P.npy|P.csv", help="output (.npy, or .csv with one column)")
    p.add_argument("--scores", action="store_true", help="write the ensemble score instead of the label")
    p.add_argument("--rounds", type=int, default=0, metavar="T", help="use only the first T rounds (default: all)")
    p.add_argument("--dedicated-coordinator", action="store_true")
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser(
        "evaluate",
        help="error, accuracy and AUC of a model (JSON)",
        description="Print {n, error, accuracy, auc} and, with domains, per_domain, uniform_error, agnostic_error.",
    )
    p.add_argument("--model", required=True, metavar="M.h5")
    p.add_argument("--data", required=True, nargs="+", metavar="F.h5")
    p.add_argument("--rounds", type=int, default=0, metavar="T", help="use only the first T rounds (default: all)")
    p.add_argument("--dedicated-coordinator", action="store_true")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("export", help="canonical JSON of a model", description="Print the model as canonical JSON.")
    p.add_argument("--model", required=True, metavar="M.h5")
    p.add_argument("--format", choices=("json",), default="json")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser(
        "validate",
        help="check data files collectively, as training would load them",
        description="Load, validate and bin data files on every rank (run under mpiexec); print a JSON report.",
    )
    p.add_argument("data", nargs="+", metavar="FILE.h5", help="data files (several files = several domains)")
    p.add_argument("--task", choices=("binary", "multiclass", "none"), default="binary", help="label check (default binary: -1/+1)")
    p.add_argument("--domains", choices=("auto", "file", "column", "none"), default="auto", help="domain rule (default auto)")
    p.add_argument("--dedicated-coordinator", action="store_true", help="rank 0 holds no rows")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser(
        "doctor",
        help="check the MPI set-up (run it under mpiexec/srun)",
        description="Print rank, host, threads and MPI library of every rank, and check an exact sum.",
    )
    p.add_argument("--threads", type=int, default=0, help="OpenMP threads per rank (default: cores / ranks per node)")
    p.set_defaults(func=cmd_doctor)
    return parser


def _mpi_size() -> int:
    from . import comm

    if comm._MPI is None:
        return 1
    return comm._MPI.COMM_WORLD.Get_size()


def _abort(code: int) -> None:
    from . import comm

    if _mpi_size() > 1:
        comm._MPI.COMM_WORLD.Abort(code)


def guarded(func, *args) -> int:
    """Run ``func(*args)`` with mpiboost's error policy; return the exit code.

    Agreed errors (:class:`CollectiveError`) end every rank cleanly with the
    message printed once; a rank-local :class:`InputError` prints its message
    and aborts the job with code 2; any other exception prints its traceback
    and aborts with code 1. So no rank is left waiting in a collective.
    """
    try:
        return int(func(*args) or 0)
    except CollectiveError as exc:
        from . import comm

        rank = comm._MPI.COMM_WORLD.Get_rank() if comm._MPI is not None else 0
        if rank == 0:
            print(f"mpiboost: error: {exc}", file=sys.stderr, flush=True)
        return exc.exit_code
    except InputError as exc:
        print(f"mpiboost: error: {exc}", file=sys.stderr, flush=True)
        _abort(exc.exit_code)
        return exc.exit_code
    except KeyboardInterrupt:
        _abort(130)
        return 130
    except BrokenPipeError:
        return 0
    except Exception:
        traceback.print_exc()
        sys.stderr.flush()
        _abort(1)
        return 1


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``mpiboost`` command; returns the exit code."""
    # Our kernels thread with OpenMP (--threads, one share of the node per rank). BLAS
    # threads on top (scipy's L-BFGS) only oversubscribe the cores: on a busy node they
    # made the domain classifier fit 2-3x slower. Set before scipy is first imported.
    for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    args = build_parser().parse_args(argv)
    return guarded(args.func, args)
