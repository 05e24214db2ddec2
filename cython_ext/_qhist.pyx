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
from libc.stdint cimport int64_t

from _superacc cimport mb_get_max_threads
from _typedefs cimport bin_t, idx_t
from _word_kernels cimport unpack_core, word_histogram_core

cnp.import_array()

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
    """The most rows whose words fit :func:`word_fields`: a node of more is summed in pieces of this many rows."""
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
    cdef idx_t d = off.shape[0] - 1
    if dense.shape[0] != d * 256 or dense.shape[1] != K or out.shape[0] != off[d] or out.shape[1] != 2 * K + 1:
        raise ValueError("shape mismatch")
    if out.shape[0]:
        with nogil:
            unpack_core(&dense[0, 0], &off[0], d, K, wh, wc, &out[0, 0])
    return out


def unpack_slots(const int64_t[:, ::1] words, int wh, int wc):
    """The channels ``(G_1..G_K, H_1..H_K, N)`` (P, 2K+1) of summed slot words (P, K) (:func:`pack`'s layout)."""
    cdef idx_t P = words.shape[0], K = words.shape[1], s, k
    cdef int64_t w, low, ml = ((<int64_t> 1) << (wh + wc)) - 1, mc = ((<int64_t> 1) << wc) - 1
    out = np.empty((P, 2 * K + 1), dtype=np.int64)
    cdef int64_t[:, ::1] o = out
    with nogil:
        for s in range(P):
            for k in range(K):
                w = words[s, k]
                low = w & ml
                o[s, k] = (w - low) >> (wh + wc)
                o[s, K + k] = low >> wc
            o[s, 2 * K] = (words[s, 0] & mc) if K else 0
    return out


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
    cdef idx_t d = XT.shape[0], n_all = XT.shape[1], K = words.shape[1], n = hi - lo
    if dense.shape[0] != d * 256 or dense.shape[1] != K or words.shape[0] != n_all:
        raise ValueError("shape mismatch")
    if not 0 <= lo <= hi or (not identity and hi > rows.shape[0]) or (identity and hi > n_all):
        raise ValueError("row range out of bounds")
    if XR is not None and (XR.shape[0] != n_all or XR.shape[1] != d):
        raise ValueError("XR must be the row-major bins (n, d)")
    flags = np.zeros(d, dtype=np.uint8) if binary is None else np.ascontiguousarray(binary, dtype=np.uint8)
    if flags.shape[0] != d:
        raise ValueError("binary flags: one per feature")
    if d == 0:
        return
    cdef const unsigned char[::1] bf = flags
    if buf is None or buf.shape[0] < n * K:
        buf = np.empty(max(1, n * K), dtype=np.int64)
    cdef const idx_t[::1] fs = np.arange(d, dtype=np.intp)
    cdef int mt = mb_get_max_threads()
    cdef int64_t[::1] S = np.empty(max(1, mt * d * 256 * K) if n >= 8192 else 1, dtype=np.int64)
    cdef const idx_t* rp = &rows[0] if rows.shape[0] else NULL
    cdef const int64_t* wp = &words[0, 0] if words.shape[0] else NULL
    cdef const bin_t* xr = &XR[0, 0] if XR is not None and XR.shape[0] else NULL
    cdef const bin_t* xt = &XT[0, 0] if n_all else NULL
    cdef int64_t[::1] wb = buf
    with nogil:
        word_histogram_core(xt, n_all, d, wp, K, rp, identity, lo, hi, &dense[0, 0], &bf[0], &fs[0], xr, &wb[0], &S[0],
                            mt)
