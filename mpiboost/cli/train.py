"""``mpiboost train``: options made from the algorithms' declarations, and the command itself.

The options common to every run (data, rounds, model, seed, validation,
metrics, checkpoints, ranks and threads) are fixed; each algorithm's own
options come from its :class:`mpiboost.boost.Param` declarations, so
``mpiboost train --algo NAME --help`` lists exactly NAME's options and an
option of another algorithm is refused (exit code 2) with a message naming
the option, the algorithm and the algorithms that have it.
"""
from __future__ import annotations

import argparse
import os
from typing import Optional, Sequence

from .. import log
from ..boost.losses import METRIC_NAMES
from ..errors import CollectiveError

DESCRIPTION = (
    "Train a boosted ensemble (gradient boosted trees, AdaBoost, SmoothBoost, ...) on data spread over the ranks "
    "(run under mpiexec/srun). "
    "The same seed gives the same model on any number of ranks."
)


def _algorithms() -> dict:
    """Every ``--algo``: the batch algorithms and the online boosters (one pass over a stream)."""
    from ..registry import algorithms

    return algorithms()


def _is_online(algo: Optional[str]) -> bool:
    from ..registry import is_online

    return is_online(algo)


def _add_common(p: argparse.ArgumentParser) -> None:
    algos = _algorithms()
    p.add_argument("--algo", required=True, choices=sorted(algos), metavar="ALGO",
                   help="algorithm: " + ", ".join(sorted(algos)))
    p.add_argument("--data", nargs="+", metavar="F.h5", help="training files (several = several domains)")
    p.add_argument("--target", metavar="T.h5",
                   help="transfer: the target domain's rows (with --source; replaces --data); domain 0 is the target")
    p.add_argument("--source", nargs="+", metavar="S.h5", help="transfer: one file per source domain")
    p.add_argument("--rounds", type=int, default=None, metavar="T",
                   help="boosting rounds (required, except for the online algorithms: one pass over the stream)")
    p.add_argument("--model", required=True, metavar="M.h5", help="output model file (written atomically)")
    p.add_argument("--seed", type=int, default=0, help="seed of every random choice (default 0)")
    p.add_argument("--valid", nargs="+", metavar="V.h5", help="validation files: error reported every round")
    p.add_argument("--valid-fraction", type=float, default=None, metavar="F",
                   help="hold out this fraction of the training rows (0 < F <= 0.5) as validation rows instead of "
                   "--valid: every (domain, class) group gives F of its rows, spread evenly over the files' order "
                   "(a seeded offset per group); the same split on any number of ranks")
    from ..driver.validation import VALID_METRICS

    p.add_argument("--valid-metric", choices=VALID_METRICS, default="error",
                   help="what the validation rows measure for --best-round, --early-stop, auto options and the "
                   "baseline guard: the error (default); the log-loss of the model's probabilities (logloss: "
                   "LightGBM's early-stopping metric, smoother than the error, so a long run's round is chosen "
                   "with less noise); or, binary labels, the AUC (reported as 1 - AUC): for imbalanced classes, "
                   "where the majority vote is right on most rows (a multi-task model: the mean over its tasks); "
                   "a regression: its objective's metric (default) or rmse, l1, huber, quantile")
    p.add_argument("--best-round", action="store_true",
                   help="keep the model truncated to the round of lowest validation error (needs --valid or "
                   "--valid-fraction; implied by an option given as auto)")
    p.add_argument("--early-stop", type=int, default=None, metavar="K",
                   help="with validation: stop when K rounds in a row did not lower the best validation error "
                   "(implies --best-round)")
    p.add_argument("--log-every", type=int, default=None, metavar="N",
                   help="a line on stderr every N rounds: round, errors, seconds, rounds/s, ETA (default: a tenth "
                   "of the rounds when stderr is not a terminal, as in a batch job's log; 0: never)")
    p.add_argument("--metrics", metavar="M.jsonl",
                   help="per-round metrics, one JSON object per line (- : to standard output, on the center)")
    p.add_argument("--checkpoint", metavar="C.h5", help="save the partial model here during training")
    p.add_argument("--checkpoint-every", type=int, default=None, metavar="K",
                   help="checkpoint interval in rounds (default 10)")
    p.add_argument("--resume", action="store_true", help="continue from --checkpoint if it exists")
    p.add_argument("--dedicated-coordinator", action="store_true", help="rank 0 coordinates and holds no rows")
    p.add_argument("--threads", type=int, default=0, help="OpenMP threads per rank (default: cores / ranks on the node)")
    add_stall_timeout(p)
    p.add_argument("--quiet", action="store_true", help="no progress bar and no round log (unless --log-every)")


