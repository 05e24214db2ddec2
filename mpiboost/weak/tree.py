"""Histogram trees grown leaf-wise over the k-entity protocol.

Every rank holds the rows of its block; a tree is grown as follows:

1. each rank turns its rows' gradients and hessians into int64 fixed-point
   units (``gh``, one row per data row: K gradient channels, K hessian
   channels and a count) and builds the packed histogram of the root;
2. the histograms are summed exactly over the ranks (to the center, or, with
   ``exchange="reduce-scatter"``, each rank getting the sum of a block of
   features); whoever holds a node's histogram scans it for the best split;
3. the open leaf of largest gain (ties: the lowest node id) is split; the
   split is broadcast, every rank partitions its rows of that leaf in place,
   builds the histogram of the smaller child only, and the sibling's
   histogram is the parent's minus the smaller child's;
4. growth stops at ``max_leaves`` leaves, at ``max_depth``, or when no leaf
   has a split of positive gain; the leaf values are computed from the exact
   leaf sums and broadcast with the tree.

Sums are integers and every choice is a deterministic function of them, so
the tree does not depend on how the rows are spread over the ranks (empty
ranks included). Two leaf kinds: ``sign`` leaves (+1 / -1, the classifier
the boosting theory of AdaBoost and SmoothBoost needs, the sign of the leaf's
weighted label sum) and ``real`` leaves (Newton steps ``-G / (H + l2)`` of a
loss, K values per leaf).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Callable, Optional

import numpy as np

from .._ext import _tree
from ..protocol import FIXED_SHIFT
from .stump import Choice, Stump

GAINS = ("newton", "error")
EXCHANGES = ("center", "reduce-scatter")
LEAF_KINDS = ("sign", "real", "class")  # class: one-hot leaves of K values (the leaf's class scores 1)
# Gradient units: a row's g and h (|g| <= 1, 0 <= h <= 1) are rounded to units of 2**-s with
# s = GH_BITS - bit_length(n), so the sum over all n rows stays below 2**GH_BITS (no int64
# overflow) whatever the data; a positive hessian never rounds to zero units.
GH_BITS = 62
MAX_GH_SHIFT = 52


def gh_shift(n_global: int) -> int:
    """The fixed-point scale (bits) of gradients and hessians for ``n_global`` rows (:data:`GH_BITS`)."""
    return max(1, min(MAX_GH_SHIFT, GH_BITS - int(max(1, n_global)).bit_length()))


@dataclass(frozen=True)
class TreeSpec:
    """How trees grow (the ``--max-leaves`` ... options; the ``cat`` ones: LightGBM's categorical split rules,
    for the features the data declare categorical)."""

    max_leaves: int = 31
    max_depth: int = 0  # 0: no limit
    min_data_in_leaf: int = 20
    min_child_weight: float = 1e-3
    l2: float = 0.0
    split_gain: str = "newton"
    exchange: str = "center"
    max_cat_to_onehot: int = 4
    max_cat_threshold: int = 32
    cat_smooth: float = 10.0
    cat_l2: float = 10.0
    min_data_per_group: int = 100

    @property
    def cat_rules(self) -> tuple:
        return (int(self.max_cat_to_onehot), int(self.max_cat_threshold), float(self.cat_smooth), float(self.cat_l2),
                int(self.min_data_per_group))

    @classmethod
    def from_params(cls, params: dict) -> "TreeSpec":
        """The spec of an algorithm's resolved parameters (missing ones take the defaults)."""
        given = {f.name: params[f.name] for f in fields(cls) if params.get(f.name) is not None}
        if "exchange" in given:
            given["exchange"] = str(given["exchange"])
        return cls(**given)


