# The int64-channel histogram kernels of the tree grower (cython_ext/_tree.pyx's node_histogram and
# node_histogram_rows, and cython_ext/_grower.pyx): inline, so each module that cimports them compiles
# its own copy (no run-time link between the extension modules).
#
# A slot holds C int64 channels (K gradient sums, K hessian sums, a row count); integer sums, so the
# result does not depend on the thread count or the order.
from cython.parallel cimport prange
from libc.string cimport memset

from _typedefs cimport bin_t, fixed_t, idx_t, FEATURE_THREADS_MIN_CELLS, MISSING_BIN

cdef enum:
    CHANNEL_BLOCK = 1024  # rows per block: their gradient rows stay in L1 while every feature is scanned


cdef inline void _add3(fixed_t* t, fixed_t g0, fixed_t g1, fixed_t g2) noexcept nogil:
    t[0] += g0
    t[1] += g1
    t[2] += g2


cdef inline void _mask_add3(fixed_t* s, fixed_t g0, fixed_t g1, fixed_t g2, fixed_t m) noexcept nogil:
    s[0] += g0 & m
    s[1] += g1 & m
    s[2] += g2 & m


cdef inline void _hist3(const bin_t[:, ::1] XT, const fixed_t* gh, const idx_t* rows, bint identity, idx_t lo,
                 idx_t hi, const long long* off, fixed_t* h, const idx_t* feats, idx_t nf) noexcept nogil:
    """Three channels (gradient, hessian, count): rows [lo, hi) of the features ``feats[:nf]`` into ``h``.

    Four features per pass over the rows: one gradient row, loaded once, feeds four independent
    histogram updates, which overlap in the pipeline even where consecutive rows share a bin."""
    cdef idx_t q = 0, r, i, j
    cdef const bin_t* c0
    cdef const bin_t* c1
    cdef const bin_t* c2
    cdef const bin_t* c3
    cdef long long a0, a1, a2, a3, m0, m1, m2, m3
    cdef fixed_t g0, g1, g2
    cdef fixed_t* t
    cdef bin_t b
    while q + 4 <= nf:
        c0 = &XT[feats[q], 0]
        c1 = &XT[feats[q + 1], 0]
        c2 = &XT[feats[q + 2], 0]
        c3 = &XT[feats[q + 3], 0]
        a0, a1, a2, a3 = off[feats[q]], off[feats[q + 1]], off[feats[q + 2]], off[feats[q + 3]]
        # each feature's missing slot
        m0, m1 = off[feats[q] + 1] - 1, off[feats[q + 1] + 1] - 1
        m2, m3 = off[feats[q + 2] + 1] - 1, off[feats[q + 3] + 1] - 1
        for r in range(lo, hi):
            i = r if identity else rows[r]
            g0 = gh[3 * i]
            g1 = gh[3 * i + 1]
            g2 = gh[3 * i + 2]
            b = c0[i]
            _add3(h + 3 * (m0 if b == MISSING_BIN else a0 + b), g0, g1, g2)
            b = c1[i]
            _add3(h + 3 * (m1 if b == MISSING_BIN else a1 + b), g0, g1, g2)
            b = c2[i]
            _add3(h + 3 * (m2 if b == MISSING_BIN else a2 + b), g0, g1, g2)
            b = c3[i]
            _add3(h + 3 * (m3 if b == MISSING_BIN else a3 + b), g0, g1, g2)
        q = q + 4
    while q < nf:
        j = feats[q]
        c0 = &XT[j, 0]
        a0, m0 = off[j], off[j + 1] - 1
        for r in range(lo, hi):
            i = r if identity else rows[r]
            b = c0[i]
            t = h + 3 * (m0 if b == MISSING_BIN else a0 + b)
            t[0] += gh[3 * i]
            t[1] += gh[3 * i + 1]
            t[2] += gh[3 * i + 2]
        q = q + 1


