"""Histograms of packed integer gradients: one int64 word per row and class, one add per slot.

With quantized gradients (``--grad-bins B``) a row's class k holds a small integer gradient ``g``,
hessian ``h`` and the count 1. They are packed into one signed 64-bit word

    word = g * 2**(wh + wc) + h * 2**wc + 1

with field widths chosen for a node of at most ``n`` rows (:func:`word_fields`): every partial sum
of words (over rows, threads and ranks, in any order) is then the word of the partial sums, so a
histogram of words is an ordinary int64 histogram (8 bytes and one add per row and feature, against
24 bytes and three adds for the three int64 channels), exact, and :func:`unpack` reads the three
sums back. A node too large for the fields takes the three-channel kernels (``_tree.node_histogram``).

Building: the node's words are gathered into a contiguous buffer in row order (LightGBM's ordered
gradients), then each feature's bins are read in that order into a dense (feature, 256) histogram
(bin 255: missing), four features per pass so their updates overlap; 0/1 columns are masked sums.
Threads take row chunks into their own histograms (summed at the end), or, for smaller nodes,
features.
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.stdint cimport int64_t
from libc.string cimport memset

from _prefetch cimport mb_prefetch
from _superacc cimport mb_get_max_threads
from _typedefs cimport bin_t, idx_t, MISSING_BIN

cnp.import_array()

cdef enum:
    PREFETCH = 16  # rows ahead: a scattered node's next bins are requested while this row is added
    BLOCK = 4096  # rows per block: their words (32 KiB) stay in L1/L2 while every feature is read


def word_fields(n, g_max, h_max):
    """``(wh, wc)``: the hessian and count field widths of words summing at most ``n`` rows with
    ``|g| <= g_max`` and ``0 <= h <= h_max``, or None where the three sums do not fit in one int64."""
    n, g_max, h_max = max(int(n), 1), int(g_max), int(h_max)
    wc = n.bit_length()              # count: 0 .. n < 2**wc
    wh = (n * h_max).bit_length()    # hessian sum: 0 .. n h_max < 2**wh
    if wc + wh >= 63:
        return None
    # the gradient sum G rides in the top bits: |G| <= 2**(63 - wh - wc) - 1 keeps
    # G * 2**(wh + wc) + (the low fields, below 2**(wh + wc)) inside int64
    if n * g_max >= 1 << (63 - wh - wc):
        return None
    return wh, wc


def largest_fitting(g_max, h_max):
    """The most rows whose words fit :func:`word_fields` (a node of more takes the three-channel path)."""
    lo, hi = 0, 1 << 62
    while lo < hi:  # word_fields holds for every n up to some bound: bisect it
        mid = (lo + hi + 1) // 2
        if word_fields(mid, g_max, h_max) is not None:
            lo = mid
        else:
            hi = mid - 1
    return lo


def pack(const int64_t[:, ::1] q, int K, int wh, int wc, int64_t[:, ::1] words):
    """``words[i, k] = g * 2**(wh + wc) + h * 2**wc + count`` of the channels ``q[i] = (g_1..g_K, h_1..h_K,
    count)``; the caller has checked the fields (:func:`word_fields`)."""
    cdef idx_t n = q.shape[0], i, k
    if q.shape[1] != 2 * K + 1 or words.shape[0] != n or words.shape[1] != K:
        raise ValueError("shape mismatch")
    with nogil:
        for i in range(n):
            for k in range(K):
                # a left shift of a negative integer is undefined in C: multiply instead
                words[i, k] = q[i, k] * ((<int64_t> 1) << (wh + wc)) + (q[i, K + k] << wc) + q[i, 2 * K]
    return words


def unpack(const int64_t[:, ::1] dense, const long long[::1] off, int K, int wh, int wc, int64_t[:, ::1] out):
    """The channels ``(G_1..G_K, H_1..H_K, N)`` (P, 2K+1) in packed-offset layout (``off``; each feature's
    missing slot last) of a dense word histogram ``dense`` (d * 256, K)."""
    cdef idx_t d = off.shape[0] - 1, j, b, nb, s, k
    cdef int64_t w, low, mh = ((<int64_t> 1) << wh) - 1, mc = ((<int64_t> 1) << wc) - 1
    if dense.shape[0] != d * 256 or dense.shape[1] != K or out.shape[0] != off[d] or out.shape[1] != 2 * K + 1:
        raise ValueError("shape mismatch")
    with nogil:
        for j in range(d):
            nb = off[j + 1] - off[j] - 1
            for b in range(nb + 1):
                s = j * 256 + (b if b < nb else MISSING_BIN)
                for k in range(K):
                    w = dense[s, k]
                    low = w & (((<int64_t> 1) << (wh + wc)) - 1)
                    out[off[j] + b, k] = (w - low) >> (wh + wc)  # exact: w - low is a multiple of 2**(wh+wc)
                    out[off[j] + b, K + k] = (low >> wc) & mh
                    if k == 0:
                        out[off[j] + b, 2 * K] = low & mc
    return out


cdef void _gather(const int64_t* words, idx_t K, const idx_t* rows, bint identity, idx_t lo, idx_t hi,
                  int64_t* buf) noexcept nogil:
    """The words of rows ``rows[lo:hi]`` (or ``lo .. hi-1``) in that order."""
    cdef idx_t r, k, i
    for r in range(lo, hi):
        i = r if identity else rows[r]
        for k in range(K):
            buf[(r - lo) * K + k] = words[i * K + k]


cdef void _four(const bin_t* XT, idx_t n_all, const int64_t* buf, const idx_t* rows, bint identity, idx_t lo,
               idx_t hi, int64_t* h, idx_t j0, idx_t j1, idx_t j2, idx_t j3) noexcept nogil:
    """Four features in one pass over the rows: one word load feeds four independent updates. Scalar
    locals, not arrays of pointers: Python extensions build with -fno-strict-aliasing, so a pointer kept
    in memory would be reloaded after every store."""
    cdef const bin_t* c0 = XT + j0 * n_all
    cdef const bin_t* c1 = XT + j1 * n_all
    cdef const bin_t* c2 = XT + j2 * n_all
    cdef const bin_t* c3 = XT + j3 * n_all
    cdef int64_t* t0 = h + j0 * 256
    cdef int64_t* t1 = h + j1 * 256
    cdef int64_t* t2 = h + j2 * 256
    cdef int64_t* t3 = h + j3 * 256
    cdef int64_t w
    cdef idx_t r, i, k
    if identity:
        for r in range(lo, hi):
            w = buf[r - lo]
            t0[c0[r]] += w
            t1[c1[r]] += w
            t2[c2[r]] += w
            t3[c3[r]] += w
    else:
        for r in range(lo, hi):
            i = rows[r]
            if r + PREFETCH < hi:
                k = rows[r + PREFETCH]
                mb_prefetch(c0 + k)
                mb_prefetch(c1 + k)
                mb_prefetch(c2 + k)
                mb_prefetch(c3 + k)
            w = buf[r - lo]
            t0[c0[i]] += w
            t1[c1[i]] += w
            t2[c2[i]] += w
            t3[c3[i]] += w


cdef void _cols1(const bin_t* XT, idx_t n_all, const int64_t* buf, const idx_t* rows, bint identity, idx_t lo,
                 idx_t hi, int64_t* h, const idx_t* feats, idx_t nf, const unsigned char* binary) noexcept nogil:
    """K = 1: rows [lo, hi) (their words ``buf[0 .. hi-lo)``) of features ``feats[:nf]`` into the dense
    histogram ``h`` (d x 256): general features four at a time, 0/1 ones as masked sums."""
    cdef idx_t q = 0, r, i, k, j, ng = 0
    cdef const bin_t* c
    cdef int64_t* t
    cdef int64_t tot = 0, ones
    cdef idx_t gen[4]
    for r in range(hi - lo):
        tot += buf[r]
    while q < nf:
        j = feats[q]
        q += 1
        if binary[j]:
            ones = 0
            c = XT + j * n_all
            if identity:
                for r in range(lo, hi):
                    ones += buf[r - lo] & (-(<int64_t> c[r]))
            else:
                for r in range(lo, hi):
                    ones += buf[r - lo] & (-(<int64_t> c[rows[r]]))
            h[j * 256 + 1] += ones
            h[j * 256] += tot - ones
            continue
        gen[ng] = j
        ng += 1
        if ng == 4:
            _four(XT, n_all, buf, rows, identity, lo, hi, h, gen[0], gen[1], gen[2], gen[3])
            ng = 0
    for k in range(ng):
        c = XT + gen[k] * n_all
        t = h + gen[k] * 256
        for r in range(lo, hi):
            i = r if identity else rows[r]
            t[c[i]] += buf[r - lo]


cdef void _colsK(const bin_t* XT, idx_t n_all, const int64_t* buf, idx_t K, const idx_t* rows, bint identity,
                 idx_t lo, idx_t hi, int64_t* h, const idx_t* feats, idx_t nf) noexcept nogil:
    """K words per row: rows [lo, hi) of features ``feats[:nf]`` into ``h`` (d x 256 x K)."""
    cdef idx_t q, r, i, k, j
    cdef const bin_t* c
    cdef int64_t* t
    cdef const int64_t* w
    for q in range(nf):
        j = feats[q]
        c = XT + j * n_all
        for r in range(lo, hi):
            i = r if identity else rows[r]
            t = h + (j * 256 + c[i]) * K
            w = buf + (r - lo) * K
            for k in range(K):
                t[k] += w[k]


cdef void _rowsK(const bin_t* XR, idx_t d, const int64_t* buf, idx_t K, const idx_t* rows, idx_t lo, idx_t hi,
                 int64_t* h, idx_t j0, idx_t j1) noexcept nogil:
    """Row-major bins ``XR`` (n x d), features j0 .. j1-1: one cache line per scattered row."""
    cdef idx_t r, i, j, k
    cdef const bin_t* row
    cdef const int64_t* w
    cdef int64_t* t
    cdef int64_t w0
    for r in range(lo, hi):
        i = rows[r]
        row = XR + i * d
        if r + PREFETCH < hi:
            mb_prefetch(XR + rows[r + PREFETCH] * d)
            mb_prefetch(XR + rows[r + PREFETCH] * d + d - 1)  # a row may straddle two cache lines
        w = buf + (r - lo) * K
        if K == 1:
            w0 = w[0]
            for j in range(j0, j1):
                h[j * 256 + row[j]] += w0
        else:
            for j in range(j0, j1):
                t = h + (j * 256 + row[j]) * K
                for k in range(K):
                    t[k] += w[k]


cdef void _build(const bin_t* XT, idx_t n_all, const int64_t* buf, idx_t K, const idx_t* rows, bint identity,
                 idx_t lo, idx_t hi, int64_t* h, const idx_t* feats, idx_t nf,
                 const unsigned char* binary) noexcept nogil:
    """Rows [lo, hi) in blocks of :data:`BLOCK` (a block's words stay in cache across the features)."""
    cdef idx_t b0 = lo, b1
    while b0 < hi:
        b1 = min(hi, b0 + BLOCK)
        if K == 1:
            _cols1(XT, n_all, buf + (b0 - lo), rows, identity, b0, b1, h, feats, nf, binary)
        else:
            _colsK(XT, n_all, buf + (b0 - lo) * K, K, rows, identity, b0, b1, h, feats, nf)
        b0 = b1


cdef void _row_chunks(const bin_t* XR, idx_t d, const int64_t* buf, idx_t K, const idx_t* rows, idx_t lo, idx_t hi,
                      int64_t[:, ::1] L, idx_t nt) noexcept nogil:
    cdef idx_t t, n = hi - lo, a, b
    for t in prange(nt, schedule="static", num_threads=nt):
        a = lo + t * n // nt
        b = lo + (t + 1) * n // nt
        _rowsK(XR, d, buf + (a - lo) * K, K, rows, a, b, &L[t, 0], 0, d)


def node_histogram(const bin_t[:, ::1] XT, const int64_t[:, ::1] words, const idx_t[::1] rows, idx_t lo, idx_t hi,
                   int64_t[:, ::1] dense, bint identity=False, binary=None, const bin_t[:, ::1] XR=None,
                   int64_t[::1] buf=None):
    """``dense[j * 256 + b, k] = sum of words[i, k]`` over the rows ``i = rows[lo:hi]`` (``lo .. hi-1`` with
    ``identity``) whose bin of feature j is b (255: missing); every slot is overwritten.

    ``binary``: a flag per feature whose column holds bins 0 and 1 only (masked sums). ``XR``: the
    row-major bins (n, d), read instead of ``XT`` for a scattered node (one cache line per row).
    ``buf``: scratch of at least ``(hi - lo) * K`` words (the node's words in order).
    Integer sums: the same for any thread count and either layout.
    """
    cdef idx_t d = XT.shape[0], n_all = XT.shape[1], K = words.shape[1], n = hi - lo, t, nt, s, j, nf
    cdef int64_t[:, ::1] Lr
    if dense.shape[0] != d * 256 or dense.shape[1] != K or words.shape[0] != n_all:
        raise ValueError("shape mismatch")
    if not 0 <= lo <= hi or (not identity and hi > rows.shape[0]) or (identity and hi > n_all):
        raise ValueError("row range out of bounds")
    if XR is not None and (XR.shape[0] != n_all or XR.shape[1] != d):
        raise ValueError("XR must be the row-major bins (n, d)")
    flags = np.zeros(d, dtype=np.uint8) if binary is None else np.ascontiguousarray(binary, dtype=np.uint8)
    if flags.shape[0] != d:
        raise ValueError("binary flags: one per feature")
    cdef const unsigned char[::1] bf = flags if d else np.zeros(1, dtype=np.uint8)
    if buf is None or buf.shape[0] < n * K:
        buf = np.empty(max(1, n * K), dtype=np.int64)
    feats_np = np.arange(max(d, 1), dtype=np.intp)
    cdef const idx_t[::1] fs = feats_np
    cdef int64_t* H = &dense[0, 0]
    cdef const idx_t* rp = &rows[0] if rows.shape[0] else NULL
    with nogil:
        memset(H, 0, d * 256 * K * sizeof(int64_t))
    if n == 0 or d == 0:
        return
    with nogil:
        _gather(&words[0, 0], K, rp, identity, lo, hi, &buf[0])
    nt = max(1, min(mb_get_max_threads(), n // (4096 if XR is not None and not identity else 16384)))
    nf = min(mb_get_max_threads(), d)
    if XR is not None and not identity:
        # threads take row chunks (each row's cache line is read once, by one thread)
        if nt == 1:
            with nogil:
                _rowsK(&XR[0, 0], d, &buf[0], K, rp, lo, hi, H, 0, d)
            return
        local_r = np.zeros((nt, d * 256 * K), dtype=np.int64)
        Lr = local_r
        _row_chunks(&XR[0, 0], d, &buf[0], K, rp, lo, hi, Lr, nt)
        with nogil:
            for t in range(nt):
                for s in range(d * 256 * K):
                    H[s] += Lr[t, s]
        return
    if nt == 1 and nf > 1 and n >= 256:
        # few rows: each thread owns some features' slots (the node's words stay in cache for all)
        for t in prange(nf, nogil=True, schedule="static", num_threads=nf):
            _build(&XT[0, 0], n_all, &buf[0], K, rp, identity, lo, hi, H, &fs[t * d // nf],
                   (t + 1) * d // nf - t * d // nf, &bf[0])
        return
    if nt == 1:
        with nogil:
            _build(&XT[0, 0], n_all, &buf[0], K, rp, identity, lo, hi, H, &fs[0], d, &bf[0])
        return
    local = np.zeros((nt, d * 256 * K), dtype=np.int64)
    cdef int64_t[:, ::1] L = local
    for t in prange(nt, nogil=True, schedule="static", num_threads=nt):
        _build(&XT[0, 0], n_all, &buf[(t * n // nt) * K], K, rp, identity, lo + t * n // nt, lo + (t + 1) * n // nt,
               &L[t, 0], &fs[0], d, &bf[0])
    with nogil:
        for t in range(nt):
            for s in range(d * 256 * K):
                H[s] += L[t, s]
