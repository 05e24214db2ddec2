"""The HDF5 input schema, its validation, and atomic writers.

A data file holds

=========  ==============================================  ========  ================================
dataset    dtype                                           shape     meaning
=========  ==============================================  ========  ================================
``X``      float32, float64, int8, uint8, int16, int32      (n, d)    features; NaN = missing
``y``      int8, int16, int32; float32, float64            (n,)      labels, or numeric targets (see below)
``domain`` int32 (any integer accepted)                    (n,)      optional domain / source / task id
``weight`` float32, float64                                 (n,)      optional sample weight, finite, >= 0
=========  ==============================================  ========  ================================

``X`` has at most :data:`MAX_FEATURES` columns and ``domain`` ids are
``0 .. MAX_DOMAINS - 1``. Every dataset must store all it claims
(:func:`check_stored`): a file is untrusted, and its shapes size what the
readers allocate.

Labels: with the attribute ``classes`` (a JSON list of label values, numbers
or strings; :mod:`.labels`) ``y[i]`` is an index into that list; without it
the integers of ``y`` are the label values themselves (-1/+1, 0/1, 1..7 ...).
A float ``y`` (no ``classes`` attribute) holds numeric targets for regression
(finite; ``mpiboost convert --task regression``): classifiers refuse it.

File attributes (all optional): ``classes``, ``feature_names`` and
``domain_names`` (lists of strings), ``categorical`` (JSON ``{"j": k}``: feature
j holds category codes 0 .. k-1, k <= 255, which trees split natively, many
categories against the rest), ``mpiboost_format`` (schema version), and
free-form provenance (``generator``, ``source`` ...). Other datasets and
groups are ignored by the loader (generators keep ground truth under
``synth/``).
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from ..atomic import discard, temporary_beside
from ..errors import InputError
from . import labels as _labels
from ..h5read import open_checked, open_read

FORMAT_VERSION = 1
X_DTYPES = {np.dtype(t) for t in ("float32", "float64", "int8", "uint8", "int16", "int32")}
Y_DTYPES = {np.dtype(t) for t in ("int8", "int16", "int32", "int64")}
Y_WRITE_DTYPES = (np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32))  # what the writers store
TARGET_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))  # y of regression targets
DOMAIN_DTYPES = {np.dtype(t) for t in ("int8", "int16", "int32", "int64", "uint8", "uint16")}
CHUNK_BYTES = 1 << 20  # ~1 MiB of rows per HDF5 chunk
# Most features of a data file (and of a model). Every feature costs a model
# its bin edges and every round a 256-bin histogram of int64 sums (2 KiB, 2 GiB
# per round at 2**20 features, reduced over the ranks), and binning one takes
# ~30 us: a dense file wider than 2**20 (about a million) columns is either
# broken or sparse data that belongs in a sparse learner, and would make
# `validate` or the first round look hung for minutes.
MAX_FEATURES = 1 << 20
# Most domains of a run: a domain column's ids are 0, 1, ... and every id up
# to the largest counts as a domain, so one stray id would size the
# per-domain state (the domain classifier's weights, Q(k|x) of every row,
# the candidate histograms) by itself. 4096 domains is far beyond the
# multi-source and transfer settings the algorithms are made for.
MAX_DOMAINS = 4096


def _h5py():
    import h5py

    return h5py


def _strings(value: Any) -> Optional[list[str]]:
    if value is None:
        return None
    out = []
    for v in np.atleast_1d(value):
        out.append(v.decode() if isinstance(v, bytes) else str(v))
    return out


WRITE_MARGIN_BYTES = 8 << 20  # HDF5's chunk caches and metadata, written at flush/close
UNSTORED_OK_BYTES = 64 << 20  # a dataset this small may leave storage unallocated (fill values)


def check_stored(dset: Any, path: str, name: str, file_size: Optional[int] = None) -> None:
    """Refuse a dataset that claims more elements than the file stores.

    HDF5 allocates storage lazily: a dataset may claim any shape and read
    back fill values for what was never written, so a small file can claim
    10**12 rows. Before its shape sizes any allocation, a dataset larger than
    ``UNSTORED_OK_BYTES`` must store every element: a contiguous (or compact) one its full logical size,
    inside the file; a chunked one every chunk of its shape (compressed
    chunks are smaller than their logical size, which is fine). Data kept
    outside the file (external storage, virtual datasets) is refused: what
    it points at is not checked.

    Parameters
    ----------
    dset : h5py.Dataset
    path : str
        The file, for the message.
    name : str
        The dataset's name in the file, for the message.
    file_size : int, optional
        Bytes of the file (``os.path.getsize(path)`` if None).

    Raises
    ------
    InputError
        Naming the file and the dataset.
    """
    from h5py import h5d

    where = f"{path}: dataset '{name}'"
    shape = tuple(int(s) for s in dset.shape or ())
    elements = 1
    for s in shape:
        elements *= s  # Python ints: a crafted shape must not overflow int64
    logical = elements * int(dset.dtype.itemsize)
    plist = dset.id.get_create_plist()
    layout = plist.get_layout()
    if layout == h5d.VIRTUAL or plist.get_external_count() > 0:
        raise InputError(
            f"{where} keeps its data outside the file (a virtual dataset or external storage); "
            "mpiboost reads only data stored in the file itself (h5repack copies it in)"
        )
    if logical <= UNSTORED_OK_BYTES:
        # Small enough to read whatever it holds: a dataset created with a fill
        # value and never written is legitimate HDF5 (its values are the fill value).
        return
    size = os.path.getsize(path) if file_size is None else int(file_size)
    stored = int(dset.id.get_storage_size())
    claim = f"shape {shape} ({logical:,} bytes of {dset.dtype})"
    if layout == h5d.CHUNKED:
        chunks = tuple(int(c) for c in dset.chunks)
        expected = 1
        for s, c in zip(shape, chunks):
            expected *= -(-s // c)
        have = int(dset.id.get_num_chunks())
        if have < expected or stored > size:
            raise InputError(
                f"{where} claims {claim} but the file stores {have:,} of its {expected:,} chunks "
                f"({stored:,} bytes; the file has {size:,}): the file is truncated or was never fully written"
            )
        return
    offset = dset.id.get_offset() if layout == h5d.CONTIGUOUS else 0
    if stored != logical or (offset is not None and offset + stored > size) or stored > size:
        raise InputError(
            f"{where} claims {claim} but the file stores {stored:,} bytes of it (the file has {size:,}): "
            "the file is truncated or was never fully written"
        )


def _read_attr(f: Any, key: str, path: str) -> Any:
    """An attribute's value (None if absent); InputError naming it if HDF5 cannot read it."""
    try:
        return f.attrs.get(key)
    except (OSError, TypeError, ValueError, KeyError, RuntimeError) as exc:
        raise InputError(f"{path}: attribute '{key}' cannot be read ({exc})") from None


