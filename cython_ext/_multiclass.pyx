"""Multiclass kernels: class histograms, the best class stump, and the
per-row passes of a multiclass boosting round.

A class stump ``(feature, bin, left, right, missing_left)`` predicts the
class ``left`` if ``bin(x[feature]) <= bin`` else ``right``; the missing bin
goes left iff ``missing_left``. The constant hypothesis ``left`` is
evaluated on any column with ``bin = 255, missing_left = True``. Classes are
int32 indices ``0..K-1``; per-row class scores are an ``(n, K)`` array.

Histogram layout, measured (ns per (row, feature); n = 1M rows, d = 20,
5% missing, 1 thread; classes uniform, or 90% in one class where marked;
scripts/bench/bench_multiclass_kernels.py runs the kept passes, the rest
were prototypes). The binary ``_histogram.build_histogram`` on the same bins
takes 0.33-0.36:

==========================================  ===========  ===========  ===========
one thread's histogram, pass                 K = 3        K = 10       K = 28
                                             255 / 8 bins 255 / 8 bins 255 / 8 bins
==========================================  ===========  ===========  ===========
bin-major ``b*K + c``, 1 feature a pass      0.66 / 0.78  0.66 / 0.79  0.72 / 0.74
  + 4 interleaved sub-histograms             0.57 / 0.59  1.08 / 0.58  2.05 / 0.59
class-major ``c*256 + b``, 4 features        0.42 / 0.48  0.58 / 1.72  0.87 / 1.88
class-major ``c*264 + b``, 2 features        0.67 / 0.68  0.73 / 0.68  0.91 / 0.76
class-major ``c*264 + b``, 8 features        0.43 / 0.40  0.69 / 0.43  0.91 / 0.51
class-major ``c*264 + b``, 4 features (a)    0.45 / 0.48  0.58 / 0.48  0.85 / 0.51
  (a), skewed classes                        0.46 / 0.48  0.47 / 0.48  0.61 / 0.50
rows counting-sorted by class per block (b)  0.51 / 0.55  0.51 / 0.51  0.62 / 0.55
  (b), skewed classes                        0.58 / 0.60  0.58 / 0.60  0.63 / 0.62
kept: (b) if K x value bins > 4096, else (a) 0.45 / 0.48  0.58 / 0.48  0.61 / 0.51
==========================================  ===========  ===========  ===========

Kept: class-major rows of ``CLASS_STRIDE = 264`` counters (one cache line
more than 256: with 256, the few bins used by every class map onto the same
cache sets and thrash), and four features per pass over a block of rows, so
that a row's class offset and weight are loaded once for four columns and
consecutive additions go to four different histograms (a). When classes x
value bins is large (K = 28 with 255 bins: four features' histograms are
230 KB, past L1), each block's rows are first counting-sorted by class, so
that the additions of one class touch only its 256 counters (b). Both fill
the same layout with int64 sums: the result does not depend on the pass or
on the number of threads (two threads: 0.24-0.35).
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
from libc.string cimport memcpy

from _superacc cimport mb_i128, mb_acc_add1, mb_acc_merge, mb_acc_terms, mb_get_max_threads, threads_for
from _typedefs cimport bin_t, cls_t, fixed_t, idx_t, MISSING_BIN, MAX_VALUE_BINS
from _stump cimport class_stump_value

cnp.import_array()

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define MB_PREFETCH(p) __builtin_prefetch(p)
    #else
    #define MB_PREFETCH(p) ((void)(p))
    #endif
    """
    void MB_PREFETCH(const void* p) noexcept nogil

cdef enum:
    BLOCK = 2048          # rows per block (keyed pass): weights and class offsets stay in L1
    SORT_BLOCK = 8192     # rows per block (sorted pass): longer runs of one class
    CLASS_STRIDE = 264    # counters per class in a thread's histogram: 256 bins + one cache line
    SORT_CELLS = 4096     # classes x value bins above which the sorted pass is used
    PROBE_ROWS = 4096     # rows read to estimate the value bins in use
    ROW_BLOCK = 1024      # rows per block when adding many stumps' votes
    PREFETCH_BYTES = 4096 # how far ahead the per-row score passes prefetch