cdef inline void _hist3_binary(const bin_t[:, ::1] XT, const fixed_t* gh, const idx_t* rows, bint identity, idx_t lo,
                        idx_t hi, const long long* off, fixed_t* h, const idx_t* feats, idx_t nf) noexcept nogil:
    """:func:`_hist3` for columns that hold bins 0 and 1 only (no missing values): bin 1's sums are
    masked sums in registers (no store per row, no wait on the previous row's add), bin 0's the
    rows' totals minus them. Integer sums: the same as the scatter, bit for bit."""
    cdef idx_t q = 0, r, i, k
    cdef const bin_t* c[4]
    cdef fixed_t s[12]
    cdef fixed_t tot0 = 0, tot1 = 0, tot2 = 0, g0, g1, g2
    cdef fixed_t* t
    if nf == 0:
        return
    for r in range(lo, hi):
        i = r if identity else rows[r]
        tot0 += gh[3 * i]
        tot1 += gh[3 * i + 1]
        tot2 += gh[3 * i + 2]
    while q < nf:
        for k in range(4):
            c[k] = &XT[feats[q + k if q + k < nf else q], 0]
            s[3 * k] = 0
            s[3 * k + 1] = 0
            s[3 * k + 2] = 0
        for r in range(lo, hi):
            i = r if identity else rows[r]
            g0 = gh[3 * i]
            g1 = gh[3 * i + 1]
            g2 = gh[3 * i + 2]
            _mask_add3(&s[0], g0, g1, g2, -(<fixed_t> c[0][i]))  # mask: all ones on bin 1, zero on bin 0
            _mask_add3(&s[3], g0, g1, g2, -(<fixed_t> c[1][i]))
            _mask_add3(&s[6], g0, g1, g2, -(<fixed_t> c[2][i]))
            _mask_add3(&s[9], g0, g1, g2, -(<fixed_t> c[3][i]))
        for k in range(4):
            if q + k < nf:
                t = h + 3 * off[feats[q + k]]
                t[0] += tot0 - s[3 * k]
                t[1] += tot1 - s[3 * k + 1]
                t[2] += tot2 - s[3 * k + 2]
                t[3] += s[3 * k]
                t[4] += s[3 * k + 1]
                t[5] += s[3 * k + 2]
        q = q + 4


cdef inline void _block_hist_features(const bin_t[:, ::1] XT, const fixed_t* gh, idx_t C, const idx_t* rows,
                               bint identity, idx_t lo, idx_t hi, const long long* off, fixed_t* h,
                               idx_t j0, idx_t j1, const idx_t* feats, idx_t nf, const idx_t* bfeats,
                               idx_t nbf) noexcept nogil:
    """Rows [lo, hi) of features j0 .. j1-1 only (C = 3: of the lists ``feats``, ``bfeats``), into the
    full histogram ``h`` (their slots only)."""
    cdef idx_t j, r, i, nb, base, c
    cdef const bin_t* col
    cdef const fixed_t* g
    cdef fixed_t* t
    cdef bin_t b
    if C == 3:
        _hist3(XT, gh, rows, identity, lo, hi, off, h, feats, nf)
        _hist3_binary(XT, gh, rows, identity, lo, hi, off, h, bfeats, nbf)
        return
    for j in range(j0, j1):
        col = &XT[j, 0]
        base = off[j]
        nb = off[j + 1] - base - 1
        for r in range(lo, hi):
            i = r if identity else rows[r]
            b = col[i]
            t = h + C * (base + (nb if b == MISSING_BIN else b))
            g = gh + C * i
            for c in range(C):
                t[c] += g[c]


cdef inline void _block_hist(const bin_t[:, ::1] XT, const fixed_t* gh, idx_t C, const idx_t* rows, bint identity,
                      idx_t lo, idx_t hi, const long long* off, fixed_t* h, const idx_t* feats, idx_t nf,
                      const idx_t* bfeats, idx_t nbf) noexcept nogil:
    """Add rows r in [lo, hi) (row ``rows[r]``, or ``r`` itself with ``identity``) into ``h`` (P x C).

    Row blocks outside, features inside: each gradient row is read from memory once per block,
    not once per feature, and a block's bins of one feature are close together (rows sorted)."""
    cdef idx_t b0 = lo, b1
    while b0 < hi:
        b1 = min(hi, b0 + CHANNEL_BLOCK)
        _block_hist_features(XT, gh, C, rows, identity, b0, b1, off, h, 0, XT.shape[0], feats, nf, bfeats, nbf)
        b0 = b1


