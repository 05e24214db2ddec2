"""What every mpiboost model offers its user, whichever trained it: a batch ensemble
(:class:`mpiboost.model.Model`) or an online booster (:class:`mpiboost.online.model.OnlineModel`).

Both are saved to one HDF5 file and loaded by :func:`mpiboost.load`; both predict the user's labels from raw
rows, in the order of their ``classes``, and name their features as scikit-learn does. Each defines how it
scores rows (:meth:`decision_function`, :meth:`predict_proba`) and how it is written (:meth:`save`,
:meth:`to_json`).
"""
from __future__ import annotations

import os
from abc import ABC, abstractmethod
from typing import Optional

import numpy as np

from .data import labels as lab


class ModelBase(ABC):
    """The common face of the models (see the module docstring)."""

    algorithm: str
    params: dict
    classes: list
    feature_names: Optional[list]
    info: dict
    kind: str = "batch"

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    @abstractmethod
    def n_features(self) -> int:
        """The features of the rows the model takes."""

    @property
    def feature_names_in_(self) -> np.ndarray:
        """The features' names (``x0``, ``x1``, ... where the data named none), as scikit-learn has them."""
        names = self.feature_names or [f"x{j}" for j in range(self.n_features)]
        return np.asarray(names, dtype=object)

    def labels_of(self, index: np.ndarray) -> np.ndarray:
        """The user's label values of class indices."""
        values = lab.as_array(self.classes)
        if values.dtype.kind == "i":
            values = values.astype(lab.y_dtype(self.classes) if lab.stores_as_values(self.classes) else np.int64)
        return values[np.asarray(index, dtype=np.intp)]

    @abstractmethod
    def decision_function(self, X, domain=None) -> np.ndarray:
        """The model's scores of raw rows ``X``."""

    @abstractmethod
    def predict_proba(self, X, domain=None) -> np.ndarray:
        """Class probabilities (n, K) of raw rows ``X``, in the order of :attr:`classes`."""

    @abstractmethod
    def predict(self, X, domain=None) -> np.ndarray:
        """The user's labels of raw rows ``X``."""

    @abstractmethod
    def save(self, path: str | os.PathLike) -> None:
        """Write the model to ``path`` (HDF5), atomically."""

    @abstractmethod
    def to_json(self) -> str:
        """The model as canonical JSON (sorted keys, shortest round-trip floats): equal models, equal text."""


__all__ = ["ModelBase"]
