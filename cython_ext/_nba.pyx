"""A bank of N online naive-Bayes-adaptive leaves: the weak learners of online agnostic boosting.

Each learner keeps additive statistics of the weighted examples it was given
(so blocks of them merge by sums): per class its total weight; per nominal
feature, value and class a weighted count; per numeric feature and class the
weighted sums of 1, x and x^2. It predicts with naive Bayes (Laplace-smoothed
value counts, Gaussian numerics) or with its majority class, whichever has
been right on more weight of the examples it learnt, each scored before it
was learnt (ties go to naive Bayes). A learner that has learnt nothing
predicts class 0, and every argmax takes the lowest of equal classes.

A missing value (NaN) is skipped by naive Bayes and by the statistics.

The class-conditional variance of a numeric feature. With ``var_prior = a
> 0`` (the default, a = 1) it is shrunk toward the learner's pooled
variance v of the feature, as a conjugate prior worth a of weight would:

    var_c = (M2_c + a v) / (S0_c + a),   M2_c = S2_c - S1_c^2 / S0_c

(regularised discriminant analysis' shrinkage toward the pooled estimate).
A learner taught by random relabelling fits many a class on one or two
rows, whose own variance near 0 makes naive Bayes overconfident; with the
prior a class seen once has half the pooled variance. v is the variance of
the feature over all the rows the learner learnt (every class together,
the labels ignored), so the rule has no unit: scaling a feature scales its
variances alike. A feature whose pooled variance is 0 (constant at the
learner so far, or spread below POOL_RESOLUTION of its mean square, which
sums of x and x^2 cannot resolve) says nothing, as a missing value; no
floor is needed. a = 1, a prior worth one example, is the unit
information prior: it settles a class seen a few times and fades as the
class's weight grows.

v is a prior, not a running statistic: it is recomputed when the learner's
total weight first reaches twice what it was at the last refresh (1, 2, 4,
8 ... rows), after the row is learnt, and every class's Gaussian with it.
Between refreshes learning a row of class c changes class c's statistics
and score alone, which the cached scores rely on. ``var_prior = 0`` is the
rule of the paper's code (river's Gaussian): the class's own variance plus
the absolute VAR_FLOOR.
"""
import numpy as np
cimport numpy as cnp
from libc.math cimport log, isnan, INFINITY

from _leaves cimport first_best, heaviest
from _typedefs cimport idx_t, cls_t

cnp.import_array()

VAR_FLOOR = 1e-9  # var_prior = 0: added to every class variance (a single value has none)
VAR_PRIOR = 1.0  # default weight of the pooled-variance prior (0: the class's own variance only)
POOL_RESOLUTION = 1e-9  # a pooled variance below this share of the mean square is taken as 0 (rounding)
cdef double _POOL_RESOLUTION = POOL_RESOLUTION
cdef double _VAR_FLOOR = VAR_FLOOR
cdef double _HALF_LOG_2PI = 0.9189385332046727


cdef inline void _gaussian(double s0, double s1, double s2, double a, double v, double* mean,
                           double* inv) noexcept nogil:
    """The Gaussian of a class's sums (s0 > 0): its mean and 1 / variance (0: the feature is ignored).

    a > 0: the variance shrunk toward the pooled v with weight a (v = 0: no term, the feature is
    ignored); a = 0: the class's own plus the floor. The log-variance terms are summed per class
    by :func:`_half_log_sum`.
    """
    cdef double m = s1 / s0, var, den, num
    mean[0] = m
    if a > 0:
        if v <= 0:  # the feature has had no spread at this learner: it says nothing (yet)
            inv[0] = 0.0
            return
        # variance = num / den = (M2 + a v) / (s0 + a) > 0
        den = s0 + a
        num = s2 - s1 * m
        num = (num if num > 0 else 0.0) + a * v
        inv[0] = den / num
    else:
        var = s2 / s0 - m * m
        var = (var if var > 0 else 0.0) + _VAR_FLOOR
        inv[0] = 1.0 / var


