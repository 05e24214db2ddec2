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

from .._version import __version__
from .. import log as messages
from ..errors import CollectiveError, InputError
from ..h5read import open_read
from .parser import Parser

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
    from ..data import format as fmt
    from ..data import synth

    from ..outputs import check_outputs

    gen = synth.module(args.generator)
    options = {k: v for k, v in vars(args).items() if k not in _COMMON_SYNTH}
    if args.n < 1:
        raise InputError(f"--n must be at least 1, got {args.n}")
    _check_synth_options(args, options)
    if not 0.0 <= args.noise <= 1.0:
        raise InputError(f"--noise must be in [0, 1], got {args.noise}")
    for name in ("seed", "task_seed"):
        if not 0 <= getattr(args, name) < 2**63:
            raise InputError(f"--{name.replace('_', '-')} must be in 0..2^63-1, got {getattr(args, name)}")
    check_outputs([("--out", args.out)], [])
    try:
        data = gen.generate(n=args.n, noise=args.noise, seed=args.seed, task_seed=args.task_seed, **options)
    except ValueError as exc:
        raise InputError(f"synth {args.generator}: {exc}") from None
    outputs = _write_synth(fmt, data, args.out, args.split_domains)
    for path in outputs:
        print(path)
    return 0


MAX_SYNTH_COUNT = 10**6  # classes, domains, sources, features ...: far beyond any use, far below an allocation failure


def _available_bytes() -> int:
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 1 << 62


def _check_synth_options(args: argparse.Namespace, options: dict) -> None:
    """Every generator option finite and sane, and the data small enough for this machine, before generating."""
    import math

    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(f"synth {args.generator}: {flag} must be a finite number, got {value}")
        if isinstance(value, int) and not isinstance(value, bool) and not -MAX_SYNTH_COUNT <= value <= MAX_SYNTH_COUNT:
            raise InputError(f"synth {args.generator}: {flag} {value} is beyond the limit of {MAX_SYNTH_COUNT:,}")
    ints = {k: v for k, v in options.items() if isinstance(v, int) and not isinstance(v, bool) and v > 0}
    rows = args.n * (1 + ints.get("sources", 0)) + ints.get("target_n", 0)
    # float64 generation with a few temporaries of the same size
    need = 4 * 8 * rows * max(ints.get("d", 0), 21)
    have = _available_bytes()
    if need > have:
        sizes = " x ".join(f"--{k.replace('_', '-')} {v:,}" for k, v in [("n", args.n), *sorted(ints.items())]
                           if k in ("n", "sources", "target_n", "d"))
        raise InputError(f"synth {args.generator}: {sizes} would need about {need / 2**30:.1f} GiB to "
                         f"generate; this machine has {have / 2**30:.1f} GiB available")


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
    from ..outputs import check_outputs
    from . import convert as convert_cli

    check_outputs([("--out", args.out)], [("IN", f) for f in args.input])
    return convert_cli.run(args)


def _is_model_file(path: str) -> bool:
    """Whether ``path`` is an HDF5 file with a model header (data files have none)."""
    try:
        import h5py

        with open_read(path) as f:
            return "header" in f.attrs and "X" not in f
    except (OSError, RuntimeError, ValueError):
        return False  # the data reader gives its own message


def _model_version(path: str) -> Optional[str]:
    """The mpiboost version that wrote a model file (its header checked already by the loader)."""
    import h5py

    with open_read(path) as f:
        v = json.loads(f.attrs["header"]).get("mpiboost_version")
    return v if isinstance(v, str) else None


