"""The batch training driver: load -> the selections -> one run -> summary.

:func:`train` runs the steps, one module each: :mod:`.algorithm` (the algorithm from its declared
parameters), :mod:`.inputs` (the rows), :mod:`.record` and :mod:`.resume` (checkpoints),
:mod:`.selection` (the choices made on held-out rows, in order), :mod:`.run` (one run: set-up, replay,
:mod:`.rounds`), :mod:`.validation` (the metrics of held-out rows) and :mod:`.summary`. The algorithm
only sees its rows and the protocol (:class:`mpiboost.boost.Algorithm`), and callbacks
(:mod:`mpiboost.callbacks`) do the logging and checkpointing. Nothing here depends on which algorithm
runs: what differs is declared by the algorithm class.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Optional, Sequence, TYPE_CHECKING

from .._ext import _openmp
from ..callbacks import Callback, RoundEnv, sorted_callbacks
from ..data import labels as lab
from ..errors import CollectiveError
from ..model import Model
from .algorithm import _with, make_algorithm
from .config import RunConfig
from .inputs import load_inputs
from .record import run_record
from .resume import check_resume
from .run import run_once
from .selection import SELECTIONS, Context, Plan, best_round as rounds_choice
from .summary import summarize
from .validation import _validation_source, resolve_metric

if TYPE_CHECKING:  # annotations only
    from ..comm import Comm


@dataclass
class TrainResult:
    model: Model
    summary: dict = field(default_factory=dict)


def train(comm: Comm, data: Sequence, config: RunConfig, *, valid: Optional[Sequence] = None,
          callbacks: Sequence[Callback] = (), resume: Optional[Model] = None,
          blocks: Optional[Sequence[int]] = None) -> TrainResult:
    """Collective: train the run ``config`` on the rows of ``data``.

    Parameters
    ----------
    comm
        The job's communicator (:func:`mpiboost.comm.world`), or any :class:`mpiboost.comm.Comm`.
    data, valid
        Training and (optional) validation files (paths, or in-memory files of the API); validation rows are
        binned with the training edges and must hold the training classes.
    config : RunConfig
        The run, checked where it was built (:meth:`RunConfig.build`): the algorithm and its parameters, the
        rounds, the seed of every random choice, and how the model is chosen on validation rows (a held-out
        fraction, the best round, early stopping, the metric). Parameters given as ``"auto"`` (a declared
        grid, e.g. SmoothBoost's ``epsilon``) are chosen by a run per grid value, by best-round validation
        error, and imply the best round. The choices made before the rounds (:mod:`.selection`) and the
        validation curve are in ``model.info``.
    callbacks
        :class:`mpiboost.callbacks.Callback` objects.
    resume
        A partial model (checkpoint) of the same run: its rounds are replayed (``apply`` only) and training
        continues after them, giving the same model as an uninterrupted run. A checkpoint of another
        algorithm, parameters, seed, training data or validation split is refused (CollectiveError).
    blocks
        Rows of the training files per rank (``comm.size`` counts, the same on every rank); ``None``: even
        blocks. The model does not depend on it.

    Returns
    -------
    TrainResult
        The model (identical on every rank) and a summary of the run.
    """
    clock = time.perf_counter
    t_start = clock()
    if bool(valid) != config.has_valid:
        raise CollectiveError("the run's configuration was built " + ("without" if valid else "with")
                              + " validation files, but they are " + ("given" if valid else "not given"))
    algorithm, rounds, params, seed = config.algorithm, config.rounds, dict(config.params), config.seed
    algo = make_algorithm(algorithm, params, rounds, resume)  # its defaults, from the rounds or the checkpoint
    run = run_record(comm, data, seed)
    if config.valid_fraction:
        run["valid_fraction"] = float(config.valid_fraction)  # another split trains on other rows: resume refused
    if config.valid_metric != "error":
        run["valid_metric"] = config.valid_metric  # another metric chooses other rounds: resume refused
    ctx = Context(comm, algo, params, rounds, seed, sorted_callbacks(callbacks), resume, config.early_stop)
    # the choices a checkpoint made, checked against this run before any work: it trains them on
    records = {sel.key: sel.recorded(ctx) for sel in SELECTIONS}
    if resume is not None:
        trained = algo.name
        for sel in SELECTIONS:
            if records[sel.key] is not None:
                trained = sel.trains(records[sel.key], trained)
        check_resume(resume, trained, run)
    n_threads = config.threads or comm.default_threads()
    _openmp.set_num_threads(n_threads)
    inputs = load_inputs(comm, algo, data, valid, seed=seed, dedicated_coordinator=config.dedicated_coordinator,
                         valid_fraction=config.valid_fraction, blocks=blocks)
    valid_metric = resolve_metric(config.valid_metric, inputs.shard, algo)
    if valid_metric == "auc" and inputs.shard.n_classes != 2:
        raise CollectiveError(f"--valid-metric auc ranks two classes; the training data have {inputs.shard.n_classes}")
    inputs.valid_metric = valid_metric
    # load_inputs read the files of list parameters and left their names only: every run below records those
    params = _with(params, {p.name: algo.params[p.name] for p in type(algo).parameters
                            if p.type is list and algo.params.get(p.name)})
    plan = Plan(algorithm, params, inputs)
    searched = bool(plan.auto)
    chooser = rounds_choice.chooser(config.best_round, config.early_stop, searched)
    ctx = Context(comm, algo, params, rounds, seed, sorted_callbacks(callbacks), resume, config.early_stop,
                  rounds_chosen=chooser is not None)
    info: dict = {}
    t_select = clock()  # the selections' own seconds
    for sel in SELECTIONS:
        if not sel.wanted(plan, ctx):
            continue
        sel.prepare(plan, ctx)
        rec = records[sel.key] or sel.skipped(plan, ctx) or sel.choose(plan, ctx)
        info[sel.key] = rec
        plan = sel.apply(rec, plan, ctx)
    t_select = clock() - t_select
    out = run_once(comm, plan.algorithm, plan.params, rounds, plan.inputs, seed, callbacks=callbacks, run=run,
                   resume=resume, chooser=chooser, info=info)
    t_end = clock()
    inputs = plan.inputs
    full = out.algo.finish()
    trained = full.n_rounds
    stop_reason = rounds_choice.stop_reason(out.stop_reason, chooser, trained)
    model = rounds_choice.keep(full, chooser)
    model.info = {
        "n_train": out.algo.n_train(inputs.shard),
        "labels": {lab.text(k): int(v) for k, v in inputs.shard.label_counts.items()},
        "rounds": model.n_rounds,
        "stop_reason": stop_reason,
        "seed": seed,
        **info,
    }
    if inputs.valid is not None:
        model.info["validation"] = {
            **_validation_source(valid, config.valid_fraction, inputs),
            **(chooser.summary() if chooser is not None else {"last_error": out.last.get("valid_error")}),
            "rounds_chosen": bool(chooser is not None),
            "metric": valid_metric,  # "auc": the errors above are 1 - AUC
        }
    seconds = {"total": t_end - t_start, "load": inputs.seconds, "selection": t_select, "rounds": out.seconds}
    summary = summarize(comm, out.proto, out.algo, model, inputs, stop_reason=stop_reason, last=out.last,
                        phase=out.phase, threads=n_threads, seconds=seconds, sent_before=out.sent_before)
    summary["valid_metric"] = valid_metric  # "auc": the valid_error figures are 1 - AUC
    if chooser is not None:
        summary.update(rounds_choice.summary(chooser, trained, out.last.get("valid_error") if trained == 0 else None))
    summary.update(info)  # each choice's record, under its selection's key
    if "search" in info:
        summary["chosen"] = dict(info["search"]["chosen"])
    # The callbacks see the model the rounds built (a checkpoint must hold every trained round, or a resumed run
    # would go on from the best round); the model kept is the result's.
    env = RoundEnv(t=full.n_rounds, rounds=rounds, model=full, is_center=comm.is_center, summary=summary, run=run)
    for cb in sorted_callbacks(callbacks):
        cb.on_train_end(env)
    return TrainResult(model, summary)
