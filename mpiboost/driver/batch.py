"""The batch training driver: load -> set up -> replay a checkpoint -> rounds -> summary.

:func:`train` runs the steps, one module each: :mod:`.algorithm` (the algorithm from its declared
parameters), :mod:`.inputs` (the rows), :mod:`.validation` (the held-out rows and their metrics),
:mod:`.resume` (checkpoints), :mod:`.search` (``auto`` values), :mod:`.rounds` (the loop) and
:mod:`.summary`. The algorithm only sees its rows and the protocol (:class:`mpiboost.boost.Algorithm`),
and callbacks (:mod:`mpiboost.callbacks`) do the logging and checkpointing. Nothing here depends on
which algorithm runs: what differs is declared by the algorithm class.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

from .. import noise_check, source_trust
from .._ext import _openmp
from ..callbacks import BestRound, Callback, RoundEnv, sorted_callbacks
from ..data import labels as lab
from ..errors import CollectiveError, InputError
from ..model import Model

# The steps, one module each (re-exported: callers import them from here).
from .algorithm import MAX_ROUNDS, _with, auto_params, make_algorithm  # noqa: F401
from .inputs import _Inputs, _check_task, load_aligned_rows, load_inputs  # noqa: F401
from .validation import (  # noqa: F401
    MAX_VALID_FRACTION, VALID_METRICS, _class_index, resolve_metric, _subset, _valid_auc_loss, _valid_error, _validation_source,
    auc, check_validation, split_valid, valid_mask)
from .resume import (  # noqa: F401
    check_resume, check_resume_params, checkpoint_record, comparable_params, replay, run_record, trust_record)
from .rounds import round_metrics, run_rounds, setup  # noqa: F401
from .summary import chance_warning, peak_rss_bytes, summarize  # noqa: F401
from .search import _run_once, candidate, search  # noqa: F401


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
    auto = auto_params(algorithm, params)
    algo = make_algorithm(algorithm, params, rounds, resume)  # with "auto" values: checks the rest before any work
    run = run_record(comm, data, seed)
    if valid_fraction:
        run["valid_fraction"] = float(valid_fraction)  # another split trains on other rows: resume refused
    if valid_metric != "error":
        run["valid_metric"] = valid_metric  # another metric chooses other rounds: resume refused
    searched = None
    trust = trust_record(resume, algo)
    check = noise_check.recorded(resume)  # the noise check a checkpoint made (None: none, or no checkpoint)
    if resume is not None:
        # a checkpoint of a run whose folds chose an AdaBoost baseline is that baseline's
        trained = algo.name if trust is None or trust["chosen"] == "algorithm" else source_trust.BASELINE
        if check is not None and check["chosen"] == "adaboost":
            if algo.params.get("noise_check") == "off":
                raise CollectiveError("--resume: the checkpoint's noise check chose AdaBoost; --noise-check off "
                                      "asks for SmoothBoost (train anew, or resume without it)")
            trained = noise_check.BASELINE  # the check chose AdaBoost: the checkpoint is AdaBoost's
        check_resume(resume, trained, run)  # before any work
        if auto:
            searched = (resume.info or {}).get("search") if isinstance(resume.info, dict) else None
            if not isinstance(searched, dict) or set(searched.get("chosen") or {}) != set(auto):
                raise CollectiveError("--resume: the checkpoint does not record the choice of "
                                      + ", ".join(f"{k} auto" for k in auto) + " (made by another run)")
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
    choose = best_round or early_stop is not None or bool(auto)
    info: dict = {}
    t_select = clock()  # the selection phases (source trust, noise check, auto search): their own seconds
    if type(algo).has("source_trust"):
        # How far to trust the sources, from held-out target rows (source_trust.py): the run that follows
        # trains the way chosen, which may be an AdaBoost baseline instead of the transfer algorithm.
        with comm.collective_guard():
            try:
                algo.check_data(inputs.shard)  # resolves the target domain
            except ValueError as exc:
                raise InputError(str(exc)) from None
        if trust is None:
            if algo.params["source_trust"] == "cv":
                trust = source_trust.choose(comm, algorithm, params or {}, rounds, inputs, seed, algo.target,
                                            int(algo.params["source_folds"]), sorted_callbacks(callbacks))
            else:
                trust = {"chosen": algo.params["source_trust"], "rule": "given (--source-trust)"}
        info["source_trust"] = trust
        algorithm, params = source_trust.strategy_run(trust["chosen"], algorithm, params or {}, algo.target,
                                                      algo.n_target)
        if trust["chosen"] == "target":
            inputs = source_trust.target_only(comm, inputs, algo.target, seed)
        auto = auto_params(algorithm, params)
    if type(algo).has("noise_check"):
        # SmoothBoost's weight cap only costs accuracy when no label is wrong: held-out rows decide between it and
        # AdaBoost (noise_check.py); the run that follows trains the one chosen, on every training row.
        if check is None:
            why = noise_check.skipped(algo.params, auto)
            if why is None and resume is not None:
                why = "resumed from a checkpoint that made no check"
            check = ({"chosen": "algorithm", "rule": why} if why is not None else
                     noise_check.choose(comm, algorithm, params or {}, rounds, inputs, seed, sorted_callbacks(callbacks)))
        info["noise_check"] = check
        algorithm, params = noise_check.strategy_run(check["chosen"], algorithm, params or {})
        auto = auto_params(algorithm, params)
    if auto:
        if searched is None:
            searched = search(comm, algorithm, params, auto, rounds, inputs, seed, early_stop,
                              sorted_callbacks(callbacks))
        info["search"] = searched
    t_select = clock() - t_select
    if auto:
        params = _with(params, searched["chosen"])
    chooser = BestRound(early_stop) if choose else None
    algo, proto, stop_reason, last, phase, t_rounds, sent_before = _run_once(
        comm, algorithm, params, rounds, inputs, seed, callbacks, run, resume, chooser, info)
    t_end = clock()
    model = full = algo.finish()
    trained = model.n_rounds
    if stop_reason == "stopped by a callback" and chooser is not None and early_stop is not None \
            and trained - chooser.best_round >= early_stop:
        stop_reason = f"no better validation error in {early_stop} rounds"
    if chooser is not None and 0 < chooser.best_round < trained:
        model = model.truncated(chooser.best_round)
    model.info = {
        "n_train": algo.n_train(inputs.shard),
        "labels": {lab.text(k): int(v) for k, v in inputs.shard.label_counts.items()},
        "rounds": model.n_rounds,
        "stop_reason": stop_reason,
        "seed": seed,
        **info,
    }
    if inputs.valid is not None:
        model.info["validation"] = {
            **_validation_source(valid, valid_fraction, inputs),
            **(chooser.summary() if chooser is not None else {"last_error": last.get("valid_error")}),
            "rounds_chosen": bool(chooser is not None),
            "metric": valid_metric,  # "auc": the errors above are 1 - AUC
        }
    seconds = {"total": t_end - t_start, "load": inputs.seconds, "selection": t_select, "rounds": t_rounds}
    summary = summarize(comm, proto, algo, model, inputs, stop_reason=stop_reason, last=last, phase=phase,
                        threads=n_threads, seconds=seconds, sent_before=sent_before)
    summary["valid_metric"] = valid_metric  # "auc": the valid_error figures are 1 - AUC
    if chooser is not None:
        summary["valid_error"] = chooser.best_error  # the error of the model kept (truncated to the best round)
        summary["rounds_trained"] = trained
        summary["best_round"] = chooser.best_round
        summary["best_valid_error"] = chooser.best_error
    if auto:
        summary["chosen"] = dict(searched["chosen"])
    if trust is not None:
        summary["source_trust"] = trust
    if "noise_check" in info:
        summary["noise_check"] = info["noise_check"]
    # The callbacks see the model the rounds built (a checkpoint must hold every trained round, or a resumed run
    # would go on from the best round); the model kept is the result's.
    env = RoundEnv(t=full.n_rounds, rounds=rounds, model=full, is_center=comm.is_center, summary=summary, run=run)
    for cb in sorted_callbacks(callbacks):
        cb.on_train_end(env)
    return TrainResult(model, summary)