cdef inline void _log_product_add(double g, double* p, double* acc) noexcept nogil:
    """Multiply ``g`` into the running product ``p`` whose log is due into ``acc``.

    A log only when the product leaves [1e-200, 1e200], or for a value outside
    [1e-100, 1e100]; the result is ``acc + log(p)``.
    """
    if g > 1e100 or g < 1e-100:
        acc[0] += log(g)
    else:
        p[0] *= g
        if p[0] > 1e200 or p[0] < 1e-200:
            acc[0] += log(p[0])
            p[0] = 1.0


cdef inline double _half_log_sum(const double* S0, const double* GI, idx_t n_numeric, idx_t k,
                                 idx_t c) noexcept nogil:
    """sum over the numeric features m of class c with S0 > 0 and 1/var > 0 of log(1/var)/2 - log(2 pi)/2.

    The Gaussian log densities' constant part, one number per class: the 1/var
    values are multiplied in a running product (:func:`_log_product_add`), so
    learning a row costs one log per class instead of one per feature.
    """
    cdef double p = 1.0, acc = 0.0
    cdef idx_t m, count = 0
    for m in range(n_numeric):
        if S0[m * k + c] > 0 and GI[m * k + c] > 0:
            count += 1
            _log_product_add(GI[m * k + c], &p, &acc)
    acc += log(p)
    return 0.5 * acc - count * _HALF_LOG_2PI


cdef inline double _half_log_sum_present(const double* S0, const double* GI, const double* x,
                                         const long long* vals, const long long* num, idx_t d, idx_t k,
                                         idx_t c) noexcept nogil:
    """:func:`_half_log_sum` over the numeric features the row ``x`` holds (not NaN) only.

    For a row that lacks some numeric values. Built like the full sum (the
    same running product), not as the full sum less the missing terms: that
    difference keeps rounding residue, and two classes of equal statistics
    would then not tie exactly (a tie goes to the lowest class).
    """
    cdef double p = 1.0, acc = 0.0
    cdef idx_t j, m, count = 0
    for j in range(d):
        if vals[j] != 0 or isnan(x[j]):
            continue
        m = num[j]
        if S0[m * k + c] > 0 and GI[m * k + c] > 0:
            count += 1
            _log_product_add(GI[m * k + c], &p, &acc)
    acc += log(p)
    return 0.5 * acc - count * _HALF_LOG_2PI


def _label_weights(const double[::1] x, const cls_t[::1] labels, double weight, weights, idx_t d, idx_t n_learners,
                   idx_t n_classes):
    """learn_labels' arguments checked (ValueError): every learner's weight, ``weights`` or ``weight`` for all."""
    cdef idx_t n
    if x.shape[0] != d or labels.shape[0] != n_learners:
        raise ValueError("x must have d values and labels N entries")
    for n in range(n_learners):
        if not 0 <= labels[n] < n_classes:
            raise ValueError(f"label {labels[n]} outside 0..{n_classes - 1}")
    if weights is None:
        return np.full(n_learners, weight)
    w = np.ascontiguousarray(weights, dtype=np.float64)
    if w.shape != (n_learners,) or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("weights must be N finite values >= 0")
    return w


