"""Histogram trees: per-node histograms, the split scan, row partitioning and
tree prediction.

Histograms are "packed": feature j owns the slots ``off[j] .. off[j+1]-1``,
one per value bin and a last one for missing values (bin 255), so only bins a
row can fall in take memory and travel. Every slot holds ``C`` int64 channels:
``K`` gradient sums, ``K`` hessian sums and a row count
(``C = 2 K + 1``). Entries are fixed-point integers, so the sum over threads,
rows and ranks is exact and does not depend on their order: the same split is
found for any number of ranks.

A node's rows are a range ``rows[lo:hi]`` of one index array that is
partitioned in place (stably, so each range stays sorted and the column reads
stay close to sequential); no row list is copied per level.
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport ldexp, llrint, fabs
from libc.stdint cimport uint64_t
from libc.string cimport memset

from _channel_kernels cimport channel_histogram_core, channel_rows_core
from _split_kernels cimport (GAIN_ERROR, GAIN_NEWTON, best_split_core, cat_rules_t, goes_left, partition_core,
                             split_t)
from _superacc cimport mb_get_max_threads, threads_for
from _typedefs cimport bin_t, fixed_t, idx_t, MISSING_BIN

cnp.import_array()

ctypedef cnp.npy_int32 node_t

def packed_offsets(const long long[::1] n_bins):
    """``off`` of length d + 1: feature j's slots are ``off[j] .. off[j] + n_bins[j]`` (the last: missing)."""
    cdef idx_t d = n_bins.shape[0], j
    out = np.zeros(d + 1, dtype=np.int64)
    cdef long long[::1] o = out
    for j in range(d):
        o[j + 1] = o[j] + n_bins[j] + 1
    return out


def to_units(const double[::1] v, int shift, fixed_t[:, ::1] out, idx_t channel, bint at_least_one=False):
    """``out[i, channel] = round(v[i] * 2**shift)`` (ties to even); with ``at_least_one`` a
    positive value never rounds to 0 (a tiny hessian still counts). |v| * 2**shift must be < 2**62."""
    cdef idx_t n = v.shape[0], i
    cdef fixed_t u
    cdef double scale = ldexp(1.0, shift)
    if out.shape[0] != n or not 0 <= channel < out.shape[1]:
        raise ValueError("shape mismatch")
    with nogil:
        for i in range(n):
            # v * 2**shift is exact (a power of two); llrint rounds it to nearest, ties to even
            u = <fixed_t> llrint(v[i] * scale)
            if at_least_one and u == 0 and v[i] > 0:
                u = 1
            out[i, channel] = u


def feature_lists(binary, idx_t d):
    """(general, masked): the features summed by scatter and the 0/1 ones summed by masks (never empty arrays)."""
    flags = np.zeros(d, dtype=bool) if binary is None else np.asarray(binary, dtype=bool)
    if flags.shape[0] != d:
        raise ValueError("binary flags: one per feature")
    general = np.ascontiguousarray(np.flatnonzero(~flags), dtype=np.intp)
    masked = np.ascontiguousarray(np.flatnonzero(flags), dtype=np.intp)
    return general, masked


def node_histogram(const bin_t[:, ::1] XT, const fixed_t[:, ::1] gh, const idx_t[::1] rows, idx_t lo, idx_t hi,
                   const long long[::1] off, fixed_t[:, ::1] hist, bint identity=False, binary=None):
    """``hist[off[j] + b, c] = sum of gh[i, c]`` over the rows ``i = rows[lo:hi]`` with bin b of feature j
    (the missing bin in the last slot); every slot is overwritten. ``identity``: the rows are
    ``lo .. hi-1`` themselves (the root). ``binary``: a flag per feature whose column holds bins 0 and
    1 only (``mpiboost._ext._histogram.binary_columns``), summed by masks; the same sums either way.
    Threads take row ranges into their own histograms, summed at the end (integers: the same for
    any thread count)."""
    cdef idx_t d = XT.shape[0], C = gh.shape[1]
    if off.shape[0] != d + 1 or hist.shape[0] != off[d] or hist.shape[1] != C or gh.shape[0] != XT.shape[1]:
        raise ValueError("shape mismatch")
    if not 0 <= lo <= hi or (not identity and hi > rows.shape[0]) or (identity and hi > XT.shape[1]):
        raise ValueError("row range out of bounds")
    general, masked = feature_lists(binary, d)
    cdef const idx_t[::1] fg = general if general.shape[0] else np.zeros(1, dtype=np.intp)
    cdef const idx_t[::1] fb = masked if masked.shape[0] else np.zeros(1, dtype=np.intp)
    cdef int mt = mb_get_max_threads()
    scratch = np.empty(max(1, mt * off[d] * C) if hi - lo >= 16384 else 1, dtype=np.int64)
    cdef fixed_t[::1] S = scratch
    cdef const idx_t* rp = &rows[0] if rows.shape[0] else NULL
    cdef const fixed_t* g = &gh[0, 0] if gh.shape[0] else NULL
    cdef idx_t ng = general.shape[0], nm = masked.shape[0]
    if hist.shape[0] == 0:
        return
    with nogil:
        channel_histogram_core(XT, g, C, rp, lo, hi, &off[0], &hist[0, 0], identity, &fg[0], ng, &fb[0], nm, &S[0], mt)


