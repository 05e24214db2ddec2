"""Euclidean projection onto the probability simplex, and the online agnostic booster's OCO chain.

Online agnostic multiclass boosting (Algorithm 1) keeps, for each example,
a distribution p over the k classes that N online gradient steps move, one
per weak learner: ``p^{i+1} = P(p^i - eta g_i)`` with the linear loss
``g_i = (2 e_{l_i} - 1) / gamma - (2 e_y - 1)`` of learner i's cached
prediction l_i. The chain depends only on the cached predictions, not on the
learners' updates, so one call computes all N + 1 distributions of an
example; the booster then updates the N learners with them.

The projection is the sort-based one: sort u decreasingly, rho = the largest
j with ``u_j - (sum_{r <= j} u_r - 1) / j > 0``, theta = ``(sum_{r <= rho}
u_r - 1) / rho``, output ``max(u - theta, 0)``. k is small (at most a few
dozen classes), so an insertion sort on a copy is the fastest sort.
"""
import numpy as np
cimport numpy as cnp

from _typedefs cimport idx_t, cls_t

cnp.import_array()


cdef void _project(const double* u, idx_t k, double* out, double* work) noexcept nogil:
    """out = the projection of u (length k) onto the simplex; work: k scratch doubles."""
    cdef idx_t i, j, rho = 1
    cdef double v, s = 0.0, theta, cum = 0.0
    for i in range(k):  # insertion sort, decreasing
        v = u[i]
        j = i
        while j > 0 and work[j - 1] < v:
            work[j] = work[j - 1]
            j -= 1
        work[j] = v
    theta = work[0] - 1.0
    for j in range(k):
        cum += work[j]
        s = (cum - 1.0) / (j + 1)
        if work[j] - s > 0:
            rho = j + 1
            theta = s
    for i in range(k):
        v = u[i] - theta
        out[i] = v if v > 0 else 0.0


def project(const double[::1] u, double[::1] out):
    """``out`` = the Euclidean projection of ``u`` onto ``{p >= 0, sum p = 1}``."""
    cdef idx_t k = u.shape[0]
    if out.shape[0] != k or k == 0:
        raise ValueError("u and out must have the same, positive length")
    work = np.empty(k)
    cdef double[::1] w = work
    _project(&u[0], k, &out[0], &w[0])


def project_rows(const double[:, ::1] U, double[:, ::1] out):
    """Each row of ``U`` projected onto the simplex (the booster's vote shares of many examples)."""
    cdef idx_t n = U.shape[0], k = U.shape[1], r
    if out.shape[0] != n or out.shape[1] != k or k == 0:
        raise ValueError("U and out must have the same shape, with k >= 1")
    work = np.empty(k)
    cdef double[::1] w = work
    for r in range(n):
        _project(&U[r, 0], k, &out[r, 0], &w[0])


def ogd_chain(const cls_t[::1] predicted, int y, double gamma, double eta, double[:, ::1] P, bint given_start=False):
    """The N + 1 distributions of one example: ``P[0]`` uniform, ``P[i+1] = proj(P[i] - eta g_i)``.

    Parameters
    ----------
    predicted : int32 array, shape (N,)
        The learners' cached predictions l_i (class indices ``0..k-1``).
    y : int
        The example's class.
    gamma, eta : float
        The advantage (``0 < gamma <= 1``) and the step (``gamma / sqrt(N)`` in Algorithm 1).
    P : float64 array, shape (N + 1, k)
        Written: row i is the distribution learner i is trained with.
    given_start : bool
        Keep the caller's ``P[0]`` (a distribution) as the chain's start instead of the uniform one.
    """
    cdef idx_t n = predicted.shape[0], k = P.shape[1], i, c
    cdef int l
    cdef double down = 2.0 * eta / gamma, up = 2.0 * eta
    if P.shape[0] != n + 1 or k < 1:
        raise ValueError("P must be (N + 1, k) with k >= 1")
    if not 0 <= y < k:
        raise ValueError(f"class {y} outside 0..{k - 1}")
    if not 0 < gamma <= 1:
        raise ValueError(f"gamma must be in (0, 1], got {gamma}")
    for i in range(n):
        if not 0 <= predicted[i] < k:
            raise ValueError(f"prediction {predicted[i]} of learner {i} outside 0..{k - 1}")
    work = np.empty(2 * k)
    cdef double[::1] w = work
    with nogil:
        if not given_start:
            for c in range(k):
                P[0, c] = 1.0 / k
        for i in range(n):
            l = predicted[i]
            # g = (2 e_l - 1)/gamma - (2 e_y - 1): its constant part shifts every coordinate
            # alike, which the projection ignores, so only -eta (2/gamma e_l - 2 e_y) moves p.
            for c in range(k):
                w[k + c] = P[i, c]
            w[k + l] -= down
            w[k + y] += up
            _project(&w[k], k, &P[i + 1, 0], &w[0])


cdef inline unsigned long long _mix(unsigned long long z) noexcept nogil:
    """SplitMix64's finaliser: a bijection of 64-bit words that scrambles every bit."""
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
    return z ^ (z >> 31)


def uniforms(unsigned long long seed, unsigned long long t, unsigned long long start, double[::1] out):
    """``out[i]`` = the uniform number in [0, 1) of (seed, stream position t, draw start + i).

    A counter-based generator (SplitMix64 of a key made from the seed and t),
    so any draw of any example is known without the ones before it: the
    same numbers whatever the blocks, the ranks or the order of computation.
    """
    cdef unsigned long long key = _mix(_mix(seed + 0x9E3779B97F4A7C15ULL) ^ (t * 0xD1B54A32D192ED03ULL))
    cdef Py_ssize_t i
    for i in range(out.shape[0]):
        out[i] = (_mix(key + (start + <unsigned long long> i + 1) * 0x9E3779B97F4A7C15ULL) >> 11) * (1.0 / 9007199254740992.0)


def vote_distribution(const cls_t[::1] labels, double gamma, double[::1] out):
    """``out`` = the projection of the vote counts of ``labels`` (classes 0 .. k-1) divided by gamma N.

    The online booster's D: one call for the count, the scaling and the projection.
    """
    cdef idx_t k = out.shape[0], N = labels.shape[0], i
    if k == 0 or N == 0 or not gamma > 0:
        raise ValueError("need k >= 1 classes, N >= 1 labels and gamma > 0")
    counts = np.zeros(2 * k)
    cdef double[::1] c = counts
    cdef double scale = gamma * N
    for i in range(N):
        if not 0 <= labels[i] < k:
            raise ValueError(f"label {labels[i]} outside 0..{k - 1}")
        c[labels[i]] += 1.0
    for i in range(k):
        c[i] /= scale  # a division, as votes / (gamma N) is written
    _project(&c[0], k, &out[0], &c[k])


def draw_index(const double[::1] D, double u):
    """The class drawn from the distribution ``D`` by the uniform ``u``: the number of CDF values <= u * total."""
    cdef idx_t k = D.shape[0], i, n = 0
    cdef double cum = 0.0, total = 0.0, cut
    for i in range(k):
        total += D[i]
    cut = u * total
    for i in range(k):
        cum += D[i]
        if cum <= cut:
            n += 1
    return n if n < k else k - 1
