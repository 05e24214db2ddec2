"""Boosting algorithms, one module each, all with the shape of :mod:`.base`."""
from .adaboost import AdaBoost
from .dtradaboost import DTrAdaBoost
from .fedmultiboost import FedMultiBoost
from .msdtra import MSDTrA
from .mstra import MSTrA
from .multiboost import MultiBoost
from .smoothboost import SmoothBoost
from .tradaboost import TrAdaBoost

ALGORITHMS = {
    cls.name: cls
    for cls in (SmoothBoost, AdaBoost, MultiBoost, FedMultiBoost, MSDTrA, MSTrA, DTrAdaBoost, TrAdaBoost)
}


def get(name: str):
    """The algorithm class called ``name``."""
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise KeyError(f"unknown algorithm {name!r}; choose from {', '.join(sorted(ALGORITHMS))}") from None
