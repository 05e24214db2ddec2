"""The trained ensemble: prediction, the HDF5 model file and its canonical JSON.

A model is a list of stumps with coefficients, the bin edges that turn raw
features into the bins the stumps test, the class list (the user's label
values), and what produced it (algorithm, parameters, mpiboost version).
Binary stumps predict -1/+1 (``left``, ``right = -left``) and the ensemble
``sign(sum_t coef_t h_t(x))`` (``output = "sign"``; a zero score gives +1,
class 1); an unweighted majority vote has all coefficients 1. Class stumps
predict class indices and the ensemble ``argmax_c sum_t coef_t [h_t(x) = c]``
(``output = "argmax"``; ties go to the highest class).
A round may add several stumps (MSDTrA's mixture of candidates): ``round``
says which round each stump belongs to, and the transfer algorithms that
vote with the later rounds only (``params["vote_from"] == "half"``, as in
TrAdaBoost) give the earlier rounds' stumps no vote.

The JSON export is canonical (sorted keys, shortest round-trip floats, no
timestamps or host names), so two models compare byte for byte.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from . import __version__
from .atomic import atomic_path
from .data import labels as lab
from .data.binning import BinMapper
from .errors import InputError

MODEL_FORMAT = 2  # 2: classes, output and the right-hand value of each stump; format 1 files still load
READABLE_FORMATS = (1, 2)
OUTPUTS = ("sign", "argmax")


@dataclass
class Model:
    """A stump ensemble over binned features."""

    algorithm: str
    params: dict
    bins: BinMapper
    feature: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    bin: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    left: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    missing_left: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint8))
    coef: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    vote: str = "weighted"
    feature_names: Optional[list] = None
    info: dict = field(default_factory=dict)  # training facts (rows, labels, stopping reason)
    domain: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))  # -1: plain vote
    domain_classifier: Any = None  # Q(k|x) of a Q-ensemble (MultiBoost)
    domain_names: Optional[list] = None
    round: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))  # 1-based round of each stump
    right: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    classes: Optional[list] = None  # the user's label values; None: -1, +1
    output: str = "sign"

    def __post_init__(self) -> None:
        if self.classes is None:
            self.classes = [-1, 1]
        if self.output not in OUTPUTS:
            raise ValueError(f"output must be one of {OUTPUTS}, not {self.output!r}")

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def needs_raw(self) -> bool:
        """True if prediction needs the raw features (a Q-ensemble)."""
        return self.domain_classifier is not None

    # ------------------------------------------------------------ building
    @property
    def n_stumps(self) -> int:
        return int(self.feature.shape[0])

    @property
    def n_features(self) -> int:
        return self.bins.n_features

    @property
    def n_rounds(self) -> int:
        return int(self.round[-1]) if self.round.shape[0] else 0

    def first_voting_round(self) -> int:
        """The first round whose stumps vote: 1, or ceil(M/2) of M rounds with ``vote_from = "half"``."""
        if (self.params or {}).get("vote_from") == "half":
            return max(1, -(-self.n_rounds // 2))
        return 1

    def vote_coefficients(self) -> np.ndarray:
        """Each stump's coefficient in the vote (0 for rounds before :meth:`first_voting_round`)."""
        t0 = self.first_voting_round()
        if t0 <= 1:
            return self.coef
        return np.where(self.round >= t0, self.coef, 0.0)

    def append(self, stump, coef: float, domain: Optional[int] = None, round: Optional[int] = None) -> None:
        """Add a stump; it starts a new round unless ``round`` names the current one."""
        r = self.n_rounds + 1 if round is None else int(round)
        if r < self.n_rounds:
            raise ValueError(f"round {r} comes before the model's last round {self.n_rounds}")
        self.round = np.append(self.round, np.int32(r)).astype(np.int32)
        self.domain = np.append(self.domain, np.int32(-1 if domain is None else domain)).astype(np.int32)
        self.feature = np.append(self.feature, np.int32(stump.feature)).astype(np.int32)
        self.bin = np.append(self.bin, np.int32(stump.bin)).astype(np.int32)
        self.left = np.append(self.left, np.int32(stump.left)).astype(np.int32)
        self.right = np.append(self.right, np.int32(stump.right_value)).astype(np.int32)
        self.missing_left = np.append(self.missing_left, np.uint8(stump.missing_left)).astype(np.uint8)
        self.coef = np.append(self.coef, float(coef)).astype(np.float64)

    def stumps(self):
        from .weak.stump import Stump

        classes = self.output == "argmax"
        for t in range(self.n_stumps):
            right = int(self.right[t]) if classes else None
            stump = Stump(int(self.feature[t]), int(self.bin[t]), int(self.left[t]), bool(self.missing_left[t]), right)
            yield stump, float(self.coef[t])

    def truncated(self, rounds: int) -> "Model":
        """The model of the first ``rounds`` rounds (stumps, for one stump per round)."""
        m = Model(**{**self.__dict__})
        keep = int(np.searchsorted(self.round, rounds, side="right"))
        for name in ENSEMBLE_ARRAYS:
            setattr(m, name, getattr(self, name)[:keep].copy())
        return m

    def rounds(self):
        """``(round, [(stump, coef, domain), ...])`` for each round, in order."""
        items = list(zip(self.stumps(), self.domain, self.round))
        out: list = []
        for (stump, coef), k, r in items:
            entry = (stump, coef, None if k < 0 else int(k))
            if out and out[-1][0] == int(r):
                out[-1][1].append(entry)
            else:
                out.append((int(r), [entry]))
        return out

    def thresholds(self) -> np.ndarray:
        """Real-valued threshold of each stump (``x <= threshold`` goes left)."""
        return np.array(
            [self.bins.threshold(f, b) if f >= 0 else np.inf for f, b in zip(self.feature, self.bin)], dtype=np.float64
        )

    # ---------------------------------------------------------- prediction
    def _arrays(self, start: int = 0, stop: Optional[int] = None, coef: Optional[np.ndarray] = None):
        sl = slice(start, stop)
        c = self.vote_coefficients() if coef is None else coef
        return (
            np.ascontiguousarray(self.feature[sl], dtype=np.int32),
            np.ascontiguousarray(self.bin[sl], dtype=np.int32),
            np.ascontiguousarray(self.left[sl], dtype=np.int32 if self.output == "argmax" else np.int8),
            *((np.ascontiguousarray(self.right[sl], dtype=np.int32),) if self.output == "argmax" else ()),
            np.ascontiguousarray(self.missing_left[sl], dtype=np.uint8),
            np.ascontiguousarray(c[sl], dtype=np.float64),
        )

    def decision_function(self, cols: np.ndarray, X: Optional[np.ndarray] = None) -> np.ndarray:
        """Ensemble scores for feature-major bins ``cols`` (d, n) uint8.

        ``output = "sign"``: ``sum_t coef_t h_t(x)``, shape (n,); a Q-ensemble
        weighs stump t by ``Q(domain_t|x)`` and needs the raw rows ``X`` (n, d)
        for the domain classifier. ``output = "argmax"``: per-class sums
        ``sum_t coef_t [h_t(x) = c]``, shape (n, K).
        """
        from ._ext import _predict

        cols = np.ascontiguousarray(cols, dtype=np.uint8)
        if self.output == "argmax":
            from ._ext import _multiclass

            out = np.zeros((cols.shape[1], self.n_classes), dtype=np.float64)
            _multiclass.add_class_stumps(cols, *self._arrays(), out)
            return out
        out = np.empty(cols.shape[1], dtype=np.float64)
        if self.domain_classifier is None:
            _predict.predict_binned(cols, *self._arrays(), out)
            return out
        if X is None:
            raise ValueError("this model weighs its stumps by Q(k|x): pass the raw features")
        Q = np.ascontiguousarray(self.domain_classifier.proba(X))
        _predict.predict_binned_q(cols, *self._arrays(), np.ascontiguousarray(self.domain, dtype=np.int32), Q, out)
        return out

    def predict_index(self, cols: np.ndarray, X: Optional[np.ndarray] = None) -> np.ndarray:
        """Class index (into :attr:`classes`) of every row: argmax, or 1 where the sign score is >= 0."""
        return index_of_scores(self.decision_function(cols, X))

    def predict(self, cols: np.ndarray, X: Optional[np.ndarray] = None) -> np.ndarray:
        """Internal codes for feature-major bins: -1/+1 (``output = "sign"``; a zero score gives +1) or class indices."""
        score = self.decision_function(cols, X)
        if self.output == "argmax":
            return index_of_scores(score)
        return np.where(score >= 0, 1, -1).astype(np.int8)

    def labels_of(self, index: np.ndarray) -> np.ndarray:
        """The user's label values of class indices."""
        values = lab.as_array(self.classes)
        if values.dtype.kind == "i":
            values = values.astype(lab.y_dtype(self.classes) if lab.stores_as_values(self.classes) else np.int64)
        return values[np.asarray(index, dtype=np.intp)]

    def predict_raw(self, X: np.ndarray) -> np.ndarray:
        """The user's labels for raw ``(n, d)`` feature values (binned with the model's edges)."""
        X = np.asarray(X)
        cols = np.empty((X.shape[1], X.shape[0]), dtype=np.uint8)
        self.bins.transform(X, out=cols.T)
        return self.labels_of(self.predict_index(cols, X if self.needs_raw else None))

    def scorer(self, cols: np.ndarray, X: Optional[np.ndarray] = None) -> "Scorer":
        """A :class:`Scorer` of these rows that follows the model as stumps are added."""
        return Scorer(self, cols, X)

    # -------------------------------------------------------------- files
    def _header(self) -> dict:
        return {
            "format": MODEL_FORMAT,
            "mpiboost_version": __version__,
            "algorithm": self.algorithm,
            "params": self.params,
            "vote": self.vote,
            "output": self.output,
            "classes": [lab.plain(c) for c in self.classes],
            "n_features": self.n_features,
            "feature_names": self.feature_names,
            "info": self.info,
            "domain_names": self.domain_names,
            "domain_classifier": None if self.domain_classifier is None else self.domain_classifier.to_dict(),
        }

    def save(self, path: str | os.PathLike) -> None:
        """Write the model as HDF5, atomically (temporary file, then rename)."""
        import h5py

        with atomic_path(path) as tmp:
            with h5py.File(tmp, "w") as f:
                f.attrs["header"] = json.dumps(_plain(self._header()), sort_keys=True)
                g = f.create_group("ensemble")
                for name in ENSEMBLE_ARRAYS:
                    g.create_dataset(name, data=getattr(self, name))
                g.create_dataset("threshold", data=self.thresholds())
                flat, offsets = self.bins.flat()
                b = f.create_group("bins")
                b.create_dataset("edges", data=flat)
                b.create_dataset("offsets", data=offsets)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Model":
        """Read a model file (format 1 or 2); InputError naming the file and field if it is not one."""
        import h5py

        path = os.fspath(path)
        if not os.path.exists(path):
            raise InputError(f"{path}: no such model file")
        try:
            f = h5py.File(path, "r")
        except OSError as exc:
            raise InputError(f"{path}: not a readable HDF5 model file ({exc})") from None
        with f:
            if "header" not in f.attrs or "ensemble" not in f or "bins" not in f:
                raise InputError(f"{path}: not an mpiboost model file (no header/ensemble/bins)")
            try:
                h = json.loads(f.attrs["header"])
            except (TypeError, ValueError) as exc:
                raise InputError(f"{path}: the model header is not JSON ({exc})") from None
            if not isinstance(h, dict) or h.get("format") not in READABLE_FORMATS:
                got = h.get("format") if isinstance(h, dict) else None
                raise InputError(
                    f"{path}: model format {got} is not supported (this mpiboost reads formats "
                    f"{', '.join(map(str, READABLE_FORMATS))})"
                )
            g = f["ensemble"]
            n = len(g["coef"])
            bins = BinMapper.from_flat(f["bins/edges"][()], f["bins/offsets"][()])
            clf = None
            if h.get("domain_classifier"):
                from .domain_classifier import DomainClassifier

                clf = DomainClassifier.from_dict(h["domain_classifier"])
            left = g["left"][()].astype(np.int32)
            output = h.get("output", "sign")
            try:
                classes = lab.decode_attr(h["classes"], f"{path}: header") if "classes" in h else [-1, 1]
            except ValueError as exc:
                raise InputError(str(exc)) from None
            model = cls(
                algorithm=h["algorithm"],
                params=h["params"],
                bins=bins,
                feature=g["feature"][()].astype(np.int32),
                bin=g["bin"][()].astype(np.int32),
                left=left,
                right=g["right"][()].astype(np.int32) if "right" in g else -left,
                missing_left=g["missing_left"][()].astype(np.uint8),
                coef=g["coef"][()].astype(np.float64),
                vote=h["vote"],
                feature_names=h.get("feature_names"),
                info=h.get("info", {}),
                domain=g["domain"][()].astype(np.int32) if "domain" in g else np.full(n, -1, np.int32),
                domain_classifier=clf,
                domain_names=h.get("domain_names"),
                round=g["round"][()].astype(np.int32) if "round" in g else np.arange(1, n + 1, dtype=np.int32),
                classes=classes,
                output=output,
            )
        model.validate(path)
        return model

    def validate(self, where: str = "model") -> None:
        """Check that every array fits the others and the bins (InputError naming the field)."""
        n = self.n_stumps
        for name in ENSEMBLE_ARRAYS:
            if getattr(self, name).shape != (n,):
                raise InputError(f"{where}: ensemble/{name} has {getattr(self, name).shape[0]} entries, not {n}")
        d = self.n_features
        if n and (self.feature.max() >= d or self.feature.min() < -1):
            raise InputError(f"{where}: ensemble/feature holds a feature outside -1..{d - 1}")
        if n and (self.bin.min() < 0 or self.bin.max() > 255):
            raise InputError(f"{where}: ensemble/bin holds a bin outside 0..255")
        if self.output == "argmax":
            K = self.n_classes
            for name in ("left", "right"):
                v = getattr(self, name)
                if n and (v.min() < 0 or v.max() >= K):
                    raise InputError(f"{where}: ensemble/{name} holds a class outside 0..{K - 1}")
        elif n and not (np.isin(self.left, (-1, 1)).all() and np.array_equal(self.right, -self.left)):
            raise InputError(f"{where}: ensemble/left and right must be -1/+1 and opposite in a sign model")
        if self.output == "sign" and self.n_classes != 2:
            raise InputError(f"{where}: a sign model has two classes, not {self.n_classes}")
        if n and np.any(np.diff(self.round) < 0):
            raise InputError(f"{where}: ensemble/round must not decrease")

    def to_json(self) -> str:
        """Canonical JSON (sorted keys, exact floats, no volatile fields)."""
        doc = self._header()
        doc["ensemble"] = [
            {
                "feature": int(f),
                "bin": int(b),
                "threshold": float(th) if np.isfinite(th) else None,
                "left": int(lv),
                "right": int(rv),
                "missing_left": bool(ml),
                "coef": float(c),
                "domain": int(k) if k >= 0 else None,
                "round": int(r),
            }
            for f, b, th, lv, rv, ml, c, k, r in zip(
                self.feature, self.bin, self.thresholds(), self.left, self.right, self.missing_left, self.coef,
                self.domain, self.round,
            )
        ]
        doc["first_voting_round"] = self.first_voting_round()
        doc["bin_edges"] = [e.tolist() for e in self.bins.edges]
        return json.dumps(_plain(doc), sort_keys=True, allow_nan=True, separators=(",", ":"))


