"""Boosting algorithms, one module each, all with the shape of :mod:`.base`."""
from .adaboost import AdaBoost
from .fedmultiboost import FedMultiBoost
from .multiboost import MultiBoost
from .smoothboost import SmoothBoost

ALGORITHMS = {cls.name: cls for cls in (SmoothBoost, AdaBoost, MultiBoost, FedMultiBoost)}


def get(name: str):
    """The algorithm class called ``name``."""
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise KeyError(f"unknown algorithm {name!r}; choose from {', '.join(sorted(ALGORITHMS))}") from None
