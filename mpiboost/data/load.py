"""Per-rank loading: each rank reads only its contiguous block of global rows.

Rows have a global order: the files in the order given, each file's rows in
order. Entity ``e`` of ``k`` owns rows ``[e*n//k, (e+1)*n//k)``; with a
dedicated coordinator rank 0 owns none and ranks 1..size-1 are the entities.
Reading is chunked (no rank reads a whole file) and validated collectively,
so bad input ends every rank with the same message and exit code 2.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Iterator, Optional, Sequence

import numpy as np

from .. import watchdog
from ..errors import CollectiveError, InputError
from . import labels as lab
from .binning import DEFAULT_SAMPLE, MAX_VALUE_BINS, BinMapper, fit_edges, not_codes, sample_rows
from .format import MAX_DOMAINS, FileInfo, inspect, read_rows
from ..h5read import open_read

CHUNK_BYTES = 8 << 20


@dataclass(frozen=True)
class Layout:
    """Which global rows each rank owns: contiguous blocks in rank order.

    Even blocks by default; ``counts`` (rows per rank, summing to ``n``)
    gives blocks of any sizes, empty ones included, e.g. for ranks on nodes
    of different sizes. The model does not depend on the blocks.
    """

    n: int
    size: int
    dedicated_coordinator: bool = False
    counts: Optional[tuple] = None

    def __post_init__(self) -> None:
        if self.counts is None:
            return
        counts = tuple(int(c) for c in self.counts)
        if len(counts) != self.size or min(counts) < 0 or sum(counts) != self.n:
            raise InputError(f"blocks {list(counts)}: give {self.size} row counts >= 0 summing to the "
                             f"{self.n:,} rows")
        if self.dedicated_coordinator and counts[0] != 0:
            raise InputError("blocks: with a dedicated coordinator rank 0 holds no rows (its count must be 0)")
        object.__setattr__(self, "counts", counts)

    @property
    def n_entities(self) -> int:
        return self.size - 1 if self.dedicated_coordinator else self.size

    def block(self, rank: int) -> tuple[int, int]:
        """Global rows ``[start, stop)`` of ``rank``."""
        if self.counts is not None:
            start = sum(self.counts[:rank])
            return start, start + self.counts[rank]
        if self.dedicated_coordinator:
            if rank == 0:
                return 0, 0
            e = rank - 1
        else:
            e = rank
        k = self.n_entities
        return e * self.n // k, (e + 1) * self.n // k

    def owner(self, rows: np.ndarray) -> np.ndarray:
        """Rank owning each global row id."""
        starts = np.array([self.block(r)[0] for r in range(self.size)])
        stops = np.array([self.block(r)[1] for r in range(self.size)])
        nonempty = np.nonzero(stops > starts)[0]
        idx = np.searchsorted(starts[nonempty], rows, side="right") - 1
        return nonempty[idx]


@dataclass
class Shard:
    """This rank's rows, binned, with what every rank knows about the whole data."""

    cols: Optional[np.ndarray]  # (d, n_local) uint8 bins, feature-major (load)
    y: np.ndarray  # (n_local,) int8/int32 class codes; float64 targets when ``regression``
    domain: np.ndarray  # (n_local,) int32
    start: int  # global id of the first local row
    n_global: int
    n_domains: int
    files: list[FileInfo]
    layout: Layout
    bins: Optional[BinMapper] = None
    feature_names: Optional[list[str]] = None
    domain_names: Optional[list[str]] = None
    label_counts: dict = field(default_factory=dict)
    domain_counts: Optional[np.ndarray] = None
    timings: dict = field(default_factory=dict)  # seconds: read, bin_edges, bin
    X: Optional[np.ndarray] = None  # (n_local, d) raw values (load_raw only)
    classes: Optional[list] = None  # the label values of the classes (y codes index them); None: -1/+1
    weight: Optional[np.ndarray] = None  # (n_local,) float64 sample weights (>= 0); None: every row weighs 1
    extra: dict = field(default_factory=dict)  # further inputs of an algorithm, e.g. {"q_data": (X, domain)}
    file_rows: bool = False  # rows start..stop are those of the files, in order (as read; not a subset)
    regression: bool = False  # y holds numeric targets (task "regression"), not class codes

    @property
    def n_local(self) -> int:
        return int(self.y.shape[0])

    @property
    def n_classes(self) -> int:
        return len(self.classes) if self.classes is not None else 2

    @property
    def d(self) -> int:
        return int(self.cols.shape[0]) if self.cols is not None else int(self.X.shape[1])

    def rows(self, index: np.ndarray) -> np.ndarray:
        """Binned rows ``index`` as a row-major ``(len(index), d)`` array."""
        return np.ascontiguousarray(self.cols[:, index].T)

    @property
    def stop(self) -> int:
        return self.start + self.n_local

    @property
    def row_ids(self) -> np.ndarray:
        return np.arange(self.start, self.stop, dtype=np.int64)


