"""TreeSHAP: each feature's exact Shapley contribution to a tree ensemble's score, row by row.

The polynomial-time algorithm of Lundberg, Erion & Lee ("Consistent Individualized Feature Attribution
for Tree Ensembles", 2018, Algorithm 2): one walk of each tree per row keeps the path of features met
so far, with the fraction of the background ("cold": rows that would not follow the split) and of the
row ("hot": 1 if the row follows it, else 0) that pass each one, and the weights of the subsets of that
path by size. A feature met twice on a path is "unwound" and extended again. At a leaf, each path
feature's contribution is its unwound weight sum times (hot - cold fraction) times the leaf's value.

The background weight of a node is its training row count (``cover``), as LightGBM's ``pred_contrib``
takes it, so the contributions of an exported model agree with LightGBM's; each row's contributions
plus the expected value (the cover-weighted mean of the leaves, the last column) sum to its score.
Rows are binned (``cols``, feature-major, as the model predicts): the path a row follows is the
model's own, missing values included.
"""
from cython.parallel cimport prange
from libc.stdint cimport uint64_t
from libc.stdlib cimport free, malloc

from _split_kernels cimport goes_left
from _superacc cimport threads_for
from _typedefs cimport bin_t, idx_t, MISSING_BIN

import numpy as np

ctypedef struct step_t:  # one feature of the path
    int feature
    double cold  # fraction of the background that passes
    double hot  # 1 where the row passes, else 0
    double w  # weight of the subsets of this size


cdef inline void _extend(step_t* m, int l, double cold, double hot, int feature) noexcept nogil:
    """Append a feature to the path ``m[0:l]`` and update the subset weights."""
    cdef int i
    m[l].feature = feature
    m[l].cold = cold
    m[l].hot = hot
    m[l].w = 1.0 if l == 0 else 0.0
    for i in range(l - 1, -1, -1):
        m[i + 1].w += hot * m[i].w * (i + 1) / (l + 1)
        m[i].w = cold * m[i].w * (l - i) / (l + 1)


cdef inline void _unwind(step_t* m, int l, int k) noexcept nogil:
    """Remove step ``k`` of the path ``m[0:l+1]`` (the inverse of :func:`_extend`)."""
    cdef int j
    cdef double n = m[l].w, t, hot = m[k].hot, cold = m[k].cold
    for j in range(l - 1, -1, -1):
        if hot != 0:
            t = m[j].w
            m[j].w = n * (l + 1) / ((j + 1) * hot)
            n = t - m[j].w * cold * (l - j) / (l + 1)
        else:
            m[j].w = m[j].w * (l + 1) / (cold * (l - j))
    for j in range(k, l):
        m[j].feature = m[j + 1].feature
        m[j].cold = m[j + 1].cold
        m[j].hot = m[j + 1].hot


cdef inline double _unwound_sum(const step_t* m, int l, int k) noexcept nogil:
    """The sum of the subset weights of the path ``m[0:l+1]`` with step ``k`` unwound (not changing ``m``)."""
    cdef int j
    cdef double n = m[l].w, t, total = 0.0, hot = m[k].hot, cold = m[k].cold
    if hot != 0:
        for j in range(l - 1, -1, -1):
            t = n * (l + 1) / ((j + 1) * hot)
            total += t
            n = m[j].w - t * cold * (l - j) / (l + 1)
    else:
        for j in range(l - 1, -1, -1):
            total += m[j].w * (l + 1) / (cold * (l - j))
    return total


