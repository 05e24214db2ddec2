"""Every algorithm, batch and online, in one registry: what ``--algo``, the API, the estimators and the docs list.

The batch algorithms (:data:`mpiboost.boost.ALGORITHMS`, contract :class:`mpiboost.boost.base.Algorithm`)
train round by round; the online boosters (:data:`mpiboost.online.ONLINE`, contract
:class:`mpiboost.online.base.OnlineBooster`) make one prequential pass. Both declare their parameters as
:class:`mpiboost.param.Param`; each class says which it is in ``kind`` (``"batch"`` or ``"online"``).
Adding an algorithm is one module plus one line in its family's registry; this one follows.
"""
from __future__ import annotations


def algorithms() -> dict:
    """Name -> class of every algorithm: the batch ones, then the online boosters."""
    from .boost import ALGORITHMS
    from .online import ONLINE

    return {**ALGORITHMS, **ONLINE}


def get(name: str) -> type:
    """The class of algorithm ``name`` (KeyError naming the choices)."""
    every = algorithms()
    try:
        return every[name]
    except KeyError:
        raise KeyError(f"unknown algorithm {name!r}; choose from {', '.join(sorted(every))}") from None


def is_online(name) -> bool:
    """Whether ``name`` is an online booster."""
    cls = algorithms().get(name)
    return cls is not None and cls.kind == "online"


__all__ = ["algorithms", "get", "is_online"]
