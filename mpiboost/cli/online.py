"""``mpiboost train --algo <online algorithm>``: the command line's options of an online pass, the pass
(:func:`mpiboost.driver.online.stream`), and its outputs (the model, the ``--metrics`` records, the summary
line)."""
from __future__ import annotations

import argparse
import json

from .. import log
from ..driver.online import Stopped, stream, stream_options
from ..errors import CollectiveError
from ..online.options import STREAM_PARAMS


def check_options(args: argparse.Namespace) -> None:
    """The online run's options (every rank alike: an agreed error, printed once); sets ``args.stream``."""
    refused = [(args.valid, "--valid"), (args.valid_fraction is not None, "--valid-fraction"),
               (args.best_round, "--best-round"), (args.early_stop is not None, "--early-stop"),
               (args.checkpoint, "--checkpoint"), (args.resume, "--resume"), (args.target, "--target"),
               (args.source, "--source"), (args.rounds is not None, "--rounds")]
    for given, option in refused:
        if given:
            raise CollectiveError(
                f"{option} is not an option of {args.algo}: an online booster makes one prequential pass over "
                "the stream (every example predicted, then learnt) and reports the accuracy of those predictions "
                "(acc_test on the last --test-fraction of the stream)")
    if not args.data:
        raise CollectiveError(f"{args.algo} needs --data F.h5 [...] (the stream, in the files' order)")
    if not 0 <= args.seed < 2**63:
        raise CollectiveError(f"--seed must be in 0..2**63-1, got {args.seed}")
    args.stream = stream_options({p.name: getattr(args, p.name, None) for p in STREAM_PARAMS})


def run(comm, args: argparse.Namespace, params: dict) -> int:
    """Collective: the whole online run of the command line (after :func:`check_options`); the exit code.

    Parameters
    ----------
    comm : Comm
        The job's ranks.
    args : argparse.Namespace
        The parsed ``train`` options, ``args.stream`` set by :func:`check_options`.
    params : dict
        The online booster's own parameters, from its options.

    Returns
    -------
    int
        0, or :data:`mpiboost.signals.PREEMPTED_EXIT` when a signal stopped the pass (nothing is saved).
    """
    from ..atomic import atomic_path
    from ..outputs import check_outputs, save_model

    with comm.collective_guard():
        if comm.is_center:
            check_outputs([("--model", args.model), ("--metrics", None if args.metrics == "-" else args.metrics),
                           ("--predictions", args.predictions)], [("--data", f) for f in args.data])
    try:
        model, summary, records = stream(comm, args.algo, params, args.data, args.stream, args.seed,
                                         predictions=args.predictions, progress=False if args.quiet else None,
                                         model_path=args.model)
    except Stopped as stop:
        from ..signals import PREEMPTED_EXIT

        if comm.is_center:
            log.info(f"stopped by {stop.name} after {stop.done:,} of {stop.n:,} examples: an online pass keeps no "
                     f"checkpoint, so no model was saved to {args.model} (nor predictions or metrics); run the "
                     f"command again for the whole pass (exit {PREEMPTED_EXIT})")
        comm.barrier()
        return PREEMPTED_EXIT
    if comm.is_center:
        message = save_model(model, args.model) or ""
        if args.metrics == "-":  # standard output: the records, then the summary line below
            for r in records + [{"summary": summary}]:
                print(json.dumps(r, sort_keys=True), flush=True)
        elif args.metrics:
            try:
                with atomic_path(args.metrics) as tmp:
                    with open(tmp, "w", encoding="utf-8") as f:
                        for r in records:
                            f.write(json.dumps(r, sort_keys=True) + "\n")
                        f.write(json.dumps({"summary": summary}, sort_keys=True) + "\n")
            except OSError as exc:
                message += ("; " if message else "") + f"could not write --metrics {args.metrics} ({exc})"
        if not message:
            print(json.dumps(summary, sort_keys=True), flush=True)
    else:
        message = ""
    comm.check(not message, message)
    return 0
