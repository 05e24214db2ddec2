"""A bank of N online multinomial naive-Bayes leaves: the weak learners of online boosting on counts and pixels.

For features that are counts (words of a text, intensities of a pixel), a
class is a distribution over the features, and a row is ``x_j`` draws of
feature j. Each learner keeps additive statistics of the weighted rows it was
given (so blocks of them merge by sums): per class its total weight ``w_c``
and per (feature, class) the weighted sum of the feature's values ``F_jc``.
Its class scores are

    log w_c + sum_j x_j log((F_jc + ALPHA) / (T_c + ALPHA d)),  T_c = sum_j F_jc

(Laplace smoothing, scikit-learn's MultinomialNB with alpha = 1; the common
``-log W`` of the prior is left out, so learning a row of class c changes
score c alone). As the naive-Bayes-adaptive leaf (``_nba``) it predicts with
naive Bayes or with its majority class, whichever has been right on more
weight of the rows it learnt, each scored before it was learnt (ties go to
naive Bayes); a learner that has learnt nothing predicts class 0, and every
argmax takes the lowest of equal classes.

A value that is missing (NaN), negative or zero draws nothing: it is skipped.
``log(F_jc + ALPHA)`` is kept per (learner, feature, class) and refreshed for
the features a learnt row holds, so a score costs one pass over the row's
nonzero values.
"""
import numpy as np
cimport numpy as cnp
from libc.math cimport log, isnan, INFINITY

from _leaves cimport first_best, heaviest
from _typedefs cimport idx_t, cls_t

cnp.import_array()

ALPHA = 1.0  # additive (Laplace) smoothing of every (feature, class) count
cdef double _ALPHA = ALPHA


def _weights_of(const cls_t[::1] labels, double weight, weights, idx_t n_learners, idx_t n_classes):
    """Each learner's weight for :meth:`MNBBank.learn_labels` (checked)."""
    cdef idx_t n
    if labels.shape[0] != n_learners:
        raise ValueError("labels must have N entries")
    for n in range(n_learners):
        if labels[n] < 0 or labels[n] >= n_classes:
            raise ValueError("a label is out of range")
    if weights is None:
        if not weight >= 0:
            raise ValueError("weight must be >= 0")
        return np.full(n_learners, weight)
    w = np.ascontiguousarray(weights, dtype=np.float64)
    if w.shape != (n_learners,) or not np.all(w >= 0):
        raise ValueError("weights must be N values >= 0")
    return w