cdef inline idx_t _plan(fixed_t* H, idx_t size, idx_t n, idx_t d, int max_threads, idx_t* nf) noexcept nogil:
    """Zero the histogram ``H``; the threads over row ranges (0: no rows or features) and, in ``nf``, over
    features (for nodes too small to split by rows)."""
    memset(H, 0, size * sizeof(fixed_t))
    if n == 0 or d == 0:
        return 0
    nf[0] = min(max_threads, d)
    return max(1, min(max_threads, n // 8192))


cdef inline void _sum_into(fixed_t* H, const fixed_t* scratch, idx_t nt, idx_t size) noexcept nogil:
    """Add the threads' histograms (integers: any order gives the same sums)."""
    cdef idx_t t, k
    for t in range(nt):
        for k in range(size):
            H[k] += scratch[t * size + k]


cdef inline void channel_histogram_core(const bin_t[:, ::1] XT, const fixed_t* gh, idx_t C, const idx_t* rp, idx_t lo,
                                 idx_t hi, const long long* off, fixed_t* H, bint identity, const idx_t* fg, idx_t ng,
                                 const idx_t* fb, idx_t nbin, fixed_t* scratch, int max_threads) noexcept nogil:
    """:func:`node_histogram` without checks or allocations: ``scratch`` holds ``max_threads`` histograms."""
    cdef idx_t d = XT.shape[0], P = off[d], n = hi - lo, t, j, nf = 1
    cdef idx_t nt = _plan(H, P * C, n, d, max_threads, &nf)
    if nt == 0:
        return
    if nt == 1 and nf > 1 and n * d >= FEATURE_THREADS_MIN_CELLS:
        # too few rows to split between threads: split the features instead (each thread owns its
        # features' slots; the node's gradient rows are few enough to stay in cache for all of them)
        for j in prange(nf, schedule="static", num_threads=nf):
            _block_hist_features(XT, gh, C, rp, identity, lo, hi, off, H,
                                 j * d // nf, (j + 1) * d // nf, fg + j * ng // nf, (j + 1) * ng // nf - j * ng // nf,
                                 fb + j * nbin // nf, (j + 1) * nbin // nf - j * nbin // nf)
        return
    if nt == 1:
        _block_hist(XT, gh, C, rp, identity, lo, hi, off, H, fg, ng, fb, nbin)
        return
    memset(scratch, 0, nt * P * C * sizeof(fixed_t))
    for t in prange(nt, schedule="static", num_threads=nt):
        _block_hist(XT, gh, C, rp, identity, lo + t * n // nt, lo + (t + 1) * n // nt, off, scratch + t * P * C,
                    fg, ng, fb, nbin)
    _sum_into(H, scratch, nt, P * C)


cdef inline void _rows_hist(const bin_t* XR, idx_t d, const fixed_t* gh, idx_t C, const idx_t* rows, idx_t lo, idx_t hi,
                     const long long* off, const long long* nbs, fixed_t* h) noexcept nogil:
    """Add rows ``rows[lo:hi]`` of the row-major bins ``XR`` (n x d) into ``h`` (P x C): one cache
    line holds a row's bins of every feature, so a node whose rows are scattered costs one miss
    per row, not one per row and feature."""
    cdef idx_t r, i, j, c
    cdef const bin_t* row
    cdef const fixed_t* g
    cdef fixed_t* t
    cdef fixed_t g0, g1, g2
    cdef long long b
    for r in range(lo, hi):
        i = rows[r]
        row = XR + i * d
        g = gh + C * i
        if C == 3:
            g0, g1, g2 = g[0], g[1], g[2]  # in registers across the row's stores
            for j in range(d):
                b = row[j]
                t = h + 3 * (off[j] + (b if b < nbs[j] else nbs[j]))
                t[0] += g0
                t[1] += g1
                t[2] += g2
        else:
            for j in range(d):
                b = row[j]
                t = h + C * (off[j] + (b if b < nbs[j] else nbs[j]))
                for c in range(C):
                    t[c] += g[c]


cdef inline void _rows_hist_features(const bin_t* XR, idx_t d, const fixed_t* gh, idx_t C, const idx_t* rows, idx_t lo,
                              idx_t hi, const long long* off, const long long* nbs, fixed_t* h, idx_t j0,
                              idx_t j1) noexcept nogil:
    """:func:`_rows_hist` for features j0 .. j1-1 only (their slots only)."""
    cdef idx_t r, i, j, c
    cdef const bin_t* row
    cdef const fixed_t* g
    cdef fixed_t* t
    cdef long long b
    for r in range(lo, hi):
        i = rows[r]
        row = XR + i * d
        g = gh + C * i
        for j in range(j0, j1):
            b = row[j]
            t = h + C * (off[j] + (b if b < nbs[j] else nbs[j]))
            for c in range(C):
                t[c] += g[c]


cdef inline void channel_rows_core(const bin_t* XR, idx_t d, const fixed_t* gh, idx_t C, const idx_t* rows, idx_t lo,
                            idx_t hi, const long long* off, const long long* nbs, fixed_t* H, fixed_t* scratch,
                            int max_threads) noexcept nogil:
    """:func:`node_histogram_rows` without checks or allocations (``scratch``: ``max_threads`` histograms)."""
    cdef idx_t P = off[d], n = hi - lo, t, j, nf = 1
    cdef idx_t nt = _plan(H, P * C, n, d, max_threads, &nf)
    if nt == 0:
        return
    if nt == 1 and nf > 1 and n * d >= FEATURE_THREADS_MIN_CELLS:
        for j in prange(nf, schedule="static", num_threads=nf):
            _rows_hist_features(XR, d, gh, C, rows, lo, hi, off, nbs, H, j * d // nf, (j + 1) * d // nf)
        return
    if nt == 1:
        _rows_hist(XR, d, gh, C, rows, lo, hi, off, nbs, H)
        return
    memset(scratch, 0, nt * P * C * sizeof(fixed_t))
    for t in prange(nt, schedule="static", num_threads=nt):
        _rows_hist(XR, d, gh, C, rows, lo + t * n // nt, lo + (t + 1) * n // nt, off, nbs, scratch + t * P * C)
    _sum_into(H, scratch, nt, P * C)