class Tree:
    """A binary tree over binned features; node 0 is the root, ``feature < 0`` marks a leaf.

    A row goes to ``left[node]`` if its bin of ``feature[node]`` is ``<= bin[node]``
    (missing values left iff ``missing_left[node]``), else to ``right[node]``; at a categorical split
    (``bin[node] == -1``) if its bin is one of the bins set in ``cat[node]`` (4 words of 64 bits: bin b is bit
    b % 64 of word b // 64; missing values go right).
    ``value`` (n_nodes, V) holds each leaf's output (0 at internal nodes).
    """

    def __init__(self, feature, bin, missing_left, left, right, value, kind: str = "real",
                 gain=None, count=None, weight=None, cat=None) -> None:
        self.feature = np.ascontiguousarray(feature, dtype=np.int32)
        self.bin = np.ascontiguousarray(bin, dtype=np.int32)
        self.missing_left = np.ascontiguousarray(missing_left, dtype=np.uint8)
        self.left = np.ascontiguousarray(left, dtype=np.int32)
        self.right = np.ascontiguousarray(right, dtype=np.int32)
        self.value = np.ascontiguousarray(np.asarray(value, dtype=np.float64).reshape(self.feature.shape[0], -1))
        if kind not in LEAF_KINDS:
            raise ValueError(f"leaf kind must be one of {LEAF_KINDS}")
        self.kind = kind
        n = self.feature.shape[0]
        # what the grower knew (gains of the splits, rows and hessian per node): for export and importance
        self.gain = np.zeros(n) if gain is None else np.asarray(gain, dtype=np.float64)
        self.count = np.zeros(n, dtype=np.int64) if count is None else np.asarray(count, dtype=np.int64)
        self.weight = np.zeros(n) if weight is None else np.asarray(weight, dtype=np.float64)
        self.cat = np.zeros((n, 4), dtype=np.uint64) if cat is None else \
            np.ascontiguousarray(np.asarray(cat, dtype=np.uint64).reshape(n, 4))
        self._cached = None

    @property
    def n_nodes(self) -> int:
        return int(self.feature.shape[0])

    @property
    def n_leaves(self) -> int:
        return int(np.count_nonzero(self.feature < 0))

    @property
    def n_values(self) -> int:
        return int(self.value.shape[1])

    def leaves(self, cols: np.ndarray) -> np.ndarray:
        """The leaf (node id) of every row of feature-major bins ``cols`` (d, n)."""
        out = np.empty(cols.shape[1], dtype=np.int32)
        _tree.tree_leaves(np.ascontiguousarray(cols, dtype=np.uint8), self.feature, self.bin, self.missing_left,
                          self.left, self.right, self.cat, out)
        return out

    def values(self, cols: np.ndarray) -> np.ndarray:
        """Each row's leaf values, (n, V)."""
        return self.value[self.leaves(cols)]

    def predict(self, cols: np.ndarray) -> np.ndarray:
        """h(x): -1/+1 (int8) of a sign tree, the class (int32) of a class tree."""
        if self.kind == "class":
            return self.leaf_class[self.leaves(cols)]
        return np.where(self.value[self.leaves(cols), 0] >= 0, 1, -1).astype(np.int8)

    # The stump kernels' interface: a sign tree is "bin(x) <= 0 -> +1, else -1" on the column of
    # its predictions (0 where it says +1, 1 where it says -1), so every kernel written for
    # stumps (weighted errors, reweighting, cells, margins) runs a sign tree unchanged.
    # A class tree reads as the column of its predicted classes with the class-stump rule "bin < 0:
    # the column is the class" (cython_ext/_stump.pxd), for the class kernels (SAMME's).
    def column(self, cols: np.ndarray) -> np.ndarray:
        if self.kind == "real":
            raise TypeError("a tree of real leaves does not read as a stump column")
        cached = self._cached or []
        for c, col in cached:
            if c is cols:
                return col
        if self.kind == "sign":
            col = (self.value[self.leaves(cols), 0] < 0).astype(np.uint8)
        else:
            col = self.leaf_class[self.leaves(cols)].astype(np.uint8)
        self._cached = [(cols, col), *cached[:2]]  # the training rows, a subset of them, validation rows
        return col

    @property
    def leaf_class(self) -> np.ndarray:
        """Each node's class (the argmax of its one-hot value) of a class tree."""
        return np.argmax(self.value, axis=1).astype(np.int32)

    def args(self) -> tuple[int, int, bool]:
        return 0, 1, False

    def class_args(self) -> tuple[int, int, int, bool]:
        return -1, 0, 0, False


    # ------------------------------------------------------------- export
    def left_bins(self, node: int) -> list:
        """The bins going left at categorical split ``node`` (ascending)."""
        words = self.cat[node]
        return [b for b in range(256) if (int(words[b >> 6]) >> (b & 63)) & 1]

    @property
    def has_categorical(self) -> bool:
        return bool(np.any((self.feature >= 0) & (self.bin < 0)))

    def to_dict(self) -> dict:
        doc = {
            "feature": self.feature.tolist(), "bin": self.bin.tolist(),
            "missing_left": self.missing_left.astype(bool).tolist(),
            "left": self.left.tolist(), "right": self.right.tolist(),
            "value": self.value.tolist(), "kind": self.kind,
        }
        if self.has_categorical:  # each categorical split's bins going left (other nodes: null)
            doc["left_bins"] = [self.left_bins(i) if self.feature[i] >= 0 and self.bin[i] < 0 else None
                                for i in range(self.n_nodes)]
        return doc

    def same_as(self, other: "Tree") -> bool:
        """Same structure and the same leaf values, bit for bit."""
        return all(np.array_equal(getattr(self, a), getattr(other, a))
                   for a in ("feature", "bin", "missing_left", "left", "right", "cat")) and \
            self.value.tobytes() == other.value.tobytes() and self.kind == other.kind