ENSEMBLE_ARRAYS = ("feature", "bin", "left", "right", "missing_left", "coef", "domain", "round")


def index_of_scores(score: np.ndarray) -> np.ndarray:
    """Class indices from ensemble scores: argmax of (n, K) (ties: highest class), or 1 where a sign score >= 0."""
    if score.ndim == 2:
        from ._ext import _multiclass

        out = np.empty(score.shape[0], dtype=np.int32)
        _multiclass.argmax_classes(np.ascontiguousarray(score), out)
        return out
    return (score >= 0).astype(np.int32)


class Scorer:
    """Ensemble scores of fixed rows (e.g. validation data), kept up to date as stumps are added.

    :meth:`update` adds the stumps appended to the model since the last call,
    each with its own coefficient (every round votes), in order.
    """

    def __init__(self, model: Model, cols: np.ndarray, X: Optional[np.ndarray] = None) -> None:
        self.model, self.cols = model, np.ascontiguousarray(cols, dtype=np.uint8)
        n = self.cols.shape[1]
        self.Q = None
        if model.domain_classifier is not None:
            if X is None:
                raise ValueError("this model weighs its stumps by Q(k|x): pass the raw features")
            self.Q = model.domain_classifier.proba(X) if n else np.zeros((0, model.domain_classifier.n_domains))
        self.scores = np.zeros((n, model.n_classes) if model.output == "argmax" else n)
        self.done = 0

    def update(self) -> None:
        from ._ext import _weights

        m, lo, hi = self.model, self.done, self.model.n_stumps
        if m.output == "argmax":
            from ._ext import _multiclass

            _multiclass.add_class_stumps(self.cols, *m._arrays(lo, hi, m.coef), self.scores)
        else:
            for t, (stump, coef) in zip(range(lo, hi), list(m.stumps())[lo:hi]):
                k = int(m.domain[t])
                if k >= 0:
                    self.scores[:] += coef * self.Q[:, k] * stump.predict(self.cols)
                else:
                    _weights.add_stump(self.scores, stump.column(self.cols), *stump.args(), coef)
        self.done = hi

    def errors(self, y: np.ndarray) -> int:
        """This rank's rows whose predicted class differs from ``y`` (internal codes)."""
        from ._ext import _weights

        if self.model.output == "argmax":
            from ._ext import _multiclass

            return int(_multiclass.class_errors(self.scores, np.ascontiguousarray(y, dtype=np.int32)))
        return int(_weights.margin_errors(self.scores, y))


def _plain(obj: Any) -> Any:
    """Numpy scalars/arrays to plain Python for JSON."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _plain(obj.tolist())
    if isinstance(obj, np.generic):
        return obj.item()
    return obj
