"""Boosting algorithms: one module each, all implementing :class:`.base.Algorithm`.

:data:`ALGORITHMS` is the registry, the only list of algorithms: the CLI's
``--algo`` choices and options, the docs' options table and the contract
tests all come from it. Adding an algorithm is one module plus one line here.
"""
from .adaboost import AdaBoost
from .agnostic_batch import AgnosticBatch
from .base import PRESETS, Algorithm, Hypothesis, Param, check_declarations
from .dtradaboost import DTrAdaBoost
from .fedmultiboost import FedMultiBoost
from .gbdt import GBDT
from .is_multitask import ISMultitask
from .msdtra import MSDTrA
from .mstra import MSTrA
from .multiboost import MultiBoost
from .samme import SAMME
from .smoothboost import SmoothBoost
from .softmax import Softmax
from .tradaboost import TrAdaBoost

ALGORITHMS = {
    cls.name: cls
    for cls in (SmoothBoost, AdaBoost, SAMME, MultiBoost, FedMultiBoost, MSDTrA, MSTrA, DTrAdaBoost, TrAdaBoost,
                AgnosticBatch, ISMultitask, Softmax, GBDT)
}
PRESET = Param("preset", str, "default",
               "default: mpiboost's defaults (trees where they validate better, the safeguards on); paper: every "
               "option left out takes the value of the algorithm's paper (stumps, the exponential loss, the paper's "
               "rules), to reproduce it", choices=PRESETS, origin="beyond")
for _cls in ALGORITHMS.values():  # one declaration for every algorithm: --preset, in the CLI, API and estimators
    if not _cls.has("preset"):
        _cls.parameters = (*_cls.parameters, PRESET)
check_declarations(list(ALGORITHMS.values()))

__all__ = ["ALGORITHMS", "Algorithm", "Hypothesis", "Param", "carried", "get", "with_task"]


def get(name: str) -> type:
    """The algorithm class called ``name``."""
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise KeyError(f"unknown algorithm {name!r}; choose from {', '.join(sorted(ALGORITHMS))}") from None


def own_weak_learner(algorithm: str, params: dict):
    """The weak learner a run of ``algorithm`` with ``params`` trains: the one given, else its default (or its
    paper's, with ``preset`` paper); None for an algorithm without the option. A baseline trained in its place
    (the noise check's, the source screen's AdaBoost) is given it, so the two compare like with like."""
    return get(algorithm).weak_learner_of(params)


def carried(algorithm: str, params: dict, baseline: str, drop=()) -> dict:
    """The parameters of a run of ``algorithm`` that a ``baseline`` algorithm trained in its place takes.

    Every parameter the baseline declares is carried (but those in ``drop`` and unset ones), and the weak
    learner is the run's own (:func:`own_weak_learner`), so the two compare like with like. A parameter the
    baseline takes only beside another's value (``--beta`` with ``--search sample``) is dropped where the
    baseline's resolved parameters leave it no effect.
    """
    base = get(baseline)
    out = {k: v for k, v in params.items() if k not in drop and v is not None and base.has(k)}
    if base.has("weak_learner") and get(algorithm).has("weak_learner"):
        out["weak_learner"] = own_weak_learner(algorithm, params)
    free = base.resolve({k: v for k, v in out.items() if base.declared(k).when is None})
    return {k: v for k, v in out.items()
            if base.declared(k).when is None or free[base.declared(k).when[0]] == base.declared(k).when[1]}


def with_task(task: str) -> list:
    """The names of the algorithms that declare ``task``."""
    return [name for name, cls in ALGORITHMS.items() if task in cls.tasks]
