# The split scan and the row partition of the tree grower (cython_ext/_tree.pyx's best_split and
# partition, and cython_ext/_grower.pyx), inline like _channel_kernels.pxd.
from cython.parallel cimport prange
from libc.stdint cimport uint64_t
from libc.stdlib cimport qsort

from _prefetch cimport mb_prefetch
from _typedefs cimport bin_t, fixed_t, idx_t, MISSING_BIN

cdef enum:
    GAIN_NEWTON = 0
    GAIN_ERROR = 1

ctypedef struct split_t:  # a node's best split: feature -1 when none has a positive gain
    double gain
    int feature
    int bin  # -1: a categorical split, the bins set in ``cat`` go left (missing values right)
    int missing_left
    uint64_t cat[4]  # the categorical split's bins, bit b of word b // 64


ctypedef struct cat_rules_t:  # LightGBM's rules of categorical splits (cat_* and *_cat_* parameters)
    const unsigned char* is_cat  # per feature: its bins are categories (NULL: no categorical feature)
    int max_to_onehot  # at most this many bins (categories + the missing one): one category against the rest
    int max_threshold  # most categories on the left of a many-vs-many split
    double smooth  # added to a category's hessian in its sort key; fewer rows: never on the left
    double l2  # added to l2 for a many-vs-many split's gain (and its children's leaves)
    long long min_per_group  # rows of each group of categories added, and at least on the right


ctypedef struct cat_key_t:
    double key
    int bin


cdef inline int _by_key(const void* a, const void* b) noexcept nogil:
    """Ascending key, ties by the lower bin: a total order, so the sort does not depend on qsort's choices."""
    cdef const cat_key_t* x = <const cat_key_t*> a
    cdef const cat_key_t* y = <const cat_key_t*> b
    if x.key < y.key:
        return -1
    if x.key > y.key:
        return 1
    return x.bin - y.bin


cdef inline bint goes_left(bin_t b, int bin, bint missing_left, const uint64_t* cat) noexcept nogil:
    """Whether a row of bin ``b`` goes left: ``b <= bin``, or with ``bin < 0`` (a categorical split) ``b`` in
    the bitset ``cat`` (4 words); a missing value as ``missing_left`` says (always right at a categorical split)."""
    if b == MISSING_BIN:
        return missing_left if bin >= 0 else False
    if bin < 0:
        return (cat[b >> 6] >> (b & 63)) & 1
    return b <= bin


cdef inline double _term(double G, double H, double l2) noexcept nogil:
    if H + l2 <= 0:
        return 0.0
    return G * G / (H + l2)


cdef inline bint _empty(const fixed_t* slot, idx_t C) noexcept nogil:
    cdef idx_t k
    for k in range(C):
        if slot[k] != 0:
            return False
    return True


cdef inline void _newton1_try(fixed_t G, fixed_t H, long long NL, long long NR, long long lo_rows, fixed_t tG,
                             fixed_t tHu, double tH, double parent, double g_scale, double h_scale, double l2,
                             double min_hess, idx_t j, idx_t b, int ml, split_t* best) noexcept nogil:
    """One candidate of :func:`_best_newton1` (left sums G, H; NL, NR rows): kept when strictly better."""
    cdef double HL, HR, gain
    if NL < lo_rows or NR < lo_rows:
        return
    HL = H * h_scale
    HR = (tHu - H) * h_scale
    if HL < min_hess or HR < min_hess:
        return
    HR = tH - HL
    gain = -parent + _term(G * g_scale, HL, l2) + _term((tG - G) * g_scale, HR, l2)
    if gain > best.gain:
        best.gain, best.feature, best.bin, best.missing_left = gain, <int> j, <int> b, ml