def missing_slots(const long long[::1] off):
    """Each feature's value bin count (its missing slot's index within the feature), int64 of length d."""
    cdef idx_t d = off.shape[0] - 1, j
    out = np.empty(max(d, 0), dtype=np.int64)
    for j in range(d):
        out[j] = off[j + 1] - off[j] - 1  # the missing bin (255) lands in the last slot
    return out


def node_histogram_rows(const bin_t[:, ::1] XR, const fixed_t[:, ::1] gh, const idx_t[::1] rows, idx_t lo, idx_t hi,
                        const long long[::1] off, fixed_t[:, ::1] hist):
    """:func:`node_histogram` from row-major bins ``XR`` (n, d): the same sums, for nodes whose rows
    are scattered over the data (every node below the root)."""
    cdef idx_t d = XR.shape[1], C = gh.shape[1]
    if off.shape[0] != d + 1 or hist.shape[0] != off[d] or hist.shape[1] != C or gh.shape[0] != XR.shape[0]:
        raise ValueError("shape mismatch")
    if not 0 <= lo <= hi <= rows.shape[0]:
        raise ValueError("row range out of bounds")
    if hist.shape[0] == 0:
        return
    if hi == lo or d == 0:
        hist[:, :] = 0
        return
    cdef const long long[::1] nbs = missing_slots(off)
    cdef int mt = mb_get_max_threads()
    scratch = np.empty(max(1, mt * off[d] * C) if hi - lo >= 16384 else 1, dtype=np.int64)
    cdef fixed_t[::1] S = scratch
    with nogil:
        channel_rows_core(&XR[0, 0], d, &gh[0, 0], C, &rows[0], lo, hi, &off[0], &nbs[0], &hist[0, 0], &S[0], mt)


def leaf_sums(const fixed_t[:, ::1] gh, const node_t[::1] node_of_row, idx_t n_nodes):
    """``out[k, c] = sum of gh[i, c]`` over the rows i in node k (every leaf's local totals, one pass)."""
    cdef idx_t n = gh.shape[0], C = gh.shape[1], i, c
    cdef node_t k
    if node_of_row.shape[0] != n:
        raise ValueError("shape mismatch")
    out = np.zeros((n_nodes, C), dtype=np.int64)
    cdef fixed_t[:, ::1] o = out
    with nogil:
        for i in range(n):
            k = node_of_row[i]
            if 0 <= k < n_nodes:
                for c in range(C):
                    o[k, c] += gh[i, c]
    return out


def subtree_sums(fixed_t[:, ::1] table, const node_t[::1] feature, const node_t[::1] left,
                 const node_t[::1] right):
    """Every internal node's row of ``table`` (nodes, C) set to its children's sum, bottom up (children come
    after their parent): the sums over the rows each node covers, from the leaves' sums."""
    cdef idx_t n = table.shape[0], C = table.shape[1], c
    cdef Py_ssize_t k
    if feature.shape[0] != n or left.shape[0] != n or right.shape[0] != n:
        raise ValueError("shape mismatch")
    for k in range(n):
        if feature[k] >= 0 and not (k < left[k] < n and k < right[k] < n):
            raise ValueError("children must come after their parent")
    with nogil:
        for k in range(n - 1, -1, -1):
            if feature[k] >= 0:
                for c in range(C):
                    table[k, c] = table[left[k], c] + table[right[k], c]


def range_sums(const fixed_t[:, ::1] gh, const idx_t[::1] rows, idx_t lo, idx_t hi):
    """The channel sums of the rows ``rows[lo:hi]`` (a leaf's local totals), int64 of length C."""
    cdef idx_t C = gh.shape[1], r, c, i
    if not 0 <= lo <= hi <= rows.shape[0]:
        raise ValueError("row range out of bounds")
    out = np.zeros(C, dtype=np.int64)
    cdef fixed_t[::1] o = out
    with nogil:
        for r in range(lo, hi):
            i = rows[r]
            for c in range(C):
                o[c] += gh[i, c]
    return out


