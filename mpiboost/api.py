"""The Python API: train on in-memory rows, each rank its own, the model of the CLI on the concatenated rows.

::

    import mpiboost
    model = mpiboost.train({"algo": "smoothboost", "rounds": 40, "seed": 2}, X, y)
    model.predict(X_test)

Under ``mpiexec -n N python script.py`` every rank passes its own rows (``X``, ``y``,
``domain`` of that rank: any sizes, none on some ranks) and every rank gets the same
model, byte for byte, as ``mpiboost train`` on a file holding the ranks' rows in rank
order, on any number of ranks. ``comm`` is an mpi4py communicator (the job's world by
default) or a :class:`mpiboost.comm.Comm`.

``params`` are keyed by the ``train`` command's option names: ``"algo"`` (required),
``"rounds"`` (required for the batch algorithms), ``"seed"``, ``"valid-fraction"``,
``"valid-metric"``, ``"best-round"``, ``"early-stop"``, ``"threads"``,
``"dedicated-coordinator"`` and each algorithm's own options (``docs/algorithms.md``),
with or without the leading ``--`` and with ``-`` or ``_`` alike (``"weak-learner"``,
``"--weak-learner"`` and ``"weak_learner"`` are the same key). Values are Python values
(``40``, ``0.1``, ``True``, ``"auto"``); they are checked against the algorithm's
declarations before any work.
"""
from __future__ import annotations

import numbers
from typing import Any, Optional, Sequence

from .errors import CollectiveError, InputError

# The train command's options that are not an algorithm's parameters (the run's own).
RUN_OPTIONS = ("algo", "rounds", "seed", "valid_fraction", "valid_metric", "best_round", "early_stop", "threads",
               "dedicated_coordinator")
# Options of the command line that make no sense on arrays, with what to use instead.
NOT_HERE = {"data": "pass X, y (and domain)", "target": "pass the target's rows as domain 0",
            "source": "pass the sources' rows as domains 1, 2, ...", "valid": "use the valid= argument",
            "model": "call model.save(path)", "metrics": "pass a callbacks.MetricsLog in callbacks=",
            "checkpoint": "pass a callbacks.Checkpoint in callbacks=", "resume": "use the resume= argument",
            "quiet": "the API shows no progress unless a callbacks.ProgressBar is passed"}


def _key(k: str) -> str:
    return str(k).lstrip("-").replace("-", "_")


def split_params(params: dict) -> tuple[str, dict, dict]:
    """``(algorithm, run options, algorithm parameters)`` of an API ``params`` dict (see the module docstring).

    Raises
    ------
    CollectiveError
        For a missing ``algo``, an unknown algorithm or option (naming the algorithms that have it), or one key
        given twice under two spellings.
    """
    from . import boost

    if not isinstance(params, dict):
        raise CollectiveError(f"params must be a dict of option names to values, got {type(params).__name__}")
    seen: dict = {}
    for k, v in params.items():
        key = _key(k)
        if key in seen:
            raise CollectiveError(f"params: {k!r} and {seen[key][0]!r} are the same option")
        seen[key] = (k, v)
    opts = {key: v for key, (_, v) in seen.items()}
    algo = opts.pop("algo", None)
    if algo is None:
        raise CollectiveError("params: 'algo' is required (e.g. {'algo': 'smoothboost', 'rounds': 100}); "
                              f"algorithms: {', '.join(sorted(boost.ALGORITHMS))}")
    from . import registry
    from .online.options import STREAM_PARAMS

    every = registry.algorithms()
    if not isinstance(algo, str) or algo not in every:
        raise CollectiveError(f"params: unknown algo {algo!r}; algorithms: {', '.join(sorted(every))}")
    cls = every[algo]
    online = cls.kind == "online"
    run = {k: opts.pop(k) for k in RUN_OPTIONS if k in opts}
    by_option = {}
    for p in tuple(cls.parameters) + (STREAM_PARAMS if online else ()):
        if p.cli:
            by_option[_key(p.flag)] = p.name
            by_option.setdefault(p.name, p.name)
    out = {}
    for key, v in opts.items():
        if key in NOT_HERE:
            raise CollectiveError(f"params: {seen[key][0]!r} is a command-line option; here, {NOT_HERE[key]}")
        if key not in by_option:
            owners = sorted(name for name, c in every.items()
                            if any(p.cli and key in (_key(p.flag), p.name) for p in c.parameters))
            if not online and any(key in (_key(p.flag), p.name) for p in STREAM_PARAMS):
                owners.append("the online boosters")
            hint = f" (an option of {', '.join(owners)})" if owners else ""
            raise CollectiveError(f"params: {seen[key][0]!r} is not an option of {algo}{hint}")
        out[by_option[key]] = v
    return algo, run, out