class TreeGrower:
    """Grows one tree per call over the protocol (see the module docstring).

    Parameters
    ----------
    spec
        The growth options.
    proto
        The :class:`mpiboost.protocol.Protocol` (``None``: one process, no communication; the
        center growing a tree on a sample).
    cols
        This rank's feature-major bins (d, n_local).
    n_bins
        Value bins per feature (the same on every rank).
    """

    def __init__(self, spec: TreeSpec, proto, cols: np.ndarray, n_bins: np.ndarray,
                 categorical: Optional[np.ndarray] = None) -> None:
        self.spec, self.proto, self.cols = spec, proto, cols
        # the features whose bins are categories (split many-vs-many with one class and the Newton gain)
        self.categorical = None if categorical is None or not np.any(categorical) else \
            np.asarray(categorical, dtype=bool)
        self.n_bins = np.ascontiguousarray(n_bins, dtype=np.int64)
        self.off = _tree.packed_offsets(self.n_bins)
        self.d = int(cols.shape[0])
        n = int(cols.shape[1])
        # Row-major bins for the nodes below the root, whose rows are scattered (d bytes a row).
        self.XR = np.ascontiguousarray(cols.T) if n and self.d else np.zeros((n, self.d), dtype=np.uint8)
        from .._ext import _histogram

        # this rank's 0/1 columns, whose histograms are masked sums (the same sums, faster)
        self.binary = _histogram.binary_columns(cols).astype(bool) if n and self.d else np.zeros(self.d, bool)
        self.criterion = GAINS.index(spec.split_gain)
        self.bytes_per_tree: list = []
        self.narrow = 0  # set per tree by grow(grad_bins=...): B where the histograms travel as int32
        self._words = None  # the packed words (grad_bins), reused tree after tree
        self._g = None  # (K, the NodeGrower): the buffers of growth, reused tree after tree
        self._features = None  # the features the trees may split on (feature fraction): None, all
        self._fields = None  # (wh, wc, most rows) of this tree's packed words (grad_bins), else None
        if spec.exchange == "reduce-scatter" and proto is not None:
            self._blocks = feature_blocks(self.off, proto.comm.size)
        else:
            self._blocks = None

    # ------------------------------------------------------------ exchange
    @property
    def center(self) -> bool:
        return self.proto is None or self.proto.is_center

    def _reduce(self, hist: np.ndarray, rows: Optional[int] = None) -> Optional[np.ndarray]:
        """The global histogram where it is scanned: the center's full one, or this rank's block.

        With :attr:`narrow` = B (integers of at most B levels, whose sums over all rows are bounded
        below 2**31) the ranks' histograms travel as int32: half the bytes, the same sums; a node of
        ``rows`` global rows with ``rows * B < 2**16`` packs each class's two sums in one int32.
        """
        if self.proto is None:
            return hist.copy()  # the caller reuses its buffer for the next node
        if self.proto.comm.size == 1:
            return self._reduce_wide(hist)  # nothing travels: no packing
        if self.narrow and rows is not None and rows * (self.narrow + 1) < 2**16:
            return self._reduce_packed(hist)
        if self._fields is not None and rows is not None and 0 < rows <= self._fields[2]:
            return self._reduce_words(hist)
        if self.narrow:
            out = self._reduce_wide(hist.astype(np.int32))
            return None if out is None else out.astype(np.int64)
        return self._reduce_wide(hist)

    def _reduce_packed(self, hist: np.ndarray) -> Optional[np.ndarray]:
        """A node of ``rows`` rows with ``rows * B < 2**16``: :func:`pack_sums` words, a third fewer bytes."""
        out = self._reduce_wide(pack_sums(hist))
        return None if out is None else unpack_sums(out)

    def _reduce_words(self, hist: np.ndarray) -> Optional[np.ndarray]:
        """A node within the packed words' fields (:mod:`mpiboost._ext._qhist`): one int64 word per slot and
        class, ``G * 2**(wh + wc) + H * 2**wc + N``, whose sums over the ranks are the words of the sums."""
        from .._ext import _qhist

        wh, wc, _ = self._fields
        K = (hist.shape[1] - 1) // 2
        words = np.empty((hist.shape[0], K), dtype=np.int64)
        _qhist.pack(np.ascontiguousarray(hist), K, wh, wc, words)
        out = self._reduce_wide(words)
        if out is None:
            return None
        return _qhist.unpack_slots(out, wh, wc)

    def _reduce_wide(self, hist: np.ndarray) -> Optional[np.ndarray]:
        if self._blocks is None:
            return self.proto.reduce_tree_histogram(hist)
        r = self.proto.comm.rank
        lo, hi = int(self._blocks[r]), int(self._blocks[r + 1])
        counts = [int(self.off[self._blocks[k + 1]] - self.off[self._blocks[k]]) for k in range(self.proto.comm.size)]
        block = self.proto.reduce_scatter_tree_histogram(hist, counts)
        full = np.zeros_like(hist)
        full[self.off[lo]:self.off[hi]] = block
        return full

    # --------------------------------------------------------------- split
    def _agree(self, g, node: int) -> None:
        """``node``'s best split, the same on every rank that needs it: the center's from the global
        histogram, or under reduce-scatter the best of the ranks' blocks (the largest gain; ties to the
        lowest feature, the blocks being in feature order, so the first rank's among equals)."""
        if self._blocks is None:
            if not self.center:
                return
            best = g.find_best(node)
        else:
            r = self.proto.comm.rank
            lo, hi = int(self._blocks[r]), int(self._blocks[r + 1])
            gain, f, b, m = g.find_best(node, lo, hi)
            table = self.proto.allgather_candidates(np.array([gain, f, b, float(m), *cat_halves(g.best_cat(node))]))
            k = int(np.argmax(table[:, 0]))  # first maximum: lowest rank, hence lowest feature
            gain, f, b, m = table[k, :4]
            best = (float(gain), int(f), int(b), bool(m)) if gain > 0 else (0.0, -1, 0, False)
            g.set_best(node, *best, cat_words(table[k, 4:12]))
        if best[1] < 0:
            g.release(node)  # a leaf for good: its histogram's slot is free

    # ---------------------------------------------------------------- grow
    def features(self, mask: Optional[np.ndarray]) -> None:
        """The features the next trees may split on: a (d,) mask, or None for all (until set again)."""
        self._features = None if mask is None else np.asarray(mask, dtype=bool)
        if self._g is not None:
            self._g[1].set_features(self._features)

    def _node_grower(self, K: int):
        """This grower's :class:`mpiboost._ext._grower.NodeGrower` for K classes (buffers kept across trees)."""
        from .._ext import _grower

        if self._g is None or self._g[0] != K:
            s = self.spec
            self._g = (K, _grower.NodeGrower(self.cols, self.XR, self.off, self.binary.astype(np.uint8),
                                             int(s.max_leaves), int(s.max_depth), int(s.min_data_in_leaf),
                                             float(s.min_child_weight), float(s.l2), self.criterion, K,
                                             self.categorical, s.cat_rules))
            self._g[1].set_features(self._features)
        return self._g[1]

    def grow(self, gh: np.ndarray, K: int, g_scale: float, h_scale: float,
             leaf_value: Callable[[np.ndarray], np.ndarray], kind: str,
             subset: Optional[np.ndarray] = None, leaf_gh: Optional[np.ndarray] = None,
             leaf_h_scale: Optional[float] = None, grad_bins: int = 0, n_rows: int = 0,
             leaf_l2: Optional[Callable[[np.ndarray, np.ndarray], np.ndarray]] = None) -> tuple[Tree, np.ndarray]:
        """One tree for this rank's fixed-point ``gh`` (n_local, 2K+1), the same on every rank.

        ``leaf_value(sums)`` maps the leaves' int64 channel sums (m, 2K+1), in node order, to their
        output values (m, V) (computed alike on every rank from the exact leaf sums). ``subset``: grow on these local rows only
        (sorted indices; e.g. one domain's). Returns the tree and each local row's leaf (-1 for a
        row outside ``subset``). ``leaf_gh`` (units of ``leaf_h_scale``): the channels the leaf values
        are summed from, when the tree is grown on others (quantized gradients); default ``gh``.
        ``grad_bins`` = B: ``gh`` holds quantized gradients ``|g| <= ceil(B/2)``, hessians ``0 <= h <= B`` and
        counts 1, over at most ``n_rows`` rows in all (the global row count; 0: unknown). A node's
        histogram is then built from one packed word per row and class (:mod:`mpiboost._ext._qhist`)
        where its global row count lets the three sums share an int64, and travels as int32 where every
        sum is below 2**31 (packed further for small nodes, see :meth:`_reduce`). 0: int64 channels.

        ``leaf_l2(sums, extra)``, if given, replaces ``leaf_value``: ``extra`` (m,) is the l2 each leaf takes
        beyond the spec's, ``cat_l2`` below a many-vs-many categorical split (LightGBM's rule), else 0.

        With no other rank the whole tree grows in one call without the GIL
        (:meth:`mpiboost._ext._grower.NodeGrower.grow_local`); over ranks, Python runs the collectives
        between the grower's steps.
        """
        B = int(grad_bins)
        self.narrow = B if B and 0 < n_rows and n_rows * (B + 1) < 2**31 - 1 else 0
        self._fields = None
        n = self.cols.shape[1]
        if gh.shape != (n, 2 * K + 1):
            raise ValueError("gh must be (n_local, 2K + 1)")
        gh = np.ascontiguousarray(gh, dtype=np.int64)
        g = self._node_grower(K)
        n_root = int(n_rows) if subset is None else 0
        sent0 = self._bytes()
        if B:
            words, wh, wc, cap = self._pack_words(gh, K, B, n_rows)
            g.begin(gh, g_scale, h_scale, subset, words, wh, wc, cap, n_root)
        else:
            g.begin(gh, g_scale, h_scale, subset, n_root=n_root)
        if self.proto is None or self.proto.comm.size == 1:
            g.grow_local()
        else:
            self._grow_over_ranks(g)
        feature, binv, mleft, lc, rc, gains, node_of_row, cat = g.tree()
        n_nodes = feature.shape[0]
        is_leaf = feature < 0
        # Leaf sums from each rank's own rows, summed exactly: every rank then computes the same
        # leaf values (no broadcast of values, and no rank needs a histogram holding feature 0).
        exact = gh if leaf_gh is None else np.ascontiguousarray(leaf_gh, dtype=np.int64)
        local_sums = _tree.leaf_sums(exact, node_of_row, n_nodes)
        table = local_sums if self.proto is None else self.proto.reduce_counts(local_sums)
        leaves = np.flatnonzero(is_leaf)
        if leaf_l2 is not None:
            # a many-vs-many categorical split's children take cat_l2 more l2 (LightGBM's leaf outputs)
            parent = np.full(n_nodes, -1)
            split = np.flatnonzero(~is_leaf)
            parent[lc[split]] = split
            parent[rc[split]] = split
            extra = np.array([self._cat_l2_of(int(p), feature, binv, cat) for p in parent[leaves]])
            v = np.asarray(leaf_l2(table[leaves], extra), dtype=np.float64)
        else:
            v = np.asarray(leaf_value(table[leaves]), dtype=np.float64)  # one call for all leaves
        value = np.zeros((n_nodes, v.shape[1]))
        value[leaves] = v
        # every internal node's sums are its children's (children come after their parent): the rows
        # and hessian each node covers, for importance, the export and TreeSHAP's weights
        table = np.array(table, dtype=np.int64)
        _tree.subtree_sums(table, feature, lc, rc)
        # the hessian summed over the K channels in floating point: K int64 sums of up to 2**62 each would wrap
        hess = table[:, K:2 * K].astype(np.float64).sum(axis=1)
        tree = Tree(feature, binv, mleft, lc, rc, value, kind, gain=gains, count=table[:, 2 * K],
                    weight=hess * (h_scale if leaf_h_scale is None else leaf_h_scale), cat=cat)
        self.bytes_per_tree.append(self._bytes() - sent0)
        return tree, node_of_row

    def _cat_l2_of(self, parent: int, feature: np.ndarray, binv: np.ndarray, cat: np.ndarray) -> float:
        """The extra l2 of a child of ``parent``: ``cat_l2`` if its split is categorical many-vs-many (more than
        ``max_cat_to_onehot`` bins, the missing one counted), else 0."""
        if parent < 0 or binv[parent] >= 0:
            return 0.0
        f = int(feature[parent])
        if int(self.n_bins[f]) + 1 <= int(self.spec.max_cat_to_onehot):  # one-vs-rest (the missing bin counted)
            return 0.0
        return float(self.spec.cat_l2)

    def _grow_over_ranks(self, g) -> None:
        """Best-first growth with the collectives between the grower's steps: the root's histogram reduced,
        then per split a broadcast of the split (center), the rows partitioned on every rank, the smaller
        child's histogram reduced, the larger one's by subtraction."""
        root = self._reduce(g.build_root(), rows=g.root_rows or None)
        g.take(0, root)
        self._agree(g, 0)
        leaves = 1
        while leaves < self.spec.max_leaves:
            packed = None
            if self.center or self._blocks is not None:
                c = g.choose(self._blocks is None)
                packed = [-1, 0, 0, 0.0, 0, 0, 0.0] + [0.0] * 8 if c is None else \
                    [c[0], c[1], c[2], float(c[3]), c[4], c[5], c[6], *cat_halves(g.best_cat(c[0]))]
            if self._blocks is None:
                # the split, its gain (the model keeps every node's gain: every rank the same) and a
                # categorical split's bins (4 words as 8 exact halves)
                v = self.proto.broadcast_hypothesis(packed, 15)
            else:
                v = np.asarray(packed, dtype=np.float64)
            node = int(v[0])
            if node < 0:
                break
            g.set_best(node, float(v[6]), int(v[1]), int(v[2]), bool(v[3]), cat_words(v[7:15]))
            L, R, ln, rn = g.partition(node, int(v[1]), int(v[2]), bool(v[3]))
            if self._blocks is None:
                nl, nr = int(v[4]), int(v[5])
            else:
                # every rank holds its block of the parent's histogram: the counts come from
                # an exact sum of the local counts instead
                nl, nr = (int(x) for x in self.proto.reduce_counts(np.array([ln, rn], dtype=np.int64)))
            _, local = g.build_child(node, nl, nr)
            g.take_children(node, self._reduce(local, rows=min(nl, nr)))
            self._agree(g, L)
            self._agree(g, R)
            leaves += 1

    def _pack_words(self, gh: np.ndarray, K: int, B: int, n_rows: int):
        """This tree's packed words (:mod:`mpiboost._ext._qhist`): ``(words, wh, wc, most rows)``, the fields
        wide enough for nodes of up to ``most rows`` global rows (all of them when ``n_rows`` fits)."""
        from .._ext import _qhist

        g_max, h_max = (B + 1) // 2, B
        cap = _qhist.largest_fitting(g_max, h_max)
        if 0 < n_rows <= cap:
            cap = int(n_rows)
        wh, wc = _qhist.word_fields(cap, g_max, h_max)
        self._fields = (wh, wc, cap)
        if self._words is None or self._words.shape != (gh.shape[0], K):
            self._words = np.empty((gh.shape[0], K), dtype=np.int64)
        _qhist.pack(gh, K, wh, wc, self._words)
        return self._words, wh, wc, cap

    def _bytes(self) -> int:
        if self.proto is None:
            return 0
        b = self.proto.comm.bytes
        return int(b.sent + b.received)


