"""Decision stumps over binned features and the two ways to choose one.

``sample``: the paper's protocol. The center draws N rows in proportion to
the weights (:meth:`Protocol.proportional_sample`) and picks the stump with
the lowest error on that unweighted sample. Communication O(N d) per round.

``histogram``: exact. Every entity builds per (feature, bin) sums of w*y in
fixed point, the center reduces them and picks the best stump on the full
weighted data. Communication O(d * 256) per round.

Both scan candidates in the same deterministic order (constant hypothesis,
then lowest feature, lowest threshold, missing values right before left).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .._ext import _histogram, _weights
from ..protocol import FIXED_SHIFT

MISSING_BIN = 255  # the bin of missing values (cython_ext/_typedefs.pxd)

PACKED_SIZE = 5  # feature, bin, left, missing_left, error seen by the learner


@dataclass(frozen=True)
class Stump:
    """``h(x) = left if bin(x[feature]) <= bin else right``; missing values go
    left iff ``missing_left``; ``feature == -1`` is the constant ``left``.

    A binary stump predicts ``left`` in {-1, +1} and ``right = -left`` (``right``
    is None); a class stump (``right`` given) predicts class indices.
    """

    feature: int
    bin: int
    left: int
    missing_left: bool = False
    right: Optional[int] = None

    @property
    def right_value(self) -> int:
        return -self.left if self.right is None else self.right

    def column(self, cols: np.ndarray) -> np.ndarray:
        """The binned column the stump reads (any column for the constant)."""
        return cols[max(self.feature, 0)]

    def args(self) -> tuple[int, int, bool]:
        """(bin, left, missing_left) for the binary column kernels; the constant sends every bin left."""
        if self.feature < 0:
            return MISSING_BIN, self.left, True
        return self.bin, self.left, self.missing_left

    def class_args(self) -> tuple[int, int, int, bool]:
        """(bin, left, right, missing_left) for the class-stump kernels."""
        if self.feature < 0:
            return MISSING_BIN, self.left, self.left, True
        return self.bin, self.left, self.right_value, self.missing_left

    def predict(self, cols: np.ndarray) -> np.ndarray:
        """h(x) for feature-major bins ``cols`` (d, n): -1/+1 (int8), or class indices (int32)."""
        if self.right is not None:
            from .._ext import _multiclass

            out = np.empty(cols.shape[1], dtype=np.int32)
            _multiclass.class_stump_predict(self.column(cols), *self.class_args(), out)
            return out
        out = np.empty(cols.shape[1], dtype=np.int8)
        _weights.stump_predict(self.column(cols), *self.args(), out)
        return out


MAX_SAMPLES = 10**7  # rows drawn per round: the center holds them all (d bytes each, plus labels and ids)
MIN_SAMPLES = 32  # fewer rows cannot tell good thresholds from lucky ones: training would stop at round 1


def sample_size(d: int, beta: float, factor: float = 1.0) -> int:
    """N = ceil(factor * (d / beta^2) * ln(1 / beta)), the paper's sample size (at most MAX_SAMPLES)."""
    if not 0 < beta < 1:
        raise ValueError(f"beta must be in (0, 1), got {beta}")
    # in logarithms, so a tiny beta cannot overflow or divide by zero before the limit is checked
    log_n = math.log(factor) + math.log(d) - 2.0 * math.log(beta) + math.log(math.log(1.0 / beta) or 1e-300)
    if log_n > math.log(MAX_SAMPLES):
        raise ValueError(f"--beta {beta:g} (with --sample-factor {factor:g}, {d} features) asks for "
                         f"N = {math.exp(min(log_n, 700.0)):.3g} rows per round, above the limit of {MAX_SAMPLES:,}: "
                         "raise --beta, lower --sample-factor, or give --samples N")
    n = max(1, math.ceil(factor * (d / beta**2) * math.log(1 / beta)))
    if n < MIN_SAMPLES:
        raise ValueError(f"--beta {beta:g} with --sample-factor {factor:g} gives N = {n} rows per round, below "
                         f"{MIN_SAMPLES}: lower --beta, raise --sample-factor, or give --samples N")
    return n


@dataclass
class Choice:
    """A chosen stump with what the learner knows of its quality."""

    stump: Stump
    sample_error: Optional[float] = None  # error on the drawn sample (sample mode)
    hist_error: Optional[float] = None  # weighted error from the fixed-point histogram