def _comm(comm):
    from .comm import Comm, world

    if comm is None:
        return world()
    if isinstance(comm, Comm):
        return comm
    if hasattr(comm, "Get_rank") and hasattr(comm, "Allreduce"):  # an mpi4py communicator
        return Comm(comm)
    raise CollectiveError(f"comm must be an mpi4py communicator or a mpiboost.comm.Comm, got {type(comm).__name__}")


def train(
    params: dict,
    X: Any,
    y: Any,
    domain: Any = None,
    *,
    valid: Optional[Sequence] = None,
    weight: Any = None,
    feature_names: Optional[Sequence[str]] = None,
    domain_names: Optional[Sequence[str]] = None,
    comm: Any = None,
    callbacks: Sequence = (),
    resume=None,
    categorical_feature: Optional[Sequence] = None,
):
    """Collective: train the algorithm of ``params`` on this rank's rows; the model, the same on every rank.

    Parameters
    ----------
    params : dict
        Options keyed by the ``train`` command's names (module docstring), e.g.
        ``{"algo": "samme", "rounds": 200, "weak-learner": "tree"}``.
    X : array-like of shape (n_local, d)
        This rank's rows: numpy, a pandas DataFrame (numeric columns, whose names become the feature names) or
        scipy.sparse. NaN is a missing value. A rank may pass no rows.
    y : array-like of shape (n_local,)
        This rank's labels: numbers or strings (the classes are the union over the ranks, in canonical order).
    domain : array-like of shape (n_local,), optional
        Domain (MultiBoost), source (transfer: 0 is the target) or task (multi-task) ids, integers from 0.
    valid : tuple, optional
        ``(X_valid, y_valid)`` or ``(X_valid, y_valid, domain_valid)``: this rank's validation rows, binned with
        the training edges (``"valid-fraction"`` holds out training rows instead).
    weight : array-like of shape (n_local,), optional
        This rank's sample weights (finite, >= 0): each row's gradient and hessian count that many times
        (``gbdt``, ``softmax``, ``adaboost`` with ``"loss": "logistic"``), or the first distribution is the
        weights' (``adaboost``, ``samme``); the others refuse them.
    feature_names, domain_names : sequence of str, optional
        Names recorded in the model (a DataFrame's columns name the features by default).
    comm : mpi4py communicator or mpiboost.comm.Comm, optional
        The ranks that train together (default: the whole job; one process without ``mpiexec``).
    callbacks : sequence of mpiboost.callbacks.Callback
        Called every round (progress, metrics, checkpoints, early stopping).
    resume : mpiboost.model.Model, optional
        A checkpoint of the same run to continue.
    categorical_feature : sequence of int or str, or mapping, optional
        Features (indices, or names) holding category codes 0, 1, ..., at most 255 categories: trees of one
        output split them natively, many categories against the rest (LightGBM's ``categorical_feature``).
        Their number of categories is the largest code over the ranks plus one, or the mapping's value
        (``{feature: categories}``). A DataFrame's ``category`` and text columns are categorical anyway (their
        codes in canonical order).

    Returns
    -------
    mpiboost.model.Model
        The model; ``model.summary_`` holds the run's summary (rounds, timings, bytes sent), which is not saved.

    Raises
    ------
    mpiboost.errors.CollectiveError
        On every rank alike, naming the option, argument, rank or row, before any training.
    """
    from .data.memory import memory_file
    from .driver.algorithm import make_algorithm

    comm = _comm(comm)
    algo, run, algo_params = split_params(params)
    from .registry import is_online

    if is_online(algo):
        return _train_online(comm, algo, run, algo_params, X, y, feature_names=feature_names, valid=valid,
                             callbacks=callbacks, resume=resume, domain=domain, weight=weight)
    from . import boost

    if boost.get(algo).needs_target and algo_params.get("target_domain") is None \
            and "target" not in list(domain_names or []):
        algo_params["target_domain"] = "0"  # the target's rows are domain 0 (sources 1, 2, ...)
    config = _config(algo, run, algo_params, has_valid=valid is not None)  # every option checked, before any work
    targets = make_algorithm(config.algorithm, config.params, config.rounds).load_task() == "regression"
    from .data import frames

    X, categories = frames.encode(comm, X)  # a DataFrame's categorical columns as codes, agreed over the ranks
    data = memory_file(comm, X, y, domain, feature_names=feature_names, domain_names=domain_names, weight=weight,
                       targets=targets)
    data.categorical = _categorical(comm, X, data, categories, categorical_feature)
    vfiles = None
    if valid is not None:
        if not isinstance(valid, (tuple, list)) or len(valid) not in (2, 3):
            raise CollectiveError("valid must be (X_valid, y_valid) or (X_valid, y_valid, domain_valid)")
        Xv, yv, dv = (tuple(valid) + (None,))[:3]
        Xv = frames.apply(Xv, categories)
        if hasattr(Xv, "columns") and data.feature_names:
            # a DataFrame's columns are matched by name, as predict matches them (the same set, any order)
            from .data.rows import raw_rows

            with comm.collective_guard():
                try:
                    Xv = raw_rows(Xv, len(data.feature_names), data.feature_names)
                except InputError as exc:
                    raise InputError(f"valid: {exc}".replace("model's", "training")) \
                        from None
        vfiles = [memory_file(comm, Xv, yv, dv, feature_names=data.feature_names,
                              domain_names=domain_names, what="valid", targets=targets)]
        vfiles[0].categorical = data.categorical
    model = _run_batch(comm, config, [data], vfiles, callbacks, resume)
    if categories:
        model.info["categories"] = categories  # saved with the model: predict maps a DataFrame's values by name
    return model


