"""The trained ensemble: prediction, the HDF5 model file and its canonical JSON.

A model is a list of stumps with coefficients, the bin edges that turn raw
features into the bins the stumps test, and what produced it (algorithm,
parameters, mpiboost version). The prediction is ``sign(sum_t coef_t h_t(x))``
(ties give +1); an unweighted majority vote has all coefficients 1.
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
from .data.binning import BinMapper
from .errors import InputError

MODEL_FORMAT = 1


@dataclass
class Model:
    """A stump ensemble over binned features."""

    algorithm: str
    params: dict
    bins: BinMapper
    feature: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    bin: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    left: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    missing_left: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint8))
    coef: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    vote: str = "weighted"
    feature_names: Optional[list] = None
    info: dict = field(default_factory=dict)  # training facts (rows, labels, stopping reason)
    domain: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))  # -1: plain vote
    domain_classifier: Any = None  # Q(k|x) of a Q-ensemble (MultiBoost)
    domain_names: Optional[list] = None
    round: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))  # 1-based round of each stump

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
        self.left = np.append(self.left, np.int8(stump.left)).astype(np.int8)
        self.missing_left = np.append(self.missing_left, np.uint8(stump.missing_left)).astype(np.uint8)
        self.coef = np.append(self.coef, float(coef)).astype(np.float64)

    def stumps(self):
        from .weak.stump import Stump

        for t in range(self.n_stumps):
            yield Stump(int(self.feature[t]), int(self.bin[t]), int(self.left[t]), bool(self.missing_left[t])), float(
                self.coef[t]
            )

    def truncated(self, rounds: int) -> "Model":
        """The model of the first ``rounds`` rounds (stumps, for one stump per round)."""
        m = Model(**{**self.__dict__})
        keep = int(np.searchsorted(self.round, rounds, side="right"))
        for name in ("feature", "bin", "left", "missing_left", "coef", "domain", "round"):
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
    def decision_function(self, cols: np.ndarray, X: Optional[np.ndarray] = None) -> np.ndarray:
        """``sum_t coef_t h_t(x)`` for feature-major bins ``cols`` (d, n) uint8.

        A Q-ensemble weighs stump t by ``Q(domain_t|x)`` and needs the raw
        rows ``X`` (n, d) for the domain classifier.
        """
        from ._ext import _predict

        cols = np.ascontiguousarray(cols, dtype=np.uint8)
        out = np.empty(cols.shape[1], dtype=np.float64)
        args = (
            np.ascontiguousarray(self.feature, dtype=np.int32),
            np.ascontiguousarray(self.bin, dtype=np.int32),
            np.ascontiguousarray(self.left, dtype=np.int8),
            np.ascontiguousarray(self.missing_left, dtype=np.uint8),
            np.ascontiguousarray(self.vote_coefficients(), dtype=np.float64),
        )
        if self.domain_classifier is None:
            _predict.predict_binned(cols, *args, out)
            return out
        if X is None:
            raise ValueError("this model weighs its stumps by Q(k|x): pass the raw features")
        Q = np.ascontiguousarray(self.domain_classifier.proba(X))
        _predict.predict_binned_q(cols, *args, np.ascontiguousarray(self.domain, dtype=np.int32), Q, out)
        return out

    def predict(self, cols: np.ndarray, X: Optional[np.ndarray] = None) -> np.ndarray:
        """Labels in {-1, +1} for feature-major bins (a zero score gives +1)."""
        return np.where(self.decision_function(cols, X) >= 0, 1, -1).astype(np.int8)

    def predict_raw(self, X: np.ndarray) -> np.ndarray:
        """Labels for raw ``(n, d)`` feature values (binned with the model's edges)."""
        X = np.asarray(X)
        cols = np.empty((X.shape[1], X.shape[0]), dtype=np.uint8)
        self.bins.transform(X, out=cols.T)
        return self.predict(cols, X if self.needs_raw else None)

    # -------------------------------------------------------------- files
    def _header(self) -> dict:
        return {
            "format": MODEL_FORMAT,
            "mpiboost_version": __version__,
            "algorithm": self.algorithm,
            "params": self.params,
            "vote": self.vote,
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
                for name in ("feature", "bin", "left", "missing_left", "coef", "domain", "round"):
                    g.create_dataset(name, data=getattr(self, name))
                g.create_dataset("threshold", data=self.thresholds())
                flat, offsets = self.bins.flat()
                b = f.create_group("bins")
                b.create_dataset("edges", data=flat)
                b.create_dataset("offsets", data=offsets)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Model":
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
            h = json.loads(f.attrs["header"])
            if h.get("format") != MODEL_FORMAT:
                raise InputError(f"{path}: model format {h.get('format')} is not supported (expected {MODEL_FORMAT})")
            g = f["ensemble"]
            bins = BinMapper.from_flat(f["bins/edges"][()], f["bins/offsets"][()])
            clf = None
            if h.get("domain_classifier"):
                from .domain_classifier import DomainClassifier

                clf = DomainClassifier.from_dict(h["domain_classifier"])
            return cls(
                algorithm=h["algorithm"],
                params=h["params"],
                bins=bins,
                feature=g["feature"][()].astype(np.int32),
                bin=g["bin"][()].astype(np.int32),
                left=g["left"][()].astype(np.int8),
                missing_left=g["missing_left"][()].astype(np.uint8),
                coef=g["coef"][()].astype(np.float64),
                vote=h["vote"],
                feature_names=h.get("feature_names"),
                info=h.get("info", {}),
                domain=g["domain"][()].astype(np.int32) if "domain" in g else np.full(len(g["coef"]), -1, np.int32),
                domain_classifier=clf,
                domain_names=h.get("domain_names"),
                round=g["round"][()].astype(np.int32) if "round" in g else np.arange(1, len(g["coef"]) + 1, dtype=np.int32),
            )

    def to_json(self) -> str:
        """Canonical JSON (sorted keys, exact floats, no volatile fields)."""
        doc = self._header()
        doc["ensemble"] = [
            {
                "feature": int(f),
                "bin": int(b),
                "threshold": float(th) if np.isfinite(th) else None,
                "left": int(lv),
                "right": int(-lv),
                "missing_left": bool(ml),
                "coef": float(c),
                "domain": int(k) if k >= 0 else None,
                "round": int(r),
            }
            for f, b, th, lv, ml, c, k, r in zip(
                self.feature, self.bin, self.thresholds(), self.left, self.missing_left, self.coef, self.domain,
                self.round,
            )
        ]
        doc["first_voting_round"] = self.first_voting_round()
        doc["bin_edges"] = [e.tolist() for e in self.bins.edges]
        return json.dumps(_plain(doc), sort_keys=True, allow_nan=True, separators=(",", ":"))


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