CATEGORICAL_ATTR = "categorical"  # JSON {"feature index": categories}: native categorical features
MAX_CATEGORIES = 255  # one value bin per category (bin 255 is the missing one)


def parse_categorical(raw, d: int, where: str) -> Optional[dict]:
    """The ``categorical`` attribute (JSON ``{"j": k}``: feature j holds category codes 0 .. k-1) as
    ``{j: k}``, checked (InputError naming ``where``); None where absent."""
    if raw is None:
        return None
    try:
        doc = json.loads(raw.decode() if isinstance(raw, bytes) else str(raw))
        out = {int(j): int(k) for j, k in doc.items()}
    except (AttributeError, TypeError, ValueError) as exc:
        raise InputError(f"{where}: attribute '{CATEGORICAL_ATTR}' is not a JSON object of feature: categories "
                         f"({exc})") from None
    for j, k in out.items():
        if not 0 <= j < d:
            raise InputError(f"{where}: attribute '{CATEGORICAL_ATTR}' names feature {j}, outside 0..{d - 1}")
        if not 1 <= k <= MAX_CATEGORIES:
            raise InputError(f"{where}: attribute '{CATEGORICAL_ATTR}': feature {j} has {k} categories; native "
                             f"categorical features have 1 to {MAX_CATEGORIES}")
    return out or None


def categorical_attr(categorical: dict) -> str:
    """The ``categorical`` attribute's text for ``{feature: categories}``."""
    return json.dumps({str(int(j)): int(k) for j, k in sorted(categorical.items())})


@dataclass
class FileInfo:
    """What the schema says about one data file (no row data read)."""

    path: str
    n: int
    d: int
    x_dtype: np.dtype
    y_dtype: np.dtype
    has_domain: bool
    feature_names: Optional[list[str]] = None
    domain_names: Optional[list[str]] = None
    attrs: dict = field(default_factory=dict)
    # The parsed ``classes`` attribute: y indexes it. None: y holds the label values.
    classes: Optional[list] = None
    has_weight: bool = False  # a 'weight' dataset: each row's sample weight (finite, >= 0; checked when read)
    # The 'categorical' attribute: {feature: number of categories k}, the feature's values codes 0 .. k-1
    categorical: Optional[dict] = None

    @property
    def is_target(self) -> bool:
        """True if ``y`` holds numeric targets (a float dataset: regression), not class labels."""
        return self.y_dtype.kind == "f"