def _categorical(comm, X: Any, data, categories: Optional[dict], given: Optional[Sequence]) -> Optional[dict]:
    """Collective: ``{feature: number of categories}`` of the native categorical features, agreed over the
    ranks: a DataFrame's categorical columns (of at most 255 categories; more stay ordered codes) and the
    features ``given`` (indices or names), whose values must be codes 0 .. 254 (the global largest + 1
    categories)."""
    from .data.binning import not_codes
    from .data.format import MAX_CATEGORIES

    names = list(data.feature_names or [])
    out = {}
    for c, values in (categories or {}).items():
        if c in names and len(values) <= MAX_CATEGORIES:
            out[names.index(c)] = max(1, len(values))
    if given is None:
        return out or None
    sizes = dict(given) if isinstance(given, dict) else {}
    picked = []
    for g in given:
        if isinstance(g, str):
            if g not in names:
                raise CollectiveError(f"categorical_feature: no feature named {g!r}")
            picked.append(names.index(g))
        elif isinstance(g, numbers.Integral) and not isinstance(g, bool) and 0 <= int(g) < data.d:
            picked.append(int(g))
        else:
            raise CollectiveError(f"categorical_feature: {g!r} is not a feature index in 0..{data.d - 1} or name")
    import numpy as np

    Xl = data.local["X"]
    top = np.full(max(len(picked), 1), -1.0)
    with comm.collective_guard():
        for i, j in enumerate(picked):
            v = np.asarray(Xl[:, j], dtype=np.float64)
            v = v[~np.isnan(v)]
            bad = v[not_codes(v, MAX_CATEGORIES)]
            if bad.size:
                raise InputError(f"categorical_feature: feature {j} holds {bad[0]}, not a category code "
                                 f"0..{MAX_CATEGORIES - 1} (rank {comm.rank})")
            top[i] = v.max() if v.size else -1.0
    top = comm.allreduce_max(top) if comm.size > 1 else top
    for i, (g, j) in enumerate(zip(given, picked)):
        k = max(1, int(top[i]) + 1)
        if g in sizes:
            if not (isinstance(sizes[g], numbers.Integral) and k <= int(sizes[g]) <= MAX_CATEGORIES):
                raise CollectiveError(f"categorical_feature: {g!r} has codes up to {k - 1}, so {sizes[g]!r} is not "
                                      f"its number of categories (at most {MAX_CATEGORIES})")
            k = int(sizes[g])
        out[j] = k
    return out or None


def _config(algo: str, run: dict, algo_params: dict, *, has_valid: bool):
    """The run's configuration (:class:`mpiboost.driver.config.RunConfig`) from split ``params``, checked."""
    from .driver.config import RunConfig

    if run.get("rounds") is None:
        raise CollectiveError(f"params: 'rounds' is required for {algo}")
    options = {k: v for k, v in run.items() if k not in ("algo", "rounds")}
    try:
        return RunConfig.build(algo, run["rounds"], algo_params, has_valid=has_valid, **options)
    except CollectiveError as exc:
        text = str(exc)
        flag = text.split(" ", 1)[0]
        if flag.startswith("--") and _key(flag) in RUN_OPTIONS:  # a run option: named by its key here
            text = f"params: {_key(flag)!r}" + text[len(flag):]
        raise CollectiveError(text) from None


