"""A bank of N depth-1 Hoeffding trees whose root is a naive-Bayes-adaptive leaf.

The weak learner of the online agnostic boosting paper's code is river's
``HoeffdingTreeClassifier(split_criterion="gini", leaf_prediction="nba",
max_depth=1, grace_period=200, delta=1e-7, tau=0.05)``. Each learner of
this bank is one such tree: a root leaf of :class:`NBABank` (the same
arithmetic, the code of ``_nba.pyx`` compiled in here too, so this module
reaches its C methods) that splits at most once.

The split, as river decides it:

* the root tries to split each time it has learnt ``grace_period`` more
  weight since its last try (checked after each row, every label of the row
  learnt), unless it has seen a single class, or its majority class holds
  more than ``max_share_to_split`` of its weight;
* per feature the best candidate by Gini merit ``1 - sum_b (W_b / W)
  gini_b`` (river's GiniSplitCriterion; a candidate with fewer than two
  branches holding more than ``min_branch_fraction`` of W is no candidate).
  A nominal feature offers the multiway split by value and every
  value-against-the-rest binary split (river's nominal splitter does both),
  from the root's value counts; a numeric feature offers ``n_splits``
  thresholds evenly spaced strictly inside the range of values the root has
  seen, each class's weight parted left (``x <= t``) and right by the
  normal CDF of the class's Gaussian (weighted mean, variance with ddof 1,
  from the root's sums), all of it left or right outside the class's own
  range (river's Gaussian splitter);
* with ``eps = sqrt(R^2 ln(1/delta) / (2 W))``, R = 1 (Gini's range of
  merit in river), the root splits on the best feature's best candidate if
  it beats the second best feature's by more than eps, or if eps < tau
  (with one feature the second is the null split, merit -inf, so it always
  splits); among features of equal merit the last one wins (river sorts
  its suggestions by merit, stably, and takes the last).

After the split the tree has reached max_depth, and river deactivates the
new leaves: each is a majority-class leaf whose class weights start from
the split's estimate of that branch (the value counts, or the CDF parts)
and grow with the rows routed to it. So here: a child predicts its class of
largest weight (the lowest of equal classes) and learns by adding its class
weights. The root stops learning. A row whose split feature is missing or
an unknown nominal value is predicted with the root's majority class at
the split and learns nothing, as river's split node answers for a branch
that has no leaf; a child with no weight yet (a value of a multiway split
no row had before it, for which river would add a branch) predicts the
root's majority too, and learns.

With ``nba_children=True`` each child is instead a fresh NBA leaf (a slot
of a second :class:`NBABank`, N x n_branches leaves) that learns the rows
routed to it; until it has learnt one it predicts as the majority-class
child would (the split's estimate of its branch, else the root's majority).
This is not river's tree: it is the depth-1 tree with NBA leaves one would
get without river's deactivation at max_depth.

Where this differs from river: river deactivates a leaf whose majority
class holds more than max_share_to_split at a try (the null split wins),
so that it predicts its majority class from then on; here the root just
skips that try. A try where no feature has a valid candidate does not
split either. The try comes after a whole row (river: after each labelled
example), and the Gaussians come from weighted sums, not Welford updates.
"""
include "_nba.pyx"

from libc.math cimport sqrt, erf

KIND_NONE, KIND_MULTIWAY, KIND_VALUE, KIND_NUMERIC = 0, 1, 2, 3
cdef enum:
    _NONE = 0
    _MULTIWAY = 1  # nominal feature, child = value index
    _VALUE = 2  # nominal feature, child 0: x == value, child 1: the rest
    _NUMERIC = 3  # numeric feature, child 0: x <= threshold, child 1: x > threshold

cdef double _SQRT2 = 1.4142135623730951


