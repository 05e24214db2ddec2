# The packed-word histogram kernels of quantized-gradient trees (cython_ext/_qhist.pyx's node_histogram and
# unpack, and cython_ext/_grower.pyx), inline like _channel_kernels.pxd. See _qhist.pyx for the words.
from cython.parallel cimport prange
from libc.stdint cimport int64_t
from libc.string cimport memset

from _prefetch cimport mb_prefetch
from _typedefs cimport bin_t, idx_t, FEATURE_THREADS_MIN_CELLS, MISSING_BIN

cdef enum:
    PREFETCH = 16  # rows ahead: a scattered node's next bins are requested while this row is added
    WORD_BLOCK = 4096  # rows per block: their words (32 KiB) stay in L1/L2 while every feature is read


cdef inline void _gather(const int64_t* words, idx_t K, const idx_t* rows, bint identity, idx_t lo, idx_t hi,
                  int64_t* buf) noexcept nogil:
    """The words of rows ``rows[lo:hi]`` (or ``lo .. hi-1``) in that order."""
    cdef idx_t r, k, i
    for r in range(lo, hi):
        i = r if identity else rows[r]
        for k in range(K):
            buf[(r - lo) * K + k] = words[i * K + k]


cdef inline void _four(const bin_t* XT, idx_t n_all, const int64_t* buf, const idx_t* rows, bint identity, idx_t lo,
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


cdef inline void _cols1(const bin_t* XT, idx_t n_all, const int64_t* buf, const idx_t* rows, bint identity, idx_t lo,
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


cdef inline void _colsK(const bin_t* XT, idx_t n_all, const int64_t* buf, idx_t K, const idx_t* rows, bint identity,
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


cdef inline void _rowsK(const bin_t* XR, idx_t d, const int64_t* buf, idx_t K, const idx_t* rows, idx_t lo, idx_t hi,
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


cdef inline void _build(const bin_t* XT, idx_t n_all, const int64_t* buf, idx_t K, const idx_t* rows, bint identity,
                 idx_t lo, idx_t hi, int64_t* h, const idx_t* feats, idx_t nf,
                 const unsigned char* binary) noexcept nogil:
    """Rows [lo, hi) in blocks of :data:`BLOCK` (a block's words stay in cache across the features)."""
    cdef idx_t b0 = lo, b1
    while b0 < hi:
        b1 = min(hi, b0 + WORD_BLOCK)
        if K == 1:
            _cols1(XT, n_all, buf + (b0 - lo), rows, identity, b0, b1, h, feats, nf, binary)
        else:
            _colsK(XT, n_all, buf + (b0 - lo) * K, K, rows, identity, b0, b1, h, feats, nf)
        b0 = b1


cdef inline void word_histogram_core(const bin_t* XT, idx_t n_all, idx_t d, const int64_t* words, idx_t K,
                                     const idx_t* rp, bint identity, idx_t lo, idx_t hi, int64_t* H,
                                     const unsigned char* bf, const idx_t* fs, const bin_t* XR, int64_t* buf,
                                     int64_t* scratch, int max_threads) noexcept nogil:
    """The dense word histogram (d * 256, K) of rows ``rows[lo:hi]`` (``lo .. hi-1`` with ``identity``) into
    ``H``, every slot overwritten. ``fs``: the features 0 .. d-1; ``XR``: the row-major bins or NULL;
    ``buf``: (hi - lo) * K words; ``scratch``: ``max_threads`` histograms."""
    cdef idx_t n = hi - lo, t, nt, s, nf, a, b, size = d * 256 * K
    memset(H, 0, size * sizeof(int64_t))
    if n == 0 or d == 0:
        return
    _gather(words, K, rp, identity, lo, hi, buf)
    nt = max(1, min(max_threads, n // (4096 if XR != NULL and not identity else 16384)))
    nf = min(max_threads, d)
    if XR != NULL and not identity:
        # threads take row chunks (each row's cache line is read once, by one thread)
        if nt == 1:
            _rowsK(XR, d, buf, K, rp, lo, hi, H, 0, d)
            return
        memset(scratch, 0, nt * size * sizeof(int64_t))
        for t in prange(nt, schedule="static", num_threads=nt):
            a = lo + t * n // nt
            b = lo + (t + 1) * n // nt
            _rowsK(XR, d, buf + (a - lo) * K, K, rp, a, b, scratch + t * size, 0, d)
    elif nt == 1 and nf > 1 and n * d >= FEATURE_THREADS_MIN_CELLS:
        # few rows: each thread owns some features' slots (the node's words stay in cache for all)
        for t in prange(nf, schedule="static", num_threads=nf):
            _build(XT, n_all, buf, K, rp, identity, lo, hi, H, fs + t * d // nf, (t + 1) * d // nf - t * d // nf, bf)
        return
    elif nt == 1:
        _build(XT, n_all, buf, K, rp, identity, lo, hi, H, fs, d, bf)
        return
    else:
        memset(scratch, 0, nt * size * sizeof(int64_t))
        for t in prange(nt, schedule="static", num_threads=nt):
            a = lo + t * n // nt
            b = lo + (t + 1) * n // nt
            _build(XT, n_all, buf + (a - lo) * K, K, rp, identity, a, b, scratch + t * size, fs, d, bf)
    for t in range(nt):
        for s in range(size):
            H[s] += scratch[t * size + s]


cdef inline void unpack_core(const int64_t* dense, const long long* off, idx_t d, idx_t K, int wh, int wc,
                             int64_t* out, bint add=False) noexcept nogil:
    """The channels (P, 2K+1) in packed-offset layout of a dense word histogram (d * 256, K), written
    into ``out`` or, with ``add``, added to it."""
    cdef idx_t j, b, nb, s, k, C = 2 * K + 1, o
    cdef int64_t w, low, mh = ((<int64_t> 1) << wh) - 1, mc = ((<int64_t> 1) << wc) - 1
    cdef int64_t ml = ((<int64_t> 1) << (wh + wc)) - 1
    for j in range(d):
        nb = off[j + 1] - off[j] - 1
        for b in range(nb + 1):
            s = j * 256 + (b if b < nb else MISSING_BIN)
            o = (off[j] + b) * C
            for k in range(K):
                w = dense[s * K + k]
                low = w & ml
                if add:
                    out[o + k] += (w - low) >> (wh + wc)
                    out[o + K + k] += (low >> wc) & mh
                    if k == 0:
                        out[o + 2 * K] += low & mc
                else:
                    out[o + k] = (w - low) >> (wh + wc)  # exact: w - low is a multiple of 2**(wh+wc)
                    out[o + K + k] = (low >> wc) & mh
                    if k == 0:
                        out[o + 2 * K] = low & mc