def _chunk_rows(d: int, itemsize: int) -> int:
    return max(1024, CHUNK_BYTES // max(1, d * itemsize))


def _offsets(files: Sequence[FileInfo]) -> np.ndarray:
    off = np.zeros(len(files) + 1, dtype=np.int64)
    off[1:] = np.cumsum([f.n for f in files])
    return off


def iter_block(
    files: Sequence[FileInfo],
    start: int,
    stop: int,
    *,
    what: Sequence[str] = ("X", "y", "domain"),
    chunk_rows: Optional[int] = None,
) -> Iterator[tuple[int, int, int, dict]]:
    """Yield ``(global_start, file_index, file_row, arrays)`` chunks of rows ``[start, stop)``."""
    import h5py

    off = _offsets(files)
    for fi, info in enumerate(files):
        lo, hi = max(start, off[fi]), min(stop, off[fi + 1])
        if lo >= hi:
            continue
        step = chunk_rows or _chunk_rows(info.d, info.x_dtype.itemsize)
        if hasattr(info, "local"):  # a MemoryFile (data/memory.py): this rank's rows are in memory
            for g in range(lo, hi, step):
                gs = min(hi, g + step)
                r0, r1 = int(g - off[fi]), int(gs - off[fi])
                arrays = {name: info.rows(name, r0, r1) for name in what if name in info.local}
                yield int(g), fi, r0, arrays
            continue
        try:
            f = open_read(info.path)
        except (OSError, RuntimeError, ValueError) as exc:
            raise InputError(f"{info.path}: not a readable HDF5 file ({exc})") from None
        with f:
            for g in range(lo, hi, step):
                gs = min(hi, g + step)
                r0, r1 = int(g - off[fi]), int(gs - off[fi])
                arrays = {}
                for name in what:
                    if name == "domain" and "domain" not in f:
                        continue
                    arrays[name] = read_rows(f, name, r0, r1, info.path)
                watchdog.tick()  # a chunk read is progress; a read stuck on a dead mount is not
                yield int(g), fi, r0, arrays


def _bad_label(path: str, row: int, value, classes) -> InputError:
    shown = ", ".join(map(str, classes[:8])) + (", ..." if len(classes) > 8 else "")
    return InputError(f"{path}: dataset 'y' row {row}: label {value} is not one of the classes ({shown})")


def _check_features(X: np.ndarray, path: str, row0: int, categorical: Optional[dict] = None) -> None:
    for j, k in (categorical or {}).items():  # codes 0 .. k-1 (or missing) in a categorical feature
        v = X[:, j]
        bad = not_codes(v, k)
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            raise InputError(f"{path}: dataset 'X' row {row0 + r}, feature {j}: value {v[r]} is not a category "
                             f"code of this categorical feature (0 .. {k - 1}, or NaN for missing)")
    if X.dtype.kind == "f":
        inf = np.isinf(X)
        if inf.any():
            r, j = np.argwhere(inf)[0]
            raise InputError(
                f"{path}: dataset 'X' row {row0 + r}, feature {j}: value {X[r, j]} is infinite "
                "(use NaN for missing values)"
            )


def check_same_columns(reference: FileInfo, others: Sequence[FileInfo]) -> None:
    """Refuse (InputError naming both files and the first differing column) any file of ``others`` whose
    columns are not ``reference``'s, in its order: every training, validation, target and source file of a
    run has the first training file's columns, as ``predict`` asks of its files. Files without column
    names are checked by their number of columns only."""
    want = list(reference.feature_names or [])
    for info in others:
        if info.d != reference.d:
            raise InputError(f"{info.path} has {info.d} features but {reference.path} has {reference.d}: "
                             "all files of one job must have the same features")
        have = list(info.feature_names or [])
        if want and have and have != want:
            j = next(k for k in range(len(want)) if have[k] != want[k])
            raise InputError(f"{info.path}: column {j} is {have[j]!r} but {reference.path} has {want[j]!r} there: "
                             "every training, validation, target and source file must have the first training "
                             "file's columns in its order (convert it with --recipe of that file)")
        mine, theirs = info.categorical or {}, reference.categorical or {}
        if mine != theirs:
            j = min(set(mine.items()) ^ set(theirs.items()))[0]
            raise InputError(f"{info.path}: column {j} has {_categories_text(mine, j)} but {reference.path} has "
                             f"{_categories_text(theirs, j)}: the categorical columns and their categories must "
                             "be the first training file's (convert it with --recipe of that file)")


def _categories_text(categorical: dict, j: int) -> str:
    return f"{categorical[j]} categories" if j in categorical else "no categories (numeric)"


def _resolve_files(comm, paths: Sequence[str | os.PathLike]) -> list[FileInfo]:
    if not paths:
        raise InputError("no data files given")
    infos: list[FileInfo] = []
    with comm.collective_guard():
        # a FileInfo given is in-memory rows (data/memory.py), its schema agreed by the ranks already
        infos = [p if isinstance(p, FileInfo) else inspect(p) for p in paths]
        d0 = infos[0].d
        if d0 == 0:
            # Nothing to bin or split on (`info` still describes such a file).
            raise InputError(f"{infos[0].path}: dataset 'X' has no features (shape ({infos[0].n}, 0))")
        check_same_columns(infos[0], infos[1:])
        if sum(i.n for i in infos) == 0:
            raise InputError("the data files hold no rows: " + ", ".join(i.path for i in infos))
    return infos


def _domain_mode(files: Sequence[FileInfo], domains: str) -> str:
    if domains not in ("auto", "file", "column", "none"):
        raise InputError(f"domains must be auto, file, column or none, not {domains!r}")
    if domains == "auto":
        if len(files) > 1:
            return "file"
        return "column" if files[0].has_domain else "none"
    if domains == "column":
        missing = [f.path for f in files if not f.has_domain]
        if missing:
            raise InputError(f"{missing[0]}: no 'domain' dataset (needed for domains='column')")
    return domains


def _read_targets(comm, files, layout, start, stop, task, mode, classes=None, unseen=None):
    """This rank's labels (as class codes, see :mod:`.labels`) and domain ids; the class list.

    ``classes`` given: rows must hold one of them (validation, evaluation),
    unless ``unseen`` is a dict: then a row of another label gets code -1
    (0 for binary codes) and ``unseen`` counts such rows per label value over
    all ranks (an error still if no row holds a class). Otherwise the class
    list is the union of every rank's label values.
    """
    n_local = stop - start
    if task in ("binary", "multiclass"):
        targets = [f for f in files if getattr(f, "is_target", False)]
        if targets:
            raise CollectiveError(
                f"{targets[0].path}: dataset 'y' holds numeric targets ({targets[0].y_dtype}), not class labels: "
                "train a regression objective on it (--algo gbdt --objective regression), or convert the labels "
                "with --task classification to use their values as classes")
    regression = task == "regression"
    raw = np.empty(n_local, dtype=np.float64 if regression else np.int64)
    domain = np.zeros(n_local, dtype=np.int32)
    segments = []  # (slice, file index, first file row)
    seen: set = set()
    with comm.collective_guard():
        for g, fi, r0, arr in iter_block(files, start, stop, what=("y", "domain"), chunk_rows=1 << 20):
            s = slice(g - start, g - start + len(arr["y"]))
            raw[s] = arr["y"]
            segments.append((s, fi, r0))
            info = files[fi]
            fc = getattr(info, "classes", None)
            if regression:
                raw[s] = _target_values(arr["y"], fc, info, r0)
            elif fc is not None:
                bad = np.nonzero((arr["y"] < 0) | (arr["y"] >= len(fc)))[0]
                if bad.size:
                    raise InputError(
                        f"{info.path}: dataset 'y' row {r0 + bad[0]}: {arr['y'][bad[0]]} is not an index into "
                        f"the file's {len(fc)} classes"
                    )
            if task is not None and not regression and classes is None:
                seen.update(lab.values_of(arr["y"], fc))
                if len(seen) > lab.MAX_CLASSES:
                    raise InputError(
                        f"{info.path}: more than {lab.MAX_CLASSES} distinct labels by row {r0 + len(arr['y'])}: "
                        "are these class labels? (numeric targets train a regression: --algo gbdt --objective "
                        "regression)"
                    )
            if mode == "file":
                domain[s] = fi
            elif mode == "column":
                dom = arr["domain"]
                bad = np.nonzero(dom < 0)[0]
                if bad.size:
                    raise InputError(
                        f"{files[fi].path}: dataset 'domain' row {r0 + bad[0]}: id {dom[bad[0]]} is negative"
                    )
                # Checked in the file's dtype, before the int32 copy could wrap a wide id.
                bad = np.nonzero(dom >= MAX_DOMAINS)[0]
                if bad.size:
                    raise InputError(
                        f"{files[fi].path}: dataset 'domain' row {r0 + bad[0]}: id {dom[bad[0]]} is above the limit "
                        f"{MAX_DOMAINS - 1} (ids are 0, 1, ... and every id up to the largest is a domain: "
                        f"at most {MAX_DOMAINS} domains)"
                    )
                domain[s] = dom
    if task is None:
        return raw.astype(np.int32), domain, list(classes) if classes is not None else None
    if regression:
        return raw, domain, None
    if classes is None:
        every = comm.allgather(sorted(seen, key=lambda v: (isinstance(v, str), v))) if comm.size > 1 else [seen]
        try:
            classes = lab.canonical(v for part in every for v in part)
        except ValueError as exc:
            raise CollectiveError(f"{', '.join(f.path for f in files)}: {exc}") from None
        if len(classes) > lab.MAX_CLASSES:
            raise CollectiveError(f"the labels hold {len(classes)} classes; at most {lab.MAX_CLASSES} are allowed")
    codes = np.empty(n_local, dtype=np.int32)
    with comm.collective_guard():
        for s, fi, r0 in segments:
            fc = getattr(files[fi], "classes", None)
            codes[s] = lab.lookup(raw[s], fc, classes)
            bad = np.nonzero(codes[s] < 0)[0]
            if bad.size and unseen is None:
                v = raw[s][bad[0]]
                raise _bad_label(files[fi].path, r0 + bad[0], fc[v] if fc is not None else v, classes)
            if bad.size:
                for v, c in zip(*np.unique(raw[s][bad], return_counts=True)):
                    key = lab.plain(fc[v] if fc is not None else v)
                    unseen[key] = unseen.get(key, 0) + int(c)
    if unseen is not None:
        parts = comm.allgather(dict(unseen)) if comm.size > 1 else [dict(unseen)]
        unseen.clear()
        for part in parts:
            for k, c in part.items():
                unseen[k] = unseen.get(k, 0) + c
        known = comm.allreduce_int(np.array([int((codes >= 0).sum())]))[0]
        if known == 0 and layout.n > 0:
            shown = ", ".join(map(str, classes[:8])) + (", ..." if len(classes) > 8 else "")
            raise CollectiveError(
                f"{', '.join(f.path for f in files)}: no row holds one of the model's classes ({shown}); "
                f"the labels found: {', '.join(map(str, sorted(unseen, key=str)[:8]))}"
            )
    if task == "binary":
        if len(classes) != 2:
            shown = ", ".join(map(str, classes[:8])) + (", ..." if len(classes) > 8 else "")
            raise CollectiveError(
                f"{', '.join(f.path for f in files)}: binary labels need exactly two classes, these files hold "
                f"{len(classes)} ({shown})"
            )
        return lab.signed(codes), domain, classes
    return codes, domain, classes


MAX_TARGET = 1e150  # a regression target's largest size: its square (RMSE, R^2) and residuals stay finite


def _target_values(y: np.ndarray, file_classes, info, r0: int) -> np.ndarray:
    """Regression targets of rows ``y`` of a file: float ``y`` itself, integer label values, or the numbers
    a ``classes`` attribute lists (InputError for text labels or a value that is not finite)."""
    if file_classes is not None:
        if not all(lab.is_number(v) for v in file_classes):
            text = next(v for v in file_classes if not lab.is_number(v))
            raise InputError(f"{info.path}: the labels are text ({text!r} ...): a regression objective needs "
                             "numeric targets")
        bad = np.nonzero((y < 0) | (y >= len(file_classes)))[0]
        if bad.size:
            raise InputError(f"{info.path}: dataset 'y' row {r0 + bad[0]}: {y[bad[0]]} is not an index into "
                             f"the file's {len(file_classes)} classes")
        return np.asarray(file_classes, dtype=np.float64)[np.asarray(y, dtype=np.intp)]
    out = np.asarray(y, dtype=np.float64)
    bad = np.flatnonzero(~(np.abs(out) <= MAX_TARGET))
    if bad.size:
        raise InputError(f"{info.path}: dataset 'y' row {r0 + bad[0]}: target {out[bad[0]]} is not finite or beyond "
                         f"{MAX_TARGET:g} in size (scale the targets: their squares and residuals must stay finite)")
    return out


def read_weights(comm, files: Sequence[FileInfo], start: int, stop: int) -> Optional[np.ndarray]:
    """Collective: this rank's sample weights (rows ``[start, stop)``), or None where no file has any.

    Every file has a ``weight`` dataset or none does; a weight must be finite and >= 0 (an InputError names
    the file and row otherwise: LightGBM refuses negative weights too). A zero weight keeps the row's
    count (``--min-data-in-leaf``) but no gradient, as in LightGBM.

    Parameters
    ----------
    comm : Comm
        The ranks that read the files: an error on one rank (a bad weight) is raised on every rank.
    files : sequence of FileInfo
        The data files, inspected (:func:`mpiboost.data.format.inspect`), their rows in order.
    start, stop : int
        This rank's global rows ``[start, stop)``.

    Returns
    -------
    numpy.ndarray of float64, shape (stop - start,), or None
        The weights of this rank's rows; None where no file has a ``weight`` dataset.
    """
    have = [bool(getattr(f, "has_weight", False)) for f in files]
    if not any(have):
        return None
    out = np.empty(stop - start, dtype=np.float64)
    with comm.collective_guard():
        if not all(have):
            without, other = files[have.index(False)], files[have.index(True)]
            raise InputError(f"{without.path} has no 'weight' dataset while {other.path} has one: give every "
                             "file its rows' weights or none")
        for g, fi, r0, arr in iter_block(files, start, stop, what=("weight",), chunk_rows=1 << 20):
            w = np.asarray(arr["weight"], dtype=np.float64)
            bad = np.flatnonzero(~np.isfinite(w) | (w < 0))
            if bad.size:
                raise InputError(f"{files[fi].path}: dataset 'weight' row {r0 + bad[0]}: {w[bad[0]]} is not a "
                                 "weight (finite and >= 0)")
            out[g - start:g - start + w.size] = w
    return out


def _shard(comm, files, layout, cols, y, domain, start, mode, bins, task, X=None, classes=None,
           weight=None) -> Shard:
    n_domains = len(files) if mode == "file" else (int(comm.allreduce_max(int(domain.max()) if domain.size else -1)) + 1)
    n_domains = max(n_domains, 1)
    dcounts = comm.allreduce_int(np.bincount(domain, minlength=n_domains).astype(np.int64))
    if mode == "file":
        names = [str(f.attrs.get("domain_name") or os.path.splitext(os.path.basename(f.path))[0]) for f in files]
        if len(set(names)) < len(names):
            names = [f"{name}#{k}" for k, name in enumerate(names)]
    else:
        names = files[0].domain_names
        if names is not None:
            # a file's names for fewer domains than its ids use: the others are named by their id
            names = [str(nm) for nm in names[:n_domains]] + [str(k) for k in range(len(names), n_domains)]
            if len(set(names)) < len(names):
                names = [f"{name}#{k}" for k, name in enumerate(names)]
    labels: dict = {}
    if task is not None and task != "regression":
        index = np.where(y == 1, 1, np.where(y == -1, 0, -1)) if task == "binary" else y
        local = np.bincount(index[index >= 0], minlength=len(classes)).astype(np.int64)
        labels = dict(zip(classes, comm.allreduce_int(local).tolist()))
    return Shard(
        cols=cols,
        X=X,
        y=y,
        domain=domain,
        start=start,
        n_global=layout.n,
        n_domains=n_domains,
        files=list(files),
        layout=layout,
        bins=bins,
        feature_names=files[0].feature_names,
        domain_names=names,
        label_counts=labels,
        domain_counts=dcounts,
        classes=classes,
        file_rows=True,
        weight=weight,
        regression=task == "regression",
    )


def _plan(comm, paths, dedicated_coordinator, blocks=None):
    files = _resolve_files(comm, paths)
    memory = [f for f in files if hasattr(f, "blocks")]
    if memory:
        # in-memory rows: each rank owns the rows it passed, and only those
        if len(files) > 1:
            raise CollectiveError("in-memory rows are one data set: they cannot be combined with files")
        if blocks is not None and tuple(blocks) != tuple(memory[0].blocks):
            raise CollectiveError(f"blocks {list(blocks)}: in-memory rows are held where they were passed "
                                  f"({list(memory[0].blocks)})")
        if dedicated_coordinator and memory[0].blocks[0] != 0:
            raise CollectiveError("--dedicated-coordinator: rank 0 holds no rows, but rows were passed on rank 0")
        blocks = memory[0].blocks
    if dedicated_coordinator and comm.size < 2:
        raise InputError("--dedicated-coordinator needs at least 2 ranks (rank 0 holds no rows)")
    layout = Layout(sum(f.n for f in files), comm.size, dedicated_coordinator,
                    None if blocks is None else tuple(blocks))
    start, stop = layout.block(comm.rank)
    return files, layout, start, stop


def refuse_unlabelled(files, task) -> None:
    """A file converted without labels (``--no-label``) holds rows to score: an agreed error where labels count."""
    if task is None:
        return
    for f in files:
        if (getattr(f, "attrs", None) or {}).get("unlabelled"):
            raise CollectiveError(f"{f.path}: the file has no labels (converted with --no-label): it holds rows to "
                                  "score with `mpiboost predict`, not to train or evaluate on")


def load(
    comm,
    paths: Sequence[str | os.PathLike],
    *,
    task: Optional[str] = "binary",
    classes: Optional[Sequence] = None,
    unseen: Optional[dict] = None,
    domains: str = "auto",
    dedicated_coordinator: bool = False,
    bins: Optional[BinMapper] = None,
    max_bins: int = MAX_VALUE_BINS,
    sample_size: int = DEFAULT_SAMPLE,
    seed: int = 0,
    keep_raw: bool = False,
    blocks: Optional[Sequence[int]] = None,
) -> Shard:
    """Collective: load and bin this rank's block of the rows of ``paths``.

    Parameters
    ----------
    comm
        A :class:`mpiboost.comm.Comm`.
    paths
        Data files; their rows are concatenated in order.
    task
        How ``Shard.y`` holds the labels (:mod:`mpiboost.data.labels`):
        ``"binary"`` (two classes, as -1/+1), ``"multiclass"`` (class indices
        0..K-1, any number of classes), ``"regression"`` (the numeric targets
        as float64) or ``None`` (labels not checked, e.g. for prediction).
    classes
        The class list the labels must belong to (a model's, for validation
        and evaluation data); ``None`` makes it the union of the files'
        label values (``Shard.classes``).
    unseen
        With ``classes``: a dict to fill with the rows (per label value) whose
        label is not one of the classes; they get code -1 (binary: 0), which
        no prediction equals. ``None``: such a row is an error.
    domains
        ``"auto"``: one domain per file if several files, else the ``domain``
        dataset if present, else a single domain. ``"file"``, ``"column"``,
        ``"none"`` force a rule. A ``domain`` dataset's ids are
        ``0 .. format.MAX_DOMAINS - 1``; the domains are ``0 .. max id``.
    dedicated_coordinator
        Rank 0 holds no rows.
    bins
        Bin edges to apply (e.g. the training edges for validation data);
        ``None`` computes them from a global row sample.
    max_bins, sample_size, seed
        Binning parameters (edges are identical for any number of ranks).
    keep_raw
        Also keep the raw values as float64 in ``Shard.X`` (for models that
        need them, e.g. MultiBoost's domain classifier).
    blocks
        Rows per rank (``comm.size`` counts summing to the rows of ``paths``;
        every rank passes the same); ``None``: even blocks (:class:`Layout`).

    Returns
    -------
    Shard
        ``cols`` holds the uint8 bins feature-major, ``(d, n_local)``; the raw
        values are never held in full.
    """
    clock = time.perf_counter
    t0 = clock()
    files, layout, start, stop = _plan(comm, paths, dedicated_coordinator, blocks)
    refuse_unlabelled(files, task)
    mode = _domain_mode(files, domains)
    y, domain, classes = _read_targets(comm, files, layout, start, stop, task, mode, classes, unseen)
    weight = read_weights(comm, files, start, stop)  # checked before any row is binned
    d = files[0].d
    t_edges = 0.0
    if bins is None:
        ids = sample_rows(layout.n, sample_size, seed)
        lo, hi = np.searchsorted(ids, [start, stop])
        mine = ids[lo:hi]
        dtype = np.result_type(*[f.x_dtype for f in files])
        local_sample = np.empty((mine.size, d), dtype=dtype)
        filled = 0
        with comm.collective_guard():
            for g, fi, r0, arr in iter_block(files, start, stop, what=("X",)):
                X = arr["X"]
                _check_features(X, files[fi].path, r0, files[0].categorical)
                a, b = np.searchsorted(mine, [g, g + X.shape[0]])
                local_sample[filled : filled + b - a] = X[mine[a:b] - g]
                filled += b - a
        t1 = clock()
        bins = fit_edges(comm, local_sample, max_bins=max_bins).with_categories(files[0].categorical or {})
        t_edges = clock() - t1
        del local_sample
        checked = True
    else:
        if bins.n_features != d:
            # every rank knows both numbers: an agreed error
            raise CollectiveError(f"the model expects {bins.n_features} features but {files[0].path} has {d}")
        checked = False
    cols = np.empty((d, stop - start), dtype=np.uint8)
    raw = np.empty((stop - start, d), dtype=np.float64) if keep_raw else None
    t_bin = 0.0
    with comm.collective_guard():
        for g, fi, r0, arr in iter_block(files, start, stop, what=("X",)):
            X = arr["X"]
            if not checked:
                _check_features(X, files[fi].path, r0)
            t1 = clock()
            bins.transform(X, out=cols[:, g - start : g - start + X.shape[0]].T)
            t_bin += clock() - t1
            if raw is not None:
                raw[g - start : g - start + X.shape[0]] = X
    shard = _shard(comm, files, layout, cols, y, domain, start, mode, bins, task, X=raw, classes=classes,
                   weight=weight)
    total = clock() - t0
    shard.timings = {"read": total - t_edges - t_bin, "bin_edges": t_edges, "bin": t_bin, "load": total}
    return shard


def load_raw(
    comm,
    paths: Sequence[str | os.PathLike],
    *,
    task: Optional[str] = "binary",
    classes: Optional[Sequence] = None,
    unseen: Optional[dict] = None,
    domains: str = "auto",
    dedicated_coordinator: bool = False,
) -> Shard:
    """Collective: like :func:`load` but keep this rank's raw feature values (no binning).

    Parameters
    ----------
    comm : Comm
        The ranks that read the files, each its block of their rows.
    paths : sequence of str or os.PathLike
        Data files; their rows are concatenated in order.
    task, classes, unseen, domains, dedicated_coordinator
        As for :func:`load`.

    Returns
    -------
    Shard
        ``X`` holds this rank's raw values ``(n_local, d)`` in the files' common dtype; ``cols`` and ``bins``
        are None.
    """
    files, layout, start, stop = _plan(comm, paths, dedicated_coordinator)
    refuse_unlabelled(files, task)
    mode = _domain_mode(files, domains)
    y, domain, classes = _read_targets(comm, files, layout, start, stop, task, mode, classes, unseen)
    weight = read_weights(comm, files, start, stop)  # checked before any row is binned
    dtype = np.result_type(*[f.x_dtype for f in files])
    X = np.empty((stop - start, files[0].d), dtype=dtype)
    with comm.collective_guard():
        for g, fi, r0, arr in iter_block(files, start, stop, what=("X",)):
            _check_features(arr["X"], files[fi].path, r0)
            X[g - start : g - start + arr["X"].shape[0]] = arr["X"]
    return _shard(comm, files, layout, None, y, domain, start, mode, None, task, X=X, classes=classes,
                  weight=weight)