cdef inline void _best_newton1(const fixed_t* hist, const long long* off, idx_t C, double g_scale, double h_scale,
                               double l2, long long min_data, double min_hess, idx_t f_lo, idx_t f_hi,
                               const fixed_t* tot, double parent, const unsigned char* use,
                               split_t* out, const cat_rules_t* rules) noexcept nogil:
    """best_split_core's scan for one class and the Newton gain, with the sums in scalars: the same
    candidates in the same order and the same floating-point expressions, hence the same split."""
    cdef idx_t j, b, nb, base, s, m
    cdef double tH = tot[1] * h_scale
    cdef long long N = tot[2], NM, c, lo_rows = min_data if min_data > 1 else 1
    cdef fixed_t G, H, tG = tot[0], tHu = tot[1], GM, HM
    out.gain, out.feature, out.bin, out.missing_left = 0.0, -1, 0, 0
    for j in range(f_lo, f_hi):
        if use != NULL and not use[j]:
            continue  # not among this tree's features (feature fraction)
        base = off[j]
        nb = off[j + 1] - base - 1
        if rules != NULL and rules.is_cat != NULL and rules.is_cat[j]:
            _best_categorical1(hist, base, nb, C, g_scale, h_scale, l2, lo_rows, min_hess, tot, parent, j, rules,
                               out)
            continue
        m = (base + nb) * C
        GM, HM, NM = hist[m], hist[m + 1], hist[m + 2]
        G = 0
        H = 0
        c = 0
        for b in range(nb):
            s = (base + b) * C
            if b > 0 and hist[s] == 0 and hist[s + 1] == 0 and hist[s + 2] == 0:
                continue  # the same candidates as bin b - 1
            G += hist[s]
            H += hist[s + 1]
            c += hist[s + 2]
            if N - c < lo_rows:
                break  # too few rows right, here and at every later bin
            _newton1_try(G, H, c, N - c, lo_rows, tG, tHu, tH, parent, g_scale, h_scale, l2, min_hess, j, b, 0, out)
            if NM:
                _newton1_try(G + GM, H + HM, c + NM, N - c - NM, lo_rows, tG, tHu, tH, parent, g_scale, h_scale, l2,
                             min_hess, j, b, 1, out)


cdef inline double _cat_gain(double GL, double HL, double GR, double HR, long long NL, long long NR,
                              long long lo_rows, double min_hess, double l2, double parent) noexcept nogil:
    """A categorical candidate's gain (left sums GL, HL; right GR, HR; scaled), -1 where a rule refuses it."""
    if NL < lo_rows or NR < lo_rows or HL < min_hess or HR < min_hess:
        return -1.0
    return -parent + _term(GL, HL, l2) + _term(GR, HR, l2)