def inspect(path: str | os.PathLike) -> FileInfo:
    """Open ``path`` and validate its schema (shapes, dtypes, attributes).

    No row is read, and nothing is sized by the file before
    :func:`check_stored` has made sure the file holds every element its
    datasets claim, so a crafted file is refused at once.

    Raises
    ------
    InputError
        Naming the file and dataset when anything does not match the schema.
    """
    h5py = _h5py()
    path = str(path)
    f = open_checked(path)
    try:
        with f:
            return _inspect_open(f, path)
    except InputError:
        raise
    except (OSError, KeyError, TypeError, ValueError, RuntimeError) as exc:
        # HDF5 found the file damaged somewhere the checks above read.
        raise InputError(f"{path}: not a readable mpiboost data file ({exc})") from None


def _inspect_open(f: Any, path: str) -> FileInfo:
    """:func:`inspect` of an open file."""
    h5py = _h5py()
    for name in ("X", "y"):
        if name not in f or not isinstance(f[name], h5py.Dataset):
            raise InputError(
                f"{path}: missing dataset '{name}' (an mpiboost data file needs X and y; "
                "create one with `mpiboost convert` or `mpiboost synth`)"
            )
    X, y = f["X"], f["y"]
    if X.ndim != 2:
        raise InputError(f"{path}: dataset 'X' must be 2-D (n, d), has shape {X.shape}")
    if y.ndim != 1:
        raise InputError(f"{path}: dataset 'y' must be 1-D (n,), has shape {y.shape}")
    # byte order is HDF5's business: a big-endian file is read into native arrays (read_rows)
    if _native(X.dtype) not in X_DTYPES:
        raise InputError(
            f"{path}: dataset 'X' has dtype {X.dtype}; expected one of "
            + ", ".join(sorted(str(t) for t in X_DTYPES))
        )
    if _native(y.dtype) not in Y_DTYPES and _native(y.dtype) not in TARGET_DTYPES:
        raise InputError(f"{path}: dataset 'y' has dtype {y.dtype}; expected int8/int16/int32/int64 (labels) or "
                         "float32/float64 (regression targets)")
    if y.shape[0] != X.shape[0]:
        raise InputError(f"{path}: 'X' has {X.shape[0]} rows but 'y' has {y.shape[0]}")
    if X.shape[1] > MAX_FEATURES:
        raise InputError(f"{path}: dataset 'X' has {X.shape[1]:,} features; at most {MAX_FEATURES:,} are supported")
    has_domain = "domain" in f
    if has_domain:
        dom = f["domain"]
        if not isinstance(dom, h5py.Dataset):
            raise InputError(f"{path}: 'domain' must be a dataset of shape ({X.shape[0]},), not a group")
        if dom.ndim != 1 or dom.shape[0] != X.shape[0]:
            raise InputError(f"{path}: dataset 'domain' must have shape ({X.shape[0]},), has {dom.shape}")
        if _native(dom.dtype) not in DOMAIN_DTYPES:
            raise InputError(f"{path}: dataset 'domain' has dtype {dom.dtype}; expected an integer type")
    has_weight = "weight" in f
    if has_weight:
        wt = f["weight"]
        if not isinstance(wt, h5py.Dataset) or wt.ndim != 1 or wt.shape[0] != X.shape[0]:
            raise InputError(f"{path}: 'weight' must be a dataset of shape ({X.shape[0]},)")
        if _native(wt.dtype) not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise InputError(f"{path}: dataset 'weight' has dtype {wt.dtype}; expected float32 or float64")
    # The shapes above size every later allocation: the file must hold them.
    size = os.path.getsize(path)
    for name in ("X", "y") + (("domain",) if has_domain else ()) + (("weight",) if has_weight else ()):
        check_stored(f[name], path, name, size)
    try:
        feature_names = _strings(_read_attr(f, "feature_names", path))
        domain_names = _strings(_read_attr(f, "domain_names", path))
    except (TypeError, ValueError) as exc:
        raise InputError(f"{path}: attribute feature_names/domain_names is not a list of strings ({exc})") from None
    if feature_names is not None and len(feature_names) != X.shape[1]:
        raise InputError(
            f"{path}: attribute feature_names has {len(feature_names)} names for {X.shape[1]} features"
        )
    classes = None
    if _labels.CLASSES_ATTR in f.attrs and _native(y.dtype) in TARGET_DTYPES:
        raise InputError(f"{path}: dataset 'y' holds float targets, which a 'classes' attribute cannot index")
    if _labels.CLASSES_ATTR in f.attrs:
        try:
            classes = _labels.decode_attr(_read_attr(f, _labels.CLASSES_ATTR, path), path)
        except ValueError as exc:
            raise InputError(str(exc)) from None
    try:
        attrs = {k: (v.item() if hasattr(v, "item") and np.ndim(v) == 0 else v) for k, v in f.attrs.items()}
    except (OSError, TypeError, ValueError, KeyError, RuntimeError) as exc:
        raise InputError(f"{path}: an attribute cannot be read ({exc})") from None
    categorical = parse_categorical(attrs.get(CATEGORICAL_ATTR), int(X.shape[1]), path)
    return FileInfo(
        path=path,
        n=int(X.shape[0]),
        d=int(X.shape[1]),
        x_dtype=_native(X.dtype),
        y_dtype=_native(y.dtype),
        has_domain=has_domain,
        feature_names=feature_names,
        domain_names=domain_names,
        attrs=attrs,
        classes=classes,
        has_weight=has_weight,
        categorical=categorical,
    )