def subtract(const fixed_t[:, ::1] parent, const fixed_t[:, ::1] child, fixed_t[:, ::1] out):
    """``out = parent - child`` (the sibling's histogram)."""
    cdef idx_t P = parent.shape[0], C = parent.shape[1], s, c
    if child.shape[0] != P or out.shape[0] != P or child.shape[1] != C or out.shape[1] != C:
        raise ValueError("shape mismatch")
    with nogil:
        for s in range(P):
            for c in range(C):
                out[s, c] = parent[s, c] - child[s, c]


def best_split(const fixed_t[:, ::1] hist, const long long[::1] off, int K, double g_scale, double h_scale,
               double l2, long long min_data, double min_hess, int criterion, idx_t f_lo=0, idx_t f_hi=-1, use=None,
               categorical=None, int max_cat_to_onehot=4, int max_cat_threshold=32, double cat_smooth=10.0,
               double cat_l2=10.0, long long min_data_per_group=100):
    """The best split of a node from its packed histogram, over features ``f_lo .. f_hi - 1`` (``use``: a
    (d,) mask of the features allowed, None: all; ``categorical``: a (d,) mask of the features whose bins are
    categories, split LightGBM's way with one class and the Newton gain, see ``_split_kernels.pxd``).

    A candidate "bin <= b goes left", missing values left or right, leaves at
    least ``min_data`` rows and ``min_hess`` hessian (summed over the K
    channels) on each side. Its gain is, for ``criterion`` 0 (Newton),
    ``sum_k GL^2/(HL+l2) + GR^2/(HR+l2) - G^2/(H+l2)`` with G, H the channel
    sums times ``g_scale``, ``h_scale``; for 1 (error, K = 1), the drop of the
    weighted error of sign leaves, ``|GL| + |GR| - |G|`` in units. Candidates
    are scanned by feature, threshold, missing right before left; a later one
    wins only with a strictly larger gain, so ties go to the lowest feature,
    then bin, then missing right. Only a gain > 0 counts.

    Returns
    -------
    (gain, feature, bin, missing_left, left_bins)
        ``feature == -1``: no split. A categorical split has ``bin == -1`` and ``left_bins`` the sorted bins
        going left (missing values right); otherwise ``left_bins`` is None.
    """
    cdef idx_t d = off.shape[0] - 1, C = hist.shape[1]
    cdef split_t out
    cdef cat_rules_t rules
    if f_hi < 0:
        f_hi = d
    if C != 2 * K + 1 or hist.shape[0] != off[d] or K < 1 or (criterion == GAIN_ERROR and K != 1):
        raise ValueError("shape mismatch")
    if d == 0 or f_lo >= f_hi:
        return 0.0, -1, 0, False, None
    cdef const unsigned char[::1] cm = np.ascontiguousarray(categorical if categorical is not None else np.ones(1),
                                                            dtype=np.uint8)
    if categorical is not None and cm.shape[0] != d:
        raise ValueError("categorical must have one entry per feature")
    rules.is_cat = &cm[0] if categorical is not None else NULL
    rules.max_to_onehot, rules.max_threshold, rules.smooth = max_cat_to_onehot, max_cat_threshold, cat_smooth
    rules.l2, rules.min_per_group = cat_l2, min_data_per_group
    scratch = np.zeros(2 * C, dtype=np.int64)
    cdef fixed_t[::1] sc = scratch
    cdef const unsigned char[::1] um = np.ascontiguousarray(use if use is not None else np.ones(1), dtype=np.uint8)
    if use is not None and um.shape[0] != d:
        raise ValueError("use must have one entry per feature")
    with nogil:
        best_split_core(&hist[0, 0], &off[0], C, K, g_scale, h_scale, l2, min_data, min_hess, criterion, f_lo, f_hi,
                        &sc[0], &sc[C], &out, &um[0] if use is not None else NULL, &rules)
    left = None
    if out.feature >= 0 and out.bin < 0:
        left = [b for b in range(256) if (out.cat[b >> 6] >> (b & 63)) & 1]
    return out.gain, out.feature, out.bin, bool(out.missing_left), left