cdef class NBABank:
    """N leaves over d features (``values[j] > 0``: nominal with that many values, 0: numeric) and k classes."""

    cdef readonly idx_t n_learners, n_classes, d, n_nominal_cells, n_numeric
    cdef readonly double var_prior
    cdef readonly cnp.ndarray values
    cdef readonly cnp.ndarray class_weight, nominal, s0, s1, s2, mc_right, nb_right, var_pool, pool_weight
    # per (learner, numeric feature, class): the Gaussian's mean, 1 / variance and
    # -log(variance)/2 - log(2 pi)/2, refreshed when the class learns a row (and
    # every class's when the learner's pooled variance is refreshed)
    cdef cnp.ndarray _gmean, _ginv, _gsum
    cdef cnp.ndarray _offset, _numeric_index
    cdef double[::1] _scores
    # predict(x) keeps the scores it computed; learn(x) of the same row starts from them
    cdef double[:, ::1] _cache
    cdef unsigned char[::1] _cached
    cdef double[::1] _cache_x

    def __init__(self, int n_learners, int n_classes, values, double var_prior=VAR_PRIOR):
        values = np.ascontiguousarray(values, dtype=np.int64)
        if n_learners < 1 or n_classes < 1 or values.ndim != 1 or (values < 0).any():
            raise ValueError("need n_learners >= 1, n_classes >= 1 and values >= 0 per feature")
        if not (var_prior >= 0 and var_prior < INFINITY):
            raise ValueError("var_prior must be finite and >= 0")
        self.var_prior = var_prior
        self.n_learners, self.n_classes, self.d = n_learners, n_classes, values.shape[0]
        self.values = values
        offset = np.zeros(self.d, dtype=np.int64)
        numeric_index = np.full(self.d, -1, dtype=np.int64)
        cells = numeric = 0
        for j in range(self.d):
            if values[j] > 0:
                offset[j] = cells
                cells += values[j]
            else:
                numeric_index[j] = numeric
                numeric += 1
        self._offset, self._numeric_index = offset, numeric_index
        self.n_nominal_cells, self.n_numeric = cells, numeric
        N, k = n_learners, n_classes
        self.class_weight = np.zeros((N, k))
        self.nominal = np.zeros((N, max(cells, 1), k))
        self.s0 = np.zeros((N, max(numeric, 1), k))
        self.s1 = np.zeros((N, max(numeric, 1), k))
        self.s2 = np.zeros((N, max(numeric, 1), k))
        self._gmean = np.zeros((N, max(numeric, 1), k))
        self._ginv = np.zeros((N, max(numeric, 1), k))
        self._gsum = np.zeros((N, k))
        self.var_pool = np.zeros((N, max(numeric, 1)))  # the prior's pooled variance per numeric feature
        self.pool_weight = np.zeros(N)  # the learner's total weight when var_pool was refreshed
        self.mc_right = np.zeros(N)
        self.nb_right = np.zeros(N)
        self._scores = np.empty(k)
        self._cache = np.empty((N, k))
        self._cached = np.zeros(N, dtype=np.uint8)
        self._cache_x = np.full(self.d, np.nan)

    cdef int _majority(self, idx_t n) noexcept nogil:
        return heaviest(<const double*> cnp.PyArray_DATA(self.class_weight) + n * self.n_classes, self.n_classes)

    cdef double _class_score(self, idx_t n, const double* x, idx_t c) noexcept nogil:
        """log w_c + sum_j log P(x_j | c), or -inf for a class without weight.

        Naive Bayes' log prior is log(w_c / W); the common -log W changes no
        argmax, and leaving it out makes a class's score depend on its own
        statistics only: learning a row of class c changes score c alone.
        """
        cdef idx_t k = self.n_classes, j, m
        cdef const double* cw = <const double*> cnp.PyArray_DATA(self.class_weight) + n * k
        cdef const double* nom = <const double*> cnp.PyArray_DATA(self.nominal) + n * max(self.n_nominal_cells, 1) * k
        cdef idx_t nn = max(self.n_numeric, 1)
        cdef const double* S0 = <const double*> cnp.PyArray_DATA(self.s0) + n * nn * k
        cdef const double* GM = <const double*> cnp.PyArray_DATA(self._gmean) + n * nn * k
        cdef const double* GI = <const double*> cnp.PyArray_DATA(self._ginv) + n * nn * k
        cdef const double* GS = <const double*> cnp.PyArray_DATA(self._gsum) + n * k
        cdef const long long* off = <const long long*> cnp.PyArray_DATA(self._offset)
        cdef const long long* num = <const long long*> cnp.PyArray_DATA(self._numeric_index)
        cdef const long long* vals = <const long long*> cnp.PyArray_DATA(self.values)
        cdef double s, w, z
        cdef long long v
        cdef bint lacks_numeric = False
        if cw[c] <= 0:
            return -INFINITY
        s = log(cw[c])
        for j in range(self.d):
            if isnan(x[j]):
                lacks_numeric = lacks_numeric or vals[j] == 0
                continue
            if vals[j] > 0:
                v = <long long> x[j]
                w = nom[(off[j] + v) * k + c] if 0 <= v < vals[j] else 0.0
                s += log((w + 1.0) / (cw[c] + vals[j]))
            else:
                m = num[j]
                if S0[m * k + c] <= 0:
                    continue  # no value of this feature seen with class c: it says nothing
                z = x[j] - GM[m * k + c]
                s += -0.5 * z * z * GI[m * k + c]
        if self.n_numeric:
            # every numeric feature's log-variance term, kept per class; a row that lacks some sums its own
            s += _half_log_sum_present(S0, GI, x, vals, num, self.d, k, c) if lacks_numeric else GS[c]
        return s

    cdef int _best(self, const double* scores) noexcept nogil:
        """The first class of the largest finite score; -1 if none is finite (no class has weight)."""
        return first_best(scores, self.n_classes)

    cdef int _naive_bayes(self, idx_t n, const double* x) noexcept nogil:
        """Naive Bayes' class for x; -1 if the learner has learnt nothing."""
        cdef idx_t c
        cdef double* sc = &self._scores[0]
        for c in range(self.n_classes):
            sc[c] = self._class_score(n, x, c)
        return self._best(sc)

    cdef int _predict(self, idx_t n, const double* x) noexcept nogil:
        cdef int nb
        cdef idx_t c
        cdef const double* mc = <const double*> cnp.PyArray_DATA(self.mc_right)
        cdef const double* nbr = <const double*> cnp.PyArray_DATA(self.nb_right)
        if nbr[n] >= mc[n]:
            for c in range(self.n_classes):
                self._cache[n, c] = self._class_score(n, x, c)
            self._cached[n] = 1
            nb = self._best(&self._cache[n, 0])
            return nb if nb >= 0 else 0
        return self._majority(n)

    cdef bint _same_row(self, const double* x) noexcept nogil:
        """x is the row of the last predict (bit for bit; NaN equals NaN): its cached scores hold."""
        cdef idx_t j
        cdef const unsigned char* a
        cdef const unsigned char* b
        a = <const unsigned char*> x
        b = <const unsigned char*> &self._cache_x[0]
        for j in range(self.d * 8):
            if a[j] != b[j]:
                return False
        return True

    cdef void _forget(self) noexcept nogil:
        cdef idx_t n
        for n in range(self.n_learners):
            self._cached[n] = 0

    def predict(self, const double[::1] x, cls_t[::1] out):
        """Every learner's class for the row ``x`` (d values) into ``out`` (N)."""
        cdef idx_t n, j
        if x.shape[0] != self.d or out.shape[0] != self.n_learners:
            raise ValueError("x must have d values and out N entries")
        self._forget()
        for j in range(self.d):
            self._cache_x[j] = x[j]
        for n in range(self.n_learners):
            out[n] = self._predict(n, &x[0])

    cdef void _gauss(self, idx_t n, idx_t m, idx_t c) noexcept nogil:
        """Recompute the Gaussian of (learner n, numeric feature m, class c) from its sums (S0 > 0)."""
        cdef idx_t k = self.n_classes, i = (n * max(self.n_numeric, 1) + m) * k + c
        _gaussian((<const double*> cnp.PyArray_DATA(self.s0))[i], (<const double*> cnp.PyArray_DATA(self.s1))[i],
                  (<const double*> cnp.PyArray_DATA(self.s2))[i], self.var_prior,
                  (<const double*> cnp.PyArray_DATA(self.var_pool))[n * max(self.n_numeric, 1) + m],
                  <double*> cnp.PyArray_DATA(self._gmean) + i, <double*> cnp.PyArray_DATA(self._ginv) + i)

    cdef void _sum_logs(self, idx_t n, idx_t c) noexcept nogil:
        """Refresh learner n's log-variance sum of class c."""
        cdef idx_t k = self.n_classes, nn = max(self.n_numeric, 1)
        (<double*> cnp.PyArray_DATA(self._gsum))[n * k + c] = _half_log_sum(
            <const double*> cnp.PyArray_DATA(self.s0) + n * nn * k,
            <const double*> cnp.PyArray_DATA(self._ginv) + n * nn * k, self.n_numeric, k, c)

    cdef void _refresh(self, idx_t n) noexcept nogil:
        """Learner n's pooled variance per numeric feature from its sums, then every class's Gaussian."""
        cdef idx_t k = self.n_classes, nn = max(self.n_numeric, 1), m, c, i
        cdef const double* S0 = <const double*> cnp.PyArray_DATA(self.s0)
        cdef const double* S1 = <const double*> cnp.PyArray_DATA(self.s1)
        cdef const double* S2 = <const double*> cnp.PyArray_DATA(self.s2)
        cdef const double* cw = <const double*> cnp.PyArray_DATA(self.class_weight) + n * k
        cdef double* VP = <double*> cnp.PyArray_DATA(self.var_pool) + n * nn
        cdef double t0, t1, t2, mean, var, total = 0.0
        for c in range(k):
            total += cw[c]
        (<double*> cnp.PyArray_DATA(self.pool_weight))[n] = total
        for m in range(self.n_numeric):
            t0 = t1 = t2 = 0.0
            for c in range(k):
                i = (n * nn + m) * k + c
                t0 += S0[i]
                t1 += S1[i]
                t2 += S2[i]
            var = 0.0
            if t0 > 0:
                mean = t1 / t0
                var = t2 / t0 - mean * mean
                if not var > _POOL_RESOLUTION * (t2 / t0):
                    var = 0.0  # no spread that the sums can resolve: a constant feature so far
            VP[m] = var
            for c in range(k):
                if S0[(n * nn + m) * k + c] > 0:
                    self._gauss(n, m, c)
        for c in range(k):
            self._sum_logs(n, c)

    cdef void _end_row(self, idx_t n) noexcept nogil:
        """After learner n learnt a row: refresh its prior once its total weight has doubled since the last time."""
        cdef idx_t c, k = self.n_classes
        cdef const double* cw = <const double*> cnp.PyArray_DATA(self.class_weight) + n * k
        cdef double total = 0.0
        if self.var_prior <= 0 or self.n_numeric == 0:
            return
        for c in range(k):
            total += cw[c]
        if total > 0 and total >= 2.0 * (<const double*> cnp.PyArray_DATA(self.pool_weight))[n]:
            self._refresh(n)

    cdef void _learn(self, idx_t n, const double* x, int label, double weight, double* scores) noexcept nogil:
        """Learn (x, label, weight); ``scores`` holds every class's score for x and is kept up to date."""
        cdef idx_t k = self.n_classes, j, m, nn = max(self.n_numeric, 1)
        cdef double* cw = <double*> cnp.PyArray_DATA(self.class_weight) + n * k
        cdef double* nom = <double*> cnp.PyArray_DATA(self.nominal) + n * max(self.n_nominal_cells, 1) * k
        cdef double* S0 = <double*> cnp.PyArray_DATA(self.s0) + n * nn * k
        cdef double* S1 = <double*> cnp.PyArray_DATA(self.s1) + n * nn * k
        cdef double* S2 = <double*> cnp.PyArray_DATA(self.s2) + n * nn * k
        cdef double* GM = <double*> cnp.PyArray_DATA(self._gmean) + n * nn * k
        cdef double* GI = <double*> cnp.PyArray_DATA(self._ginv) + n * nn * k
        cdef const double* VP = <const double*> cnp.PyArray_DATA(self.var_pool) + n * nn
        cdef double a = self.var_prior
        cdef const long long* off = <const long long*> cnp.PyArray_DATA(self._offset)
        cdef const long long* num = <const long long*> cnp.PyArray_DATA(self._numeric_index)
        cdef const long long* vals = <const long long*> cnp.PyArray_DATA(self.values)
        cdef double* mc = <double*> cnp.PyArray_DATA(self.mc_right)
        cdef double* nbr = <double*> cnp.PyArray_DATA(self.nb_right)
        cdef double total = 0.0
        cdef long long v
        cdef idx_t c
        for c in range(k):
            total += cw[c]
        # scored before it is learnt, as the adaptive leaf does
        if total > 0 and self._majority(n) == label:
            mc[n] += weight
        if self._best(scores) == label:
            nbr[n] += weight
        cw[label] += weight
        for j in range(self.d):
            if isnan(x[j]):
                continue
            if vals[j] > 0:
                v = <long long> x[j]
                if 0 <= v < vals[j]:
                    nom[(off[j] + v) * k + label] += weight
            else:
                m = num[j]
                S0[m * k + label] += weight
                S1[m * k + label] += weight * x[j]
                S2[m * k + label] += weight * x[j] * x[j]
                _gaussian(S0[m * k + label], S1[m * k + label], S2[m * k + label], a, VP[m],
                          &GM[m * k + label], &GI[m * k + label])
        if self.n_numeric:
            self._sum_logs(n, label)
        scores[label] = self._class_score(n, x, label)  # the only score the row changed

    cdef void _start(self, idx_t n, const double* x, bint same, double* scores) noexcept nogil:
        cdef idx_t c
        if same and self._cached[n]:
            for c in range(self.n_classes):
                scores[c] = self._cache[n, c]
        else:
            for c in range(self.n_classes):
                scores[c] = self._class_score(n, x, c)

    def learn(self, const double[::1] x, const double[:, ::1] P, int first=0):
        """Learner n learns x with every label l of weight ``P[n + first, l] > 0`` (fractional relabelling).

        ``P`` is the example's OCO chain (:func:`mpiboost._ext._simplex.ogd_chain`,
        N + 1 rows): learner n is trained with row n, so ``first`` is 0.
        """
        cdef idx_t n, l
        if x.shape[0] != self.d or P.shape[1] != self.n_classes or P.shape[0] < self.n_learners + first:
            raise ValueError("x must have d values and P at least N rows of k weights")
        cdef double* sc = &self._scores[0]
        cdef bint same = self._same_row(&x[0])
        for n in range(self.n_learners):
            self._start(n, &x[0], same, sc)
            for l in range(self.n_classes):
                if P[n + first, l] > 0:
                    self._learn(n, &x[0], <int> l, P[n + first, l], sc)
            self._end_row(n)
        self._forget()  # the statistics moved: the scores of predict no longer hold

    def learn_labels(self, const double[::1] x, const cls_t[::1] labels, double weight=1.0, weights=None):
        """Learner n learns x with label ``labels[n]`` (random relabelling) of weight ``weight``.

        ``weights`` (N values) gives each learner its own weight instead; a
        learner whose weight is 0 learns nothing (the baselines' sampled or
        cost-weighted updates).
        """
        cdef idx_t n
        cdef const double[::1] w = _label_weights(x, labels, weight, weights, self.d, self.n_learners,
                                                  self.n_classes)
        cdef double* sc = &self._scores[0]
        cdef bint same = self._same_row(&x[0])
        for n in range(self.n_learners):
            if w[n] > 0:
                self._start(n, &x[0], same, sc)
                self._learn(n, &x[0], labels[n], w[n], sc)
                self._end_row(n)
        self._forget()

    STATE = ("class_weight", "nominal", "s0", "s1", "s2", "mc_right", "nb_right", "var_pool", "pool_weight")
    OPTIONAL = ("var_pool", "pool_weight")  # a state without them (an older one): the prior is refreshed now

    def get_state(self):
        """The learners' statistics (copies): what a saved model holds, in learner order."""
        return {name: np.array(getattr(self, name)) for name in self.STATE}

    def set_state(self, state):
        """Take the statistics of :meth:`get_state` (shapes checked; the Gaussians are recomputed)."""
        cdef idx_t n, m, c, k = self.n_classes, nn = max(self.n_numeric, 1)
        missing = [name for name in self.OPTIONAL if name not in state]
        for name in self.STATE:
            if name in missing:
                continue
            have, want = np.asarray(state[name]), getattr(self, name)
            if have.shape != want.shape:
                raise ValueError(f"{name} has shape {have.shape}, expected {want.shape}")
            if not np.all(np.isfinite(have)) or (name != "s1" and np.any(have < 0)):
                raise ValueError(f"{name} holds a negative or non-finite value")
        for name in self.STATE:
            if name not in missing:
                getattr(self, name)[...] = np.asarray(state[name])
            else:
                getattr(self, name)[...] = 0.0
        cdef double[:, :, ::1] S0 = self.s0, GM = self._gmean, GI = self._ginv
        for n in range(self.n_learners):
            if missing and self.var_prior > 0:
                self._refresh(n)
            for m in range(nn):
                for c in range(k):
                    if m < self.n_numeric and S0[n, m, c] > 0:
                        self._gauss(n, m, c)
                    else:
                        GM[n, m, c] = GI[n, m, c] = 0.0
            for c in range(k):
                self._sum_logs(n, c)
        self._forget()