def cat_halves(words: np.ndarray) -> list:
    """4 uint64 words as 8 doubles (their 32-bit halves, exact in a double) for a broadcast of floats."""
    w = np.asarray(words, dtype=np.uint64)
    return [float(x) for x in np.stack([w >> np.uint64(32), w & np.uint64(0xFFFFFFFF)], axis=1).ravel()]


def cat_words(halves) -> np.ndarray:
    """:func:`cat_halves`' inverse."""
    h = np.asarray(halves, dtype=np.float64).astype(np.uint64).reshape(4, 2)
    return (h[:, 0] << np.uint64(32)) | h[:, 1]


def feature_blocks(off: np.ndarray, size: int) -> np.ndarray:
    """The feature ranges each of ``size`` ranks owns under reduce-scatter (``off``: packed histogram
    offsets): contiguous, of about equal slots; rank r owns features ``bounds[r] .. bounds[r+1] - 1``."""
    d = int(off.shape[0]) - 1
    total = int(off[-1])
    bounds = [0]
    for r in range(1, size):
        bounds.append(int(np.searchsorted(off, total * r / size, side="left")))
    bounds.append(d)
    return np.maximum.accumulate(np.minimum(np.array(bounds), d))


def pack_sums(hist: np.ndarray) -> np.ndarray:
    """Channels ``(g_1..g_K, h_1..h_K, count)`` as int32 words ``(g_k * 2**16 + h_k, count)``.

    For integer gradients and hessians with ``0 <= sum h < 2**16`` and ``|sum g| < 2**15`` over the
    rows summed: every partial sum of words (over ranks, in any order) is then the word of the
    partial sums, inside int32, so the words add exactly and :func:`unpack_sums` reads the sums back.
    """
    C = hist.shape[1]
    K = (C - 1) // 2
    words = np.empty((hist.shape[0], K + 1), dtype=np.int32)
    words[:, :K] = hist[:, :K] * 65536 + hist[:, K:2 * K]
    words[:, K] = hist[:, 2 * K]
    return words


