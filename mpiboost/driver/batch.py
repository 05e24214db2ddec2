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
from typing import Optional, Sequence

from .._ext import _openmp
from ..callbacks import Callback, RoundEnv, sorted_callbacks
from ..data import labels as lab
from ..errors import CollectiveError
from ..model import Model
from .algorithm import _with, make_algorithm
from .inputs import load_inputs
from .record import run_record
from .resume import check_resume
from .run import run_once
from .selection import SELECTIONS, Context, Plan, best_round as rounds_choice
from .summary import summarize
from .validation import VALID_METRICS, _validation_source, check_validation, resolve_metric


@dataclass
class TrainResult:
    model: Model
    summary: dict = field(default_factory=dict)


def train(
    comm,
    data: Sequence[str],
    *,
    algorithm: str,
    rounds: int,
    params: Optional[dict] = None,
    seed: int = 0,
    valid: Optional[Sequence[str]] = None,
    callbacks: Sequence[Callback] = (),
    dedicated_coordinator: bool = False,
    threads: Optional[int] = None,
    resume: Optional[Model] = None,
    valid_fraction: Optional[float] = None,
    best_round: bool = False,
    early_stop: Optional[int] = None,
    blocks: Optional[Sequence[int]] = None,
    valid_metric: str = "error",
) -> TrainResult:
    """Collective: train ``algorithm`` for ``rounds`` rounds on the rows of ``data``.

    Parameters
    ----------
    comm
        The job's communicator (:func:`mpiboost.comm.world`), or any
        :class:`mpiboost.comm.Comm`.
    data, valid
        Training and (optional) validation files; validation rows are binned
        with the training edges and must hold the training classes.
    algorithm, params, seed
        Algorithm name (see :data:`mpiboost.boost.ALGORITHMS`), its
        parameters (checked against its declarations; missing ones take
        their defaults), and the seed of every random choice.
    callbacks
        :class:`mpiboost.callbacks.Callback` objects.
    resume
        A partial model (checkpoint) of the same run: its rounds are replayed
        (``apply`` only) and training continues after them, giving the same
        model as an uninterrupted run. A checkpoint of another algorithm,
        parameters, seed, training data or validation split is refused
        (CollectiveError).
    valid_fraction
        Hold out this fraction of the training rows as validation rows
        (:func:`split_valid`: stratified, the same on any number of ranks)
        instead of ``valid`` files.
    best_round, early_stop
        Keep the model truncated to the round of lowest validation error
        (the earliest of equal ones); with ``early_stop`` K, stop once K
        rounds in a row did not improve on it. Parameters given as
        ``"auto"`` (a declared grid, e.g. SmoothBoost's ``epsilon``) are
        chosen by a run per grid value, by best-round validation error, and
        imply ``best_round``. The choice and the validation curve are in
        ``model.info["validation"]``.
    blocks
        Rows of the training files per rank (``comm.size`` counts, the same
        on every rank); ``None``: even blocks. The model does not depend on
        it.
    valid_metric
        What the validation rows measure, for the round choice and the
        ``auto`` search: ``"error"`` (the default) or ``"auc"`` (binary
        labels; scored as 1 - AUC, a task model's as the mean over its tasks,
        so imbalanced tasks are judged by their ranking, not by a majority
        vote that is right on most rows).

    Returns
    -------
    TrainResult
        The model (identical on every rank) and a summary of the run.
    """
    clock = time.perf_counter
    t_start = clock()
    check_validation(algorithm, params, valid=valid, valid_fraction=valid_fraction, best_round=best_round,
                     patience=early_stop)
    if valid_metric not in VALID_METRICS:
        raise CollectiveError(f"--valid-metric must be one of {', '.join(VALID_METRICS)}, got {valid_metric!r}")
    algo = make_algorithm(algorithm, params, rounds, resume)  # with "auto" values: checks the rest before any work
    run = run_record(comm, data, seed)
    if valid_fraction:
        run["valid_fraction"] = float(valid_fraction)  # another split trains on other rows: resume refused
    if valid_metric != "error":
        run["valid_metric"] = valid_metric  # another metric chooses other rounds: resume refused
    ctx = Context(comm, algo, dict(params or {}), rounds, seed, sorted_callbacks(callbacks), resume, early_stop)
    # the choices a checkpoint made, checked against this run before any work: it trains them on
    records = {sel.key: sel.recorded(ctx) for sel in SELECTIONS}
    if resume is not None:
        trained = algo.name
        for sel in SELECTIONS:
            if records[sel.key] is not None:
                trained = sel.trains(records[sel.key], trained)
        check_resume(resume, trained, run)
    n_threads = threads or comm.default_threads()
    _openmp.set_num_threads(n_threads)
    inputs = load_inputs(comm, algo, data, valid, seed=seed, dedicated_coordinator=dedicated_coordinator,
                         valid_fraction=valid_fraction, blocks=blocks)
    valid_metric = resolve_metric(valid_metric, inputs.shard, algo)
    if valid_metric == "auc" and inputs.shard.n_classes != 2:
        raise CollectiveError(f"--valid-metric auc ranks two classes; the training data have {inputs.shard.n_classes}")
    inputs.valid_metric = valid_metric
    # load_inputs read the files of list parameters and left their names only: every run below records those
    params = _with(params, {p.name: algo.params[p.name] for p in type(algo).parameters
                            if p.type is list and algo.params.get(p.name)})
    plan = Plan(algorithm, params, inputs)
    ctx = Context(comm, algo, params, rounds, seed, sorted_callbacks(callbacks), resume, early_stop)
    searched = bool(plan.auto)
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
    chooser = rounds_choice.chooser(best_round, early_stop, searched)
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
            **_validation_source(valid, valid_fraction, inputs),
            **(chooser.summary() if chooser is not None else {"last_error": out.last.get("valid_error")}),
            "rounds_chosen": bool(chooser is not None),
            "metric": valid_metric,  # "auc": the errors above are 1 - AUC
        }
    seconds = {"total": t_end - t_start, "load": inputs.seconds, "selection": t_select, "rounds": out.seconds}
    summary = summarize(comm, out.proto, out.algo, model, inputs, stop_reason=stop_reason, last=out.last,
                        phase=out.phase, threads=n_threads, seconds=seconds, sent_before=out.sent_before)
    summary["valid_metric"] = valid_metric  # "auc": the valid_error figures are 1 - AUC
    if chooser is not None:
        summary.update(rounds_choice.summary(chooser, trained))
    summary.update(info)  # each choice's record, under its selection's key
    if "search" in info:
        summary["chosen"] = dict(info["search"]["chosen"])
    # The callbacks see the model the rounds built (a checkpoint must hold every trained round, or a resumed run
    # would go on from the best round); the model kept is the result's.
    env = RoundEnv(t=full.n_rounds, rounds=rounds, model=full, is_center=comm.is_center, summary=summary, run=run)
    for cb in sorted_callbacks(callbacks):
        cb.on_train_end(env)
    return TrainResult(model, summary)