cdef inline void _best_categorical1(const fixed_t* hist, idx_t base, idx_t nb, idx_t C, double g_scale,
                                    double h_scale, double l2, long long lo_rows, double min_hess,
                                    const fixed_t* tot, double parent, idx_t j, const cat_rules_t* rules,
                                    split_t* out) noexcept nogil:
    """The best split of categorical feature ``j`` (one class, the Newton gain), LightGBM's way: with at most
    ``max_to_onehot`` bins (the categories and the missing bin), each category against the rest; else the categories of at least ``smooth`` rows
    sorted by ``G / (H + smooth)``, and the first 1, 2, ... (at most ``max_threshold``, and half of them) from
    either end on the left, every ``min_per_group`` rows added, with ``l2 + rules.l2`` in the children's terms.
    The missing bin always goes right. Kept in ``out`` when strictly better."""
    cdef cat_key_t keys[256]
    cdef idx_t b, s, i, used = 0, n_try, k
    cdef int d, best_dir = 0, best_i = -1
    cdef long long N = tot[2], c, NL, group
    cdef double tH = tot[1] * h_scale, tG = tot[0] * g_scale, GL, HL, gain, best = out.gain
    cdef double l2c = l2 + rules.l2
    if nb + 1 <= rules.max_to_onehot:  # the bins with the missing one, as LightGBM counts a feature's bins
        for b in range(nb):
            s = (base + b) * C
            c = hist[s + 2]
            GL = hist[s] * g_scale
            HL = hist[s + 1] * h_scale
            gain = _cat_gain(GL, HL, tG - GL, tH - HL, c, N - c, lo_rows, min_hess, l2, parent)
            if gain > best:
                best, best_i, best_dir = gain, <int> b, 0
    else:
        for b in range(nb):
            s = (base + b) * C
            if hist[s + 2] > 0 and hist[s + 2] >= rules.smooth:  # a category of no row here cannot matter
                HL = hist[s + 1] * h_scale + rules.smooth
                keys[used].key = (hist[s] * g_scale) / HL if HL > 0 else 0.0
                keys[used].bin = <int> b
                used += 1
        if used > 1:
            qsort(keys, used, sizeof(cat_key_t), _by_key)
        n_try = min(<idx_t> rules.max_threshold, (used + 1) // 2)
        for d in range(2):
            GL = 0.0
            HL = 0.0
            NL = 0
            group = 0
            for i in range(min(used, n_try)):
                k = i if d == 0 else used - 1 - i
                s = (base + keys[k].bin) * C
                GL += hist[s] * g_scale
                HL += hist[s + 1] * h_scale
                NL += hist[s + 2]
                group += hist[s + 2]
                if NL < lo_rows or HL < min_hess:
                    continue
                if N - NL < lo_rows or N - NL < rules.min_per_group or tH - HL < min_hess:
                    break  # fewer rows (or hessian) on the right at every later candidate
                if group < rules.min_per_group:
                    continue
                group = 0
                gain = -parent + _term(GL, HL, l2c) + _term(tG - GL, tH - HL, l2c)
                if gain > best:
                    best, best_i, best_dir = gain, <int> i, 1 + d
    if best_i < 0:
        return
    out.gain, out.feature, out.bin, out.missing_left = best, <int> j, -1, 0
    out.cat[0] = out.cat[1] = out.cat[2] = out.cat[3] = 0
    if best_dir == 0:
        out.cat[best_i >> 6] |= (<uint64_t> 1) << (best_i & 63)
        return
    for i in range(best_i + 1):
        k = i if best_dir == 1 else used - 1 - i
        b = keys[k].bin
        out.cat[b >> 6] |= (<uint64_t> 1) << (b & 63)


cdef inline void best_split_core(const fixed_t* hist, const long long* off, idx_t C, int K, double g_scale, double h_scale,
                          double l2, long long min_data, double min_hess, int criterion, idx_t f_lo, idx_t f_hi,
                          fixed_t* tot, fixed_t* L, split_t* out, const unsigned char* use=NULL,
                          const cat_rules_t* rules=NULL) noexcept nogil:
    """:func:`best_split` without checks or allocations (``tot``, ``L``: C scratch entries each); ``use``:
    the features a split may take (NULL: all); ``rules``: the categorical features and their split rules
    (with one class and the Newton gain; other trees split categories as ordered codes)."""
    cdef idx_t j, b, nb, base, k, s
    cdef int ml, bf = -1, bb = 0, bml = 0
    cdef double best = 0.0, gain, parent = 0.0, HL, HR
    cdef long long NL, NR, N, NM
    cdef fixed_t eG, eL, eR
    out.gain = 0.0
    out.feature = -1
    out.bin = 0
    out.missing_left = 0
    if f_lo >= f_hi:
        return
    for k in range(C):
        tot[k] = 0
    # every row falls in exactly one slot of each feature: feature f_lo's slots sum to the
    # node's totals (under reduce-scatter a rank holds only its block of features)
    for s in range(off[f_lo], off[f_lo + 1]):
        for k in range(C):
            tot[k] += hist[s * C + k]
    N = tot[2 * K]
    if criterion == GAIN_NEWTON:
        for k in range(K):
            parent += _term(tot[k] * g_scale, tot[K + k] * h_scale, l2)
    if K == 1 and criterion == GAIN_NEWTON:
        _best_newton1(hist, off, C, g_scale, h_scale, l2, min_data, min_hess, f_lo, f_hi, tot, parent, use, out,
                      rules)
        return
    for j in range(f_lo, f_hi):
        if use != NULL and not use[j]:
            continue
        base = off[j]
        nb = off[j + 1] - base - 1
        NM = hist[(base + nb) * C + 2 * K]
        for k in range(C):
            L[k] = 0
        for b in range(nb):
            s = (base + b) * C
            if b > 0 and _empty(hist + s, C):
                continue  # the same candidates as bin b - 1, hence no strictly larger gain
            for k in range(C):
                L[k] += hist[s + k]
            if N - L[2 * K] == 0 or N - L[2 * K] < min_data:
                break  # too few rows right, here and (counts >= 0) at every later bin, missing left or right
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
                    eL = L[K + k] + (hist[(base + nb) * C + K + k] if ml else 0)
                    HL += eL * h_scale
                    HR += (tot[K + k] - eL) * h_scale
                if HL < min_hess or HR < min_hess:
                    continue
                if criterion == GAIN_ERROR:
                    eL = L[0] + (hist[(base + nb) * C] if ml else 0)
                    eR = tot[0] - eL
                    eG = tot[0]
                    gain = <double> ((eL if eL >= 0 else -eL) + (eR if eR >= 0 else -eR)
                                     - (eG if eG >= 0 else -eG))
                else:
                    gain = -parent
                    for k in range(K):
                        eL = L[k] + (hist[(base + nb) * C + k] if ml else 0)
                        HL = (L[K + k] + (hist[(base + nb) * C + K + k] if ml else 0)) * h_scale
                        HR = (tot[K + k] * h_scale) - HL
                        gain = gain + _term(eL * g_scale, HL, l2) + _term((tot[k] - eL) * g_scale, HR, l2)
                if gain > best:
                    best = gain
                    bf = <int> j
                    bb = <int> b
                    bml = ml
    out.gain = best
    out.feature = bf
    out.bin = bb
    out.missing_left = bml


cdef inline idx_t partition_core(const bin_t* col, idx_t* rows, idx_t lo, idx_t hi, int bin, bint missing_left,
                          idx_t* scratch, unsigned char* side, idx_t* lefts, int max_threads,
                          const uint64_t* cat=NULL) noexcept nogil:
    """:func:`partition` without checks or allocations: ``scratch`` and ``side`` of >= hi - lo entries,
    ``lefts`` of max_threads + 1; ``cat``: the bins going left of a categorical split (``bin`` -1)."""
    cdef idx_t n = hi - lo, r, i, t, nt, a, m, c0, c1, total_left
    nt = max(1, min(max_threads, n // 16384))
    if nt == 1:
        a = lo
        m = 0
        for r in range(lo, hi):
            i = rows[r]
            if r + 32 < hi:
                mb_prefetch(col + rows[r + 32])
            if goes_left(col[i], bin, missing_left, cat):
                rows[a] = i  # a <= r: a row already read
                a = a + 1
            else:
                scratch[m] = i
                m = m + 1
        for r in range(m):
            rows[a + r] = scratch[r]
        return a
    lefts[0] = 0
    for t in prange(nt, schedule="static", num_threads=nt):
        c0 = lo + t * n // nt
        c1 = lo + (t + 1) * n // nt
        m = 0
        for r in range(c0, c1):
            if r + 32 < c1:
                mb_prefetch(col + rows[r + 32])
            side[r - lo] = goes_left(col[rows[r]], bin, missing_left, cat)
            m = m + side[r - lo]
        lefts[t + 1] = m
    for t in range(nt):
        lefts[t + 1] += lefts[t]
    total_left = lefts[nt]
    for t in prange(nt, schedule="static", num_threads=nt):
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
    for t in prange(nt, schedule="static", num_threads=nt):
        c0 = t * n // nt
        c1 = (t + 1) * n // nt
        for r in range(c0, c1):
            rows[lo + r] = scratch[r]
    return lo + total_left