class StumpLearner:
    """Choose a stump for fixed-point row weights ``q``, over the protocol.

    Parameters
    ----------
    mode
        ``"sample"`` or ``"histogram"``.
    proto
        The :class:`mpiboost.protocol.Protocol`.
    cols, y
        This rank's feature-major bins (d, n_local) and labels.
    n_bins
        Value bins per feature (from the bin mapper, same on every rank).
    n_samples
        N for sample mode.
    start
        Global id of this rank's first row.
    hist
        A (d, 256) int64 buffer for the histograms, to share between
        learners that never fit at the same time (default: its own).
    """

    output = "sign"  # the ensemble votes sign(sum_t coef_t h_t(x))
    reduces = "per (feature, bin): signed weight sums w*y, int64 fixed point"

    def __init__(self, mode: str, proto, cols: np.ndarray, y: np.ndarray, n_bins: np.ndarray, n_samples: int, start: int = 0,
                 hist: Optional[np.ndarray] = None):
        if mode not in ("sample", "histogram"):
            raise ValueError(f"weak learner mode must be 'sample' or 'histogram', not {mode!r}")
        self.mode, self.proto, self.cols, self.y = mode, proto, cols, y
        self.n_bins = np.ascontiguousarray(n_bins, dtype=np.int64)
        self.n_samples = int(n_samples)
        self.start = start
        self._g = np.empty(cols.shape[1], dtype=np.int64)
        self._hist = hist if hist is not None else np.zeros((cols.shape[0], 256), dtype=np.int64)
        self._binary = _histogram.binary_columns(cols) if mode == "histogram" else None

    @property
    def units(self) -> np.ndarray:
        """This rank's fixed-point input of the next :meth:`fit_units`: inclusive
        prefix sums of the units (sample mode) or signed units ``q * y`` (histogram)."""
        return self._g

    def fit(self, w: np.ndarray, rng: np.random.Generator) -> Choice:
        """The best stump for the row weights ``w`` (normalized); same on every rank.

        Weights enter the protocol as int64 units of 2**-60 (per-row rounding,
        so the same on every partition): prefix sums for sampling, signed
        units for histograms.
        """
        if self.mode == "sample":
            total = _weights.fixed_cumsum(w, FIXED_SHIFT, self._g)
        else:
            total = _weights.fixed_signed(w, self.y, FIXED_SHIFT, self._g)
        return self.fit_units(total, rng)

    def fit_units(self, local_total: int, rng: np.random.Generator) -> Choice:
        """Like :meth:`fit`, with :attr:`units` already filled by the caller (total of this rank's units)."""
        packed = None
        if self.mode == "sample":
            sample = self.proto.proportional_sample(self._g, self.cols, self.y, self.n_samples, rng, start=self.start)
            if self.proto.is_center:
                hist = np.zeros((self.cols.shape[0], 256), dtype=np.int64)
                _histogram.build_histogram(np.ascontiguousarray(sample.X.T), sample.y.astype(np.int64), hist)
                f, b, left, ml, edge = _histogram.best_stump(hist, self.n_bins)
                packed = [f, b, left, ml, (self.n_samples - edge) / (2.0 * self.n_samples)]
        else:
            _histogram.build_histogram(self.cols, self._g, self._hist, self._binary)
            hist, total = self.proto.reduce_histograms(self._hist, self.n_bins, total=local_total)
            if self.proto.is_center:
                f, b, left, ml, edge = _histogram.best_stump(hist, self.n_bins)
                packed = [f, b, left, ml, (total - edge) / (2.0 * total)]
        v = self.proto.broadcast_hypothesis(packed, PACKED_SIZE)
        stump = Stump(int(v[0]), int(v[1]), int(v[2]), bool(v[3]))
        if self.mode == "sample":
            return Choice(stump, sample_error=float(v[4]))
        return Choice(stump, hist_error=float(v[4]))

    def error_terms(self, stump: Stump, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """This rank's exact terms of the weight ``stump`` gets right and wrong."""
        return _weights.error_terms(stump.column(self.cols), self.y, w, *stump.args())

    def update(self, w: np.ndarray, margin: np.ndarray, stump: Stump, factor_correct: float, factor_wrong: float,
               coef: float) -> tuple[int, float]:
        """Reweight the rows and add ``coef h`` to their margins: (this rank's training errors, largest weight)."""
        return _weights.apply_stump(
            w, margin, stump.column(self.cols), self.y, *stump.args(), factor_correct, factor_wrong, coef
        )
