"""mpiboost: distributed boosting over the ranks of an MPI job.

``mpiboost.train(params, X, y)`` trains on in-memory rows (under ``mpiexec``, each rank
its own: :mod:`mpiboost.api`); ``mpiboost.load(path)`` reads a saved model, batch or online.
"""
from ._version import __version__

from .api import train  # noqa: E402  (light: the driver is imported when training starts)


def load(path):
    """The model saved at ``path`` (a batch :class:`mpiboost.model.Model` or an online model)."""
    from .online.model import load_any

    return load_any(path)


def __getattr__(name):
    if name == "Model":
        from .model import Model

        return Model
    raise AttributeError(f"module 'mpiboost' has no attribute {name!r}")


__all__ = ["Model", "__version__", "load", "train"]