def node_sums(const fixed_t[:, ::1] hist, const long long[::1] off):
    """The node's channel totals (the slots of feature 0), int64 of length C."""
    cdef idx_t C = hist.shape[1], s, k
    out = np.zeros(C, dtype=np.int64)
    cdef fixed_t[::1] o = out
    if off.shape[0] < 2:
        raise ValueError("no features")
    for s in range(off[0], off[1]):
        for k in range(C):
            o[k] += hist[s, k]
    return out


def partition(const bin_t[:, ::1] XT, idx_t[::1] rows, idx_t lo, idx_t hi, int feature, int bin,
              bint missing_left, idx_t[::1] scratch, cat=None):
    """Stable in-place partition of ``rows[lo:hi]``: rows going left (``bin(x_f) <= bin``, missing
    left iff ``missing_left``; with ``bin`` -1 the bins set in ``cat``, 4 uint64 words, missing right) first.
    Returns the first right position. ``scratch``: >= hi - lo entries.

    One thread: one pass moves the lefts forward in place and the rights to ``scratch``, a second
    copies the rights back. Threads take consecutive chunks: each counts its left rows (keeping
    each row's side, so the bins are read once), then writes them at its offset among the lefts
    (and its right rows at its offset in ``scratch``), so the order is kept."""
    cdef idx_t n = hi - lo, out
    if not 0 <= lo <= hi <= rows.shape[0] or scratch.shape[0] < hi - lo or not 0 <= feature < XT.shape[0]:
        raise ValueError("out of bounds")
    if n == 0:
        return lo
    cdef int mt = mb_get_max_threads()
    side_np = np.empty(n if n >= 2 * 16384 else 1, dtype=np.uint8)
    lefts_np = np.zeros(mt + 1, dtype=np.intp)
    cdef unsigned char[::1] side = side_np
    cdef idx_t[::1] lefts = lefts_np
    cdef const uint64_t[::1] cw = np.ascontiguousarray(cat if cat is not None else np.zeros(4), dtype=np.uint64)
    if cw.shape[0] != 4 or (bin < 0 and cat is None):
        raise ValueError("cat must be 4 words, and given for a categorical split (bin -1)")
    with nogil:
        out = partition_core(&XT[feature, 0], &rows[0], lo, hi, bin, missing_left, &scratch[0], &side[0], &lefts[0],
                             mt, &cw[0])
    return out


cdef inline node_t _leaf_of(const bin_t[:, ::1] XT, idx_t i, const node_t* feat, const node_t* bins,
                            const unsigned char* ml, const node_t* lc, const node_t* rc,
                            const uint64_t* cat) noexcept nogil:
    cdef node_t node = 0
    cdef bin_t b
    cdef bint go_left
    while feat[node] >= 0:
        b = XT[feat[node], i]
        if bins[node] < 0:  # a categorical split: the node's 4 words of bins going left
            go_left = goes_left(b, -1, False, cat + 4 * node)
        elif b == MISSING_BIN:
            go_left = ml[node] != 0
        else:
            go_left = b <= bins[node]
        if go_left:
            node = lc[node]
        else:
            node = rc[node]
    return node


def tree_leaves(const bin_t[:, ::1] XT, const node_t[::1] feature, const node_t[::1] bin,
                const unsigned char[::1] missing_left, const node_t[::1] left, const node_t[::1] right,
                const uint64_t[:, ::1] cat, node_t[::1] out):
    """The leaf (node id) of every row of feature-major bins ``XT`` in one tree (node 0 the root;
    ``feature < 0`` a leaf; ``bin < 0`` a categorical split, ``cat[node]`` its 4 words of bins going left).
    The arrays are trusted (checked by the model loader)."""
    cdef idx_t n = XT.shape[1], i
    if out.shape[0] != n or feature.shape[0] < 1 or cat.shape[0] != feature.shape[0] or cat.shape[1] != 4:
        raise ValueError("shape mismatch")
    with nogil:
        for i in prange(n, schedule="static", num_threads=threads_for(n)):
            out[i] = _leaf_of(XT, i, &feature[0], &bin[0], &missing_left[0], &left[0], &right[0], &cat[0, 0])