cdef inline bint _classes_ok(const cls_t* cls, idx_t m, idx_t K) noexcept nogil:
    # A bitwise-or reduction the compiler vectorizes: checking costs far less than the scan.
    cdef idx_t r
    cdef int bad = 0
    for r in range(m):
        bad |= (cls[r] < 0) | (cls[r] >= K)
    return bad == 0


cdef int _keyed_hist(const bin_t* XT, idx_t stride, idx_t d, const fixed_t* g, const cls_t* cls,
                     idx_t lo, idx_t hi, idx_t K, fixed_t* sub, int* key) noexcept nogil:
    """Add rows [lo, hi) into sub (d x K x CLASS_STRIDE); 0 if a class is out of range."""
    cdef idx_t b0 = lo, b1, i, j, W = K * CLASS_STRIDE
    cdef const bin_t* c0
    cdef const bin_t* c1
    cdef const bin_t* c2
    cdef const bin_t* c3
    cdef fixed_t* h0
    cdef fixed_t* h1
    cdef fixed_t* h2
    cdef fixed_t* h3
    cdef fixed_t gi
    cdef int k
    while b0 < hi:
        b1 = min(hi, b0 + BLOCK)
        if not _classes_ok(cls + b0, b1 - b0, K):
            return 0
        for i in range(b0, b1):
            key[i - b0] = cls[i] * CLASS_STRIDE
        j = 0
        while j + 4 <= d:
            c0 = XT + j * stride
            c1 = c0 + stride
            c2 = c1 + stride
            c3 = c2 + stride
            h0 = sub + j * W
            h1 = h0 + W
            h2 = h1 + W
            h3 = h2 + W
            for i in range(b0, b1):
                k = key[i - b0]
                gi = g[i]
                h0[k + c0[i]] += gi
                h1[k + c1[i]] += gi
                h2[k + c2[i]] += gi
                h3[k + c3[i]] += gi
            j += 4
        while j < d:
            c0 = XT + j * stride
            h0 = sub + j * W
            for i in range(b0, b1):
                h0[key[i - b0] + c0[i]] += g[i]
            j += 1
        b0 = b1
    return 1


cdef int _sorted_hist(const bin_t* XT, idx_t stride, idx_t d, const fixed_t* g, const cls_t* cls,
                      idx_t lo, idx_t hi, idx_t K, fixed_t* sub, int* perm, fixed_t* gs,
                      idx_t* start) noexcept nogil:
    """Like _keyed_hist, each block's rows counting-sorted by class first (start: K + 1)."""
    cdef idx_t b0 = lo, m, r, j, c, s, e, W = K * CLASS_STRIDE
    cdef const bin_t* c0
    cdef const bin_t* c1
    cdef const bin_t* c2
    cdef const bin_t* c3
    cdef fixed_t* h0
    cdef fixed_t* h1
    cdef fixed_t* h2
    cdef fixed_t* h3
    cdef fixed_t gi
    cdef int p
    while b0 < hi:
        m = min(hi - b0, <idx_t> SORT_BLOCK)
        if not _classes_ok(cls + b0, m, K):
            return 0
        for c in range(K + 1):
            start[c] = 0
        for r in range(m):
            start[cls[b0 + r] + 1] += 1
        for c in range(K):
            start[c + 1] += start[c]
        for r in range(m):  # start[c] is class c's cursor here ...
            c = cls[b0 + r]
            s = start[c]
            perm[s] = <int> r
            gs[s] = g[b0 + r]
            start[c] = s + 1
        for c in range(K, 0, -1):  # ... and class c's first row again after the shift
            start[c] = start[c - 1]
        start[0] = 0
        j = 0
        while j < d:
            c0 = XT + j * stride + b0
            if j + 4 <= d:
                c1 = c0 + stride
                c2 = c1 + stride
                c3 = c2 + stride
                for c in range(K):
                    h0 = sub + j * W + c * CLASS_STRIDE
                    h1 = h0 + W
                    h2 = h1 + W
                    h3 = h2 + W
                    for s in range(start[c], start[c + 1]):
                        p = perm[s]
                        gi = gs[s]
                        h0[c0[p]] += gi
                        h1[c1[p]] += gi
                        h2[c2[p]] += gi
                        h3[c3[p]] += gi
                j += 4
            else:
                for c in range(K):
                    h0 = sub + j * W + c * CLASS_STRIDE
                    for s in range(start[c], start[c + 1]):
                        h0[c0[perm[s]]] += gs[s]
                j += 1
        b0 += m
    return 1