def _run_batch(comm, config, data: list, valid, callbacks, resume):
    """The batch driver on a checked configuration: the model, its run's summary in ``model.summary_``."""
    from .driver import batch

    result = batch.train(comm, data, config, valid=valid, callbacks=tuple(callbacks), resume=resume)
    model = result.model
    model.summary_ = result.summary
    return model


def train_files(params, data: Sequence[str], *, valid: Optional[Sequence[str]] = None, comm: Any = None,
                callbacks: Sequence = (), resume=None):
    """Collective: :func:`train` on HDF5 data files (every rank reads its block of their rows): the CLI's ``train``.

    Parameters
    ----------
    params : dict or mpiboost.driver.config.RunConfig
        As for :func:`train` (run options and the algorithm's own, checked here), or a
        :class:`mpiboost.driver.config.RunConfig` the caller built and checked.
    data : sequence of str
        The training files, in order (a transfer run: the target's file first, as domain 0).
    valid : sequence of str, optional
        Validation files, binned with the training edges.
    comm : mpi4py communicator or mpiboost.comm.Comm, optional
        The ranks that train together (default: the whole job; one process without ``mpiexec``).
    callbacks : sequence of mpiboost.callbacks.Callback
        Called every round (progress, metrics, checkpoints, early stopping).
    resume : mpiboost.model.Model, optional
        A checkpoint of the same run to continue.

    Returns
    -------
    mpiboost.model.Model
        The model, the same on every rank; ``model.summary_`` holds the run's summary.
    """
    from .driver.config import RunConfig

    comm = _comm(comm)
    if isinstance(params, RunConfig):
        config = params  # built and checked by the caller (the command line)
    else:
        algo, run, algo_params = split_params(params)
        config = _config(algo, run, algo_params, has_valid=bool(valid))
    return _run_batch(comm, config, list(data), list(valid) if valid else None, callbacks, resume)


def stream_rows(comm, X, y, feature_names=None):
    """Collective: every rank's rows, checked, joined in rank order on every rank (an online booster's stream).

    Parameters
    ----------
    comm : mpiboost.comm.Comm
        The ranks whose rows are joined.
    X : array-like of shape (n_local, d)
        This rank's rows, as for :func:`train` (numpy, a pandas DataFrame or scipy.sparse); a rank may pass
        none.
    y : array-like of shape (n_local,)
        This rank's labels, numbers or strings.
    feature_names : sequence of str, optional
        Names of the features (a DataFrame's columns name them by default).

    Returns
    -------
    mpiboost.data.memory.MemoryFile
        All the rows of every rank, in rank order, held on this rank.
    """
    import numpy as np

    from .comm import single
    from .data import labels as lab
    from .data.memory import memory_file

    mine = memory_file(comm, X, y, None, feature_names=feature_names)
    if comm.size == 1:
        return mine
    values = lab.as_array(mine.classes or [0])[mine.local["y"]] if mine.local["y"].size else np.zeros(0)
    parts = comm.allgather((mine.local["X"], values))
    Xa = np.concatenate([p[0] for p in parts if p[0].shape[0]], axis=0)
    ya = np.concatenate([p[1] for p in parts if p[1].shape[0]])
    return memory_file(single(), Xa, ya, None, feature_names=mine.feature_names)


def _train_online(comm, algo, run, params, X, y, *, feature_names, valid, callbacks, resume, domain, weight=None):
    """An online booster's prequential pass over the ranks' rows in rank order (the ``train`` command's run)."""
    from .driver import online as online_driver
    from .online.options import STREAM_PARAMS

    refused = [(k, run[k]) for k in RUN_OPTIONS if k not in ("algo", "seed", "threads") and run.get(k) is not None
               and run[k] is not False]
    refused += [(name, v) for name, v in (("valid", valid), ("resume", resume), ("domain", domain),
                                          ("weight", weight)) if v is not None] + ([("callbacks", callbacks)] if callbacks else [])
    if refused:
        raise CollectiveError(f"params: {refused[0][0]!r} is not an option of {algo}: an online booster makes one "
                              "prequential pass over the rows (every example predicted, then learnt)")
    names = {p.name for p in STREAM_PARAMS}
    opts = online_driver.stream_options({k: v for k, v in params.items() if k in names})
    seed = run.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2**63:
        raise CollectiveError(f"params: 'seed' must be an integer in 0..2**63-1, got {seed!r}")
    data = stream_rows(comm, X, y, feature_names)
    model, summary, _ = online_driver.stream(comm, algo, {k: v for k, v in params.items() if k not in names},
                                             [data], opts, int(seed))
    model.summary_ = summary
    return model


__all__ = ["RUN_OPTIONS", "split_params", "stream_rows", "train", "train_files"]