cdef class MNBBank:
    """N leaves over d count features and k classes (``values``: per feature 0; counts are numeric)."""

    cdef readonly idx_t n_learners, n_classes, d
    cdef readonly cnp.ndarray values
    cdef readonly cnp.ndarray class_weight, counts, total, mc_right, nb_right
    cdef cnp.ndarray _logp
    cdef idx_t[::1] _nz
    cdef double[::1] _xv
    cdef idx_t _n_nz
    cdef double _sum_x
    cdef double[::1] _scores

    def __init__(self, int n_learners, int n_classes, values):
        values = np.ascontiguousarray(values, dtype=np.int64)
        if n_learners < 1 or n_classes < 1 or values.ndim != 1 or (values < 0).any():
            raise ValueError("need n_learners >= 1, n_classes >= 1 and values >= 0 per feature")
        if (values > 0).any():
            raise ValueError("multinomial naive Bayes leaves take count features only (no nominal feature)")
        self.n_learners, self.n_classes, self.d = n_learners, n_classes, values.shape[0]
        self.values = values
        N, k, d = n_learners, n_classes, self.d
        self.class_weight = np.zeros((N, k))
        self.counts = np.zeros((N, max(d, 1), k))
        self.mc_right = np.zeros(N)
        self.nb_right = np.zeros(N)
        self._logp = np.full((N, max(d, 1), k), log(_ALPHA))
        self.total = np.zeros((N, k))  # T_c: kept, not re-summed, so a loaded bank goes on bit for bit
        self._nz = np.zeros(max(d, 1), dtype=np.intp)
        self._xv = np.zeros(max(d, 1))
        self._scores = np.empty(k)

    cdef void _row(self, const double[::1] x) noexcept nogil:
        """The row's drawn features (value > 0) and their sum, kept for the calls on this row."""
        cdef idx_t j, m = 0
        cdef double s = 0.0
        for j in range(self.d):
            if not isnan(x[j]) and x[j] > 0:
                self._nz[m] = j
                self._xv[m] = x[j]
                s += x[j]
                m += 1
        self._n_nz, self._sum_x = m, s

    cdef int _majority(self, idx_t n) noexcept nogil:
        return heaviest(<const double*> cnp.PyArray_DATA(self.class_weight) + n * self.n_classes, self.n_classes)

    cdef double _class_score(self, idx_t n, idx_t c) noexcept nogil:
        """Class c's score for the current row (:meth:`_row`), -inf for a class without weight."""
        cdef idx_t k = self.n_classes, i
        cdef const double* cw = <const double*> cnp.PyArray_DATA(self.class_weight) + n * k
        cdef const double* lp = <const double*> cnp.PyArray_DATA(self._logp) + n * max(self.d, 1) * k
        cdef const double* tot = <const double*> cnp.PyArray_DATA(self.total) + n * k
        cdef double s
        if cw[c] <= 0:
            return -INFINITY
        s = log(cw[c]) - self._sum_x * log(tot[c] + _ALPHA * self.d)
        for i in range(self._n_nz):
            s += self._xv[i] * lp[self._nz[i] * k + c]
        return s

    cdef int _best(self, const double* scores) noexcept nogil:
        """The first class of the largest finite score; -1 if none is finite (no class has weight)."""
        return first_best(scores, self.n_classes)

    cdef int _predict(self, idx_t n) noexcept nogil:
        cdef idx_t c
        cdef int nb
        cdef double* sc = &self._scores[0]
        if (<const double*> cnp.PyArray_DATA(self.nb_right))[n] >= (<const double*> cnp.PyArray_DATA(self.mc_right))[n]:
            for c in range(self.n_classes):
                sc[c] = self._class_score(n, c)
            nb = self._best(sc)
            return nb if nb >= 0 else 0
        return self._majority(n)

    def predict(self, const double[::1] x, cls_t[::1] out):
        """Every learner's class for the row ``x`` (d values) into ``out`` (N)."""
        cdef idx_t n
        if x.shape[0] != self.d or out.shape[0] != self.n_learners:
            raise ValueError("x must have d values and out N entries")
        self._row(x)
        for n in range(self.n_learners):
            out[n] = self._predict(n)

    cdef void _learn(self, idx_t n, int label, double weight) noexcept nogil:
        """Learn the current row with ``label`` and ``weight`` (scored first, as the adaptive leaf does)."""
        cdef idx_t k = self.n_classes, i, j, c
        cdef idx_t dd = max(self.d, 1)
        cdef double* cw = <double*> cnp.PyArray_DATA(self.class_weight) + n * k
        cdef double* F = <double*> cnp.PyArray_DATA(self.counts) + n * dd * k
        cdef double* lp = <double*> cnp.PyArray_DATA(self._logp) + n * dd * k
        cdef double* tot = <double*> cnp.PyArray_DATA(self.total) + n * k
        cdef double total = 0.0
        cdef double* sc = &self._scores[0]
        if weight <= 0:
            return
        for c in range(k):
            total += cw[c]
            sc[c] = self._class_score(n, c)
        if total > 0 and self._majority(n) == label:
            (<double*> cnp.PyArray_DATA(self.mc_right))[n] += weight
        if self._best(sc) == label:
            (<double*> cnp.PyArray_DATA(self.nb_right))[n] += weight
        cw[label] += weight
        for i in range(self._n_nz):
            j = self._nz[i]
            F[j * k + label] += weight * self._xv[i]
            lp[j * k + label] = log(F[j * k + label] + _ALPHA)
        tot[label] += weight * self._sum_x

    def learn(self, const double[::1] x, const double[:, ::1] P, int first=0):
        """Learner n learns x with every label l of weight ``P[n + first, l] > 0`` (fractional relabelling)."""
        cdef idx_t n, l
        if x.shape[0] != self.d or P.shape[1] != self.n_classes or P.shape[0] < self.n_learners + first:
            raise ValueError("x must have d values and P at least N rows of k weights")
        self._row(x)
        for n in range(self.n_learners):
            for l in range(self.n_classes):
                if P[n + first, l] > 0:
                    self._learn(n, <int> l, P[n + first, l])

    def learn_labels(self, const double[::1] x, const cls_t[::1] labels, double weight=1.0, weights=None):
        """Learner n learns x with label ``labels[n]`` of weight ``weight`` (or ``weights[n]``; 0: nothing)."""
        if x.shape[0] != self.d:
            raise ValueError("x must have d values")
        cdef const double[::1] w = _weights_of(labels, weight, weights, self.n_learners, self.n_classes)
        cdef idx_t n
        self._row(x)
        for n in range(self.n_learners):
            if w[n] > 0:
                self._learn(n, labels[n], w[n])

    STATE = ("class_weight", "counts", "total", "mc_right", "nb_right")

    def get_state(self):
        """The learners' statistics (copies): what a saved model holds, in learner order."""
        return {name: np.array(getattr(self, name)) for name in self.STATE}

    def set_state(self, state):
        """Take the statistics of :meth:`get_state` (shapes and values checked; the logs are recomputed)."""
        for name in self.STATE:
            if name not in state:
                raise ValueError(f"the state lacks {name}")
            have, want = np.asarray(state[name]), getattr(self, name)
            if have.shape != want.shape:
                raise ValueError(f"{name} has shape {have.shape}, expected {want.shape}")
            if not np.all(np.isfinite(have)) or np.any(have < 0):
                raise ValueError(f"{name} holds a negative or non-finite value")
        for name in self.STATE:
            getattr(self, name)[...] = np.asarray(state[name])
        cdef double[:, :, ::1] F = self.counts, L = self._logp
        cdef idx_t n, j, c
        for n in range(self.n_learners):  # the kernel's own log, as learning computed them
            for j in range(F.shape[1]):
                for c in range(self.n_classes):
                    L[n, j, c] = log(F[n, j, c] + _ALPHA)
