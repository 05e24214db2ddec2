"""Multinomial logistic regression kernels for the domain classifier Q(k|x).

Per-row arithmetic is in a fixed order (no BLAS), so a row's probabilities
are the same bits on every rank; the loss and gradient sums are exact int64
fixed-point sums of per-row terms, so they do not depend on the split either.
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.math cimport exp, log, fabs, ldexp, isnan

from _superacc cimport mb_get_max_threads, threads_for
from _typedefs cimport idx_t, fixed_t

cnp.import_array()

cdef extern from "_fixedpoint.h":
    fixed_t mb_round_fixed(double v) noexcept nogil
    fixed_t mb_fixed_dot(const double* a, const double* b, idx_t n) noexcept nogil
    fixed_t mb_fixed_sum(const double* a, idx_t n) noexcept nogil
    void mb_axpy(double* y, double a, const double* x, idx_t n) noexcept nogil
    void mb_axpy4(double* y, const double* a, const double* x, idx_t stride, idx_t n) noexcept nogil

cdef enum:
    MAX_CLASSES = 64
    # Rows per block of the loss/gradient pass: a block's logits, residuals and
    # dense feature slices stay in the L1/L2 cache between the two sweeps.
    BLOCK = 256

# -log(1e-300): the per-row loss is capped here, which bounds every loss term.
LOSS_CAP = 690.7755278982137
cdef double _LOSS_CAP = LOSS_CAP

ctypedef fused real_t:
    float
    double


cdef inline void _row_proba(const double* x, idx_t d, const double* W, idx_t p, double* prob) noexcept nogil:
    # W is (d + 1, p): rows 0..d-1 weights, row d the bias. Softmax with the max subtracted.
    cdef idx_t j, k
    cdef double z, zmax = -1e308, s = 0.0, v
    for k in range(p):
        z = W[d * p + k]
        for j in range(d):
            v = x[j]
            if not isnan(v):
                z = z + v * W[j * p + k]
        prob[k] = z
        if z > zmax:
            zmax = z
    for k in range(p):
        prob[k] = exp(prob[k] - zmax)
        s = s + prob[k]
    for k in range(p):
        prob[k] = prob[k] / s


def proba(const double[:, ::1] X, const double[:, ::1] W, double[:, ::1] out):
    """``out[i] = softmax(x_i . W[:d] + W[d])`` for standardized rows X (NaN counts as 0)."""
    cdef idx_t n = X.shape[0], d = X.shape[1], p = W.shape[1], i
    if W.shape[0] != d + 1 or out.shape[0] != n or out.shape[1] != p:
        raise ValueError("shape mismatch")
    if p > MAX_CLASSES:
        raise ValueError(f"at most {MAX_CLASSES} domains")
    if n == 0:
        return
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        _row_proba(&X[i, 0] if d else NULL, d, &W[0, 0], p, &out[i, 0])


# ------------------------------------------------------------ loss and gradient
cdef struct _Layout:
    idx_t n, d, nd, p
    const double* dense  # (nd, n): standardized dense features, column by column
    const cnp.int64_t* indptr  # (n + 1,): CSR of the sparse features
    const int* indices
    const double* values
    const int* label


cdef void _logits(const _Layout* s, const double* Wd, const double* W, const double* b0,
                  idx_t i0, idx_t nb, double* L) noexcept nogil:
    """Logits of rows i0 .. i0 + nb - 1 into L, (p, BLOCK), row-minor.

    Per row in a fixed order: bias, dense features by index, sparse entries by
    index. Rows never mix, so a row's logits are the same bits wherever the row
    sits (block, thread, rank).
    """
    cdef idx_t p = s.p, n = s.n, k, jj, i, e
    cdef double u
    cdef double w4[4]
    cdef double* Lk
    for k in range(p):
        Lk = L + k * BLOCK
        for i in range(nb):
            Lk[i] = b0[k]
    for k in range(p):
        jj = 0
        while jj + 4 <= s.nd:
            w4[0], w4[1], w4[2], w4[3] = Wd[jj * p + k], Wd[(jj + 1) * p + k], Wd[(jj + 2) * p + k], Wd[(jj + 3) * p + k]
            mb_axpy4(L + k * BLOCK, w4, s.dense + jj * n + i0, n, nb)
            jj = jj + 4
        while jj < s.nd:
            mb_axpy(L + k * BLOCK, Wd[jj * p + k], s.dense + jj * n + i0, nb)
            jj = jj + 1
    if s.indptr != NULL:
        for i in range(nb):
            for e in range(s.indptr[i0 + i], s.indptr[i0 + i + 1]):
                u = s.values[e]
                for k in range(p):
                    L[k * BLOCK + i] = L[k * BLOCK + i] + u * W[s.indices[e] * p + k]


cdef void _block(const _Layout* s, const double* Wd, const double* W, const double* b0, double scale,
                 idx_t i0, idx_t nb, fixed_t* a, double* L, double* R) noexcept nogil:
    """Add the loss and gradient terms of rows i0 .. i0 + nb - 1 to ``a``.

    L and R are (p, BLOCK) scratch: logits, then scaled residuals, row-minor so
    that every sweep over a feature runs over contiguous rows.
    """
    cdef idx_t p = s.p, n = s.n, k, jj, i, e
    cdef int y
    cdef double zmax, t, tot, u
    cdef const double* z
    _logits(s, Wd, W, b0, i0, nb, L)
    # Softmax; loss -log p_y = log sum_k exp(z_k - zmax) - (z_y - zmax), capped
    # like -log max(p_y, 1e-300); residuals p_k - [k == y] times 2^shift (exact).
    for i in range(nb):
        y = s.label[i0 + i]
        zmax = L[i]
        for k in range(1, p):
            if L[k * BLOCK + i] > zmax:
                zmax = L[k * BLOCK + i]
        tot = 0.0
        for k in range(p):
            t = exp(L[k * BLOCK + i] - zmax)
            R[k * BLOCK + i] = t
            tot = tot + t
        t = log(tot) - (L[y * BLOCK + i] - zmax)
        a[(s.d + 1) * p] += mb_round_fixed((t if t < _LOSS_CAP else _LOSS_CAP) * scale)
        for k in range(p):
            R[k * BLOCK + i] = (R[k * BLOCK + i] / tot - (1.0 if k == y else 0.0)) * scale
    # Gradient: one exact integer dot product per (dense feature, class), one
    # scatter of p terms per sparse entry, one sum per class for the bias.
    for jj in range(s.nd):
        z = s.dense + jj * n + i0
        for k in range(p):
            a[jj * p + k] += mb_fixed_dot(z, R + k * BLOCK, nb)
    if s.indptr != NULL:
        for i in range(nb):
            for e in range(s.indptr[i0 + i], s.indptr[i0 + i + 1]):
                u = s.values[e]
                for k in range(p):
                    a[(s.nd + s.indices[e]) * p + k] += mb_round_fixed(u * R[k * BLOCK + i])
    for k in range(p):
        a[s.d * p + k] += mb_fixed_sum(R + k * BLOCK, nb)


def _layout_rows(const real_t[:, ::1] X, const double[::1] mean, const double[::1] inv_scale,
                 const cnp.npy_bool[::1] sparse, double[:, ::1] dense, cnp.int64_t[::1] indptr):
    """Fill ``dense`` (column by column) and count each row's sparse entries into ``indptr``."""
    cdef idx_t n = X.shape[0], d = X.shape[1], i, j, jj, c
    cdef double v
    for i in range(n):
        jj = 0
        c = 0
        for j in range(d):
            v = X[i, j]
            if sparse[j]:
                if v != 0:  # NaN too: it stands for the mean, not for 0
                    c += 1
            else:
                v = (v - mean[j]) * inv_scale[j]
                dense[jj, i] = 0.0 if isnan(v) else v
                jj += 1
        indptr[i + 1] = indptr[i] + c


