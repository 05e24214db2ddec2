"""Multiclass decision stumps: each side of the threshold predicts a class.

``histogram``: exact. Every entity builds per (feature, bin, class) sums of
its row weights in int64 fixed point, the center reduces them
(:meth:`Protocol.reduce_class_histograms`) and picks the stump that
classifies the most weight correctly (``split="error"``) or that leaves the
least weighted Gini impurity (``split="gini"``). Communication
O(d * bins * K) per round.

``sample``: the center draws N rows in proportion to the weights
(:meth:`Protocol.proportional_sample`) and picks the best stump on that
unweighted sample. Communication O(N d) per round.

Scan order and ties are those of the binary stump (constant first, then
feature, threshold, missing right before left; strictly better wins), and
ties between classes go to the highest class index, so with K = 2 the chosen
stump is the binary learner's (class 0 = -1, class 1 = +1).
"""
from __future__ import annotations

import numpy as np

from .._ext import _multiclass, _weights
from ..protocol import FIXED_SHIFT
from .stump import Choice, Stump

PACKED_SIZE = 6  # feature, bin, left, right, missing_left, error seen by the learner
# How a class stump is chosen: the least weighted error (SAMME's rule), or the least weighted Gini
# impurity (the rule of CART and scikit-learn's trees), both from the same per-(feature, bin, class) sums.
SPLITS = ("error", "gini")


class ClassStumpLearner:
    """Choose a class stump for row weights ``w``, over the protocol.

    Parameters
    ----------
    mode
        ``"sample"`` or ``"histogram"``.
    proto
        The :class:`mpiboost.protocol.Protocol`.
    cols, cls
        This rank's feature-major bins (d, n_local) and class indices (int32).
    n_classes
        K (the same on every rank).
    n_bins
        Value bins per feature.
    n_samples
        N for sample mode.
    start
        Global id of this rank's first row.
    """

    output = "argmax"  # the ensemble votes argmax_c sum_t coef_t [h_t(x) = c]
    reduces = "per (feature, bin, class): weight sums, int64 fixed point"

    def __init__(self, mode: str, proto, cols: np.ndarray, cls: np.ndarray, n_classes: int, n_bins: np.ndarray,
                 n_samples: int, start: int = 0, split: str = "error"):
        if mode not in ("sample", "histogram"):
            raise ValueError(f"weak learner mode must be 'sample' or 'histogram', not {mode!r}")
        if split not in SPLITS:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}, not {split!r}")
        self.criterion = SPLITS.index(split)
        self.mode, self.proto, self.cols = mode, proto, cols
        self.cls = np.ascontiguousarray(cls, dtype=np.int32)
        self.K = int(n_classes)
        self.n_bins = np.ascontiguousarray(n_bins, dtype=np.int64)
        self.n_samples = int(n_samples)
        self.start = start
        self._g = np.empty(cols.shape[1], dtype=np.int64)
        self._ones = np.ones(cols.shape[1], dtype=np.int8)
        self._hist = np.zeros((cols.shape[0], 256, self.K), dtype=np.int64) if mode == "histogram" else None

    def fit(self, w: np.ndarray, rng: np.random.Generator) -> Choice:
        """The best class stump for the normalized row weights ``w``; the same on every rank.

        Weights enter as int64 units of 2**-60 rounded per row, exactly as
        for the binary learner: prefix sums for sampling, units for histograms.
        """
        packed = None
        if self.mode == "sample":
            _weights.fixed_cumsum(w, FIXED_SHIFT, self._g)
            sample = self.proto.proportional_sample(self._g, self.cols, self.cls, self.n_samples, rng, start=self.start)
            if self.proto.is_center:
                hist = np.zeros((self.cols.shape[0], 256, self.K), dtype=np.int64)
                ones = np.ones(sample.y.shape[0], dtype=np.int64)
                _multiclass.build_class_histogram(
                    np.ascontiguousarray(sample.X.T), ones, np.ascontiguousarray(sample.y, dtype=np.int32), hist
                )
                f, b, left, right, ml, score = _multiclass.best_class_stump(hist, self.n_bins, self.criterion)
                packed = [f, b, left, right, ml, (self.n_samples - score) / self.n_samples]
        else:
            local_total = _weights.fixed_signed(w, self._ones, FIXED_SHIFT, self._g)
            _multiclass.build_class_histogram(self.cols, self._g, self.cls, self._hist)
            hist, total = self.proto.reduce_class_histograms(self._hist, self.n_bins, total=local_total)
            if self.proto.is_center:
                f, b, left, right, ml, score = _multiclass.best_class_stump(hist, self.n_bins, self.criterion)
                packed = [f, b, left, right, ml, (total - score) / total]
        v = self.proto.broadcast_hypothesis(packed, PACKED_SIZE)
        stump = Stump(int(v[0]), int(v[1]), int(v[2]), bool(v[4]), right=int(v[3]))
        if self.mode == "sample":
            return Choice(stump, sample_error=float(v[5]))
        return Choice(stump, hist_error=float(v[5]))

    def error_terms(self, stump: Stump, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """This rank's exact terms of the weight ``stump`` gets right and wrong."""
        return _multiclass.class_error_terms(stump.column(self.cols), self.cls, w, *stump.class_args())

    def update(self, w: np.ndarray, scores: np.ndarray, stump: Stump, factor_correct: float, factor_wrong: float,
               coef: float) -> tuple[int, float]:
        """Reweight the rows and add ``coef`` to the score of the class h predicts: (training errors, largest weight)."""
        return _multiclass.apply_class_stump(
            w, scores, stump.column(self.cols), self.cls, *stump.class_args(), factor_correct, factor_wrong, coef
        )