def _chunk_rows(d: int, itemsize: int) -> int:
    return int(max(1, min(1 << 16, CHUNK_BYTES // max(1, d * itemsize))))


def _check_y_dtype(dtype: Any) -> np.dtype:
    t = np.dtype(dtype)
    if t not in Y_WRITE_DTYPES and t not in TARGET_DTYPES:
        raise InputError(f"unsupported y dtype {t} (int8, int16 or int32; float32 or float64 for targets)")
    return t


def _fits(y: np.ndarray, dtype: np.dtype) -> None:
    """Raise InputError if the values of ``y`` do not fit ``dtype`` (no silent wrap-around)."""
    if dtype.kind == "f":
        if y.dtype.kind not in "iuf":
            raise InputError(f"targets y must be numbers, not {y.dtype}")
        bad = np.flatnonzero(~np.isfinite(y.astype(np.float64, copy=False)))
        if bad.size:
            raise InputError(f"target y row {int(bad[0])} is {y[bad[0]]}: every target must be finite")
        return
    if y.size == 0 or (y.dtype.kind in "iu" and np.can_cast(y.dtype, dtype)):
        return
    if y.dtype.kind == "f" and np.all(np.isfinite(y)) and not np.all(y == np.round(y)):
        raise InputError(f"labels y hold {y[np.flatnonzero(y != np.round(y))[0]]}, not a whole number: class "
                         "labels are integers (numeric targets: a float y dtype)")
    lo, hi = y.min(), y.max()
    info = np.iinfo(dtype)
    if y.dtype.kind == "f" and not (np.isfinite(lo) and np.isfinite(hi)):
        raise InputError("labels y must be finite integers")
    if lo < info.min or hi > info.max:
        raise InputError(f"labels y range over {lo}..{hi}, which does not fit y dtype {dtype}")


def _smallest_y_dtype(y: np.ndarray) -> np.dtype:
    """int8 if the values fit it, else int16, else int32."""
    if y.size == 0:
        return np.dtype(np.int8)
    if y.dtype == np.int8:
        return np.dtype(np.int8)
    lo, hi = y.min(), y.max()
    for t in Y_WRITE_DTYPES:
        if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max:
            return t
    raise InputError(f"labels y range over {lo}..{hi}, which does not fit int32")


def _classes_attr(classes: Sequence, path: Any) -> str:
    """The ``classes`` attribute of ``classes``, checked to read back (InputError naming the file)."""
    try:
        raw = _labels.encode_attr(classes)
        _labels.decode_attr(raw, str(path))
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return raw


class DatasetWriter:
    """Write a data file in row chunks; the file appears only when complete.

    Rows go to a temporary file in the destination directory, renamed over
    ``path`` by :meth:`close` (atomic on POSIX); on an exception nothing is
    left behind. Use as a context manager::

        with DatasetWriter("out.h5", d=123, x_dtype="float32") as w:
            w.append(X_chunk, y_chunk)

    ``y_dtype`` is int8, int16 or int32; ``classes`` (a list of label values)
    writes the ``classes`` attribute, so ``y`` holds indices into it.

    When the labels are known only at the end (a converter streaming text
    labels), give ``deferred_y=True``: :meth:`append` then takes provisional
    non-negative integer codes, kept in a temporary file beside the output,
    and :meth:`relabel` (called before :meth:`close`) writes ``y`` in chunks
    as ``table[code]`` with its final dtype and ``classes``.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        d: int,
        *,
        x_dtype: Any = np.float32,
        y_dtype: Any = np.int8,
        with_domain: bool = False,
        feature_names: Optional[Sequence[str]] = None,
        domain_names: Optional[Sequence[str]] = None,
        attrs: Optional[dict] = None,
        compression: Optional[str] = None,
        classes: Optional[Sequence] = None,
        deferred_y: bool = False,
        with_weight: bool = False,
    ) -> None:
        h5py = _h5py()
        self.path = Path(path)
        self.d = int(d)
        self.n = 0
        self.x_dtype = np.dtype(x_dtype)
        self.y_dtype = _check_y_dtype(y_dtype)
        if self.x_dtype not in X_DTYPES:
            raise InputError(f"unsupported X dtype {self.x_dtype}")
        if not 0 <= self.d <= MAX_FEATURES:
            # What inspect() would refuse to read back.
            raise InputError(f"{self.path}: {self.d:,} features; a data file has 0..{MAX_FEATURES:,}")
        if classes is not None and deferred_y:
            raise InputError("deferred_y: give the classes to relabel(), not to the writer")
        classes_attr = None if classes is None else _classes_attr(classes, self.path)
        parent = self.path.parent if str(self.path.parent) else Path(".")
        if not parent.is_dir():
            raise InputError(f"{self.path}: directory {parent} does not exist")
        self._f = None
        self._codes = None  # deferred_y: the provisional codes' temporary file
        self._codes_path: Optional[str] = None
        tmp = temporary_beside(self.path)
        self._tmp = tmp
        self._tmp_dir = os.path.dirname(tmp) or "."
        try:
            # libver "latest" stores large attributes (thousands of feature names) densely.
            self._f = h5py.File(tmp, "w", libver="latest")
        except BaseException:
            discard(tmp)
            raise
        try:
            rows = _chunk_rows(self.d, self.x_dtype.itemsize)
            self._y_chunks = max(rows, 4096)
            self._kw = {"compression": compression} if compression else {}
            kw = self._kw
            self._X = self._f.create_dataset(
                "X", shape=(0, self.d), maxshape=(None, self.d), dtype=self.x_dtype, chunks=(rows, max(1, self.d)), **kw
            )
            if deferred_y:
                self._y = None
                self._codes_path = temporary_beside(self.path)
                self._codes = open(self._codes_path, "wb")
            else:
                self._y = self._f.create_dataset(
                    "y", shape=(0,), maxshape=(None,), dtype=self.y_dtype, chunks=(self._y_chunks,), **kw
                )
            self._dom = (
                self._f.create_dataset("domain", shape=(0,), maxshape=(None,), dtype=np.int32, chunks=(max(rows, 4096),), **kw)
                if with_domain
                else None
            )
            self._wt = (  # each row's sample weight, appended with the rows (a converter's weight column)
                self._f.create_dataset("weight", shape=(0,), maxshape=(None,), dtype=np.float64,
                                       chunks=(max(rows, 4096),), **kw)
                if with_weight
                else None
            )
            self._f.attrs["mpiboost_format"] = FORMAT_VERSION
            if feature_names is not None:
                if len(feature_names) != self.d:
                    raise InputError(f"{len(feature_names)} feature names for {self.d} features")
                self._f.attrs["feature_names"] = np.array([str(s) for s in feature_names], dtype=h5py.string_dtype())
            if classes_attr is not None:
                self._f.attrs[_labels.CLASSES_ATTR] = classes_attr
            self.domain_names = list(domain_names) if domain_names is not None else None
            for k, v in (attrs or {}).items():
                self._f.attrs[k] = v
            self._extra: dict[str, Any] = {}
        except BaseException:
            self.discard()
            raise

    @property
    def deferred(self) -> bool:
        """True while ``y`` waits for :meth:`relabel`."""
        return self._codes_path is not None

    def append(self, X: np.ndarray, y: np.ndarray, domain: Optional[np.ndarray] = None,
               weight: Optional[np.ndarray] = None) -> None:
        X = np.asarray(X)
        m = X.shape[0]
        if X.ndim != 2 or X.shape[1] != self.d:
            raise InputError(f"chunk has shape {X.shape}, expected (*, {self.d})")
        if len(y) != m:
            raise InputError("X and y chunks differ in length")
        y = np.asarray(y)
        self._room(X.shape[0] * self.d * self.x_dtype.itemsize + 8 * len(y))
        if self._codes is not None:
            codes = y.astype(np.int32, copy=False)
            if codes.size and codes.min() < 0:
                raise InputError("deferred_y: provisional label codes must be non-negative")
        else:
            _fits(y, self.y_dtype)
        if self._dom is not None and (domain is None or len(domain) != m):
            raise InputError("this file has a domain column: pass a domain chunk of the same length")
        if (self._wt is not None) != (weight is not None) or (weight is not None and len(weight) != m):
            raise InputError("pass a weight chunk of the rows' length exactly when the writer has with_weight")
        stop = self.n + m
        try:
            self._X.resize(stop, axis=0)
            self._X[self.n : stop] = X.astype(self.x_dtype, copy=False)
            if self._codes is not None:
                self._codes.write(np.ascontiguousarray(codes).tobytes())
            else:
                self._y.resize(stop, axis=0)
                self._y[self.n : stop] = y.astype(self.y_dtype, copy=False)
            if self._dom is not None:
                self._dom.resize(stop, axis=0)
                self._dom[self.n : stop] = np.asarray(domain, dtype=np.int32)
            if self._wt is not None:
                self._wt.resize(stop, axis=0)
                self._wt[self.n : stop] = np.asarray(weight, dtype=np.float64)
        except (OSError, RuntimeError) as exc:  # a disk that filled after the check, an I/O error
            from ..atomic import why

            raise InputError(f"{self.path}: could not write rows {self.n}..{stop - 1} ({why(exc)}); "
                             "nothing written") from None
        self.n = stop

    def _room(self, nbytes: int) -> None:
        """Refuse to write ``nbytes`` more to a disk that cannot take them (before HDF5 tries).

        HDF5's failed writes on a full disk can leave the library in a state
        that crashes the process at close; a clear error first keeps the
        exit code 2 and lets the temporary file be removed.
        """
        import shutil

        try:
            free = shutil.disk_usage(self._tmp_dir).free
        except OSError:
            return
        if free < nbytes + WRITE_MARGIN_BYTES:
            raise InputError(f"{self.path}: no space left on the disk for the next {nbytes:,} bytes "
                             f"({free:,} free; nothing written)")

    def relabel(
        self, table: np.ndarray, y_dtype: Any, classes: Optional[Sequence] = None, chunk_rows: int = 1 << 20
    ) -> None:
        """Write ``y = table[code]`` for the provisional codes appended (``deferred_y`` only).

        ``classes``: the ``classes`` attribute (``y`` then indexes it), or None
        when ``table`` maps to the label values themselves.
        """
        if self._codes is None:
            raise InputError("relabel() needs a writer made with deferred_y=True, called once")
        dtype = _check_y_dtype(y_dtype)
        table = np.asarray(table)
        _fits(table, dtype)
        if classes is not None:
            self._f.attrs[_labels.CLASSES_ATTR] = _classes_attr(classes, self.path)
        table = table.astype(dtype)
        self._codes.close()
        self._codes = None
        self.y_dtype = dtype
        self._y = self._f.create_dataset(
            "y", shape=(self.n,), maxshape=(None,), dtype=dtype, chunks=(self._y_chunks,), **self._kw
        )
        with open(self._codes_path, "rb") as f:
            for start in range(0, self.n, chunk_rows):
                stop = min(self.n, start + chunk_rows)
                codes = np.fromfile(f, dtype=np.int32, count=stop - start)
                if codes.size != stop - start:
                    raise InputError(f"{self._codes_path}: the provisional labels file is short")
                if codes.size and codes.max() >= table.size:
                    raise InputError(f"provisional label code {int(codes.max())} has no entry in the table")
                self._y[start:stop] = table[codes]
        discard(self._codes_path)
        self._codes_path = None

    def add_array(self, name: str, data: np.ndarray) -> None:
        """Store an extra dataset (e.g. ``synth/component``) ignored by the loader."""
        self._f.create_dataset(name, data=np.asarray(data))

    def set_attr(self, name: str, value: Any) -> None:
        self._f.attrs[name] = value

    def close(self) -> None:
        if self._f is None:
            return
        if self.deferred:
            self.discard()
            raise InputError("deferred_y: relabel() was not called before close(); nothing written")
        try:
            self._room(0)  # what HDF5 still holds in its caches goes out now
        except InputError:
            self.discard()
            raise
        try:
            if self.domain_names is not None:
                self._f.attrs["domain_names"] = np.array([str(s) for s in self.domain_names],
                                                         dtype=_h5py().string_dtype())
            self._f.close()
        except (OSError, RuntimeError) as exc:
            from ..atomic import why

            self.discard()
            raise InputError(f"{self.path}: could not write the file ({why(exc)}); nothing written") from None
        self._f = None
        os.replace(self._tmp, self.path)

    def discard(self) -> None:
        """Drop everything written so far; never raises (it runs while another error is reported)."""
        if self._codes is not None:
            try:
                self._codes.close()
            except OSError:
                pass
            self._codes = None
        if self._codes_path is not None:
            discard(self._codes_path)
            self._codes_path = None
        if self._f is not None:
            try:
                self._f.close()  # flushes: fails on the very full disk that brought us here
            except (OSError, RuntimeError):
                pass
            self._f = None
        discard(self._tmp)

    def __enter__(self) -> "DatasetWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.discard()


def write_dataset(
    path: str | os.PathLike,
    X: np.ndarray,
    y: np.ndarray,
    domain: Optional[np.ndarray] = None,
    *,
    feature_names: Optional[Sequence[str]] = None,
    domain_names: Optional[Sequence[str]] = None,
    attrs: Optional[dict] = None,
    extra: Optional[dict[str, np.ndarray]] = None,
    weight: Optional[np.ndarray] = None,
    y_dtype: Any = None,
    compression: Optional[str] = None,
    classes: Optional[Sequence] = None,
    categorical: Optional[dict] = None,
) -> None:
    """Write arrays as one data file, atomically (temporary file + rename).

    ``categorical``: ``{feature: number of categories}`` for features holding category codes (the
    ``categorical`` attribute).

    ``extra`` maps dataset paths (e.g. ``"synth/component"``) to arrays stored
    beside the schema's datasets; ``weight``: each row's sample weight (the
    ``weight`` dataset). ``y_dtype`` (int8, int16 or int32) defaults
    to the smallest of them that holds the values of ``y`` (int8 for ±1 and
    up to 128 classes); float64 (or float32) writes numeric regression targets. ``classes`` writes the ``classes`` attribute: ``y``
    then holds indices into that list of label values.
    """
    X = np.asarray(X)
    y = np.asarray(y)
    if categorical:
        parse_categorical(categorical_attr(categorical), X.shape[1], str(path))
        attrs = {**(attrs or {}), CATEGORICAL_ATTR: categorical_attr(categorical)}
    if y_dtype is None:
        # float values that are not all whole numbers are regression targets; whole ones class labels
        whole = y.dtype.kind != "f" or bool(np.all(np.isfinite(y) & (y == np.round(y))))
        y_dtype = _smallest_y_dtype(y) if whole else np.dtype(np.float64)
    with DatasetWriter(
        path,
        X.shape[1],
        x_dtype=X.dtype,
        y_dtype=y_dtype,
        with_domain=domain is not None,
        feature_names=feature_names,
        domain_names=domain_names,
        attrs=attrs,
        compression=compression,
        classes=classes,
    ) as w:
        step = _chunk_rows(X.shape[1], X.dtype.itemsize) * 16
        for start in range(0, max(1, X.shape[0]), step):
            stop = min(X.shape[0], start + step)
            w.append(X[start:stop], y[start:stop], None if domain is None else domain[start:stop])
        for name, data in (extra or {}).items():
            w.add_array(name, data)
        if weight is not None:
            w.add_array("weight", np.asarray(weight, dtype=np.float64))


def read_rows(f: Any, name: str, start: int, stop: int, path: str) -> np.ndarray:
    """Rows ``[start, stop)`` of dataset ``name`` of the open file ``f``.

    A chunk HDF5 cannot read (damaged, or a filter this build lacks) is an
    InputError naming the file, the dataset and the rows, not a traceback.
    """
    try:
        rows = f[name][start:stop]
    except (OSError, KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise InputError(f"{path}: dataset '{name}' rows {start}..{stop - 1} cannot be read ({exc})") from None
    return rows if rows.dtype.isnative else rows.astype(_native(rows.dtype))


def _native(dtype: Any) -> np.dtype:
    """``dtype`` in this machine's byte order (numbers of one byte have none)."""
    t = np.dtype(dtype)
    return t if t.isnative or t.kind not in "iuf" else t.newbyteorder("=")


def read_arrays(path: str | os.PathLike, start: int = 0, stop: Optional[int] = None) -> dict[str, np.ndarray]:
    """Read rows ``[start, stop)`` of ``X``, ``y`` and ``domain`` (if any) of one file."""
    h5py = _h5py()
    with open_read(str(path)) as f:
        stop = f["X"].shape[0] if stop is None else stop
        out = {"X": f["X"][start:stop], "y": f["y"][start:stop]}
        if "domain" in f:
            out["domain"] = f["domain"][start:stop]
        return out


def summarize(path: str | os.PathLike, chunk_rows: int = 1 << 18) -> dict:
    """Shape, dtypes, label and domain counts and missing values of a file (streamed).

    ``labels`` counts the rows of each label *value*, keyed by its text
    (``"-1"``, ``"1"``; ``"<=50K"`` for a file whose ``classes`` attribute
    lists it); ``classes`` is the attribute's list, or else the sorted integer
    values present, and ``n_classes`` its length.
    """
    h5py = _h5py()
    info = inspect(path)
    if info.is_target:
        return _summarize_targets(info, chunk_rows)
    labels: dict[int, int] = {}
    domains: dict[int, int] = {}
    missing = 0
    with open_read(info.path) as f:
        for start in range(0, info.n, chunk_rows):
            stop = min(info.n, start + chunk_rows)
            vals, counts = np.unique(read_rows(f, "y", start, stop, info.path), return_counts=True)
            for v, c in zip(vals.tolist(), counts.tolist()):
                labels[v] = labels.get(v, 0) + c
            if info.has_domain:
                vals, counts = np.unique(read_rows(f, "domain", start, stop, info.path), return_counts=True)
                for v, c in zip(vals.tolist(), counts.tolist()):
                    domains[v] = domains.get(v, 0) + c
            if info.x_dtype.kind == "f":
                missing += int(np.isnan(read_rows(f, "X", start, stop, info.path)).sum())
    if info.classes is not None:
        bad = [v for v in labels if not 0 <= v < len(info.classes)]
        if bad:
            raise InputError(
                f"{info.path}: dataset 'y' holds index {bad[0]}, but attribute 'classes' lists "
                f"{len(info.classes)} values (indices 0..{len(info.classes) - 1})"
            )
        classes = list(info.classes)
        label_counts = {_labels.text(classes[k]): labels[k] for k in range(len(classes)) if k in labels}
    else:
        classes = sorted(labels)
        label_counts = {_labels.text(k): v for k, v in sorted(labels.items())}
    out = {
        "file": info.path,
        "n": info.n,
        "d": info.d,
        "X_dtype": str(info.x_dtype),
        "y_dtype": str(info.y_dtype),
        "labels": {} if info.attrs.get("unlabelled") else label_counts,
        "unlabelled": bool(info.attrs.get("unlabelled")),
        "classes": classes,
        "n_classes": len(classes),
        "missing_values": missing,
    }
    if info.has_domain:
        names = info.domain_names or []
        out["domains"] = {
            (f"{k} ({names[k]})" if 0 <= k < len(names) else str(k)): v for k, v in sorted(domains.items())
        }
    if info.feature_names:
        out["feature_names"] = info.feature_names
    extra = {k: v for k, v in info.attrs.items() if k not in ("feature_names", "domain_names", _labels.CLASSES_ATTR)}
    if extra:
        out["attrs"] = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in extra.items()}
    return out


def _summarize_targets(info: FileInfo, chunk_rows: int) -> dict:
    """:func:`summarize` of a file of regression targets: their count, range, mean and standard deviation."""
    from .._ext import _exact

    n, lo, hi, missing = 0, np.inf, -np.inf, 0
    parts, squares = [], []
    with open_read(info.path) as f:
        for start in range(0, info.n, chunk_rows):
            stop = min(info.n, start + chunk_rows)
            y = read_rows(f, "y", start, stop, info.path).astype(np.float64)
            if y.size:
                lo, hi = min(lo, float(y.min())), max(hi, float(y.max()))
                parts.append(_exact.partials(np.ascontiguousarray(y)))
                squares.append(_exact.partials(np.ascontiguousarray(y * y)))
            if info.x_dtype.kind == "f":
                missing += int(np.isnan(read_rows(f, "X", start, stop, info.path)).sum())
            n += stop - start
    total = math.fsum(np.concatenate(parts)) if parts else 0.0
    sq = math.fsum(np.concatenate(squares)) if squares else 0.0
    mean = total / n if n else float("nan")
    out = {
        "file": info.path, "n": info.n, "d": info.d, "X_dtype": str(info.x_dtype), "y_dtype": str(info.y_dtype),
        "task": "regression",
        "target": {"min": lo if n else None, "max": hi if n else None, "mean": mean,
                   "std": float(np.sqrt(max(sq / n - mean * mean, 0.0))) if n else None},
        "labels": {}, "unlabelled": False, "classes": [], "n_classes": 0, "missing_values": missing,
    }
    if info.feature_names:
        out["feature_names"] = info.feature_names
    return out
