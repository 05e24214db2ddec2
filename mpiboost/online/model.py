"""The model file of an online booster: its weak learners' statistics and its own state.

An HDF5 file whose JSON ``header`` attribute has ``"kind": "online"`` (the
algorithm, its parameters, the classes, per feature its nominal values, the
training facts), a group ``learners`` with the N learners' additive
statistics (:meth:`mpiboost._ext._nba.NBABank.get_state`) and a group
``booster`` with the booster's own arrays. ``mpiboost predict``,
``evaluate`` and ``export`` read it like a stump ensemble: a row's scores
are the booster's distribution D over the classes and its prediction is
the argmax of D (the lowest of equal classes); the randomised prediction
of the online pass draws from the same D.
"""
from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from .._version import __version__
from . import learners
from ..atomic import write_bytes
from ..data import labels as lab
from ..errors import InputError
from ..h5read import open_checked
from ..model_base import ModelBase

KIND = "online"
FORMAT = 1
MAX_ARRAY_ELEMENTS = 1 << 31  # a learners' array bigger than this (16 GiB) is not a model this version wrote


@dataclass
class OnlineModel(ModelBase):
    """A trained online booster."""

    algorithm: str
    params: dict
    classes: list
    values: list  # per feature: its nominal values, 0 for numeric
    learners: dict  # NBABank state arrays
    booster: dict = field(default_factory=dict)  # the booster's own arrays
    feature_names: Optional[list] = None
    info: dict = field(default_factory=dict)
    learner: dict = field(default_factory=lambda: {"kind": "nba"})  # the weak learners' spec, resolved
    output = "argmax"
    needs_raw = True
    kind = KIND

    @property
    def n_features(self) -> int:
        return len(self.values)

    @property
    def n_learners(self) -> int:
        return int(self.params["n_learners"])

    def _header(self) -> dict:
        return {
            "kind": KIND,
            "format": FORMAT,
            "mpiboost_version": __version__,
            "algorithm": self.algorithm,
            "params": self.params,
            "classes": [lab.plain(c) for c in self.classes],
            "values": [int(v) for v in self.values],
            "learner": learners.spec(self.learner),
            "feature_names": self.feature_names,
            "info": self.info,
        }

    def make(self):
        """The booster and a bank holding the saved learners (checked: a ValueError names what does not fit)."""
        from . import ONLINE

        booster = ONLINE[self.algorithm](self.n_classes, self.params, int(self.info.get("seed", 0)))
        bank = learners.make_bank(self.learner, self.n_learners, self.n_classes, self.values)
        bank.set_state(self.learners)
        booster.set_state(self.booster)
        return booster, bank

    def distribution(self, X: np.ndarray) -> np.ndarray:
        """The booster's distribution D over the classes for every row of ``X`` (n, k)."""
        booster, bank = self.make()
        X = np.ascontiguousarray(X, dtype=np.float64)
        out = np.empty((X.shape[0], self.n_classes))
        labels = np.empty(self.n_learners, dtype=np.int32)
        for i in range(X.shape[0]):
            bank.predict(X[i], labels)
            out[i] = booster.distribution(labels, i)
        return out

    @property
    def feature_importances_(self):
        raise AttributeError("an online booster's naive-Bayes learners use every feature: no split importances")

    def _raw(self, X) -> np.ndarray:
        """Raw rows (n, d) as float64, checked as :meth:`mpiboost.model.Model.predict` checks them (InputError)."""
        from ..data.rows import raw_rows

        return np.asarray(raw_rows(X, self.n_features, self.feature_names), dtype=np.float64)

    def decision_function(self, X, domain=None) -> np.ndarray:
        """The booster's distribution D over the classes (n, k) for raw rows ``X`` (``domain`` is not used)."""
        return self.distribution(self._raw(X))

    def predict_proba(self, X, domain=None) -> np.ndarray:
        """D (n, k): the probabilities of the booster's randomised prediction (the learners' vote, not a
        calibrated posterior)."""
        return self.distribution(self._raw(X))

    def predict(self, X, domain=None) -> np.ndarray:
        """The user's labels of raw rows ``X``: the argmax of D (the lowest of equal classes)."""
        return self.labels_of(self.index_of(self.decision_function(X)))

    def index_of(self, D: np.ndarray) -> np.ndarray:
        """The predicted class of every row of D: its argmax, the lowest of equal classes."""
        return np.argmax(D, axis=1).astype(np.int32)

    def save(self, path: str | os.PathLike) -> None:
        """Write the model as HDF5, atomically (built in memory, then a temporary file renamed)."""
        import h5py

        buf = io.BytesIO()
        with h5py.File(buf, "w") as f:
            f.attrs["header"] = json.dumps(_plain(self._header()), sort_keys=True)
            for group, arrays in (("learners", self.learners), ("booster", self.booster)):
                g = f.create_group(group)
                for name, value in arrays.items():
                    g.create_dataset(name, data=np.asarray(value))
        write_bytes(path, buf.getbuffer())

    @classmethod
    def read(cls, f, header: dict, path: str) -> "OnlineModel":
        """The model of an open file whose header says ``kind: online``; everything checked (InputError)."""
        import h5py

        from . import ONLINE

        def need(name, ok, what):
            if name not in header or not ok(header[name]):
                raise InputError(f"{path}: header field '{name}' must be {what}")
            return header[name]

        if header.get("format") != FORMAT:
            raise InputError(f"{path}: online model format {header.get('format')!r} is not supported "
                             f"(this mpiboost reads format {FORMAT})")
        algorithm = need("algorithm", lambda v: v in ONLINE, f"one of {', '.join(sorted(ONLINE))}")
        params = need("params", lambda v: isinstance(v, dict), "an object")
        try:
            params = ONLINE[algorithm].resolve(params)
        except ValueError as exc:
            raise InputError(f"{path}: header field 'params': {exc}") from None
        try:
            classes = lab.decode_attr(header.get("classes"), path, "header field 'classes'")
        except ValueError as exc:
            raise InputError(str(exc)) from None
        values = need("values", lambda v: isinstance(v, list) and len(v) >= 1
                      and all(type(x) is int and 0 <= x <= 1 << 16 for x in v),
                      "a non-empty list of per-feature value counts 0..65536")
        names = header.get("feature_names")
        if names is not None and not (isinstance(names, list) and len(names) == len(values)
                                      and all(isinstance(x, str) for x in names)):
            raise InputError(f"{path}: header field 'feature_names' must be {len(values)} strings")
        try:
            # format 1 before the field: nba leaves without the prior; a file's learner names its kind (nba before
            # the kind could be chosen by the data)
            learner = learners.spec({"kind": "nba", **(header.get("learner") or {"var_prior": 0.0})})
            if learner["kind"] == "auto":
                raise ValueError("kind 'auto' is resolved before a model is saved")
        except ValueError as exc:
            raise InputError(f"{path}: header field 'learner': {exc}") from None
        info = header.get("info") or {}
        if not isinstance(info, dict):
            raise InputError(f"{path}: header field 'info' must be an object")
        groups = {}
        for group in ("learners", "booster"):
            if group not in f or not isinstance(f[group], h5py.Group):
                raise InputError(f"{path}: the group '{group}' is missing")
            arrays = {}
            for name, dset in f[group].items():
                if not isinstance(dset, h5py.Dataset) or dset.size > MAX_ARRAY_ELEMENTS or dset.dtype.kind not in "fiu":
                    raise InputError(f"{path}: {group}/{name} is not a numeric array of a model")
                value = np.asarray(dset[()])
                arrays[name] = value.astype(np.int64 if value.dtype.kind in "iu" else np.float64)
            groups[group] = arrays
        model = cls(algorithm, params, classes, values, groups["learners"], groups["booster"], names, info, learner)
        try:
            model.make()  # every shape and value checked against N, k and the features
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise InputError(f"{path}: the model's arrays do not fit its header ({exc})") from None
        return model

    def to_json(self) -> str:
        """Canonical JSON (sorted keys, exact floats)."""
        doc = self._header()
        doc["learners"] = {k: np.asarray(v).tolist() for k, v in sorted(self.learners.items())}
        doc["booster"] = {k: np.asarray(v).tolist() for k, v in sorted(self.booster.items())}
        return json.dumps(_plain(doc), sort_keys=True, allow_nan=True, separators=(",", ":"))


def load_any(path: str | os.PathLike):
    """A model file of either kind: a stump ensemble (:class:`mpiboost.model.Model`) or an :class:`OnlineModel`."""
    import h5py

    from ..model import Model
    from ..model_file import read_header

    path = os.fspath(path)
    f = open_checked(path, "HDF5 model file")
    try:
        with f:
            header = read_header(f, path) if "header" in f.attrs else {}
            if header.get("kind") == KIND:
                return OnlineModel.read(f, header, path)
    except InputError:
        raise
    except (OSError, KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise InputError(f"{path}: not a readable mpiboost model file ({exc})") from None
    return Model.load(path)


def _plain(obj: Any) -> Any:
    from ..model_file import _plain as plain

    return plain(obj)