def _fill_sparse(const real_t[:, ::1] X, const double[::1] mean, const double[::1] inv_scale,
                 const idx_t[::1] sparse_features, const cnp.int64_t[::1] indptr,
                 int[::1] indices, double[::1] values):
    """Fill the CSR entries counted by :func:`_layout_rows`, in feature order within a row."""
    cdef idx_t n = X.shape[0], m = sparse_features.shape[0], i, jj, e
    cdef double v
    for i in range(n):
        e = indptr[i]
        for jj in range(m):
            v = X[i, sparse_features[jj]]
            if v != 0:
                indices[e] = <int>jj
                values[e] = mean[sparse_features[jj]] * inv_scale[sparse_features[jj]] if isnan(v) else v * inv_scale[sparse_features[jj]]
                e += 1


cdef class Rows:
    """One rank's rows of the domain classifier, laid out for many ``loss_grad`` calls.

    Each feature is either *dense* or *sparse*, by the caller's ``sparse``
    mask, which must be the same on every rank. A dense feature is kept as its
    standardized values ``z = (x - mean) * inv_scale`` (NaN as 0), column by
    column. A sparse feature keeps only its rows with ``x != 0``, as
    ``u = x * inv_scale`` (NaN as ``mean * inv_scale``, so that ``z = 0``): the
    standardized value is ``z = u - center`` with ``center = mean * inv_scale``,
    and the zeros, whose ``z = -center`` is the same for every row, enter the
    logits through the bias and the gradient through :func:`standardized_gradient`.

    Parameters
    ----------
    X : ndarray of float32 or float64, shape (n, d)
        Raw rows, C-contiguous.
    mean, inv_scale : ndarray of float64, shape (d,)
        Global column means and inverse standard deviations.
    sparse : ndarray of bool, shape (d,)
        Features to keep sparse. Their ``|center|`` should be small (it is at
        most ``sqrt(1 / f)`` for a feature whose rows are zero with frequency
        ``f``): the standardized gradient is a difference of sums scaled by it.
    label : ndarray of int32, shape (n,)
        Domain of every row, in ``0 .. p - 1``.

    Attributes
    ----------
    n, d : int
        Rows and features.
    n_dense, nnz : int
        Dense features, and stored entries of the sparse ones.
    bound : float
        Largest ``|z|`` of a dense feature and ``|u|`` of a sparse entry (0 if none).
    center : ndarray of float64, shape (d,)
        ``mean * inv_scale`` for sparse features, 0 for dense ones.
    """

    cdef readonly idx_t n, d, n_dense, nnz
    cdef readonly double bound
    cdef readonly object center, sparse, label
    cdef cnp.ndarray _dense, _dense_features, _sparse_features, _indptr, _indices, _values
    cdef int _label_max

    def __init__(self, X, mean, inv_scale, sparse, label):
        X = np.asarray(X)
        if X.dtype != np.float32:
            X = np.ascontiguousarray(X, dtype=np.float64)
        else:
            X = np.ascontiguousarray(X)
        if X.ndim != 2:
            raise ValueError("X must be 2-d")
        n, d = X.shape
        mean = np.ascontiguousarray(mean, dtype=np.float64)
        inv_scale = np.ascontiguousarray(inv_scale, dtype=np.float64)
        sparse = np.ascontiguousarray(sparse, dtype=np.bool_)
        label = np.ascontiguousarray(label, dtype=np.int32)
        if mean.shape != (d,) or inv_scale.shape != (d,) or sparse.shape != (d,) or label.shape != (n,):
            raise ValueError("shape mismatch")
        if n and label.min() < 0:
            raise ValueError("negative domain label")
        self.n, self.d = n, d
        self.label = label
        self._label_max = int(label.max()) if n else -1
        self.sparse = sparse
        self._dense_features = np.flatnonzero(~sparse).astype(np.intp)
        self._sparse_features = np.flatnonzero(sparse).astype(np.intp)
        self.n_dense = self._dense_features.shape[0]
        self.center = np.where(sparse, mean * inv_scale, 0.0)
        self._dense = np.empty((self.n_dense, n))
        self._indptr = np.zeros(n + 1, dtype=np.int64)
        _layout_rows(X, mean, inv_scale, sparse, self._dense, self._indptr)
        self.nnz = int(self._indptr[n])
        self._indices = np.empty(self.nnz, dtype=np.int32)
        self._values = np.empty(self.nnz)
        if self._sparse_features.shape[0]:
            _fill_sparse(X, mean, inv_scale, self._sparse_features, self._indptr, self._indices, self._values)
        self.bound = max(float(np.abs(self._dense).max()) if self._dense.size else 0.0,
                         float(np.abs(self._values).max()) if self.nnz else 0.0)

    def loss_grad(self, const double[:, ::1] W, int shift):
        """Fixed-point sums over this rank's rows of the log-loss and its gradient.

        Every per-row term is rounded to an integer number of units ``2**-shift``
        on its own, so the sums are the same integers for any split of the rows.
        The caller picks ``shift`` from global quantities so that every term
        stays below ``2**51`` in size (``max(bound, LOSS_CAP) * 2**shift <
        2**51``, checked) and every sum over the ``N`` global rows fits an int64
        (``N * max(bound, LOSS_CAP) * 2**shift <= 2**61``; see
        :func:`mpiboost.domain_classifier.fixed_point_shift`).

        Parameters
        ----------
        W : ndarray of float64, shape (d + 1, p)
            Weights of the standardized features, then the bias. Finite.
        shift : int
            Fixed-point unit ``2**-shift``.

        Returns
        -------
        loss : int
            ``sum_i -log p_i[label_i]``, each term capped at ``LOSS_CAP``.
        grad : ndarray of int64, shape (d + 1, p)
            Row ``j < d``: ``sum_i z_ij r_ik`` for a dense feature j, ``sum_i u_ij
            r_ik`` over its stored entries for a sparse one (see
            :func:`standardized_gradient`); row d: ``sum_i r_ik``; with
            ``r_ik = p_ik - [label_i == k]``.
        """
        cdef idx_t n = self.n, d = self.d, p = W.shape[1], nd = self.n_dense, t, nt, lo, hi, i0
        cdef double scale = ldexp(1.0, shift)
        b0_, Wd_, Ws_ = self._weights(W)
        if max(self.bound, LOSS_CAP) * scale >= 2.0 ** 51:
            raise ValueError(f"shift {shift} too large for terms up to {max(self.bound, LOSS_CAP)}")
        cdef const double* b0 = <const double*> cnp.PyArray_DATA(b0_)
        cdef const double* wd = <const double*> cnp.PyArray_DATA(Wd_)
        cdef const double* ws = <const double*> cnp.PyArray_DATA(Ws_)
        cdef _Layout s = self._layout(p)
        nt = max(1, min(mb_get_max_threads(), n // 4096))
        # Per thread: [dense features' terms, sparse features' terms, bias, loss],
        # padded so that threads never share a cache line.
        width = (d + 1) * p + 1
        acc = np.zeros((nt, width + 8), dtype=np.int64)
        cdef fixed_t[:, ::1] A = acc
        scratch = np.empty((nt, 2 * p * BLOCK + 8))
        cdef double[:, ::1] S = scratch
        if n:
            for t in prange(nt, nogil=True, schedule="static", num_threads=nt):
                lo = t * n // nt
                hi = (t + 1) * n // nt
                i0 = lo
                while i0 < hi:
                    _block(&s, wd, ws, b0, scale, i0, min(BLOCK, hi - i0), &A[t, 0], &S[t, 0], &S[t, p * BLOCK])
                    i0 = i0 + BLOCK
        total = acc[:, :width].sum(axis=0)
        # back from [dense, sparse] order to feature order
        grad = np.empty((d + 1, p), dtype=np.int64)
        grad[self._dense_features] = total[: nd * p].reshape(nd, p)
        grad[self._sparse_features] = total[nd * p : d * p].reshape(d - nd, p)
        grad[d] = total[d * p : (d + 1) * p]
        return int(total[(d + 1) * p]), grad

    def count_correct(self, const double[:, ::1] W):
        """Rows whose largest logit (the first of equal ones) is their label's.

        Parameters
        ----------
        W : ndarray of float64, shape (d + 1, p)

        Returns
        -------
        int
        """
        cdef idx_t n = self.n, p = W.shape[1], i0, i, k, best, right = 0
        b0_, Wd_, Ws_ = self._weights(W)
        cdef const double* b0 = <const double*> cnp.PyArray_DATA(b0_)
        cdef const double* wd = <const double*> cnp.PyArray_DATA(Wd_)
        cdef const double* ws = <const double*> cnp.PyArray_DATA(Ws_)
        cdef _Layout s = self._layout(p)
        scratch = np.empty(p * BLOCK)
        cdef double* L = <double*> cnp.PyArray_DATA(scratch)
        with nogil:
            i0 = 0
            while i0 < n:
                _logits(&s, wd, ws, b0, i0, min(BLOCK, n - i0), L)
                for i in range(min(BLOCK, n - i0)):
                    best = 0
                    for k in range(1, p):
                        if L[k * BLOCK + i] > L[best * BLOCK + i]:
                            best = k
                    if best == s.label[i0 + i]:
                        right += 1
                i0 += BLOCK
        return int(right)

    def _weights(self, W):
        """Check ``W``; split it into the bias of the kernels, dense rows and sparse rows."""
        cdef idx_t d = self.d, p, j, k
        W = np.asarray(W)
        if W.ndim != 2 or W.shape[0] != d + 1:
            raise ValueError("shape mismatch")
        p = W.shape[1]
        if p > MAX_CLASSES:
            raise ValueError(f"at most {MAX_CLASSES} domains")
        if self._label_max >= p:
            raise ValueError(f"domain label {self._label_max} with {p} domains")
        if not np.isfinite(W).all():
            raise ValueError("weights must be finite")
        # Sparse features enter with u = z + center: their center's share of
        # the logits moves into the bias once, not into every row (in a fixed
        # order, not by BLAS, so that every rank gets the same bits).
        b0 = np.array(W[d], dtype=np.float64)
        cdef double[::1] b = b0
        cdef const double[:, ::1] Wv = np.ascontiguousarray(W, dtype=np.float64)
        cdef const double[::1] cen = self.center
        cdef const idx_t[::1] sf = self._sparse_features
        for j in range(sf.shape[0]):
            for k in range(p):
                b[k] = b[k] - cen[sf[j]] * Wv[sf[j], k]
        Wd = np.ascontiguousarray(W[self._dense_features], dtype=np.float64)
        Ws = np.ascontiguousarray(W[self._sparse_features], dtype=np.float64)
        return b0, Wd, Ws

    cdef _Layout _layout(self, idx_t p):
        cdef _Layout s
        s.n, s.d, s.nd, s.p = self.n, self.d, self.n_dense, p
        s.dense = <const double*> cnp.PyArray_DATA(self._dense)
        s.indptr = <const cnp.int64_t*> cnp.PyArray_DATA(self._indptr) if self.nnz else NULL
        s.indices = <const int*> cnp.PyArray_DATA(self._indices)
        s.values = <const double*> cnp.PyArray_DATA(self._values)
        s.label = <const int*> cnp.PyArray_DATA(self.label)
        return s


def standardized_gradient(grad, center):
    """The gradient in standardized features from :meth:`Rows.loss_grad`'s sums.

    A sparse feature's sum runs over its stored entries in ``u = z + center``;
    ``sum_i z_ij r_ik = sum_i u_ij r_ik - center_j sum_i r_ik`` over all rows,
    and ``sum_i r_ik`` is the bias row. Apply it to the *global* sums (in any
    unit): the result is then the same floats on every rank and for any split.

    Parameters
    ----------
    grad : ndarray, shape (d + 1, p)
        Global sums (integers or already scaled floats).
    center : ndarray of float64, shape (d,)
        :attr:`Rows.center`.

    Returns
    -------
    ndarray of float64, shape (d + 1, p)
    """
    g = np.asarray(grad, dtype=np.float64).copy()
    d = g.shape[0] - 1
    g[:d] -= np.asarray(center, dtype=np.float64)[:, None] * g[d]
    return g


def loss_grad(X, label, const double[:, ::1] W, int shift):
    """Fixed-point sums over rows of the log-loss and of its gradient.

    For rows ``X`` that are already standardized, all features dense: a
    shorthand for ``Rows(X, 0, 1, no sparse feature, label).loss_grad(W, shift)``.

    Returns ``(loss, grad)``: int64 scalar and (d + 1, p) int64 array, in units
    of ``2**-shift``: loss = sum_i -log p_i[label_i] (capped at ``LOSS_CAP``),
    grad[j, k] = sum_i x_ij (p_ik - [label_i == k]) (x_i,d = 1 for the bias,
    NaN counts as 0). Each row's term is rounded on its own, so the integer
    sums are the same for any split of the rows.
    """
    X = np.asarray(X)
    d = X.shape[1]
    rows = Rows(X, np.zeros(d), np.ones(d), np.zeros(d, dtype=np.bool_), label)
    return rows.loss_grad(W, shift)


def standardize(const double[:, ::1] X, const double[::1] mean, const double[::1] inv_scale, double[:, ::1] out):
    """``out = (X - mean) * inv_scale``; NaN stays NaN (counted as 0 by the model)."""
    cdef idx_t n = X.shape[0], d = X.shape[1], i, j
    if out.shape[0] != n or out.shape[1] != d or mean.shape[0] != d or inv_scale.shape[0] != d:
        raise ValueError("shape mismatch")
    if n == 0:
        return
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        for j in range(d):
            out[i, j] = (X[i, j] - mean[j]) * inv_scale[j]