def _info_model(path: str, as_json: bool) -> None:
    """A model file's facts: what made it, its size, its classes and features (``mpiboost info M.h5``)."""
    from ..online.model import load_any

    model = load_any(path)
    online = getattr(model, "kind", None) == "online"
    facts = {
        "file": path,
        "kind": "online" if online else "batch",
        "algorithm": model.algorithm,
        "mpiboost_version": _model_version(path),
        "classes": [str(c) for c in model.classes],
        "n_features": int(model.n_features),
        "feature_names": list(model.feature_names or []),
        "params": model.params,
    }
    if not online:
        facts.update(rounds=int(model.n_rounds), members=int(model.n_stumps), trees=len(model.trees),
                     domains=list(model.domain_names or []))
        imp = model.feature_importances("split")
        names = model.feature_names or [f"x{j}" for j in range(model.n_features)]
        order = [j for j in np.argsort(-imp, kind="stable") if imp[j] > 0][:10]
        facts["most_used_features"] = {str(names[j]): int(imp[j]) for j in order}
    if as_json:
        print(json.dumps(facts, sort_keys=True, default=str))
        return
    print(f"{path}: {facts['kind']} model")
    for key in ("algorithm", "mpiboost_version", "rounds", "members", "trees"):
        if facts.get(key) is not None:
            print(f"  {key.replace('_', ' '):<16} {facts[key]}")
    print(f"  classes          {', '.join(facts['classes'])}")
    names = facts["feature_names"]
    shown = (": " + ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")) if names else ""
    print(f"  features         {facts['n_features']}{shown}")
    if facts.get("domains"):
        print(f"  domains/tasks    {', '.join(facts['domains'])}")
    if facts.get("most_used_features"):
        print("  most used        " + ", ".join(f"{k} ({v})" for k, v in facts["most_used_features"].items()))
    print(f"  params           {json.dumps(facts['params'], sort_keys=True, default=str)}")


@_serial
def cmd_info(args: argparse.Namespace) -> int:
    from ..data import format as fmt

    for path in args.files:
        if _is_model_file(path):
            _info_model(path, args.json)
            continue
        summary = fmt.summarize(path)
        if args.json:
            print(json.dumps(summary, sort_keys=True))
            continue
        print(f"{summary['file']}:")
        print(f"  rows        {summary['n']:,}")
        print(f"  features    {summary['d']} ({summary['X_dtype']}, {summary['missing_values']:,} missing values)")
        counts = list(summary["labels"].items())
        labels = ", ".join(f"{k}: {v:,}" for k, v in counts[:20]) + (", ..." if len(counts) > 20 else "")
        n_classes = summary["n_classes"]
        if summary.get("unlabelled"):
            print("  labels      none (converted without labels: rows to score)")
        elif summary.get("task") == "regression":
            t = summary["target"]
            print(f"  targets     numbers for regression: min {t['min']:.6g}, max {t['max']:.6g}, mean {t['mean']:.6g}, "
                  f"std {t['std']:.6g} (y {summary['y_dtype']})")
        else:
            print(f"  labels      {labels} ({n_classes} class{'es' * (n_classes != 1)}; y {summary['y_dtype']})")
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
            if k == fmt.CATEGORICAL_ATTR:  # the features by name and their categories
                names = summary.get("feature_names") or []
                parsed = fmt.parse_categorical(v, summary["d"], path) or {}
                v = ", ".join(f"{names[j] if j < len(names) else j} ({c} categories)"
                              for j, c in sorted(parsed.items()))
            print(f"  {k:<11} {v}")
    return 0


def _start(args: argparse.Namespace):
    """The job's communicator, with this rank's watchdog running (``--stall-timeout``)."""
    from .. import comm as comm_mod
    from .. import watchdog
    from .train import stall_timeout

    timeout = stall_timeout(args.stall_timeout)
    comm = comm_mod.world()
    watchdog.start(comm, timeout)
    return comm


def _load_model(comm, args: argparse.Namespace):
    """Collective: the model of ``--model`` (cut to ``--rounds``), checked against the ``--data`` files' width."""
    from ..data.format import inspect
    from ..online.model import load_any

    with comm.collective_guard():
        model = load_any(args.model)
        if getattr(model, "kind", None) == "online":
            if args.rounds:
                raise InputError(f"--rounds: {args.model} is an online booster's model, which has no rounds")
        else:
            model = _truncate(model, args.rounds)
        for path in args.data:
            d = inspect(path).d
            if d != model.n_features:
                raise InputError(f"--model {args.model} has {model.n_features} features but --data {path} has {d}")
    return model


def _truncate(model, rounds: int):
    if not rounds:
        return model
    if rounds < 0 or rounds > model.n_rounds:
        raise InputError(f"--rounds {rounds}: the model has {model.n_rounds} rounds")
    return model.truncated(rounds)


def cmd_predict(args: argparse.Namespace) -> int:
    from ..data import labels as lab
    from ..evaluate import check_output_format, predict, write_predictions
    from ..outputs import check_outputs

    check_output_format(args.out)
    comm = _start(args)
    with comm.collective_guard():
        if comm.is_center:
            check_outputs([("--out", args.out)], [("--model", args.model)] + [("--data", f) for f in args.data])
    model = _load_model(comm, args)
    if args.proba and getattr(model, "is_regression", False):
        raise InputError(f"--proba: {args.model} is a regression model: it predicts values, not class probabilities")
    if args.proba and not hasattr(model, "proba_of_scores"):
        raise InputError(f"--proba: {args.model} is a {model.algorithm} model without class probabilities "
                         "(--scores gives its scores)")
    if sum((args.proba, args.scores, args.contrib)) > 1:
        raise InputError("--proba, --scores and --contrib: give one")
    if args.contrib:
        try:
            model.check_contributions()
        except (ValueError, AttributeError) as exc:
            raise InputError(f"--contrib: {args.model}: {exc}") from None
    values = predict(comm, model, args.data, scores=args.scores, dedicated_coordinator=args.dedicated_coordinator,
                     proba=args.proba, contrib=args.contrib)
    with comm.collective_guard():
        if comm.is_center:
            if args.contrib:
                names = model.feature_names or [f"x{j}" for j in range(model.n_features)]
                cols = [f"contrib_{n}" for n in names] + ["expected"]
                blocks = [""] if model.output != "argmax" else [f"_{lab.text(c)}" for c in model.classes]
                header = ",".join(f"{c}{b}" for b in blocks for c in cols)
            elif args.proba:
                header = ",".join(f"proba_{lab.text(c)}" for c in model.classes)
            elif not args.scores:
                header = "prediction"
            elif values.ndim == 2:
                header = ",".join(f"score_{lab.text(c)}" for c in model.classes)
            else:
                header = "score"
            try:
                write_predictions(args.out, values, header)
            except OSError as exc:
                raise InputError(f"could not write --out {args.out} ({exc.strerror or exc})") from None
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from ..evaluate import evaluate

    comm = _start(args)
    model = _load_model(comm, args)
    report = evaluate(comm, model, args.data, dedicated_coordinator=args.dedicated_coordinator)
    if comm.is_center:
        print(json.dumps(report, sort_keys=True), flush=True)
        if report.get("unseen"):  # labels the model cannot predict: counted as errors, and said where it is seen
            shown = ", ".join(f"{v!r} ({c:,} rows)" for v, c in list(report["unseen"].items())[:5])
            messages.warning(f"{sum(report['unseen'].values()):,} of {report['n']:,} rows have labels the model does not "
                        f"know ({shown}; its classes: {report['classes']}): they count as errors")
    comm.barrier()  # no rank stops its watchdog while the center still works
    return 0


@_serial
def cmd_export(args: argparse.Namespace) -> int:
    from ..online.model import load_any

    model = load_any(args.model)
    if args.format == "lightgbm":
        from ..export import to_lightgbm

        if not hasattr(model, "bins"):
            raise InputError(f"{args.model}: an online model has no LightGBM form; export it as JSON")
        text = to_lightgbm(model)
    elif args.format == "importance":
        from ..export import importance_table

        if not hasattr(model, "bins"):
            raise InputError(f"{args.model}: an online model keeps no split counts")
        text = importance_table(model)
    else:
        text = model.to_json()
    if args.out:
        from ..atomic import write_bytes
        from ..outputs import check_outputs

        check_outputs([("--out", args.out)], [("--model", args.model)])
        write_bytes(args.out, (text if text.endswith("\n") else text + "\n").encode())
    else:
        print(text)
    return 0


@_serial
def cmd_importance(args: argparse.Namespace) -> int:
    from ..export import importance_table
    from ..online.model import load_any

    if args.top < 1:
        raise InputError(f"--top {args.top}: draw at least 1 feature")
    image = args.out is not None and os.path.splitext(args.out)[1].lstrip(".").lower() in ("png", "pdf", "svg")
    if args.out:
        from ..outputs import check_outputs

        check_outputs([("--out", args.out)], [("--model", args.model)])
    if image:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise InputError("a figure needs matplotlib: pip install 'mpiboost[plot]' (or give --out F.csv)") from None
    model = load_any(args.model)
    if not hasattr(model, "feature_importances"):
        raise InputError(f"{args.model}: an online model keeps no split counts")
    if image:
        from .. import plot

        drawn = plot.draw_importance(model, args.out, kind=args.type, top=args.top)
        print(json.dumps({"out": args.out, "type": args.type, "features": drawn}), flush=True)
        return 0
    text = importance_table(model, by=args.type)
    if args.out:
        from ..atomic import write_bytes

        write_bytes(args.out, text.encode())
    else:
        print(text, end="")
    return 0


_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MV2_COMM_WORLD_SIZE", "SLURM_STEP_NUM_TASKS")


def launch_size() -> int:
    """The number of processes the launcher started (1 when not launched by MPI or srun)."""
    for var in _SIZE_VARS:
        value = os.environ.get(var)
        if value and value.isdigit():
            return int(value)
    return 1


@_serial
def cmd_plot(args: argparse.Namespace) -> int:
    from .. import plot
    from ..outputs import check_outputs

    plot.check_format(args.out)
    if (args.model is None) != (args.data is None):
        raise InputError("--model and --data come together: the per-domain curves score the model on the data")
    if args.model and launch_size() > 1:
        # scoring reads the data through MPI in this one process, whose start waits for ranks that never come
        raise InputError("plot is a serial command: run it without mpiexec or srun (it scores --model on --data "
                         "in one process)")
    inputs = [("METRICS", m) for m in args.metrics] + [("--model", args.model)] + [("--data", d) for d in args.data or ()]
    check_outputs([("--out", args.out)], inputs)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise InputError("plot needs matplotlib: pip install 'mpiboost[plot]' (or pip install matplotlib)") from None
    logs = [plot.read_log(m) for m in args.metrics]  # every log read before any work
    for log in logs:
        if log.skipped:
            messages.info(f"{log.path}: {log.skipped:,} lines that are not round records skipped")
    curves = None
    if args.model:
        from ..online.model import load_any

        curves = plot.group_curves(load_any(args.model), args.data)
    drawn = plot.draw(logs, args.out, curves=curves, title=args.title)
    print(json.dumps({"out": args.out, "panels": drawn, "logs": [log.path for log in logs]}, sort_keys=True))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    """Collective: load, validate and bin the data as training would, and report."""
    import time

    from ..data import labels as lab
    from ..data.load import load

    comm = _start(args)
    t0 = time.perf_counter()
    shard = load(
        comm,
        args.data,
        task=None if args.task == "none" else ("binary" if args.task == "binary" else "multiclass"),
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
            "labels": {lab.text(k): v for k, v in shard.label_counts.items()},
            "classes": None if shard.classes is None else [lab.plain(c) for c in shard.classes],
            "domains": {
                (shard.domain_names[k] if shard.domain_names and k < len(shard.domain_names) else str(k)): int(c)
                for k, c in enumerate(shard.domain_counts)
            },
            "value_bins": {"min": int(n_bins.min()), "max": int(n_bins.max()), "mean": float(n_bins.mean())},
            "constant_features": int((n_bins == 1).sum()),
            "seconds": round(seconds, 3),
            "bytes": comm.bytes.totals(),
        }
        print(json.dumps(report, sort_keys=True), flush=True)
    comm.barrier()
    return 0


LAUNCHERS = {"slurm": "slurm/train.sbatch", "pbs": "pbs/train.pbs", "ec2": "ec2/run.sh"}


def launchers_dir():
    """Where the cluster scripts are: package data of the installed mpiboost (``mpiboost/launchers``)."""
    from pathlib import Path

    return Path(__file__).resolve().parent.parent / "launchers"


@_serial
def cmd_scripts(args: argparse.Namespace) -> int:
    """List, print or copy the cluster scripts (Slurm, PBS, EC2 and the launch library they share)."""
    import shutil

    root = launchers_dir()
    if not (root / "lib" / "launch.sh").is_file():
        raise InputError(f"{root}: the cluster scripts are not installed with this mpiboost")
    if args.show:
        sys.stdout.write((root / LAUNCHERS[args.show]).read_text(encoding="utf-8"))
        return 0
    if args.copy:
        dest = os.path.abspath(args.copy)
        parts = ["lib", *sorted({v.split("/")[0] for v in LAUNCHERS.values()})]
        clash = [os.path.join(dest, p) for p in parts if os.path.exists(os.path.join(dest, p))]
        if clash:
            raise InputError(f"--copy {args.copy}: {clash[0]} exists; copy into a new or empty folder")
        for part in parts:
            shutil.copytree(root / part, os.path.join(dest, part))
        print(f"copied {', '.join(parts)} to {dest}: e.g. sbatch {os.path.join(dest, LAUNCHERS['slurm'])} doctor",
              flush=True)
        return 0
    for name, rel in LAUNCHERS.items():
        print(f"{name:6s} {root / rel}")
    print(f"lib    {root / 'lib'} (shared by the scripts; copy them with --copy DIR)")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    """Check the MPI set-up: one line per rank, then an exact-sum round trip."""
    import platform

    from .. import comm as comm_mod
    from .._ext import _openmp

    from .train import check_launcher, check_threads

    check_threads(args.threads)
    comm = comm_mod.world()
    check_launcher(comm)  # a launcher of another MPI than mpi4py's: N one-rank jobs, refused
    threads = args.threads or comm.default_threads()
    _openmp.set_num_threads(threads)
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
        print(f"mpiboost {__version__}, {comm.size} rank(s), MPI: {comm_mod.library_version()}")
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
def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="mpiboost",
        description="Distributed boosting over the ranks of an MPI job.",
        epilog="Run `mpiboost COMMAND --help` for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"mpiboost {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("synth", help="generate synthetic data", description="Generate synthetic data into an HDF5 file.")
    gens = p.add_subparsers(dest="generator", metavar="GENERATOR", required=True)
    from ..data import synth

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

    from ..data import convert
    from . import convert as convert_cli

    p = sub.add_parser(
        "convert",
        help="convert LIBSVM, CSV or Amazon-review files to HDF5",
        description=(convert.__doc__ or "").strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    convert_cli.add_arguments(p)
    p.set_defaults(func=cmd_convert)

    p = sub.add_parser("info", help="describe data files", description="Shape, dtypes, label and domain counts of data files.")
    p.add_argument("files", nargs="+", metavar="FILE.h5")
    p.add_argument("--json", action="store_true", help="one JSON object per file")
    p.set_defaults(func=cmd_info)

    from .train import DESCRIPTION, add_stall_timeout

    # `train` is parsed by mpiboost.cli.train (its options depend on --algo); this entry is for the command list.
    sub.add_parser("train", help="train a model (run under mpiexec/srun)", description=DESCRIPTION, add_help=False)

    p = sub.add_parser("predict", help="predict labels or scores", description="Predict every row of the data files.")
    p.add_argument("--model", required=True, metavar="M.h5")
    p.add_argument("--data", required=True, nargs="+", metavar="F.h5")
    p.add_argument("--out", required=True, metavar="P.npy|P.csv", help="output (.npy, or .csv with one column)")
    p.add_argument("--scores", action="store_true",
                   help="write the ensemble score instead of the label (one column per class for a multiclass model)")
    p.add_argument("--proba", action="store_true",
                   help="write the class probabilities, one column per class (models of the logistic loss: "
                   "--loss logistic, --algo softmax)")
    p.add_argument("--contrib", action="store_true",
                   help="write each feature's TreeSHAP contribution to the row's score and the expected score last "
                   "(one block per class for a multiclass model; LightGBM's pred_contrib): models of trees")
    p.add_argument("--rounds", type=int, default=0, metavar="T", help="use only the first T rounds (default: all)")
    p.add_argument("--dedicated-coordinator", action="store_true")
    add_stall_timeout(p)
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser(
        "evaluate",
        help="error, accuracy and AUC of a model (JSON)",
        description="Print {n, error, accuracy, macro_f1, per_class, confusion, feature_importance} (and auc for "
        "two classes), in the data's own labels, and, with domains, per_domain, uniform_error, agnostic_error; "
        "with sample weights in the files also weighted_error (and weighted_auc); regression models: rmse, mae, "
        "r2 and the objective's metric (weighted with sample weights); "
        "labels the model does not know are counted as errors, listed under unseen and warned of on stderr.",
    )
    p.add_argument("--model", required=True, metavar="M.h5")
    p.add_argument("--data", required=True, nargs="+", metavar="F.h5")
    p.add_argument("--rounds", type=int, default=0, metavar="T", help="use only the first T rounds (default: all)")
    p.add_argument("--dedicated-coordinator", action="store_true")
    add_stall_timeout(p)
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("export", help="a model as canonical JSON, a LightGBM model or its feature importance",
                       description="Print the model as canonical JSON, as LightGBM's text model format "
                       "(lightgbm.Booster(model_file=...) then predicts mpiboost's raw scores; its "
                       "feature_importances block holds the split counts), or its feature importance as CSV "
                       "(--format importance: feature, split count, share of the splits, gain of tree splits).")
    p.add_argument("--model", required=True, metavar="M.h5")
    p.add_argument("--format", choices=("json", "lightgbm", "importance"), default="json")
    p.add_argument("--out", metavar="FILE", help="write to FILE (atomically) instead of stdout")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser(
        "importance", help="each feature's importance: a CSV table or a bar chart",
        description="Each feature's importance in a model: split (how many splits use it) and gain (the sum of "
        "the loss reductions of its tree splits), the same numbers as LightGBM's feature_importance of the "
        "exported model. Printed as CSV (feature, split, split_share, gain), most important first; --out F.png "
        "(.pdf, .svg) draws the --top features as bars (needs matplotlib).")
    p.add_argument("--model", required=True, metavar="M.h5")
    p.add_argument("--type", choices=("gain", "split"), default="gain",
                   help="the order of the table and the bars (default gain; split for models of stumps)")
    p.add_argument("--top", type=int, default=20, metavar="N", help="features drawn in a chart (default 20)")
    p.add_argument("--out", metavar="FILE", help="write the table (.csv) or draw the chart (.png, .pdf, .svg)")
    p.set_defaults(func=cmd_importance)

    p = sub.add_parser(
        "plot",
        help="draw a run's metrics log: error curves, weights, time per round, per-domain errors",
        description="Draw training and validation error by round, the weight statistics and steps, the time "
        "per round and the errors of each domain or task from train --metrics logs (several logs: one curve "
        "each). With --model and labelled --data, the domains' (tasks') errors are scored by round. Needs "
        "matplotlib (pip install 'mpiboost[plot]').",
    )
    p.add_argument("metrics", nargs="+", metavar="METRICS.jsonl", help="metrics logs of train or train-online")
    p.add_argument("--out", required=True, metavar="FIG", help="the figure: .png, .pdf or .svg (written atomically)")
    p.add_argument("--model", metavar="M.h5", help="a batch model whose per-domain errors to draw by round")
    p.add_argument("--data", nargs="+", metavar="F.h5", help="labelled data for --model's per-domain errors")
    p.add_argument("--title", help="the figure's title (default: the logs, algorithm and rounds)")
    p.set_defaults(func=cmd_plot)

    p = sub.add_parser(
        "validate",
        help="check data files collectively, as training would load them",
        description="Load, validate and bin data files on every rank (run under mpiexec); print a JSON report.",
    )
    p.add_argument("data", nargs="+", metavar="FILE.h5", help="data files (several files = several domains)")
    p.add_argument("--task", choices=("auto", "binary", "multiclass", "none"), default="auto",
                   help="labels: auto (report the classes found, the default), binary (exactly two classes), "
                   "multiclass, or none (not read)")
    p.add_argument("--domains", choices=("auto", "file", "column", "none"), default="auto", help="domain rule (default auto)")
    p.add_argument("--dedicated-coordinator", action="store_true", help="rank 0 holds no rows")
    add_stall_timeout(p)
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser(
        "scripts",
        help="the cluster scripts (Slurm, PBS, EC2): list, print or copy them",
        description="List the cluster scripts installed with mpiboost, print one (--show), or copy them with "
        "the launch library they share into a new folder (--copy DIR).",
    )
    g = p.add_mutually_exclusive_group()
    g.add_argument("--show", choices=sorted(LAUNCHERS), help="print one script")
    g.add_argument("--copy", metavar="DIR", help="copy every script and their library into DIR")
    p.set_defaults(func=cmd_scripts)

    p = sub.add_parser(
        "doctor",
        help="check the MPI set-up (run it under mpiexec/srun)",
        description="Print rank, host, threads and MPI library of every rank, and check an exact sum.",
    )
    p.add_argument("--threads", type=int, default=0, help="OpenMP threads per rank (default: cores / ranks per node)")
    p.set_defaults(func=cmd_doctor)
    return parser


def guarded(func, *args) -> int:
    """Run ``func(*args)`` with mpiboost's error policy; return the exit code.

    Agreed errors (:class:`CollectiveError`) end every rank cleanly with the
    message printed once; a rank-local :class:`InputError` prints its message
    and aborts the job with code 2; any other exception prints its traceback
    and aborts with code 1. So no rank is left waiting in a collective.
    """
    from .. import watchdog
    from ..comm import abort_world, mpi_started, world_rank, world_size

    try:
        try:
            return int(func(*args) or 0)
        finally:
            watchdog.stop()  # every rank ends here together (or aborts): no heartbeat is missed
    except CollectiveError as exc:
        # Before MPI starts (argument errors) the launcher's rank variables tell who prints; so they do when
        # every process is a world of its own (a launcher of another MPI: every one is rank 0)
        if (world_rank() if mpi_started() and world_size() > 1 else launch_rank()) == 0:
            messages.error(str(exc))
        return exc.exit_code
    except InputError as exc:
        messages.error(str(exc))
        abort_world(exc.exit_code)
        return exc.exit_code
    except MemoryError:
        messages.error("out of memory on this rank: spread the rows over more ranks or nodes, or give each rank "
                       "more memory")
        abort_world(2)
        return 2
    except KeyboardInterrupt:
        abort_world(130)
        return 130
    except BrokenPipeError:
        return 0
    except Exception:
        traceback.print_exc()
        sys.stderr.flush()
        abort_world(1)
        return 1


def _train(argv: Sequence[str]) -> int:
    from . import train

    return train.cmd_train(train.parse(argv))


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``mpiboost`` command; returns the exit code."""
    # Our kernels thread with OpenMP (--threads, one share of the node per rank). BLAS
    # threads on top (scipy's L-BFGS) only oversubscribe the cores: on a busy node they
    # made the domain classifier fit 2-3x slower. Set before scipy is first imported.
    for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    from .. import watchdog

    as_command = argv is None  # the process exits next (a call with arguments is a library use)
    argv = list(sys.argv[1:] if argv is None else argv)
    if as_command and argv[:1] == ["train"]:
        from .. import signals

        # A SIGTERM while MPI starts and the data load (a requeued job's start-up) is kept for the first
        # round's end, with its checkpoint and exit 75, instead of killing the rank with nothing saved.
        signals.install_early()
    code = guarded(_train, argv[1:]) if argv[:1] == ["train"] else guarded(_dispatch, argv)
    if as_command:
        watchdog.arm_exit_alarm()  # no hang in MPI_Finalize either
    return code


def _dispatch(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)