def add_trees(const bin_t[:, ::1] XT, const node_t[::1] feature, const node_t[::1] bin,
              const unsigned char[::1] missing_left, const node_t[::1] left, const node_t[::1] right,
              const uint64_t[:, ::1] cat, const double[:, ::1] value, const long long[::1] start,
              const double[::1] coef, double[:, ::1] out):
    """``out[i, :] += coef[t] * value[leaf_t(i), :]`` for trees t in order (tree t's nodes are
    ``start[t] .. start[t+1]-1``, children numbered within the tree). Rows in parallel; each row
    adds its trees in order, so the scores do not depend on the threads."""
    cdef idx_t n = XT.shape[1], V = value.shape[1], T = coef.shape[0], i, t, v
    cdef long long s
    cdef node_t leaf
    if out.shape[0] != n or out.shape[1] != V or start.shape[0] != T + 1 or cat.shape[0] != feature.shape[0] \
            or cat.shape[1] != 4:
        raise ValueError("shape mismatch")
    with nogil:
        for i in prange(n, schedule="static", num_threads=threads_for(n)):
            for t in range(T):
                s = start[t]
                leaf = _leaf_of(XT, i, &feature[s], &bin[s], &missing_left[s], &left[s], &right[s], &cat[s, 0])
                for v in range(V):
                    out[i, v] = out[i, v] + coef[t] * value[s + leaf, v]


# ------------------------------------------------------------ Newton boosting
from libc.math cimport exp, tanh


def logistic_units(const double[::1] F, double init, const double[::1] target, int shift, fixed_t[:, ::1] gh):
    """One pass of the binary log-loss at the scores ``F + init``: ``gh[i] = (units of p - t,
    units of p (1 - p) (at least one), 1)`` with ``p = sigmoid(F + init)`` and ``t`` the 0/1
    target. Rows are independent: the same units for any split of the rows or threads."""
    cdef idx_t n = F.shape[0], i
    cdef double p, z, scale = ldexp(1.0, shift)
    cdef fixed_t u
    if target.shape[0] != n or gh.shape[0] != n or gh.shape[1] != 3:
        raise ValueError("shape mismatch")
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        z = F[i] + init
        p = 1.0 / (1.0 + exp(-z))  # exp(-z) = inf gives p = 0 (a quarter of tanh's cost)
        gh[i, 0] = <fixed_t> llrint((p - target[i]) * scale)
        u = <fixed_t> llrint(p * (1.0 - p) * scale)
        if u == 0 and p * (1.0 - p) > 0:
            u = 1
        gh[i, 1] = u
        gh[i, 2] = 1


def softmax_units(const double[:, ::1] F, const double[::1] init, const int[::1] cls, int shift,
                  fixed_t[:, ::1] gh):
    """One pass of the multinomial log-loss at ``F + init`` (n, K): ``gh[i] = (units of p_k - [y = k]
    for each k, units of K/(K-1) p_k (1 - p_k) (at least one) for each k, 1)``."""
    cdef idx_t n = F.shape[0], K = F.shape[1], i, k
    cdef double m, s, p, h, factor, scale = ldexp(1.0, shift)
    cdef fixed_t u
    if init.shape[0] != K or cls.shape[0] != n or gh.shape[0] != n or gh.shape[1] != 2 * K + 1 or K < 2:
        raise ValueError("shape mismatch")
    factor = K / (K - 1.0)
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        m = F[i, 0] + init[0]
        for k in range(1, K):
            if F[i, k] + init[k] > m:
                m = F[i, k] + init[k]
        s = 0.0
        for k in range(K):
            s = s + exp(F[i, k] + init[k] - m)
        for k in range(K):
            p = exp(F[i, k] + init[k] - m) / s
            gh[i, k] = <fixed_t> llrint((p - (1.0 if cls[i] == k else 0.0)) * scale)
            h = factor * p * (1.0 - p)
            u = <fixed_t> llrint(h * scale)
            if u == 0 and h > 0:
                u = 1
            gh[i, K + k] = u
        gh[i, 2 * K] = 1


def add_leaves(double[:, ::1] F, const double[:, ::1] value, const node_t[::1] leaf, const int[::1] cls,
               const signed char[::1] sign):
    """``F[i, :] += value[leaf[i], :]``; returns the rows now misclassified: ``sign(F) != sign[i]``
    (K = 1, a zero score is +1) or ``argmax F != cls[i]`` (ties: the highest class)."""
    cdef idx_t n = F.shape[0], K = F.shape[1], i, k, best
    cdef long long wrong = 0
    if value.shape[1] != K or leaf.shape[0] != n:
        raise ValueError("shape mismatch")
    if (K == 1 and sign.shape[0] != n) or (K > 1 and cls.shape[0] != n):
        raise ValueError("shape mismatch")
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        for k in range(K):
            F[i, k] = F[i, k] + value[leaf[i], k]
        if K == 1:
            if (1 if F[i, 0] >= 0 else -1) != sign[i]:
                wrong += 1
        else:
            best = 0
            for k in range(1, K):
                if F[i, k] >= F[i, best]:
                    best = k
            if best != cls[i]:
                wrong += 1
    return int(wrong)