def add_stall_timeout(p: argparse.ArgumentParser) -> None:
    """``--stall-timeout S``: the watchdog's bound (every command that runs on several ranks has it)."""
    from ..watchdog import DEFAULT_TIMEOUT

    p.add_argument("--stall-timeout", type=float, default=None, metavar="S",
                   help="end the job (exit 2, naming the rank) when a rank makes no progress for S seconds: "
                   f"stopped, stuck in I/O or cut off from the network; 0 turns the watchdog off (default "
                   f"$MPIBOOST_STALL_TIMEOUT or {DEFAULT_TIMEOUT:g})")


def stall_timeout(value: Optional[float]) -> float:
    """The watchdog bound in seconds from ``--stall-timeout`` or ``$MPIBOOST_STALL_TIMEOUT`` (0: off)."""
    import math

    from ..watchdog import DEFAULT_TIMEOUT

    where = "--stall-timeout"
    if value is None:
        env = os.environ.get("MPIBOOST_STALL_TIMEOUT")
        if not env:
            return DEFAULT_TIMEOUT
        where = "MPIBOOST_STALL_TIMEOUT"
        try:
            value = float(env)
        except ValueError:
            raise CollectiveError(f"{where}={env!r}: expected a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise CollectiveError(f"{where} {value}: needs a number of seconds >= 0 (0: no watchdog)")
    if 0 < value < 1:
        raise CollectiveError(f"{where} {value}: below 1 s a busy but healthy rank would be taken for a stopped one")
    return float(value)


def check_common(args: argparse.Namespace) -> None:
    """The command line's own options (every rank alike: an agreed error, printed once); the run's options are
    checked by :meth:`mpiboost.driver.config.RunConfig.build`."""
    if args.rounds is None:
        raise CollectiveError(f"--rounds T is required for {args.algo}")
    if args.log_every is not None and args.log_every < 0:
        raise CollectiveError(f"--log-every must be 0 (never) or a number of rounds, got {args.log_every}")
    if args.checkpoint_every is not None and args.checkpoint_every < 1:
        raise CollectiveError(f"--checkpoint-every must be at least 1, got {args.checkpoint_every}")
    check_threads(args.threads)
    if args.resume and not args.checkpoint:
        raise CollectiveError("--resume needs --checkpoint FILE")
    if args.checkpoint_every is not None and not args.checkpoint:
        raise CollectiveError("--checkpoint-every needs --checkpoint FILE")


# What the schedulers set for the tasks of a job step: (variable of the task count, variable present inside a
# launched task). A task count above 1 with an MPI world of 1 rank means the tasks were not wired to one MPI job.
SCHEDULER_TASKS = (("SLURM_NTASKS", "SLURM_PROCID"), ("PBS_NP", None))
# The world size each MPI launcher gives its processes (MPICH's Hydra and PMI-2, Open MPI, PMIx, MVAPICH).
MPI_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MV2_COMM_WORLD_SIZE")


def check_launcher(comm, env=None) -> None:
    """Refuse a run whose launcher or scheduler started N > 1 processes that MPI does not join.

    A launcher of another MPI library than the one mpi4py loads (Hydra's ``mpiexec`` with an mpi4py built on
    Open MPI, say) starts N processes that each see a world of one rank: its size variable (``PMI_SIZE``,
    ``OMPI_COMM_WORLD_SIZE``, ...) differs from ``COMM_WORLD``'s, an agreed error, exit 2.

    Inside a Slurm step (``SLURM_PROCID`` set) with ``SLURM_NTASKS`` > 1 but an MPI world of one rank, the
    tasks are independent copies: an agreed error, exit 2. A batch script that runs one process in an
    allocation of several tasks (no ``srun``) only gets a warning: it may be meant, but it uses one rank.

    Parameters
    ----------
    comm : Comm
        The job's ranks, as MPI sees them (only its size is read).
    env : mapping, optional
        The environment variables to read; None: ``os.environ``.
    """
    import sys

    env = os.environ if env is None else env
    for var in MPI_SIZE_VARS:
        value = str(env.get(var, ""))
        if value.isdigit() and int(value) > 1 and int(value) != comm.size:
            import sys

            from ..comm import library_version, mpi_started

            local = os.path.join(os.path.dirname(sys.executable), "mpiexec")
            where = f" ({local})" if os.path.exists(local) else ""
            lib = f" ({library_version()})" if mpi_started() else ""
            raise CollectiveError(
                f"{var}={value}: the launcher started {value} processes but MPI sees {comm.size} rank(s): the "
                f"launcher is not of the MPI library mpi4py loads{lib}, so each process would train alone on every "
                f"row. Launch with that library's own mpiexec{where}, or build mpi4py against the launcher's MPI "
                "(`pip install --no-binary=mpi4py mpi4py`)")
        if value.isdigit():
            break
    if comm.size != 1:
        return
    for count, inside in SCHEDULER_TASKS:
        try:
            n = int(env.get(count, "1"))
        except ValueError:
            continue
        if n <= 1:
            continue
        if inside and inside in env:
            raise CollectiveError(
                f"{count}={n} but MPI sees 1 rank: the {n} tasks are not one MPI job (each would train on every row "
                "alone). Launch with `srun --mpi=pmix` (or pmi2) against the MPI that mpi4py uses, or with mpiexec; "
                "`mpiboost doctor` shows which MPI that is")
        log.warning(f"{count}={n} but this run has 1 rank: start it with srun or mpiexec to use the allocation's "
                    f"{n} tasks")
        return


def check_threads(threads: int) -> None:
    """``--threads``: 0 (automatic) or 1 .. a few times the node's cores."""
    top = max(64, 4 * (os.cpu_count() or 1))
    if not 0 <= threads <= top:
        raise CollectiveError(f"--threads must be 0 (automatic) or 1..{top} on this node, got {threads}")


def _help(param) -> str:
    text = param.help
    if param.type is bool:
        return text
    rng = param.range_text()
    if rng and param.choices is None:
        text += f"; {rng}"
    if param.default is not None and param.default != []:
        text += f" (default {param.default})"
    return text.replace("%", "%%")


def _number_or_auto(param):
    """argparse type of a parameter with a grid: ``auto`` or a value of its type."""
    def parse(text: str):
        return "auto" if text == "auto" else param.type(text)

    parse.__name__ = f"{param.type.__name__} or auto"  # argparse names it in "invalid ... value"
    return parse


def add_param(group, param) -> None:
    """One declared parameter as an option (default None: 'not given', so the declaration's default applies)."""
    kw = {"dest": param.name, "default": None, "help": _help(param)}
    if param.type is bool:
        group.add_argument(param.flag, action="store_true", **kw)
        return
    if param.type is list:
        group.add_argument(param.flag, nargs="+", metavar=param.metavar or "FILE", **kw)
        return
    kw["type"] = param.type if not param.grid else _number_or_auto(param)
    if param.choices is not None:
        kw["choices"] = tuple(param.choices) + (("auto",) if param.grid else ())
    else:
        kw["metavar"] = param.metavar or param.name.upper()
    group.add_argument(param.flag, **kw)


def parser_for(algo: Optional[str]) -> argparse.ArgumentParser:
    """The ``train`` parser: the common options, plus ``algo``'s own (or, without one, the list of algorithms)."""
    algos = _algorithms()
    lines = [f"  {name:<14} {cls.summary} [{', '.join(cls.tasks)}]" for name, cls in sorted(algos.items())]
    epilog = "algorithms:\n" + "\n".join(lines) + "\n\n`mpiboost train --algo ALGO --help` lists ALGO's own options."
    from .parser import Parser

    p = Parser(
        prog="mpiboost train",
        description=DESCRIPTION,
        epilog=epilog if algo is None else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,  # --vote must not be read as another algorithm's --vote-from
    )
    _add_common(p)
    if _is_online(algo):
        _add_stream_options(p)
    if algo in algos:
        cls = algos[algo]
        group = p.add_argument_group(f"{algo} options", cls.summary)
        for param in cls.parameters:
            if param.cli:
                add_param(group, param)
    return p


def _add_stream_options(p: argparse.ArgumentParser) -> None:
    """The options of every online algorithm (:data:`mpiboost.online.options.STREAM_PARAMS`), and --predictions."""
    from ..online.options import STREAM_PARAMS

    g = p.add_argument_group("stream options (the online algorithms)",
                             "one prequential pass: every example is predicted, then learnt")
    for param in STREAM_PARAMS:
        add_param(g, param)
    g.add_argument("--predictions", metavar="P.csv",
                   help="write every example's prequential predictions: position, row (in the files), label, "
                   "randomised prediction, argmax (the data's own labels)")


def _owners(option: str) -> list:
    return sorted(name for name, cls in _algorithms().items() if any(p.cli and p.flag == option for p in cls.parameters))


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """Parse ``train`` arguments; an option ``--algo`` does not have is an InputError naming both."""
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--algo")
    known, _ = pre.parse_known_args(argv)
    algo = known.algo if known.algo in _algorithms() else None
    p = parser_for(algo)
    args, unknown = p.parse_known_args(argv)
    for token in unknown:
        option = token.split("=", 1)[0]
        owners = _owners(option)
        if owners:
            # every rank parses the same arguments: an agreed error, printed once
            raise CollectiveError(f"{option} is not an option of {args.algo} (it is an option of {', '.join(owners)}); "
                             f"`mpiboost train --algo {args.algo} --help` lists {args.algo}'s options")
    if unknown:
        p.error("unrecognized arguments: " + " ".join(unknown))
    return args


def training_files(args: argparse.Namespace) -> list:
    """``--data``, or ``--target`` followed by the ``--source`` files (domain 0 is the target)."""
    if args.target:
        if args.data:
            raise CollectiveError("give either --data or --target/--source, not both")
        if not args.source:
            raise CollectiveError("--target needs at least one --source file")
        return [args.target, *args.source]
    if args.source:
        raise CollectiveError("--source needs --target T.h5")
    if not args.data:
        raise CollectiveError("give the training data: --data F.h5 [...] or --target T.h5 --source S.h5 [...]")
    return list(args.data)


def algorithm_params(args: argparse.Namespace) -> dict:
    """The declared parameters given on the command line (plus what --target implies)."""
    from .. import boost

    cls = _algorithms()[args.algo]
    params = {p.name: getattr(args, p.name) for p in cls.parameters if p.cli and getattr(args, p.name, None) is not None}
    if _is_online(args.algo):
        return params
    if args.target:
        if "transfer" not in cls.tasks:
            raise CollectiveError(f"--target/--source are for the algorithms with the transfer task "
                             f"({', '.join(boost.with_task('transfer'))}), not {cls.name}")
        # domain 0 is the target: the transfer algorithms' target, the baselines' only training domain
        key = "target_domain" if cls.has("target_domain") else "train_domain"
        if key in params:
            raise CollectiveError(f"{cls.declared(key).flag} is set by --target (domain 0); give it with --data only")
        params[key] = 0
    return params


def _inputs(args: argparse.Namespace, data: Sequence[str], params: dict) -> list:
    """Every file the run reads, with its option (outputs must differ from all of them)."""
    files = [("--target" if args.target and i == 0 else "--source" if args.target else "--data", f)
             for i, f in enumerate(data)]
    files += [("--valid", f) for f in args.valid or ()]
    from .. import boost

    for p in boost.get(args.algo).parameters:
        if p.type is list:
            files += [(p.flag, f) for f in params.get(p.name) or ()]
    return files


def cmd_train(args: argparse.Namespace) -> int:
    from .. import callbacks as cb
    from .. import watchdog
    from ..comm import world
    from ..model import Model
    from ..outputs import check_outputs, save_model
    from ..driver.batch import TrainResult
    from ..driver.config import RunConfig
    from ..driver.record import checkpoint_record

    if _is_online(args.algo):
        return _train_online(args)
    # Everything that needs no data is checked before MPI starts (every rank alike).
    check_common(args)
    timeout = stall_timeout(args.stall_timeout)
    data = training_files(args)
    params = algorithm_params(args)
    # the run's one configuration: every option checked against the others, before any file is touched
    config = RunConfig.build(args.algo, args.rounds, params, has_valid=bool(args.valid), seed=args.seed,
                             valid_fraction=args.valid_fraction, valid_metric=args.valid_metric,
                             best_round=args.best_round, early_stop=args.early_stop, threads=args.threads,
                             dedicated_coordinator=args.dedicated_coordinator)
    comm = world()
    check_launcher(comm)
    # --metrics -: the records go to standard output, no file to check
    outputs = [("--model", args.model), ("--metrics", None if args.metrics == "-" else args.metrics),
               ("--checkpoint", args.checkpoint)]
    with comm.collective_guard():
        if comm.is_center:  # the center writes every output
            check_outputs(outputs, _inputs(args, data, params))
    watchdog.start(comm, timeout)
    callbacks = [cb.ProgressBar(False if args.quiet else None),
                 cb.RoundLog(0 if args.quiet and args.log_every is None else args.log_every)]
    writers = []
    if args.metrics:
        metrics_log = cb.MetricsLog(args.metrics, append=args.resume)
        writers.append(metrics_log)
    resume = None
    if args.resume and os.path.exists(args.checkpoint):
        with comm.collective_guard():
            resume = Model.load(args.checkpoint)
        if checkpoint_record(resume) is None:
            raise CollectiveError(f"--checkpoint {args.checkpoint} does not record its seed and data (a model, not a "
                                  "checkpoint, or one made by an older mpiboost): resume refused; delete it or "
                                  "train without --resume")
    if resume is not None and args.metrics:
        metrics_log.keep = resume.n_rounds  # like the checkpoint, the log keeps the rounds the checkpoint holds
    if args.checkpoint:
        writers.append(cb.Checkpoint(args.checkpoint, args.checkpoint_every or 10, keep=resume.n_rounds if resume else 0))
    from .. import signals
    from ..api import train_files

    signals.install()  # SIGTERM / SIGUSR1: stop after the current round, with the checkpoint (signals.py)
    try:
        model = train_files(config, data, valid=args.valid, comm=comm, callbacks=callbacks + writers, resume=resume)
    except signals.Preempted as exc:
        return _preempted_phase(comm, args, exc)
    result = TrainResult(model, model.summary_)
    if str(result.summary.get("stop_reason", "")).startswith("stopped by SIG"):
        return _preempted(comm, args, result, writers)
    from .. import boost
    from ..driver.selection.source_trust import describe as trust_line

    if boost.get(args.algo).empty_model_fails:
        import numpy as np

        # A transfer run that learnt nothing (no round, or only rounds whose votes are all 0)
        # is a failure, not a model: its constant prediction ignores the target's few labels,
        # which is all the user asked it to use. Every rank knows the model alike, so the
        # verdict is agreed, and nothing is saved.
        empty = result.model.n_rounds == 0
        flat = not empty and not np.any(np.asarray(result.model.coef) != 0)
        why = (f"no round could be trained ({result.summary['stop_reason']})" if empty else
               "every vote of the model is 0 (no candidate chain has an edge on the target rows)")
        trust = result.summary.get("source_trust")
        chose = "" if not trust or trust.get("chosen") == "algorithm" else f" [{trust_line(trust)}]"
        comm.check(not (empty or flat), f"{args.algo}: {why}: not one candidate stump has an edge on the target "
                                        f"rows, so no model was saved to {args.model} (check the target's labels "
                                        f"and features){chose}")
    if result.model.n_stumps == 0 and comm.is_center:
        # a legitimate end (an algorithm may find no usable weak learner), but never a silent one
        import sys

        log.warning(f"no round could be trained ({result.summary['stop_reason']}): the model in {args.model} is "
                    f"empty and predicts class {result.model.classes[-1]!r} for every row")
    message = ""
    if comm.is_center:
        failed = save_model(result.model, args.model)
        if not failed:
            print(summary_line(result.summary, args.model), flush=True)
            if result.summary.get("warning"):
                import sys

                log.warning(result.summary["warning"])
        lost = "; ".join(w.failure for w in writers if w.failure)
        if failed:
            message = failed + (f"; {lost}" if lost else "")
        elif lost:
            message = f"the model was saved to {args.model}, but {lost}"
    # agreed: every rank ends with the center's verdict on the writes (exit 2 if one failed)
    comm.check(not message, message)
    return 0


def _preempted(comm, args: argparse.Namespace, result, writers) -> int:
    """A run stopped by SIGTERM / SIGUSR1: the checkpoint is written (by its callback), no model; exit 75."""
    import sys

    from ..signals import PREEMPTED_EXIT

    s = result.summary
    lost = "; ".join(w.failure for w in writers if w.failure)
    if comm.is_center:
        kept = (f"checkpoint {args.checkpoint} holds round {s['rounds_trained'] if 'rounds_trained' in s else s['rounds']}"
                f"; continue with the same command and --resume" if args.checkpoint and not lost else
                "no --checkpoint was given, so the rounds trained are lost" if not args.checkpoint else
                f"but the checkpoint could not be written ({lost})")
        log.info(f"{s['stop_reason']} after round {s['rounds']} of {args.rounds}: no model was saved to "
                 f"{args.model}; {kept} (exit {PREEMPTED_EXIT})")
    comm.barrier()
    return PREEMPTED_EXIT


def _preempted_phase(comm, args: argparse.Namespace, exc) -> int:
    """A selection phase stopped by SIGTERM / SIGUSR1 (every rank alike): nothing chosen, nothing saved; exit 75.

    A checkpoint being resumed is left as it was (it cannot be one of this phase: a checkpoint records the
    choices made before its rounds, so a resumed run makes none); the next ``--resume`` runs the phase anew.
    """
    import sys

    from ..signals import PREEMPTED_EXIT

    if comm.is_center:
        then = ("the same command with --resume runs it again from its start" if args.checkpoint else
                "run the command again (with --checkpoint and --resume, later stops keep the rounds trained)")
        log.info(f"{exc} before the first round: no choice was recorded and no model was saved to {args.model}; "
                 f"{then} (exit {PREEMPTED_EXIT})")
    comm.barrier()
    return PREEMPTED_EXIT


def _train_online(args: argparse.Namespace) -> int:
    from .. import watchdog
    from ..comm import world
    from . import online as online_train

    online_train.check_options(args)
    if args.dedicated_coordinator:
        raise CollectiveError(f"--dedicated-coordinator is not an option of {args.algo}: every rank holds a share "
                              "of the weak learners")
    check_threads(args.threads)
    timeout = stall_timeout(args.stall_timeout)
    params = algorithm_params(args)
    comm = world()
    check_launcher(comm)
    watchdog.start(comm, timeout)
    from .. import signals

    signals.install()  # SIGTERM / SIGUSR1: every rank stops after the same block, exit 75 (driver/online.py)
    return online_train.run(comm, args, params)


def summary_line(s: dict, model_path: str) -> str:
    """The one line ``train`` prints at the end."""
    sec = s["seconds"]
    classes = f", {s['classes']} classes" if s.get("classes", 2) > 2 else ""
    # a model of its fitted start alone (no round) is not empty: say what it holds
    rounds = f"{s['rounds']} rounds" if s["rounds"] or not s.get("members") else \
        f"start alone ({s['members']} members)"
    line = (
        f"mpiboost: {s['algorithm']} {rounds} on {s['n']:,} rows x {s['d']} features{classes}, "
        f"{s['ranks']} rank(s) x {s['threads']} thread(s): {sec['total']:.2f} s "
        f"(load {sec['load']:.2f}, "
        + (f"selection {sec['selection']:.2f}, " if sec.get("selection", 0.0) >= 0.005 else "")
        + f"rounds {sec['rounds']:.2f}, communication {sec['communication']:.2f}); "
        + (f"train {METRIC_NAMES[s['metric']]} {s['train_metric']:.6g}" if s.get("metric") else
           f"train error {s['train_error'] if s['train_error'] is not None else float('nan'):.4f}")
    )
    if s.get("valid_error") is not None:
        if s.get("valid_metric") in METRIC_NAMES:
            line += f", valid {METRIC_NAMES[s['valid_metric']]} {s['valid_error']:.6g}"
        elif s.get("valid_metric") == "auc":
            line += f", valid AUC {1.0 - s['valid_error']:.4f}"
        elif s.get("valid_metric") == "logloss":
            line += f", valid log-loss {s['valid_error']:.6g}"
        else:
            line += f", valid error {s['valid_error']:.4f}"
    if s.get("best_round") is not None:
        line += f" (best of {s['rounds_trained']} rounds trained)"
    from ..driver.selection import describe

    line += "".join(f" [{text}]" for text in describe(s))
    line += f"; {s['bytes_all_ranks']['sent']:,} bytes sent; model -> {model_path}"
    if s["stop_reason"] != "rounds":
        line += f" (stopped early: {s['stop_reason']})"
        if s.get("members", s["rounds"]) == 0:
            line += "; the model is EMPTY and predicts the second class for every row"
    return line
