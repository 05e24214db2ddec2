"""One rank's part of growing a histogram tree, node by node or the whole tree in one call.

A :class:`NodeGrower` holds everything a tree needs between collectives, allocated once and reused
tree after tree: the row index array partitioned in place (each node's rows a contiguous range,
LightGBM's ``DataPartition``), a pool of histograms for the open leaves (a split builds the smaller
child's histogram into a free slot and turns the parent's slot into the larger child's by
subtraction), each open leaf's best split, and the tree's node arrays.

Where no other rank takes part (one process, or the center growing a tree on its sample),
:meth:`NodeGrower.grow_local` grows the whole tree without the GIL in one call. Over several ranks
the Python grower (:class:`mpiboost.weak.tree.TreeGrower`) calls the steps between its collectives:
:meth:`build_root`, :meth:`take`, :meth:`find_best` / :meth:`set_best`, :meth:`choose`,
:meth:`partition`, :meth:`build_child`, :meth:`take_children`. Both paths run the same kernels
(``_channel_kernels.pxd``, ``_word_kernels.pxd``, ``_split_kernels.pxd``), so they grow the same tree.

A node's histogram is built from packed words (quantized gradients, ``_qhist.pyx``) where its global
row count is known and within the words' fields, else from the int64 channels; rows below the root
are read row-major where the words are used, or where the node holds few of the rows.
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport int64_t, uint64_t

from _channel_kernels cimport channel_histogram_core, channel_rows_core
from _split_kernels cimport best_split_core, cat_rules_t, partition_core, split_t
from _superacc cimport mb_get_max_threads
from _typedefs cimport bin_t, fixed_t, idx_t
from _word_kernels cimport unpack_core, word_histogram_core

cnp.import_array()

cdef enum:
    ROW_WISE_BELOW = 64  # a node of fewer than 1/64 of the rows grown on reads the row-major bins


cdef class NodeGrower:
    """Buffers and steps of tree growth on this rank's bins (see the module docstring).

    Parameters
    ----------
    XT, XR
        This rank's feature-major (d, n) and row-major (n, d) bins.
    off
        Packed histogram offsets (``_tree.packed_offsets``).
    binary
        1 for the features whose column holds bins 0 and 1 only (summed by masks).
    max_leaves, max_depth, min_data, min_hess, l2, criterion
        The growth rules (``TreeSpec``; criterion 0 Newton, 1 error).
    K
        Classes (C = 2K + 1 channels).
    categorical, cat_rules
        A (d,) mask of the features whose bins are categories (None: none), and the categorical split rules
        ``(max_cat_to_onehot, max_cat_threshold, cat_smooth, cat_l2, min_data_per_group)`` (``_split_kernels``).
    """

    cdef const bin_t[:, ::1] XT
    cdef const bin_t[:, ::1] XR
    cdef const long long[::1] off
    cdef const long long[::1] nbs
    cdef const unsigned char[::1] binary
    cdef const idx_t[::1] fg
    cdef const idx_t[::1] fb
    cdef const idx_t[::1] fs
    cdef idx_t ng, nm, d, n, P, m
    cdef int K, C, max_leaves, max_depth, criterion, mt, n_nodes, n_leaves
    cdef long long min_data, cap
    cdef double min_hess, l2, g_scale, h_scale
    cdef int wh, wc
    cdef bint identity_root
    cdef const fixed_t[:, ::1] gh
    cdef const int64_t[:, ::1] words
    cdef idx_t[::1] rows
    cdef idx_t[::1] scratch
    cdef unsigned char[::1] side
    cdef idx_t[::1] lefts
    cdef fixed_t[:, :, ::1] pool
    cdef int[::1] free_slots
    cdef int n_free
    cdef int64_t[::1] dense
    cdef int64_t[::1] wbuf
    cdef int64_t[::1] wscratch
    cdef fixed_t[::1] cscratch
    cdef fixed_t[::1] tsc
    cdef int[::1] feature, bin, ml, left, right, depth, slot, bf, bb, bml
    cdef idx_t[::1] lo, hi
    cdef long long[::1] count
    cdef double[::1] gain, bgain
    cdef unsigned char[::1] use  # the features this tree may split on (feature fraction), when masked
    cdef bint masked
    cdef unsigned char[::1] is_cat  # the categorical features (cat_rules.is_cat points here)
    cdef cat_rules_t rules
    cdef uint64_t[:, ::1] bcat  # each open leaf's best categorical split: its bins going left
    cdef uint64_t[:, ::1] tcat  # each split node's bins going left (categorical splits, bin -1)
    cdef public long long word_nodes, word_chunks, channel_nodes, word_rows_max  # what the last tree's histograms were built from

    def __init__(self, const bin_t[:, ::1] XT, const bin_t[:, ::1] XR, const long long[::1] off, binary,
                 int max_leaves, int max_depth, long long min_data, double min_hess, double l2, int criterion, int K,
                 categorical=None, cat_rules=(4, 32, 10.0, 10.0, 100)):
        from mpiboost._ext._tree import feature_lists, missing_slots

        self.XT, self.XR, self.off = XT, XR, off
        self.d, self.n = XT.shape[0], XT.shape[1]
        self.P = off[self.d]
        self.nbs = missing_slots(off)
        flags = np.ascontiguousarray(binary, dtype=np.uint8)
        self.binary = flags if self.d else np.zeros(1, dtype=np.uint8)
        general, masked = feature_lists(flags.astype(bool), self.d)
        self.ng, self.nm = general.shape[0], masked.shape[0]
        self.fg = general if self.ng else np.zeros(1, dtype=np.intp)
        self.fb = masked if self.nm else np.zeros(1, dtype=np.intp)
        self.fs = np.arange(max(self.d, 1), dtype=np.intp)
        self.max_leaves, self.max_depth, self.min_data = max(1, max_leaves), max_depth, min_data
        self.min_hess, self.l2, self.criterion, self.K, self.C = min_hess, l2, criterion, K, 2 * K + 1
        self.mt = max(1, mb_get_max_threads())
        n, C, P, d, mt = self.n, self.C, self.P, self.d, self.mt
        self.rows = np.zeros(max(n, 1), dtype=np.intp)
        self.scratch = np.zeros(max(n, 1), dtype=np.intp)
        self.side = np.zeros(max(n, 1), dtype=np.uint8)
        self.lefts = np.zeros(mt + 1, dtype=np.intp)
        self.pool = np.zeros((self.max_leaves + 1, max(P, 1), C), dtype=np.int64)
        self.free_slots = np.zeros(self.max_leaves + 1, dtype=np.intc)
        self.cscratch = np.zeros(max(1, mt * P * C) if n >= 16384 else 1, dtype=np.int64)
        self.tsc = np.zeros(2 * C, dtype=np.int64)
        nodes = 2 * self.max_leaves + 1
        (self.feature, self.bin, self.ml, self.left, self.right, self.depth, self.slot, self.bf, self.bb,
         self.bml) = np.zeros((10, nodes), dtype=np.intc)
        self.lo, self.hi = np.zeros((2, nodes), dtype=np.intp)
        self.count = np.zeros(nodes, dtype=np.int64)
        self.gain, self.bgain = np.zeros((2, nodes))
        self.dense = np.zeros(1, dtype=np.int64)
        self.wbuf = np.zeros(1, dtype=np.int64)
        self.wscratch = np.zeros(1, dtype=np.int64)
        self.cap = 0
        self.use = np.ones(max(self.d, 1), dtype=np.uint8)
        self.masked = False
        self.bcat = np.zeros((nodes, 4), dtype=np.uint64)
        self.tcat = np.zeros((nodes, 4), dtype=np.uint64)
        self.is_cat = np.zeros(max(self.d, 1), dtype=np.uint8)
        self.rules.is_cat = NULL
        if categorical is not None and np.any(categorical):
            cm = np.ascontiguousarray(categorical, dtype=np.uint8)
            if cm.shape[0] != self.d:
                raise ValueError("the categorical mask must have one entry per feature")
            np.asarray(self.is_cat)[:self.d] = cm
            self.rules.is_cat = &self.is_cat[0]
        (self.rules.max_to_onehot, self.rules.max_threshold, self.rules.smooth, self.rules.l2,
         self.rules.min_per_group) = cat_rules

    def set_features(self, mask=None):
        """The features the next trees may split on: a (d,) boolean mask, or None for all (until set again)."""
        if mask is None:
            self.masked = False
            return
        m = np.ascontiguousarray(mask, dtype=np.uint8)
        if m.shape[0] != self.d:
            raise ValueError("the feature mask must have one entry per feature")
        if self.d:
            np.asarray(self.use)[:] = m
        self.masked = True

    # ------------------------------------------------------------------ a tree
    def begin(self, const fixed_t[:, ::1] gh, double g_scale, double h_scale, subset=None, words=None, int wh=0,
              int wc=0, long long cap=0, long long n_root=0):
        """Start a tree on the channels ``gh`` (n, C) (``subset``: these sorted local rows only); ``words``
        (n, K) with fields (wh, wc) for nodes of at most ``cap`` global rows; ``n_root``: the root's global
        row count (0: unknown). Returns the number of rows grown on here."""
        cdef idx_t i, m
        if gh.shape[0] != self.n or gh.shape[1] != self.C:
            raise ValueError("gh must be (n_local, 2K + 1)")
        self.gh, self.g_scale, self.h_scale = gh, g_scale, h_scale
        if subset is None:
            m = self.n
            for i in range(m):
                self.rows[i] = i
            self.identity_root = True
        else:
            sub = np.ascontiguousarray(subset, dtype=np.intp)
            m = sub.shape[0]
            np.asarray(self.rows)[:m] = sub
            self.identity_root = False
        self.m = m
        if words is not None and cap > 0:
            w = np.ascontiguousarray(words, dtype=np.int64)
            if w.shape[0] != self.n or w.shape[1] != self.K:
                raise ValueError("words must be (n_local, K)")
            self.words, self.wh, self.wc, self.cap = w, wh, wc, cap
            if self.dense.shape[0] != self.d * 256 * self.K:
                self.dense = np.zeros(max(1, self.d * 256 * self.K), dtype=np.int64)
                self.wscratch = np.zeros(max(1, self.mt * self.d * 256 * self.K) if self.n >= 8192 else 1,
                                         dtype=np.int64)
            if self.wbuf.shape[0] < max(1, self.n * self.K):
                self.wbuf = np.zeros(max(1, self.n * self.K), dtype=np.int64)
        else:
            self.cap = 0
        self.n_free = self.max_leaves + 1
        for i in range(self.n_free):
            self.free_slots[i] = self.max_leaves - i  # slot 0 taken first
        self.n_nodes = 1
        self.n_leaves = 1
        self.word_nodes = self.word_chunks = self.channel_nodes = self.word_rows_max = 0
        self._new_node(0, 0, m, 0, n_root)
        return m

    cdef void _new_node(self, int node, idx_t lo, idx_t hi, int depth, long long count) noexcept nogil:
        self.feature[node] = -1
        self.bin[node] = 0
        self.ml[node] = 0
        self.left[node] = -1
        self.right[node] = -1
        self.depth[node] = depth
        self.slot[node] = -1
        self.bf[node] = -1
        self.bb[node] = 0
        self.bml[node] = 0
        self.bcat[node, 0] = self.bcat[node, 1] = self.bcat[node, 2] = self.bcat[node, 3] = 0
        self.tcat[node, 0] = self.tcat[node, 1] = self.tcat[node, 2] = self.tcat[node, 3] = 0
        self.bgain[node] = 0.0
        self.gain[node] = 0.0
        self.lo[node] = lo
        self.hi[node] = hi
        self.count[node] = count

    cdef int _take_slot(self) noexcept nogil:
        self.n_free -= 1
        return self.free_slots[self.n_free]

    cdef void _free_slot(self, int node) noexcept nogil:
        if self.slot[node] >= 0:
            self.free_slots[self.n_free] = self.slot[node]
            self.n_free += 1
            self.slot[node] = -1

    cdef void _build(self, int node, fixed_t* out) noexcept nogil:
        """This rank's histogram of ``node`` into ``out`` (P, C)."""
        cdef idx_t lo = self.lo[node], hi = self.hi[node]
        cdef bint identity = node == 0 and self.identity_root
        cdef bint scattered = not identity and (hi - lo) * ROW_WISE_BELOW < self.m
        cdef const idx_t* rp = &self.rows[0]
        if self.P == 0:
            return
        cdef idx_t a, b, step
        if self.cap > 0:
            self.word_nodes += 1
            if hi - lo > self.word_rows_max:
                self.word_rows_max = hi - lo
            # below the root the rows are scattered: their row-major bins, prefetched (one cache line
            # per row, not one per feature), cost about the columns' at half the rows and 2-6x less at
            # 1/32 to 1/128 of them (1M x 28, 2 threads: the rounds 6% faster in all). Where most
            # features are 0/1 the columns' masked sums win (1.6M x 21 binary: 25% faster rounds), and
            # the row-major bins serve the scattered nodes only.
            # a node of more rows than the words hold (the fields are sized for at most ``cap`` rows) is
            # summed in pieces of ``cap`` rows, each piece's words unpacked and added: the channels'
            # three adds per row are never needed (1.6M x 21 binary at B=4: the root 2x faster)
            step = <idx_t> self.cap
            a = lo
            while True:
                b = hi if hi - a <= step else a + step
                word_histogram_core(&self.XT[0, 0], self.n, self.d, &self.words[0, 0], self.K, rp, identity, a, b,
                                    &self.dense[0], &self.binary[0], &self.fs[0],
                                    &self.XR[0, 0] if not identity and (scattered or self.ng >= self.nm) else NULL,
                                    &self.wbuf[0], &self.wscratch[0], self.mt)
                unpack_core(&self.dense[0], &self.off[0], self.d, self.K, self.wh, self.wc, <int64_t*> out, a > lo)
                self.word_chunks += 1
                a = b
                if a >= hi:
                    break
        elif scattered:
            self.channel_nodes += 1
            channel_rows_core(&self.XR[0, 0], self.d, &self.gh[0, 0], self.C, rp, lo, hi, &self.off[0], &self.nbs[0],
                              out, &self.cscratch[0], self.mt)
        else:
            self.channel_nodes += 1
            channel_histogram_core(self.XT, &self.gh[0, 0] if self.n else NULL, self.C, rp, lo, hi, &self.off[0], out,
                                   identity, &self.fg[0], self.ng, &self.fb[0], self.nm, &self.cscratch[0], self.mt)

    cdef void _best(self, int node, idx_t f_lo, idx_t f_hi) noexcept nogil:
        cdef split_t s
        s.gain = 0.0
        s.feature = -1
        s.bin = 0
        s.missing_left = 0
        if self.slot[node] >= 0 and self.d > 0 and not (self.max_depth and self.depth[node] >= self.max_depth):
            best_split_core(&self.pool[self.slot[node], 0, 0], &self.off[0], self.C, self.K, self.g_scale,
                            self.h_scale, self.l2, self.min_data, self.min_hess, self.criterion, f_lo, f_hi,
                            &self.tsc[0], &self.tsc[self.C], &s, &self.use[0] if self.masked else NULL, &self.rules)
        self.bgain[node] = s.gain
        self.bf[node] = s.feature
        self.bb[node] = s.bin
        self.bml[node] = s.missing_left
        if s.feature >= 0 and s.bin < 0:
            self.bcat[node, 0], self.bcat[node, 1], self.bcat[node, 2], self.bcat[node, 3] = \
                s.cat[0], s.cat[1], s.cat[2], s.cat[3]

    cdef int _choose(self) noexcept nogil:
        """The open leaf of largest gain (ties: the lowest node id), -1 if none has a split."""
        cdef int node, best = -1
        cdef double g = 0.0
        for node in range(self.n_nodes):
            if self.feature[node] < 0 and self.bf[node] >= 0 and self.bgain[node] > 0:
                if best < 0 or self.bgain[node] > g:
                    best, g = node, self.bgain[node]
        return best

    cdef long long _left_count(self, int node, int f, int b, bint missing_left) noexcept nogil:
        """Rows of ``node`` the split sends left, from its histogram."""
        cdef const fixed_t* h = &self.pool[self.slot[node], 0, 0]
        cdef idx_t base = self.off[f], nb = self.off[f + 1] - base - 1, s
        cdef long long out = 0
        if b < 0:  # a categorical split: the bins of its words (the missing bin goes right)
            for s in range(nb):
                if (self.bcat[node, s >> 6] >> (s & 63)) & 1:
                    out += h[(base + s) * self.C + 2 * self.K]
            return out
        for s in range(base, base + b + 1):
            out += h[s * self.C + 2 * self.K]
        if missing_left:
            out += h[(base + nb) * self.C + 2 * self.K]
        return out

    cdef long long _total_count(self, int node) noexcept nogil:
        cdef const fixed_t* h = &self.pool[self.slot[node], 0, 0]
        cdef idx_t s
        cdef long long out = 0
        for s in range(self.off[0], self.off[1]):
            out += h[s * self.C + 2 * self.K]
        return out

    cdef idx_t _partition(self, int node, int f, int b, bint missing_left) noexcept nogil:
        """Split ``node``'s rows; the two children are appended. Returns the first right position."""
        cdef idx_t lo = self.lo[node], hi = self.hi[node], mid
        cdef int L = self.n_nodes, R = self.n_nodes + 1
        mid = lo
        if b < 0:
            self.tcat[node, 0], self.tcat[node, 1], self.tcat[node, 2], self.tcat[node, 3] = \
                self.bcat[node, 0], self.bcat[node, 1], self.bcat[node, 2], self.bcat[node, 3]
        if hi > lo:
            mid = partition_core(&self.XT[f, 0], &self.rows[0], lo, hi, b, missing_left, &self.scratch[0],
                                 &self.side[0], &self.lefts[0], self.mt, &self.tcat[node, 0])
        self.feature[node] = f
        self.bin[node] = b
        self.ml[node] = missing_left
        self.left[node] = L
        self.right[node] = R
        self.gain[node] = self.bgain[node]
        self._new_node(L, lo, mid, self.depth[node] + 1, 0)
        self._new_node(R, mid, hi, self.depth[node] + 1, 0)
        self.n_nodes += 2
        self.n_leaves += 1
        return mid

    cdef void _children(self, int node, int small, int big, bint subtract) noexcept nogil:
        """The parent's slot becomes the larger child's: parent - smaller child (when held)."""
        cdef idx_t k, size = self.P * self.C
        cdef fixed_t* p
        cdef const fixed_t* s
        if subtract and self.slot[node] >= 0 and self.slot[small] >= 0:
            p = &self.pool[self.slot[node], 0, 0]
            s = &self.pool[self.slot[small], 0, 0]
            for k in range(size):
                p[k] -= s[k]
            self.slot[big] = self.slot[node]
            self.slot[node] = -1
        else:
            self._free_slot(node)
            self._free_slot(small)

    # ------------------------------------------------------- the whole tree here
    def grow_local(self):
        """Grow the whole tree with no other rank (after :meth:`begin`); the GIL is released throughout."""
        with nogil:
            self._grow_local()

    cdef void _grow_local(self) noexcept nogil:
        cdef int node, f, b, small, big, L, R
        cdef bint m
        cdef long long nl, nr
        self.slot[0] = self._take_slot()
        if self.count[0] == 0 and self.identity_root:
            self.count[0] = self.m
        self._build(0, &self.pool[self.slot[0], 0, 0])
        self._best(0, 0, self.d)
        while self.n_leaves < self.max_leaves:
            node = self._choose()
            if node < 0:
                break
            f, b, m = self.bf[node], self.bb[node], self.bml[node] != 0
            nl = self._left_count(node, f, b, m)
            nr = self._total_count(node) - nl
            self._partition(node, f, b, m)
            L, R = self.left[node], self.right[node]
            self.count[L], self.count[R] = nl, nr
            small, big = (L, R) if nl <= nr else (R, L)
            self.slot[small] = self._take_slot()
            self._build(small, &self.pool[self.slot[small], 0, 0])
            self._children(node, small, big, True)
            self._best(L, 0, self.d)
            self._best(R, 0, self.d)
            if self.bf[L] < 0:
                self._free_slot(L)
            if self.bf[R] < 0:
                self._free_slot(R)

    # ------------------------------------------------ the steps between collectives
    def build_root(self):
        """This rank's histogram of the root (a view of its slot: reduce it, then :meth:`take` it)."""
        self.slot[0] = self._take_slot()
        with nogil:
            self._build(0, &self.pool[self.slot[0], 0, 0])
        return np.asarray(self.pool[self.slot[0]])[:self.P]

    def take(self, int node, hist):
        """``node``'s histogram is ``hist`` (the global one, or this rank's block of it); None: not held here."""
        if hist is None:
            self._free_slot(node)
            return
        if self.slot[node] < 0:
            self.slot[node] = self._take_slot()
        np.asarray(self.pool[self.slot[node]])[:self.P] = hist

    def find_best(self, int node, idx_t f_lo=0, idx_t f_hi=-1):
        """``node``'s best split over features ``f_lo .. f_hi - 1`` (gain, feature, bin, missing_left), kept
        (a categorical split, bin -1: its bins in :meth:`best_cat`)."""
        if f_hi < 0:
            f_hi = self.d
        with nogil:
            self._best(node, f_lo, f_hi)
        return self.bgain[node], self.bf[node], self.bb[node], bool(self.bml[node])

    def best_cat(self, int node):
        """The 4 words of bins going left of ``node``'s best split, if categorical (else zeros)."""
        return np.asarray(self.bcat[node]).copy()

    def set_best(self, int node, double gain, int feature, int bin, bint missing_left, cat=None):
        """The split every rank agreed on for ``node`` (reduce-scatter: the best of the ranks' blocks); ``cat``:
        a categorical split's 4 words."""
        self.bgain[node], self.bf[node], self.bb[node], self.bml[node] = gain, feature, bin, missing_left
        if cat is not None:
            np.asarray(self.bcat[node])[:] = np.asarray(cat, dtype=np.uint64)

    def choose(self, bint counts=True):
        """``(node, feature, bin, missing_left, left rows, right rows, gain)`` of the next split, or None (its
        bins in :meth:`best_cat` if categorical). With ``counts`` False (a rank holding a block of features
        only) the row counts are -1."""
        cdef int node = self._choose()
        if node < 0:
            return None
        f, b, m = self.bf[node], self.bb[node], self.bml[node] != 0
        if not counts or self.slot[node] < 0:
            return node, f, b, m, -1, -1, self.bgain[node]
        nl = self._left_count(node, f, b, m)
        return node, f, b, m, nl, self._total_count(node) - nl, self.bgain[node]

    def partition(self, int node, int feature, int bin, bint missing_left):
        """Split ``node`` here: ``(left child, right child, local left rows, local right rows)``."""
        cdef idx_t mid
        with nogil:
            mid = self._partition(node, feature, bin, missing_left)
        return (self.left[node], self.right[node], mid - self.lo[node], self.hi[node] - mid)

    def build_child(self, int node, long long n_left, long long n_right):
        """The children's global row counts; this rank's histogram of the smaller child (a view)."""
        cdef int L = self.left[node], R = self.right[node], small
        self.count[L], self.count[R] = n_left, n_right
        small = L if n_left <= n_right else R
        self.slot[small] = self._take_slot()
        with nogil:
            self._build(small, &self.pool[self.slot[small], 0, 0])
        return small, np.asarray(self.pool[self.slot[small]])[:self.P]

    def take_children(self, int node, small_hist):
        """The smaller child's reduced histogram (None: not held here); the larger one's by subtraction."""
        cdef int L = self.left[node], R = self.right[node]
        cdef int small = L if self.count[L] <= self.count[R] else R
        cdef int big = R if small == L else L
        if small_hist is None:
            self._free_slot(small)
            self._free_slot(node)
            return
        np.asarray(self.pool[self.slot[small]])[:self.P] = small_hist
        with nogil:
            self._children(node, small, big, True)

    def release(self, int node):
        """``node`` will not split: its histogram's slot is free again."""
        self._free_slot(node)

    @property
    def n_nodes(self):
        return self.n_nodes

    @property
    def root_rows(self):
        """The root's global row count (0: unknown)."""
        return self.count[0]

    def tree(self):
        """``(feature, bin, missing_left, left, right, gain)`` of the grown nodes, each local row's leaf (-1
        outside the rows grown on), and each node's 4 words of categorical bins going left."""
        k = self.n_nodes
        node_of_row = np.full(self.n, -1, dtype=np.int32)
        cdef int[::1] out = node_of_row
        cdef int node
        cdef idx_t r
        for node in range(k):
            if self.feature[node] < 0:
                for r in range(self.lo[node], self.hi[node]):
                    out[self.rows[r]] = node
        arr = lambda a: np.asarray(a)[:k].copy()  # noqa: E731
        return (arr(self.feature), arr(self.bin), arr(self.ml).astype(np.uint8), arr(self.left), arr(self.right),
                arr(self.gain), node_of_row, arr(self.tcat))