cdef class HoeffdingBank:
    """N depth-1 Hoeffding trees over d features (``values`` as for :class:`NBABank`) and k classes."""

    cdef readonly idx_t n_learners, n_classes, d, n_branches
    cdef readonly cnp.ndarray values
    cdef readonly double grace_period, delta, tau, min_branch_fraction, max_share_to_split
    cdef readonly int n_splits
    cdef readonly NBABank root
    cdef readonly NBABank kids  # nba_children: leaf n * n_branches + b is learner n's child b; else None
    cdef readonly bint nba_children
    # per learner: the split (-1: none yet), its kind, value / threshold; the children's class weights
    cdef readonly cnp.ndarray split_feature, split_kind, split_value, child_weight
    # per learner: the root's total weight at its last try; per (learner, numeric feature, class) the range seen
    cdef readonly cnp.ndarray last_attempt, xmin, xmax
    cdef double[::1] _post  # scratch: one candidate's branch x class weights
    cdef double[::1] _best_post  # the best candidate's, kept for the split
    cdef double[::1] _w  # scratch: one row's labels and weights for a learner
    cdef int[::1] _lab

    def __init__(self, int n_learners, int n_classes, values, double grace_period=200, double delta=1e-7,
                 double tau=0.05, double var_prior=VAR_PRIOR, double min_branch_fraction=0.01,
                 double max_share_to_split=0.99, int n_splits=10, bint nba_children=False):
        if not (grace_period > 0 and 0 < delta < 1 and tau >= 0 and 0 <= min_branch_fraction < 1
                and 0 < max_share_to_split <= 1 and n_splits >= 1):
            raise ValueError("need grace_period > 0, 0 < delta < 1, tau >= 0, 0 <= min_branch_fraction < 1, "
                             "0 < max_share_to_split <= 1 and n_splits >= 1")
        self.root = NBABank(n_learners, n_classes, values, var_prior)
        self.n_learners, self.n_classes, self.d = self.root.n_learners, self.root.n_classes, self.root.d
        self.values = self.root.values
        self.grace_period, self.delta, self.tau = grace_period, delta, tau
        self.min_branch_fraction, self.max_share_to_split, self.n_splits = min_branch_fraction, max_share_to_split, n_splits
        N, k = self.n_learners, self.n_classes
        self.n_branches = max(2, int(self.values.max()) if self.d else 2)
        self.split_feature = np.full(N, -1, dtype=np.int64)
        self.split_kind = np.zeros(N, dtype=np.int64)
        self.split_value = np.zeros(N)
        self.child_weight = np.zeros((N, self.n_branches, k))
        self.last_attempt = np.zeros(N)
        nn = max(self.root.n_numeric, 1)
        self.xmin = np.full((N, nn, k), np.inf)
        self.xmax = np.full((N, nn, k), -np.inf)
        self._post = np.zeros(self.n_branches * k)
        self.nba_children = nba_children
        self.kids = NBABank(N * self.n_branches, k, values, var_prior) if nba_children else None
        self._best_post = np.zeros(self.n_branches * k)
        self._w = np.zeros(k)
        self._lab = np.zeros(k, dtype=np.intc)

    @property
    def var_prior(self):
        return self.root.var_prior

    # ---- routing -------------------------------------------------------------------------------

    cdef int _branch(self, idx_t n, const double* x) noexcept nogil:
        """The child of split learner n that x goes to; -1: none (missing or unknown value)."""
        cdef long long j = (<const long long*> cnp.PyArray_DATA(self.split_feature))[n]
        cdef long long kind = (<const long long*> cnp.PyArray_DATA(self.split_kind))[n]
        cdef double t = (<const double*> cnp.PyArray_DATA(self.split_value))[n]
        cdef double v = x[j]
        cdef long long V = (<const long long*> cnp.PyArray_DATA(self.values))[j]
        cdef long long iv
        if isnan(v):
            return -1
        if kind == _NUMERIC:
            return 0 if v <= t else 1
        iv = <long long> v
        if not 0 <= iv < V:
            return -1
        if kind == _VALUE:
            return 0 if iv == <long long> t else 1
        return <int> iv

    cdef double* _child(self, idx_t n, int b) noexcept nogil:
        return <double*> cnp.PyArray_DATA(self.child_weight) + (n * self.n_branches + b) * self.n_classes

    cdef int _child_class(self, idx_t n, int b) noexcept nogil:
        """The class a child predicts: its heaviest, or the root's majority if it has no weight (or no child)."""
        cdef const double* cw
        cdef idx_t c
        cdef int best = 0
        cdef double total = 0.0
        if b < 0:
            return self.root._majority(n)
        cw = self._child(n, b)
        for c in range(self.n_classes):
            total += cw[c]
            if cw[c] > cw[best]:
                best = <int> c
        return best if total > 0 else self.root._majority(n)

    # ---- the split -----------------------------------------------------------------------------

    cdef double _merit(self, const double* post, idx_t nb) noexcept nogil:
        """Gini merit of the split whose branch b holds class weights post[b * k ..]; -inf if not a candidate."""
        cdef idx_t k = self.n_classes, b, c
        cdef double total = 0.0, gini = 0.0, w, g, f
        cdef int big = 0
        for b in range(nb):
            w = 0.0
            for c in range(k):
                w += post[b * k + c]
            total += w
        if total <= 0:
            return -INFINITY
        for b in range(nb):
            w = 0.0
            for c in range(k):
                w += post[b * k + c]
            if w / total > self.min_branch_fraction:
                big += 1
        if big < 2:
            return -INFINITY
        for b in range(nb):
            w = 0.0
            for c in range(k):
                w += post[b * k + c]
            g = 1.0
            if w != 0.0:
                for c in range(k):
                    f = post[b * k + c] / w
                    g -= f * f
            gini += (w / total) * g
        return 1.0 - gini

    cdef double _best_of_feature(self, idx_t n, idx_t j, bint keep, double* value, long long* kind) noexcept nogil:
        """The best merit of feature j at learner n's root (-inf: no candidate); ``keep``: its branches into _best_post."""
        cdef idx_t k = self.n_classes, c, b, i, nb, m, nn = max(self.root.n_numeric, 1)
        cdef const long long* vals = <const long long*> cnp.PyArray_DATA(self.values)
        cdef const long long* off = <const long long*> cnp.PyArray_DATA(self.root._offset)
        cdef const long long* num = <const long long*> cnp.PyArray_DATA(self.root._numeric_index)
        cdef const double* nom = <const double*> cnp.PyArray_DATA(self.root.nominal) + n * max(self.root.n_nominal_cells, 1) * k
        cdef double* post = &self._post[0]
        cdef double best = -INFINITY, merit, w, lo, hi, step, t, mean, var, sd, left
        cdef const double* S0
        cdef const double* S1
        cdef const double* S2
        cdef const double* mn
        cdef const double* mx
        cdef long long V = vals[j], v
        if V > 0:
            # multiway: a branch per value (a value no row had holds nothing and counts for nothing)
            for v in range(V):
                for c in range(k):
                    post[v * k + c] = nom[(off[j] + v) * k + c]
            merit = self._merit(post, V)
            if merit > best:
                best, value[0], kind[0] = merit, 0.0, _MULTIWAY
                if keep:
                    for i in range(V * k):
                        self._best_post[i] = post[i]
            # value v against the rest, for every value some row had
            for v in range(V):
                w = 0.0
                for c in range(k):
                    w += nom[(off[j] + v) * k + c]
                if w <= 0:
                    continue
                for c in range(k):
                    post[c] = nom[(off[j] + v) * k + c]
                    post[k + c] = 0.0
                for i in range(V):
                    if i != v:
                        for c in range(k):
                            post[k + c] += nom[(off[j] + i) * k + c]
                merit = self._merit(post, 2)
                if merit > best:
                    best, value[0], kind[0] = merit, <double> v, _VALUE
                    if keep:
                        for i in range(2 * k):
                            self._best_post[i] = post[i]
            return best
        m = num[j]
        S0 = <const double*> cnp.PyArray_DATA(self.root.s0) + (n * nn + m) * k
        S1 = <const double*> cnp.PyArray_DATA(self.root.s1) + (n * nn + m) * k
        S2 = <const double*> cnp.PyArray_DATA(self.root.s2) + (n * nn + m) * k
        mn = <const double*> cnp.PyArray_DATA(self.xmin) + (n * nn + m) * k
        mx = <const double*> cnp.PyArray_DATA(self.xmax) + (n * nn + m) * k
        lo, hi = INFINITY, -INFINITY
        for c in range(k):
            if S0[c] > 0:
                if mn[c] < lo:
                    lo = mn[c]
                if mx[c] > hi:
                    hi = mx[c]
        if not lo < INFINITY:
            return best
        step = (hi - lo) / (self.n_splits + 1.0)
        for i in range(self.n_splits):
            t = lo + step * (i + 1)
            if not (lo < t < hi):
                continue
            for c in range(k):
                post[c] = post[k + c] = 0.0
                if S0[c] <= 0:
                    continue
                if t < mn[c]:
                    post[k + c] = S0[c]
                elif t >= mx[c]:
                    post[c] = S0[c]
                else:
                    mean = S1[c] / S0[c]
                    var = 0.0
                    if S0[c] > 1:
                        var = (S2[c] - S1[c] * mean) / (S0[c] - 1.0)
                    sd = sqrt(var) if var > 0 else 0.0
                    left = 0.5 * (1.0 + erf((t - mean) / (sd * _SQRT2))) if sd > 0 else 0.0
                    post[c] = left * S0[c]
                    post[k + c] = S0[c] - post[c]
            merit = self._merit(post, 2)
            if merit > best:
                best, value[0], kind[0] = merit, t, _NUMERIC
                if keep:
                    for b in range(2 * k):
                        self._best_post[b] = post[b]
        return best

    cdef void _attempt(self, idx_t n) noexcept nogil:
        """Learner n's root tries to split (river's rule, module docstring)."""
        cdef idx_t k = self.n_classes, c, j, i
        cdef const double* cw = <const double*> cnp.PyArray_DATA(self.root.class_weight) + n * k
        cdef double total = 0.0, top = 0.0, merit, first = -INFINITY, second = -INFINITY, eps, value = 0.0
        cdef long long kind = _NONE, best_kind = _NONE
        cdef long long best_j = -1
        cdef double best_value = 0.0
        cdef int seen = 0
        for c in range(k):
            total += cw[c]
            if cw[c] > top:
                top = cw[c]
            if cw[c] != 0:
                seen += 1
        if seen < 2 or top / total > self.max_share_to_split:
            return
        for j in range(self.d):
            merit = self._best_of_feature(n, j, False, &value, &kind)
            if merit >= first:  # ties: the last feature wins
                second, first, best_j, best_value, best_kind = first, merit, j, value, kind
            elif merit > second:
                second = merit
        if best_j < 0 or not first > -INFINITY:
            return
        eps = sqrt(log(1.0 / self.delta) / (2.0 * total))  # R = 1
        if not (first - second > eps or eps < self.tau):
            return
        self._best_of_feature(n, best_j, True, &value, &kind)  # the winner's branches, again
        (<long long*> cnp.PyArray_DATA(self.split_feature))[n] = best_j
        (<long long*> cnp.PyArray_DATA(self.split_kind))[n] = best_kind
        (<double*> cnp.PyArray_DATA(self.split_value))[n] = best_value
        cdef idx_t nb = (<const long long*> cnp.PyArray_DATA(self.values))[best_j] if best_kind == _MULTIWAY else 2
        cdef double* child = self._child(n, 0)
        for i in range(nb * k):
            child[i] = self._best_post[i]

    cdef void _root_row(self, idx_t n, const double* x, const double* labels_w, const int* labels,
                        idx_t n_labels, bint same, double* sc) noexcept nogil:
        """The unsplit learner n learns x with ``n_labels`` (label, weight) pairs, then maybe tries to split."""
        cdef idx_t i, j, m, c, k = self.n_classes, nn = max(self.root.n_numeric, 1)
        cdef const long long* num = <const long long*> cnp.PyArray_DATA(self.root._numeric_index)
        cdef double* mn = <double*> cnp.PyArray_DATA(self.xmin)
        cdef double* mx = <double*> cnp.PyArray_DATA(self.xmax)
        cdef const double* cw = <const double*> cnp.PyArray_DATA(self.root.class_weight) + n * k
        cdef double* last = <double*> cnp.PyArray_DATA(self.last_attempt)
        cdef double total = 0.0
        self.root._start(n, x, same, sc)
        for i in range(n_labels):
            self.root._learn(n, x, labels[i], labels_w[i], sc)
            for j in range(self.d):
                m = num[j]
                if m < 0 or isnan(x[j]):
                    continue
                c = (n * nn + m) * k + labels[i]
                if x[j] < mn[c]:
                    mn[c] = x[j]
                if x[j] > mx[c]:
                    mx[c] = x[j]
        self.root._end_row(n)
        for c in range(k):
            total += cw[c]
        if total - last[n] >= self.grace_period:
            self._attempt(n)
            last[n] = total

    cdef bint _kid_learnt(self, idx_t slot) noexcept nogil:
        cdef const double* cw = <const double*> cnp.PyArray_DATA(self.kids.class_weight) + slot * self.n_classes
        cdef idx_t c
        for c in range(self.n_classes):
            if cw[c] > 0:
                return True
        return False

    cdef void _child_row(self, idx_t n, const double* x, const double* labels_w, const int* labels,
                         idx_t n_labels, bint same) noexcept nogil:
        """The split learner n's child for x (if any) learns the (label, weight) pairs."""
        cdef int b = self._branch(n, x)
        cdef idx_t i, slot
        cdef double* child
        cdef double* sc
        if b < 0:
            return
        child = self._child(n, b)
        for i in range(n_labels):
            child[labels[i]] += labels_w[i]
        if self.kids is None:
            return
        slot = n * self.n_branches + b
        sc = &self.kids._scores[0]
        self.kids._start(slot, x, same, sc)
        for i in range(n_labels):
            self.kids._learn(slot, x, labels[i], labels_w[i], sc)
        self.kids._end_row(slot)

    # ---- the bank's API (NBABank's) -------------------------------------------------------------

    def predict(self, const double[::1] x, cls_t[::1] out):
        """Every learner's class for the row ``x`` (d values) into ``out`` (N)."""
        cdef idx_t n, j
        cdef const long long* sf = <const long long*> cnp.PyArray_DATA(self.split_feature)
        if x.shape[0] != self.d or out.shape[0] != self.n_learners:
            raise ValueError("x must have d values and out N entries")
        cdef int b
        self.root._forget()
        for j in range(self.d):
            self.root._cache_x[j] = x[j]
        if self.kids is not None:
            self.kids._forget()
            for j in range(self.d):
                self.kids._cache_x[j] = x[j]
        for n in range(self.n_learners):
            if sf[n] < 0:
                out[n] = self.root._predict(n, &x[0])
            else:
                b = self._branch(n, &x[0])
                if b >= 0 and self.kids is not None and self._kid_learnt(n * self.n_branches + b):
                    out[n] = self.kids._predict(n * self.n_branches + b, &x[0])
                else:
                    out[n] = self._child_class(n, b)

    def learn(self, const double[::1] x, const double[:, ::1] P, int first=0):
        """Learner n learns x with every label l of weight ``P[n + first, l] > 0`` (as :meth:`NBABank.learn`)."""
        cdef idx_t n, l, k = self.n_classes, nl
        cdef const long long* sf = <const long long*> cnp.PyArray_DATA(self.split_feature)
        if x.shape[0] != self.d or P.shape[1] != self.n_classes or P.shape[0] < self.n_learners + first:
            raise ValueError("x must have d values and P at least N rows of k weights")
        cdef double* sc = &self.root._scores[0]
        cdef bint same = self.root._same_row(&x[0])
        cdef double[::1] w = self._w
        cdef int[::1] lab = self._lab
        cdef bint kids_same = self.kids is not None and self.kids._same_row(&x[0])
        for n in range(self.n_learners):
            nl = 0
            for l in range(k):
                if P[n + first, l] > 0:
                    lab[nl], w[nl] = <int> l, P[n + first, l]
                    nl += 1
            if sf[n] < 0:
                self._root_row(n, &x[0], &w[0], &lab[0], nl, same, sc)
            else:
                self._child_row(n, &x[0], &w[0], &lab[0], nl, kids_same)
        self.root._forget()
        if self.kids is not None:
            self.kids._forget()

    def learn_labels(self, const double[::1] x, const cls_t[::1] labels, double weight=1.0, weights=None):
        """Learner n learns x with label ``labels[n]`` of weight ``weight`` or ``weights[n]`` (as :meth:`NBABank.learn_labels`)."""
        cdef idx_t n
        cdef int lab
        cdef const double[::1] w = _label_weights(x, labels, weight, weights, self.d, self.n_learners,
                                                  self.n_classes)
        cdef const long long* sf = <const long long*> cnp.PyArray_DATA(self.split_feature)
        cdef double* sc = &self.root._scores[0]
        cdef bint same = self.root._same_row(&x[0])
        cdef bint kids_same = self.kids is not None and self.kids._same_row(&x[0])
        for n in range(self.n_learners):
            if not w[n] > 0:
                continue
            lab = labels[n]
            if sf[n] < 0:
                self._root_row(n, &x[0], &w[n], &lab, 1, same, sc)
            else:
                self._child_row(n, &x[0], &w[n], &lab, 1, kids_same)
        self.root._forget()
        if self.kids is not None:
            self.kids._forget()

    # ---- state -----------------------------------------------------------------------------------

    TREE_STATE = ("split_feature", "split_kind", "split_value", "child_weight", "last_attempt", "xmin", "xmax")

    def get_state(self):
        """The root leaves' statistics (:meth:`NBABank.get_state`) and the trees' own arrays, in learner order."""
        state = self.root.get_state()
        for name in self.TREE_STATE:
            state[name] = np.array(getattr(self, name))
        if self.kids is not None:  # the children's leaves as (N, n_branches, ...)
            for name, value in self.kids.get_state().items():
                state["child_" + name] = value.reshape((self.n_learners, self.n_branches) + value.shape[1:])
        return state

    def set_state(self, state):
        """Take a state of :meth:`get_state` (shapes and values checked)."""
        for name in self.TREE_STATE:
            have, want = np.asarray(state[name]), getattr(self, name)
            if have.shape != want.shape:
                raise ValueError(f"{name} has shape {have.shape}, expected {want.shape}")
            if name in ("xmin", "xmax"):
                bad = np.isnan(have) | (have == (-np.inf if name == "xmin" else np.inf))
            else:
                bad = ~np.isfinite(have)
            if np.any(bad):
                raise ValueError(f"{name} holds a non-finite value")
        sf, kind = np.asarray(state["split_feature"]), np.asarray(state["split_kind"])
        if np.any((sf < -1) | (sf >= self.d)) or np.any((kind < 0) | (kind > _NUMERIC)) or \
                np.any((sf >= 0) != (kind != _NONE)) or np.any(np.asarray(state["child_weight"]) < 0):
            raise ValueError("split_feature, split_kind or child_weight out of range")
        for j, kd in zip(sf, kind):
            if j >= 0 and (kd == _NUMERIC) != (self.values[j] == 0):
                raise ValueError("a split's kind does not fit its feature")
        if self.kids is not None:
            kid = {}
            for name in self.kids.STATE:
                if "child_" + name in state:
                    value = np.asarray(state["child_" + name])
                    if value.shape[:2] != (self.n_learners, self.n_branches):
                        raise ValueError(f"child_{name} has shape {value.shape}, expected ({self.n_learners}, "
                                         f"{self.n_branches}, ...)")
                    kid[name] = value.reshape((-1,) + value.shape[2:])
            self.kids.set_state(kid)
        self.root.set_state({name: state[name] for name in self.root.STATE if name in state})
        for name in self.TREE_STATE:
            getattr(self, name)[...] = np.asarray(state[name])