def unpack_sums(words: np.ndarray) -> np.ndarray:
    """The int64 channels of summed :func:`pack_sums` words."""
    K = words.shape[1] - 1
    w = words[:, :K].astype(np.int64)
    h = w & 0xFFFF
    out = np.empty((words.shape[0], 2 * K + 1), dtype=np.int64)
    out[:, :K] = (w - h) >> 16
    out[:, K:2 * K] = h
    out[:, 2 * K] = words[:, K]
    return out


# ------------------------------------------------------------------ learners
def sign_leaf(sums: np.ndarray) -> np.ndarray:
    """Each leaf's +1 where its weighted label sum is >= 0, else -1 (the stump's rule): (m, 1)."""
    return np.where(sums[:, :1] >= 0, 1.0, -1.0)


def class_leaf(K: int):
    """The one-hot value of the leaf's heaviest class (ties: the highest class, as class stumps)."""
    def leaf(sums: np.ndarray) -> np.ndarray:
        out = np.zeros((sums.shape[0], K))
        out[np.arange(sums.shape[0]), K - 1 - np.argmax(sums[:, K - 1::-1], axis=1)] = 1.0
        return out
    return leaf


class TreeClassifierLearner:
    """The tree counterpart of the stump learners: a classifier tree for row weights ``w``, with
    their interface (``fit``, ``error_terms``, ``update``), so the reweighting algorithms take it
    unchanged.

    ``K == 1``: labels -1/+1 and sign leaves (AdaBoost, SmoothBoost); the split gain is the
    exponential loss's Newton gain at the current weights (``S^2 / (W + l2)`` per side, S the
    weighted label sum, W the weight: the weighted Gini criterion), or ``error`` (the drop of the
    weighted error, with which a tree of two leaves is the stump of the histogram search, bit for
    bit). ``K >= 2``: class indices and class leaves (SAMME), grown by the weighted Gini gain
    ``sum_k W_k^2 / W`` per side. Weights are scaled so the mean row weighs 1
    (``--min-child-weight`` and ``--l2`` then read as for LightGBM's hessians).
    """

    reduces = "per (feature, bin) slot: weight sums (signed, or per class), weights and row counts, int64"

    def __init__(self, spec: TreeSpec, proto, cols: np.ndarray, y: np.ndarray, n_bins: np.ndarray, n_global: int,
                 search: str = "histogram", n_samples: int = 0, start: int = 0, n_classes: int = 1):
        if search not in ("histogram", "sample"):
            raise ValueError(f"search must be histogram or sample, not {search!r}")
        self.K = int(n_classes)
        self.kind = "sign" if self.K == 1 else "class"
        self.output = "sign" if self.K == 1 else "argmax"
        if self.K > 1:
            spec = TreeSpec(**{**spec.__dict__, "split_gain": "newton"})
        self.spec, self.proto, self.cols = spec, proto, cols
        self.y = y if self.K == 1 else np.ascontiguousarray(y, dtype=np.int32)
        self.cls = self.y  # the class kernels' name
        self.mode = search
        self.n_global, self.n_samples, self.start = int(n_global), int(n_samples), int(start)
        self.n_bins = np.ascontiguousarray(n_bins, dtype=np.int64)
        self.grower = TreeGrower(spec, proto, cols, n_bins) if search == "histogram" else None
        self._cum = np.empty(cols.shape[1], dtype=np.int64)
        self.leaf_value = sign_leaf if self.K == 1 else class_leaf(self.K)
        # a tree of one split is a stump: stored as one (sign trees; class trees grow by Gini)
        self.stumps = spec.max_leaves == 2 and self.K == 1

    def _units(self, w: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The rows' fixed-point channels: (w y, w, 1), or (w [y = k] for each k, w K times, 1)."""
        K = self.K
        gh = np.zeros((w.shape[0], 2 * K + 1), dtype=np.int64)
        gh[:, 2 * K] = 1
        if K == 1:
            _tree.to_units(np.ascontiguousarray(w * y), FIXED_SHIFT, gh, 0)
            _tree.to_units(w, FIXED_SHIFT, gh, 1, True)
            return gh
        _tree.to_units(w, FIXED_SHIFT, gh, K, True)
        rows = np.arange(w.shape[0])
        gh[rows, np.asarray(y, dtype=np.int64)] = gh[:, K]
        gh[:, K + 1:2 * K] = gh[:, K:K + 1]
        return gh

    def fit(self, w: np.ndarray, rng=None, subset: Optional[np.ndarray] = None) -> Choice:
        """The tree for the normalized row weights ``w``, the same on every rank (``subset``: on
        these local rows only, e.g. one domain's)."""
        w = np.ascontiguousarray(w, dtype=np.float64)
        if self.mode == "sample":
            if subset is not None:
                raise ValueError("sample mode grows on every row")
            return self._fit_sample(w, rng)
        gh = self._units(w, self.y)
        scale = math.ldexp(1.0, -FIXED_SHIFT) * self.n_global
        tree, _ = self.grower.grow(gh, self.K, scale, scale, self.leaf_value, self.kind, subset=subset)
        return Choice(as_stump(tree) if self.stumps else tree)

    def _fit_sample(self, w: np.ndarray, rng) -> Choice:
        """Sample mode: N rows drawn in proportion to the weights; the center grows the tree on them."""
        from .._ext import _weights

        _weights.fixed_cumsum(w, FIXED_SHIFT, self._cum)
        sample = self.proto.proportional_sample(self._cum, self.cols, self.y, self.n_samples, rng, start=self.start)
        V = 1 if self.K == 1 else self.K
        size = packed_size(self.spec.max_leaves, V)
        packed = None
        if self.proto.is_center:
            Xs = np.ascontiguousarray(sample.X.T)
            ys = np.asarray(sample.y)
            N = ys.shape[0]
            gh = self._units(np.full(N, 1.0 / N), ys.astype(np.float64) if self.K == 1 else ys)
            scale = math.ldexp(1.0, -FIXED_SHIFT) * N
            tree, _ = TreeGrower(self.spec, None, Xs, self.n_bins).grow(gh, self.K, scale, scale, self.leaf_value,
                                                                        self.kind)
            wrong = int(np.count_nonzero(tree.predict(Xs) != ys))
            packed = pack_tree(tree, wrong / N, size)
        tree, error = unpack_tree(self.proto.broadcast_hypothesis(packed, size), V, self.kind)
        return Choice(as_stump(tree) if self.stumps else tree, sample_error=error)

    def error_terms(self, h, w: np.ndarray):
        if self.K > 1:
            from .._ext import _multiclass

            return _multiclass.class_error_terms(h.column(self.cols), self.y, w, *h.class_args())
        from .._ext import _weights

        return _weights.error_terms(h.column(self.cols), self.y, w, *h.args())

    def update(self, w, margin, h, factor_correct, factor_wrong, coef):
        if self.K > 1:
            from .._ext import _multiclass

            return _multiclass.apply_class_stump(w, margin, h.column(self.cols), self.y, *h.class_args(),
                                                 factor_correct, factor_wrong, coef)
        from .._ext import _weights

        return _weights.apply_stump(w, margin, h.column(self.cols), self.y, *h.args(), factor_correct,
                                    factor_wrong, coef)


SignTreeLearner = TreeClassifierLearner  # K = 1


def packed_size(max_leaves: int, V: int) -> int:
    """Doubles of a broadcast tree of at most ``max_leaves`` leaves and V values per node (with a figure)."""
    return 2 + (5 + V) * (2 * max_leaves - 1)


def pack_tree(tree: Tree, figure: float, size: int) -> np.ndarray:
    """A tree (and one figure, e.g. its sample error) as ``size`` doubles for a broadcast."""
    packed = np.zeros(size)
    m = tree.n_nodes
    packed[0], packed[1] = m, figure
    body = np.concatenate([np.stack([tree.feature, tree.bin, tree.missing_left, tree.left, tree.right], 1),
                           tree.value], axis=1)
    packed[2:2 + body.size] = body.ravel()
    return packed


def unpack_tree(v: np.ndarray, V: int, kind: str) -> tuple:
    """:func:`pack_tree`'s inverse: (tree, figure)."""
    m, width = int(v[0]), 5 + V
    body = v[2:2 + width * m].reshape(m, width)
    return Tree(body[:, 0], body[:, 1], body[:, 2], body[:, 3], body[:, 4], body[:, 5:], kind), float(v[1])


def as_stump(tree: Tree) -> Stump:
    """A sign tree of at most one split as the equal :class:`Stump` (its left leaf's sign on the left)."""
    if tree.feature[0] < 0:
        return Stump(-1, 0, int(tree.value[0, 0]))
    left = int(tree.value[tree.left[0], 0])
    right = int(tree.value[tree.right[0], 0])
    if left == right:
        return Stump(-1, 0, left)
    return Stump(int(tree.feature[0]), int(tree.bin[0]), left, bool(tree.missing_left[0]))


def stump_tree(stump: Stump) -> Tree:
    """A binary :class:`Stump` as the equal sign tree (the inverse of :func:`as_stump`): a model whose start
    is a forest holds its later stumps as trees of one split."""
    if stump.right is not None:
        raise ValueError("a class stump has no sign tree")
    left = int(stump.left)
    if stump.feature < 0:
        return Tree([-1], [0], [0], [-1], [-1], [[float(left)]], "sign")
    return Tree([int(stump.feature), -1, -1], [int(stump.bin), 0, 0], [int(bool(stump.missing_left)), 0, 0],
                [1, -1, -1], [2, -1, -1], [[0.0], [float(left)], [float(-left)]], "sign")


def resolve_splits(tree: Tree, value_of: Callable[[int], Optional[int]]) -> Tree:
    """The tree with the splits on some features decided: ``value_of(f)`` is feature f's bin for every row
    (None: f stays a split). Only the nodes a row can reach are kept, numbered in pre-order (children
    after their parent), with their leaf values, gains and counts (a forest grown with each task's
    indicator as a feature, specialised to one task)."""
    keep: list = []
    stack = [0]  # pre-order without recursion: a leaf-wise tree may be thousands of levels deep
    while stack:
        node = _resolved(tree, stack.pop(), value_of)
        keep.append(node)
        if tree.feature[node] >= 0:
            stack.extend((int(tree.right[node]), int(tree.left[node])))
    new_id = {old: i for i, old in enumerate(keep)}
    feature, bin_, ml, left, right = [], [], [], [], []
    for old in keep:
        split = tree.feature[old] >= 0
        feature.append(int(tree.feature[old]))
        bin_.append(int(tree.bin[old]))
        ml.append(int(tree.missing_left[old]))
        left.append(_resolved_child(tree, int(tree.left[old]), value_of, new_id) if split else -1)
        right.append(_resolved_child(tree, int(tree.right[old]), value_of, new_id) if split else -1)
    idx = np.asarray(keep)
    return Tree(feature, bin_, ml, left, right, tree.value[idx], tree.kind, gain=tree.gain[idx],
                count=tree.count[idx], weight=tree.weight[idx], cat=tree.cat[idx])


def _resolved(tree: Tree, node: int, value_of) -> int:
    """The node a row reaches from ``node`` through the decided splits."""
    while tree.feature[node] >= 0:
        b = value_of(int(tree.feature[node]))
        if b is None:
            break
        if tree.bin[node] < 0:  # a categorical split
            node = int(tree.left[node] if b in tree.left_bins(node) else tree.right[node])
            continue
        node = int(tree.left[node] if b <= tree.bin[node] else tree.right[node])
    return node


def _resolved_child(tree: Tree, node: int, value_of, new_id: dict) -> int:
    """The kept node a row reaches from ``node`` (through decided splits)."""
    return new_id[_resolved(tree, node, value_of)]


def flatten(trees: list, V: int) -> tuple:
    """Trees as the flat arrays of the prediction kernel and the model file:
    ``(feature, bin, missing_left, left, right, value (nodes, V), start, cat (nodes, 4))``; children are
    numbered within their tree, ``start[t]`` is tree t's first node."""
    sizes = [t.n_nodes for t in trees]
    start = np.zeros(len(trees) + 1, dtype=np.int64)
    np.cumsum(sizes, out=start[1:])
    if not trees:
        z = np.zeros(0, dtype=np.int32)
        return z, z, np.zeros(0, np.uint8), z, z, np.zeros((0, V)), start, np.zeros((0, 4), np.uint64)
    join = np.concatenate
    return (join([t.feature for t in trees]), join([t.bin for t in trees]), join([t.missing_left for t in trees]),
            join([t.left for t in trees]), join([t.right for t in trees]),
            np.ascontiguousarray(join([t.value for t in trees]).reshape(-1, V)), start,
            np.ascontiguousarray(join([t.cat for t in trees])))
