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

from _prefetch cimport mb_prefetch
from _superacc cimport mb_get_max_threads
from _typedefs cimport bin_t, fixed_t, idx_t, MISSING_BIN

cnp.import_array()

ctypedef cnp.npy_int32 node_t

cdef enum:
    GAIN_NEWTON = 0
    GAIN_ERROR = 1


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


cdef enum:
    BLOCK = 1024  # rows per block: their gradient rows stay in L1 while every feature is scanned


cdef inline void _add3(fixed_t* t, fixed_t g0, fixed_t g1, fixed_t g2) noexcept nogil:
    t[0] += g0
    t[1] += g1
    t[2] += g2


cdef inline void _mask_add3(fixed_t* s, fixed_t g0, fixed_t g1, fixed_t g2, fixed_t m) noexcept nogil:
    s[0] += g0 & m
    s[1] += g1 & m
    s[2] += g2 & m


cdef void _hist3(const bin_t[:, ::1] XT, const fixed_t* gh, const idx_t* rows, bint identity, idx_t lo,
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


cdef void _hist3_binary(const bin_t[:, ::1] XT, const fixed_t* gh, const idx_t* rows, bint identity, idx_t lo,
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


cdef void _block_hist(const bin_t[:, ::1] XT, const fixed_t* gh, idx_t C, const idx_t* rows, bint identity,
                      idx_t lo, idx_t hi, const long long* off, fixed_t* h, const idx_t* feats, idx_t nf,
                      const idx_t* bfeats, idx_t nbf) noexcept nogil:
    """Add rows r in [lo, hi) (row ``rows[r]``, or ``r`` itself with ``identity``) into ``h`` (P x C).

    Row blocks outside, features inside: each gradient row is read from memory once per block,
    not once per feature, and a block's bins of one feature are close together (rows sorted)."""
    cdef idx_t d = XT.shape[0], j, r, i, b0, b1, nb, base, c
    cdef const bin_t* col
    cdef const fixed_t* g
    cdef fixed_t* t
    cdef bin_t b
    b0 = lo
    while b0 < hi:
        b1 = min(hi, b0 + BLOCK)
        if C == 3:  # the features split in two lists: the general ones and the 0/1 ones
            _hist3(XT, gh, rows, identity, b0, b1, off, h, feats, nf)
            _hist3_binary(XT, gh, rows, identity, b0, b1, off, h, bfeats, nbf)
            b0 = b1
            continue
        for j in range(d):
            col = &XT[j, 0]
            base = off[j]
            nb = off[j + 1] - base - 1
            for r in range(b0, b1):
                i = r if identity else rows[r]
                b = col[i]
                t = h + C * (base + (nb if b == MISSING_BIN else b))
                g = gh + C * i
                for c in range(C):
                    t[c] += g[c]
        b0 = b1


cdef void _block_hist_features(const bin_t[:, ::1] XT, const fixed_t* gh, idx_t C, const idx_t* rows,
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


def node_histogram(const bin_t[:, ::1] XT, const fixed_t[:, ::1] gh, const idx_t[::1] rows, idx_t lo, idx_t hi,
                   const long long[::1] off, fixed_t[:, ::1] hist, bint identity=False, binary=None):
    """``hist[off[j] + b, c] = sum of gh[i, c]`` over the rows ``i = rows[lo:hi]`` with bin b of feature j
    (the missing bin in the last slot); every slot is overwritten. ``identity``: the rows are
    ``lo .. hi-1`` themselves (the root). ``binary``: a flag per feature whose column holds bins 0 and
    1 only (``mpiboost._ext._histogram.binary_columns``), summed by masks; the same sums either way.
    Threads take row ranges into their own histograms, summed at the end (integers: the same for
    any thread count)."""
    cdef idx_t d = XT.shape[0], C = gh.shape[1], P, t, nt, k, n
    if off.shape[0] != d + 1 or hist.shape[0] != off[d] or hist.shape[1] != C or gh.shape[0] != XT.shape[1]:
        raise ValueError("shape mismatch")
    if not 0 <= lo <= hi or (not identity and hi > rows.shape[0]) or (identity and hi > XT.shape[1]):
        raise ValueError("row range out of bounds")
    flags = np.zeros(d, dtype=bool) if binary is None else np.asarray(binary, dtype=bool)
    if flags.shape[0] != d:
        raise ValueError("binary flags: one per feature")
    general = np.ascontiguousarray(np.flatnonzero(~flags), dtype=np.intp)
    masked = np.ascontiguousarray(np.flatnonzero(flags), dtype=np.intp)
    cdef const idx_t[::1] fg = general if general.shape[0] else np.zeros(1, dtype=np.intp)
    cdef const idx_t[::1] fb = masked if masked.shape[0] else np.zeros(1, dtype=np.intp)
    cdef idx_t ng = general.shape[0], nbin = masked.shape[0]
    P = off[d]
    n = hi - lo
    nt = max(1, min(mb_get_max_threads(), n // 8192))
    hist[:, :] = 0
    if n == 0 or d == 0:
        return
    cdef const idx_t* rp = &rows[0] if rows.shape[0] else NULL
    cdef idx_t j, nf = min(mb_get_max_threads(), d)
    if nt == 1 and nf > 1 and n >= 256:
        # too few rows to split between threads: split the features instead (each thread owns its
        # features' slots; the node's gradient rows are few enough to stay in cache for all of them)
        for j in prange(nf, nogil=True, schedule="static", num_threads=nf):
            _block_hist_features(XT, &gh[0, 0], C, rp, identity, lo, hi, &off[0], &hist[0, 0],
                                 j * d // nf, (j + 1) * d // nf, &fg[j * ng // nf], (j + 1) * ng // nf - j * ng // nf,
                                 &fb[j * nbin // nf], (j + 1) * nbin // nf - j * nbin // nf)
        return
    if nt == 1:
        with nogil:
            _block_hist(XT, &gh[0, 0], C, rp, identity, lo, hi, &off[0], &hist[0, 0], &fg[0], ng, &fb[0], nbin)
        return
    local = np.zeros((nt, P * C), dtype=np.int64)
    cdef fixed_t[:, ::1] L = local
    for t in prange(nt, nogil=True, schedule="static", num_threads=nt):
        _block_hist(XT, &gh[0, 0], C, rp, identity, lo + t * n // nt, lo + (t + 1) * n // nt, &off[0], &L[t, 0],
                    &fg[0], ng, &fb[0], nbin)
    cdef fixed_t* H = &hist[0, 0]
    with nogil:
        for t in range(nt):
            for k in range(P * C):
                H[k] += L[t, k]


cdef void _rows_hist(const bin_t* XR, idx_t d, const fixed_t* gh, idx_t C, const idx_t* rows, idx_t lo, idx_t hi,
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


cdef void _rows_hist_features(const bin_t* XR, idx_t d, const fixed_t* gh, idx_t C, const idx_t* rows, idx_t lo,
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


def node_histogram_rows(const bin_t[:, ::1] XR, const fixed_t[:, ::1] gh, const idx_t[::1] rows, idx_t lo, idx_t hi,
                        const long long[::1] off, fixed_t[:, ::1] hist):
    """:func:`node_histogram` from row-major bins ``XR`` (n, d): the same sums, for nodes whose rows
    are scattered over the data (every node below the root)."""
    cdef idx_t d = XR.shape[1], C = gh.shape[1], P, t, nt, k, n, j
    if off.shape[0] != d + 1 or hist.shape[0] != off[d] or hist.shape[1] != C or gh.shape[0] != XR.shape[0]:
        raise ValueError("shape mismatch")
    if not 0 <= lo <= hi <= rows.shape[0]:
        raise ValueError("row range out of bounds")
    P = off[d]
    n = hi - lo
    hist[:, :] = 0
    if n == 0 or d == 0:
        return
    nbs_np = np.empty(d, dtype=np.int64)
    cdef long long[::1] nbs = nbs_np
    for j in range(d):
        nbs[j] = off[j + 1] - off[j] - 1  # the missing bin (255) lands in the last slot
    nt = max(1, min(mb_get_max_threads(), n // 8192))
    cdef idx_t nf = min(mb_get_max_threads(), d)
    if nt == 1 and nf > 1 and n >= 256:
        for j in prange(nf, nogil=True, schedule="static", num_threads=nf):
            _rows_hist_features(&XR[0, 0], d, &gh[0, 0], C, &rows[0], lo, hi, &off[0], &nbs[0], &hist[0, 0],
                                j * d // nf, (j + 1) * d // nf)
        return
    if nt == 1:
        with nogil:
            _rows_hist(&XR[0, 0], d, &gh[0, 0], C, &rows[0], lo, hi, &off[0], &nbs[0], &hist[0, 0])
        return
    local = np.zeros((nt, P * C), dtype=np.int64)
    cdef fixed_t[:, ::1] L = local
    for t in prange(nt, nogil=True, schedule="static", num_threads=nt):
        _rows_hist(&XR[0, 0], d, &gh[0, 0], C, &rows[0], lo + t * n // nt, lo + (t + 1) * n // nt, &off[0],
                   &nbs[0], &L[t, 0])
    cdef fixed_t* H = &hist[0, 0]
    with nogil:
        for t in range(nt):
            for k in range(P * C):
                H[k] += L[t, k]


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


cdef inline double _term(double G, double H, double l2) noexcept nogil:
    if H + l2 <= 0:
        return 0.0
    return G * G / (H + l2)


def best_split(const fixed_t[:, ::1] hist, const long long[::1] off, int K, double g_scale, double h_scale,
               double l2, long long min_data, double min_hess, int criterion, idx_t f_lo=0, idx_t f_hi=-1):
    """The best split of a node from its packed histogram, over features ``f_lo .. f_hi - 1``.

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
    (gain, feature, bin, missing_left)
        ``feature == -1``: no split.
    """
    cdef idx_t d = off.shape[0] - 1, C = hist.shape[1], j, b, nb, base, k, s
    cdef int ml, bf = -1, bb = 0, bml = 0
    cdef double best = 0.0, gain, parent = 0.0, HL, HR
    cdef long long NL, NR, N, NM
    cdef fixed_t eG, eL, eR
    if f_hi < 0:
        f_hi = d
    if C != 2 * K + 1 or hist.shape[0] != off[d] or K < 1 or (criterion == GAIN_ERROR and K != 1):
        raise ValueError("shape mismatch")
    if d == 0 or f_lo >= f_hi:
        return 0.0, -1, 0, False
    tot_np = np.zeros(C, dtype=np.int64)
    left_np = np.zeros(C, dtype=np.int64)
    cdef fixed_t[::1] tot = tot_np
    cdef fixed_t[::1] L = left_np
    # every row falls in exactly one slot of each feature: feature f_lo's slots sum to the
    # node's totals (under reduce-scatter a rank holds only its block of features)
    for s in range(off[f_lo], off[f_lo + 1]):
        for k in range(C):
            tot[k] += hist[s, k]
    N = tot[2 * K]
    if criterion == GAIN_NEWTON:
        for k in range(K):
            parent += _term(tot[k] * g_scale, tot[K + k] * h_scale, l2)
    with nogil:
        for j in range(f_lo, f_hi):
            base = off[j]
            nb = off[j + 1] - base - 1
            NM = hist[base + nb, 2 * K]
            for k in range(C):
                L[k] = 0
            for b in range(nb):
                for k in range(C):
                    L[k] += hist[base + b, k]
                for ml in range(2):
                    if ml == 1 and NM == 0:
                        continue  # the same partition as missing right
                    NL = L[2 * K] + (NM if ml else 0)
                    NR = N - NL
                    if NL == 0 or NR == 0 or NL < min_data or NR < min_data:
                        continue
                    HL = 0.0
                    HR = 0.0
                    for k in range(K):
                        eL = L[K + k] + (hist[base + nb, K + k] if ml else 0)
                        HL += eL * h_scale
                        HR += (tot[K + k] - eL) * h_scale
                    if HL < min_hess or HR < min_hess:
                        continue
                    if criterion == GAIN_ERROR:
                        eL = L[0] + (hist[base + nb, 0] if ml else 0)
                        eR = tot[0] - eL
                        eG = tot[0]
                        gain = <double> ((eL if eL >= 0 else -eL) + (eR if eR >= 0 else -eR)
                                         - (eG if eG >= 0 else -eG))
                    else:
                        gain = -parent
                        for k in range(K):
                            eL = L[k] + (hist[base + nb, k] if ml else 0)
                            HL = (L[K + k] + (hist[base + nb, K + k] if ml else 0)) * h_scale
                            HR = (tot[K + k] * h_scale) - HL
                            gain = gain + _term(eL * g_scale, HL, l2) + _term((tot[k] - eL) * g_scale, HR, l2)
                    if gain > best:
                        best = gain
                        bf = <int> j
                        bb = <int> b
                        bml = ml
    return best, bf, bb, bool(bml)


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


cdef inline bint _goes_left(bin_t b, int bin, bint missing_left) noexcept nogil:
    if b == MISSING_BIN:
        return missing_left
    return b <= bin


def partition(const bin_t[:, ::1] XT, idx_t[::1] rows, idx_t lo, idx_t hi, int feature, int bin,
              bint missing_left, idx_t[::1] scratch):
    """Stable in-place partition of ``rows[lo:hi]``: rows going left (``bin(x_f) <= bin``, missing
    left iff ``missing_left``) first. Returns the first right position. ``scratch``: >= hi - lo entries.

    One thread: one pass moves the lefts forward in place and the rights to ``scratch``, a second
    copies the rights back. Threads take consecutive chunks: each counts its left rows (keeping
    each row's side, so the bins are read once), then writes them at its offset among the lefts
    (and its right rows at its offset in ``scratch``), so the order is kept."""
    cdef idx_t n = hi - lo, r, i, t, nt, a, m, c0, c1, total_left
    if not 0 <= lo <= hi <= rows.shape[0] or scratch.shape[0] < hi - lo or not 0 <= feature < XT.shape[0]:
        raise ValueError("out of bounds")
    cdef const bin_t* col = &XT[feature, 0]
    nt = max(1, min(mb_get_max_threads(), n // 16384))
    if nt == 1:
        with nogil:
            a = lo
            m = 0
            for r in range(lo, hi):
                i = rows[r]
                if r + 32 < hi:
                    mb_prefetch(col + rows[r + 32])
                if _goes_left(col[i], bin, missing_left):
                    rows[a] = i  # a <= r: a row already read
                    a = a + 1
                else:
                    scratch[m] = i
                    m = m + 1
            for r in range(m):
                rows[a + r] = scratch[r]
        return a
    lefts_np = np.zeros(nt + 1, dtype=np.intp)
    side_np = np.empty(n, dtype=np.uint8)
    cdef idx_t[::1] lefts = lefts_np
    cdef unsigned char[::1] side = side_np
    for t in prange(nt, nogil=True, schedule="static", num_threads=nt):
        c0 = lo + t * n // nt
        c1 = lo + (t + 1) * n // nt
        m = 0
        for r in range(c0, c1):
            if r + 32 < c1:
                mb_prefetch(col + rows[r + 32])
            side[r - lo] = _goes_left(col[rows[r]], bin, missing_left)
            m = m + side[r - lo]
        lefts[t + 1] = m
    for t in range(nt):
        lefts[t + 1] += lefts[t]
    total_left = lefts[nt]
    for t in prange(nt, nogil=True, schedule="static", num_threads=nt):
        c0 = lo + t * n // nt
        c1 = lo + (t + 1) * n // nt
        a = lefts[t]  # this chunk's lefts go to scratch[a ..], its rights to scratch[total_left + c0 - lo - a ..]
        m = total_left + (c0 - lo) - lefts[t]
        for r in range(c0, c1):
            i = rows[r]
            if side[r - lo]:
                scratch[a] = i
                a = a + 1
            else:
                scratch[m] = i
                m = m + 1
    for t in prange(nt, nogil=True, schedule="static", num_threads=nt):
        c0 = t * n // nt
        c1 = (t + 1) * n // nt
        for r in range(c0, c1):
            rows[lo + r] = scratch[r]
    return lo + total_left


cdef inline node_t _leaf_of(const bin_t[:, ::1] XT, idx_t i, const node_t* feat, const node_t* bins,
                            const unsigned char* ml, const node_t* lc, const node_t* rc) noexcept nogil:
    cdef node_t node = 0
    cdef bin_t b
    cdef bint go_left
    while feat[node] >= 0:
        b = XT[feat[node], i]
        if b == MISSING_BIN:
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
                node_t[::1] out):
    """The leaf (node id) of every row of feature-major bins ``XT`` in one tree (node 0 the root;
    ``feature < 0`` a leaf). The arrays are trusted (checked by the model loader)."""
    cdef idx_t n = XT.shape[1], i
    if out.shape[0] != n or feature.shape[0] < 1:
        raise ValueError("shape mismatch")
    with nogil:
        for i in prange(n, schedule="static"):
            out[i] = _leaf_of(XT, i, &feature[0], &bin[0], &missing_left[0], &left[0], &right[0])


def add_trees(const bin_t[:, ::1] XT, const node_t[::1] feature, const node_t[::1] bin,
              const unsigned char[::1] missing_left, const node_t[::1] left, const node_t[::1] right,
              const double[:, ::1] value, const long long[::1] start, const double[::1] coef, double[:, ::1] out):
    """``out[i, :] += coef[t] * value[leaf_t(i), :]`` for trees t in order (tree t's nodes are
    ``start[t] .. start[t+1]-1``, children numbered within the tree). Rows in parallel; each row
    adds its trees in order, so the scores do not depend on the threads."""
    cdef idx_t n = XT.shape[1], V = value.shape[1], T = coef.shape[0], i, t, v
    cdef long long s
    cdef node_t leaf
    if out.shape[0] != n or out.shape[1] != V or start.shape[0] != T + 1:
        raise ValueError("shape mismatch")
    with nogil:
        for i in prange(n, schedule="static"):
            for t in range(T):
                s = start[t]
                leaf = _leaf_of(XT, i, &feature[s], &bin[s], &missing_left[s], &left[s], &right[s])
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
    for i in prange(n, nogil=True, schedule="static"):
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
    for i in prange(n, nogil=True, schedule="static"):
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
    for i in prange(n, nogil=True, schedule="static"):
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
