"""Boosting algorithms: one module each, all implementing :class:`.base.Algorithm`.

:data:`ALGORITHMS` is the registry, the only list of algorithms: the CLI's
``--algo`` choices and options, the docs' options table and the contract
tests all come from it. Adding an algorithm is one module plus one line here.
"""
from .adaboost import AdaBoost
from .agnostic_batch import AgnosticBatch
from .base import Algorithm, Hypothesis, Param, check_declarations
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
check_declarations(list(ALGORITHMS.values()))

__all__ = ["ALGORITHMS", "Algorithm", "Hypothesis", "Param", "get", "with_task"]


def get(name: str) -> type:
    """The algorithm class called ``name``."""
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise KeyError(f"unknown algorithm {name!r}; choose from {', '.join(sorted(ALGORITHMS))}") from None


def with_task(task: str) -> list:
    """The names of the algorithms that declare ``task``."""
    return [name for name, cls in ALGORITHMS.items() if task in cls.tasks]