cdef int _value_bins_in_use(const bin_t[:, ::1] XT, idx_t lo, idx_t hi) noexcept nogil:
    # 1 + the largest value bin among the first PROBE_ROWS rows (missing wraps to 0).
    cdef idx_t j, i, top = min(hi, lo + <idx_t> PROBE_ROWS)
    cdef bin_t v, best = 0
    for j in range(XT.shape[0]):
        for i in range(lo, top):
            v = <bin_t> (XT[j, i] + 1)
            best = v if v > best else best
    return best


def _class_histogram(const bin_t[:, ::1] XT, const fixed_t[::1] g, const cls_t[::1] cls,
                     fixed_t[:, :, ::1] hist, idx_t lo, idx_t hi, int method):
    """build_class_histogram with the pass forced: 0 auto, 1 keyed, 2 class-sorted blocks.

    Not for training: lets scripts/bench/bench_multiclass_kernels.py show both passes.
    """
    cdef idx_t d = XT.shape[0], n_all = XT.shape[1], K = hist.shape[2], n
    cdef idx_t t, nt, j, b, c, W
    cdef fixed_t s
    cdef bint busy
    if hi < 0:
        hi = n_all
    if not 0 <= lo <= hi <= n_all:
        raise ValueError("row range out of bounds")
    n = hi - lo
    if g.shape[0] != n_all or cls.shape[0] != n_all or hist.shape[0] != d or hist.shape[1] != 256:
        raise ValueError("shape mismatch")
    if method == 0:
        method = 2 if n and K * _value_bins_in_use(XT, lo, hi) > SORT_CELLS else 1
    W = K * CLASS_STRIDE
    nt = max(1, min(mb_get_max_threads(), n // 16384))
    busy = n > 0 and d > 0 and K > 0
    local = np.zeros((nt, d * W if busy else 1), dtype=np.int64)
    cdef fixed_t[:, ::1] L = local
    keys = np.empty((nt, SORT_BLOCK), dtype=np.int32)
    cdef int[:, ::1] kv = keys
    sorted_g = np.empty((nt, SORT_BLOCK if method == 2 else 1), dtype=np.int64)
    cdef fixed_t[:, ::1] gv = sorted_g
    starts = np.empty((nt, K + 1), dtype=np.intp)
    cdef idx_t[:, ::1] sv = starts
    flags = np.ones(nt, dtype=np.int32)
    cdef int[::1] ok = flags
    if busy:
        for t in prange(nt, nogil=True, schedule="static", num_threads=nt):
            if method == 2:
                ok[t] = _sorted_hist(&XT[0, 0], n_all, d, &g[0], &cls[0], lo + t * n // nt, lo + (t + 1) * n // nt,
                                     K, &L[t, 0], &kv[t, 0], &gv[t, 0], &sv[t, 0])
            else:
                ok[t] = _keyed_hist(&XT[0, 0], n_all, d, &g[0], &cls[0], lo + t * n // nt, lo + (t + 1) * n // nt,
                                    K, &L[t, 0], &kv[t, 0])
    elif n:
        view = np.asarray(cls)[lo:hi]  # nothing to scan, but the same check
        flags[0] = K > 0 and 0 <= view.min() and view.max() < K
    if not flags.all():
        raise ValueError(f"class index out of range [0, {K})")
    with nogil:
        if not busy:
            for j in range(d):
                for b in range(256):
                    for c in range(K):
                        hist[j, b, c] = 0
        else:
            for j in range(d):
                for c in range(K):
                    for b in range(256):
                        s = 0
                        for t in range(nt):
                            s += L[t, j * W + c * CLASS_STRIDE + b]
                        hist[j, b, c] = s


def build_class_histogram(const bin_t[:, ::1] XT, const fixed_t[::1] g, const cls_t[::1] cls,
                          fixed_t[:, :, ::1] hist, idx_t lo=0, idx_t hi=-1):
    """``hist[j, b, c] = sum of g[i]`` over rows ``lo <= i < hi`` with ``XT[j, i] == b`` and ``cls[i] == c``.

    XT is (d, n), g and cls (n,), hist (d, 256, K) with K = hist.shape[2],
    overwritten. Raises ValueError, leaving hist as it was, if a class in the
    row range is outside [0, K).
    """
    _class_histogram(XT, g, cls, hist, lo, hi, 0)


cdef inline idx_t _argmax(const fixed_t* v, idx_t K) noexcept nogil:
    # Ties go to the highest class: for K = 2 a zero sum predicts class 1 (label +1).
    cdef idx_t c, a = 0
    cdef fixed_t best = v[0]
    for c in range(1, K):
        if v[c] >= best:
            best = v[c]
            a = c
    return a


cdef inline double _purity(const fixed_t* v, idx_t K) noexcept nogil:
    # sum_c v_c^2 / sum_c v_c: a side's weight minus its Gini impurity (0 for an empty side)
    cdef idx_t c
    cdef double tot = 0.0, sq = 0.0, x
    for c in range(K):
        x = <double> v[c]
        tot += x
        sq += x * x
    return sq / tot if tot > 0 else 0.0


def best_class_stump(const fixed_t[:, :, ::1] hist, const long long[::1] n_bins, int criterion=0):
    """The best class stump from class histograms.

    ``hist`` is (d, 256, K) as from :func:`build_class_histogram`. Each side
    of a stump predicts its largest class sum (ties -> the highest class).
    ``criterion`` 0 (SAMME's rule): the stump's score is the weight it
    classifies correctly, the sum over its sides of the largest class sum.
    ``criterion`` 1 (the rule of CART / scikit-learn's trees): the score is
    ``sum over sides of sum_c W_c^2 / W``, the total weight minus the weighted
    Gini impurity, in float64 (the center alone computes it, from exact sums).
    Candidates are scanned in the order: the constant hypothesis, then
    feature, threshold bin, missing right before left; a later candidate wins
    only with a strictly larger score. For K = 2 and criterion 0 this picks
    the stump ``_histogram.best_stump`` picks on ``hist[..., 1] - hist[..., 0]``.

    Returns
    -------
    (feature, bin, left, right, missing_left, score)
        ``feature == -1`` is the constant hypothesis ``left`` (== right);
        ``score`` is the (integer) weight the stump classifies correctly
        (for either criterion).
    """
    cdef idx_t d = hist.shape[0], K = hist.shape[2], j, b, c, nb
    cdef int ml, bf = -1, bb = 0, bml = 0
    cdef idx_t bl, br, al, ar
    cdef fixed_t best, score
    cdef double gbest = 0.0, gscore
    cdef bint has_missing, gini = criterion == 1
    if n_bins.shape[0] != d or hist.shape[1] != 256:
        raise ValueError("shape mismatch")
    if K == 0:
        raise ValueError("no classes")
    if criterion not in (0, 1):
        raise ValueError("criterion must be 0 (weighted error) or 1 (Gini)")
    for j in range(d):
        if not 0 <= n_bins[j] <= MAX_VALUE_BINS:
            raise ValueError("n_bins out of range [0, 255]")
    scratch = np.zeros((5, K), dtype=np.int64)  # totals, running left, missing, left side, right side
    cdef fixed_t[:, ::1] S = scratch
    cdef fixed_t* T = &S[0, 0]
    cdef fixed_t* run = &S[1, 0]
    cdef fixed_t* M = &S[2, 0]
    cdef fixed_t* left = &S[3, 0]
    cdef fixed_t* right = &S[4, 0]
    with nogil:
        if d:
            for b in range(256):
                for c in range(K):
                    T[c] += hist[0, b, c]
        bl = br = _argmax(T, K)
        best = T[bl]
        if gini:
            gbest = _purity(T, K)
        for j in range(d):
            nb = n_bins[j]
            has_missing = False
            for c in range(K):
                run[c] = 0
                M[c] = hist[j, MISSING_BIN, c]
                has_missing = has_missing or M[c] != 0
            for b in range(nb):
                for c in range(K):
                    run[c] += hist[j, b, c]
                for ml in range(2):
                    if b == nb - 1 and (ml == 1 or not has_missing):
                        continue  # not a split: the constant hypothesis
                    for c in range(K):
                        left[c] = run[c] + (M[c] if ml else 0)
                        right[c] = T[c] - left[c]
                    al = _argmax(left, K)
                    ar = _argmax(right, K)
                    score = left[al] + right[ar]
                    if gini:
                        gscore = _purity(left, K) + _purity(right, K)
                        if not gscore > gbest:
                            continue
                        gbest = gscore
                    elif not score > best:
                        continue
                    best = score
                    bf = <int> j
                    bb = <int> b
                    bml = ml
                    bl = al
                    br = ar
    return bf, bb, int(bl), int(br), bool(bml), int(best)


def class_error_terms(const bin_t[::1] col, const cls_t[::1] cls, const double[::1] w,
                      int bin, int left, int right, bint missing_left):
    """Exact sums of ``w`` over the rows the class stump classifies correctly and wrongly.

    Returns two float64 arrays of terms whose exact sums are those masses
    (merge over ranks with ``math.fsum``).
    """
    cdef idx_t n = col.shape[0], i, t, nt, lo, hi
    cdef int h
    cdef mb_i128* a
    if cls.shape[0] != n or w.shape[0] != n:
        raise ValueError("shape mismatch")
    nt = max(1, min(mb_get_max_threads(), n // 65536))
    store = np.zeros(nt * 2 * 2048 * 2, dtype=np.int64)
    cdef mb_i128* acc = <mb_i128*> cnp.PyArray_DATA(store)
    # One flag per thread: a variable assigned in prange keeps only the last thread's value.
    flags = np.ones(nt, dtype=np.int32)
    cdef int[::1] ok = flags
    if n:
        for t in prange(nt, nogil=True, schedule="static", num_threads=nt):
            lo = t * n // nt
            hi = (t + 1) * n // nt
            a = acc + t * 4096
            for i in range(lo, hi):
                h = class_stump_value(col[i], bin, left, right, missing_left)
                if not mb_acc_add1(a + (0 if h == cls[i] else 2048), w[i]):
                    ok[t] = 0
    if not flags.all():
        raise ValueError("non-finite weight")
    for t in range(1, nt):
        mb_acc_merge(acc, acc + t * 4096)
        mb_acc_merge(acc + 2048, acc + t * 4096 + 2048)
    buf = np.empty(3 * 2048, dtype=np.float64)
    cdef double[::1] bv = buf
    right_terms = buf[: mb_acc_terms(acc, &bv[0])].copy()
    wrong_terms = buf[: mb_acc_terms(acc + 2048, &bv[0])].copy()
    return right_terms, wrong_terms


cdef inline long long _order_key(double v) noexcept nogil:
    # The bits of v as an int64 that orders like v (NaN aside), -0.0 made +0.0
    # first so that it ties with 0.0: integer compares and selects compile to
    # cmov, where double ones compile to branches that mispredict on scores.
    cdef long long b
    v = v + 0.0
    memcpy(&b, &v, 8)
    return b ^ ((b >> 63) & 0x7FFFFFFFFFFFFFFFLL)


cdef inline idx_t _argmax_row(const double* s, idx_t K) noexcept nogil:
    # Ties go to the highest class, as in _argmax.
    cdef idx_t c, a = 0
    cdef long long best = _order_key(s[0]), v
    for c in range(1, K):
        v = _order_key(s[c])
        a = c if v >= best else a
        best = v if v >= best else best
    return a


cdef inline idx_t _prefetch_distance(idx_t K) noexcept nogil:
    return 1 + PREFETCH_BYTES // (8 * K)


cdef inline void _prefetch_row(const double* s, idx_t K) noexcept nogil:
    # Every cache line of one row of scores. Measured: argmax over (1M, 10)
    # scores takes 29 ns a row without, 9 with (in cache: 7); the hardware
    # prefetcher does not keep up with rows read at this pace.
    cdef idx_t c = 0
    while c < K:
        MB_PREFETCH(s + c)
        c += 8
    MB_PREFETCH(s + K - 1)


cdef void _apply_range(double* w, double* scores, idx_t K, const bin_t* col, const cls_t* cls, idx_t lo, idx_t hi,
                       int bin, int left, int right, bint missing_left, double fc, double fw, double coef,
                       double* wmax_out, long long* errors_out) noexcept nogil:
    # Locals, not shared arrays: the running max and count stay in registers.
    cdef idx_t i, ahead = _prefetch_distance(K)
    cdef int h
    cdef double v, wmax = 0.0
    cdef double* s
    cdef long long errors = 0
    for i in range(lo, hi):
        if i + ahead < hi:
            _prefetch_row(scores + (i + ahead) * K, K)
        h = class_stump_value(col[i], bin, left, right, missing_left)
        v = w[i] * (fc if h == cls[i] else fw)
        w[i] = v
        wmax = v if v > wmax else wmax
        s = scores + i * K
        s[h] = s[h] + coef
        errors += _argmax_row(s, K) != cls[i]
    wmax_out[0] = wmax
    errors_out[0] = errors


cdef inline bint _class_ok(long long c, idx_t K) noexcept nogil:
    return 0 <= c < K


def apply_class_stump(double[::1] w, double[:, ::1] scores, const bin_t[::1] col, const cls_t[::1] cls,
                      int bin, int left, int right, bint missing_left,
                      double factor_correct, double factor_wrong, double coef):
    """One fused pass for the class stump h:

    ``w[i] *= factor_correct if h(x_i) == cls[i] else factor_wrong`` and
    ``scores[i, h(x_i)] += coef``. ``scores`` is (n, K). Returns
    ``(errors, wmax)``: the rows whose updated ``argmax_c scores[i, c]``
    (ties -> the highest class) differs from ``cls[i]``, and the largest new
    weight.
    """
    cdef idx_t n = col.shape[0], K = scores.shape[1], t, nt
    if w.shape[0] != n or scores.shape[0] != n or cls.shape[0] != n:
        raise ValueError("shape mismatch")
    if not (_class_ok(left, K) and _class_ok(right, K)):
        raise ValueError(f"stump class out of range [0, {K})")
    if n == 0:
        return 0, 0.0
    nt = max(1, min(mb_get_max_threads(), n // 16384))
    maxes = np.zeros(8 * nt)  # one cache line per thread
    counts = np.zeros(8 * nt, dtype=np.int64)
    cdef double[::1] mx = maxes
    cdef long long[::1] ct = counts
    for t in prange(nt, nogil=True, schedule="static", num_threads=nt):
        _apply_range(&w[0], &scores[0, 0], K, &col[0], &cls[0], t * n // nt, (t + 1) * n // nt,
                     bin, left, right, missing_left, factor_correct, factor_wrong, coef,
                     &mx[8 * t], &ct[8 * t])
    return int(counts.sum()), float(maxes.max())


def class_stump_predict(const bin_t[::1] col, int bin, int left, int right, bint missing_left, cls_t[::1] out):
    """``out[i] = h(x_i)``, the class the stump predicts."""
    cdef idx_t n = col.shape[0], i
    if out.shape[0] != n:
        raise ValueError("shape mismatch")
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        out[i] = class_stump_value(col[i], bin, left, right, missing_left)


def add_class_stumps(const bin_t[:, ::1] XT, const int[::1] feature, const int[::1] bin,
                     const int[::1] left, const int[::1] right, const unsigned char[::1] missing_left,
                     const double[::1] coef, double[:, ::1] scores):
    """``scores[i, h_t(x_i)] += coef[t]`` for the stumps ``t = 0..T-1`` in order.

    Adds to what ``scores`` (n, K) holds. ``feature[t] < 0`` is the constant
    hypothesis ``left[t]``. Every left and right class must be in [0, K).
    """
    cdef idx_t d = XT.shape[0], n = XT.shape[1], K = scores.shape[1], T = feature.shape[0]
    cdef idx_t t, i, nblk, blk, lo, hi, f
    cdef int h
    cdef double a
    if (bin.shape[0] != T or left.shape[0] != T or right.shape[0] != T or missing_left.shape[0] != T
            or coef.shape[0] != T or scores.shape[0] != n):
        raise ValueError("shape mismatch")
    for t in range(T):
        if not (_class_ok(left[t], K) and _class_ok(right[t], K)):
            raise ValueError(f"stump class out of range [0, {K})")
        if feature[t] >= d:
            raise ValueError("stump feature out of range")
    if n == 0:
        return
    # Blocks of rows, every stump over a block: each stump reads a contiguous
    # run of its column, and a row still gets its stumps added in order t.
    nblk = (n + ROW_BLOCK - 1) // ROW_BLOCK
    for blk in prange(nblk, nogil=True, schedule="static", num_threads=threads_for(n)):
        lo = blk * ROW_BLOCK
        hi = min(n, lo + ROW_BLOCK)
        for t in range(T):
            f = feature[t]
            a = coef[t]
            if f < 0:
                h = left[t]
                for i in range(lo, hi):
                    scores[i, h] = scores[i, h] + a
            else:
                for i in range(lo, hi):
                    h = class_stump_value(XT[f, i], bin[t], left[t], right[t], missing_left[t])
                    scores[i, h] = scores[i, h] + a


def argmax_classes(const double[:, ::1] scores, cls_t[::1] out):
    """``out[i] = argmax_c scores[i, c]``, ties -> the highest class."""
    cdef idx_t n = scores.shape[0], K = scores.shape[1], i, ahead
    if out.shape[0] != n:
        raise ValueError("shape mismatch")
    if n == 0:
        return
    if K == 0:
        raise ValueError("no classes")
    ahead = _prefetch_distance(K)
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        if i + ahead < n:
            _prefetch_row(&scores[i + ahead, 0], K)
        out[i] = <cls_t> _argmax_row(&scores[i, 0], K)


def class_errors(const double[:, ::1] scores, const cls_t[::1] cls):
    """Rows whose ``argmax_c scores[i, c]`` (ties -> the highest class) differs from ``cls[i]``."""
    cdef idx_t n = scores.shape[0], K = scores.shape[1], i, ahead
    cdef long long errors = 0
    if cls.shape[0] != n:
        raise ValueError("shape mismatch")
    if n == 0:
        return 0
    if K == 0:
        raise ValueError("no classes")
    ahead = _prefetch_distance(K)
    for i in prange(n, nogil=True, schedule="static", num_threads=threads_for(n)):
        if i + ahead < n:
            _prefetch_row(&scores[i + ahead, 0], K)
        errors += _argmax_row(&scores[i, 0], K) != cls[i]
    return errors