cdef void _walk(const bin_t* col, idx_t n_rows, idx_t i, const int* feature, const int* bin,
                const unsigned char* missing_left, const uint64_t* cat, const int* left, const int* right,
                const double* value,
                int V, const double* cover, double coef, int node, step_t* parent, int l, double cold, double hot,
                int split_feature, double* phi) noexcept nogil:
    """One node of row ``i``'s walk; ``parent[0:l]`` the path so far (copied, then extended here)."""
    cdef step_t* m = parent + l  # this level's copy lives after the parent's steps
    cdef int j, k, f, hot_child, cold_child, v
    cdef double w, zero = 1.0, one = 1.0, rj
    cdef bin_t b
    for j in range(l):
        m[j] = parent[j]
    _extend(m, l, cold, hot, split_feature)
    l += 1
    if feature[node] < 0:
        for j in range(1, l):
            w = _unwound_sum(m, l - 1, j) * (m[j].hot - m[j].cold) * coef
            for v in range(V):
                phi[m[j].feature * V + v] += w * value[node * V + v]
        return
    f = feature[node]
    b = col[f * n_rows + i]
    hot_child = left[node] if goes_left(b, bin[node], missing_left[node], cat + 4 * node) else right[node]
    cold_child = right[node] if hot_child == left[node] else left[node]
    for k in range(1, l):
        if m[k].feature == f:  # met before on this path: its fractions combine, its step goes
            zero, one = m[k].cold, m[k].hot
            _unwind(m, l - 1, k)
            l -= 1
            break
    rj = cover[node]
    _walk(col, n_rows, i, feature, bin, missing_left, cat, left, right, value, V, cover, coef, hot_child, m, l,
          zero * cover[hot_child] / rj if rj > 0 else 0.0, one, f, phi)
    _walk(col, n_rows, i, feature, bin, missing_left, cat, left, right, value, V, cover, coef, cold_child, m, l,
          zero * cover[cold_child] / rj if rj > 0 else 0.0, 0.0, f, phi)


def _depth(const int[::1] feature, const int[::1] left, const int[::1] right) -> int:
    """Levels of a tree (a lone leaf: 1)."""
    depth = np.zeros(feature.shape[0], dtype=np.int64)
    best = 1
    for node in range(feature.shape[0]):  # children come after their parent
        if feature[node] >= 0:
            depth[left[node]] = depth[right[node]] = depth[node] + 1
        best = max(best, int(depth[node]) + 1)
    return best


def add_contributions(const bin_t[:, ::1] cols, const int[::1] feature, const int[::1] bin,
                      const unsigned char[::1] missing_left, const uint64_t[:, ::1] cat, const int[::1] left,
                      const int[::1] right, const double[:, ::1] value, const double[::1] cover, double coef,
                      double[:, :, ::1] out):
    """Add one tree's contributions, times ``coef``, to ``out`` (n, V, d + 1) for the rows of ``cols`` (d, n).

    ``out[i, v, j]``: feature j's part of row i's output v; ``out[i, v, d]``: the tree's expected value
    (the leaves weighted by ``cover``). Node ``k``'s children come after it (as the grower numbers them).
    """
    cdef idx_t d = cols.shape[0], n = cols.shape[1], i
    cdef int V = value.shape[1], nodes = feature.shape[0], levels, v, k
    cdef double root = cover[0] if nodes else 0.0
    if out.shape[0] != n or out.shape[1] != V or out.shape[2] != d + 1 or value.shape[0] != nodes \
            or cat.shape[0] != nodes or (nodes and cat.shape[1] != 4):
        raise ValueError("shape mismatch")
    if nodes == 0:
        return out
    for k in range(nodes):
        if feature[k] >= d or (feature[k] >= 0 and not (k < left[k] < nodes and k < right[k] < nodes)):
            raise ValueError("not a tree over these features (children must follow their parent)")
    levels = _depth(feature, left, right)
    expected = np.zeros(V)
    for k in range(nodes):
        if feature[k] < 0 and root > 0:
            expected += (cover[k] / root) * np.asarray(value[k])
        elif feature[k] < 0 and nodes == 1:
            expected += np.asarray(value[k])
    cdef double[::1] ev = expected
    cdef int room = (levels + 2) * (levels + 3) // 2  # the path copies of every level, one after another
    cdef step_t* paths
    cdef double* phi
    cdef int t
    for i in prange(n, nogil=True, schedule="dynamic", num_threads=threads_for(n * nodes // 8)):
        paths = <step_t*> malloc(room * sizeof(step_t))
        phi = <double*> malloc((d + 1) * V * sizeof(double))
        if paths != NULL and phi != NULL:
            for t in range((d + 1) * V):
                phi[t] = 0.0
            _walk(&cols[0, 0], n, i, &feature[0], &bin[0], &missing_left[0], &cat[0, 0], &left[0], &right[0],
                  &value[0, 0],
                  V, &cover[0], coef, 0, paths, 0, 1.0, 1.0, -1, phi)
            for v in range(V):
                for t in range(d):
                    out[i, v, t] += phi[t * V + v]
                out[i, v, d] += coef * ev[v]
        free(paths)
        free(phi)
    return out
