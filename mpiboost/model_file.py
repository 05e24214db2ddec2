"""The model file: mpiboost's HDF5 schema of a batch model, written atomically and read as untrusted input.

One file holds a JSON ``header`` attribute (the algorithm, its parameters, the classes, the vote, the run's
``info``) and the arrays: ``ensemble/`` (one entry per stump or tree), ``trees/`` (every node of every tree:
split, children, leaf values, categorical bitsets, the grower's gains and counts), ``bins/`` (the bin edges,
the categorical features). Format 5 is written; formats 1 to 5 are read. Reading checks every field's type
and every array's shape, dtype and range before a kernel sees it (``validate`` of the model class), and
names the file and the field of anything wrong (:class:`mpiboost.errors.InputError`).

:class:`mpiboost.model.Model` calls :func:`write_model` and :func:`read_model`; nothing here knows the
model's methods beyond the arrays and the header it asks for.
"""
from __future__ import annotations

import json
import os
from typing import Any, Optional

import numpy as np

from .atomic import write_bytes
from .errors import InputError
from .data import labels as lab
from .data.binning import MAX_EDGES, BinMapper, check_flat
from .data.format import MAX_FEATURES, check_stored
from .h5read import open_checked
from .links import LINKS as LINK_OF

# 2: classes, output and the right-hand value of each stump; 3: trees (group "trees", ensemble/tree,
# header "link"); 4: each tree node's split gain, rows and hessian (trees/gain, count, weight); 5: categorical
# splits (trees/cat: each node's bins going left, bin -1) and categorical features (bins/categorical);
# formats 1 to 4 still load
MODEL_FORMAT = 5
READABLE_FORMATS = (1, 2, 3, 4, 5)
LINKS = (None, *LINK_OF)  # how scores become probabilities (None: they do not)
MAX_NODES = 1 << 26  # nodes of all trees of a model file, checked before they are read
OUTPUTS = ("sign", "argmax", "value")
# What the algorithms write (Algorithm.vote); "task": stump t votes only for the rows of
# task domain[t] (one ensemble per task, multi-task boosting).
VOTES = ("weighted", "majority", "q-weighted", "task")
# Longest header (JSON characters) a model file may have. json.loads needs
# several times the text in memory, so a longer one is refused unparsed; a
# Q-ensemble's classifier (about 100 characters a feature) fits for models
# of over half a million features.
MAX_HEADER_CHARS = 64 << 20
# Most stumps of a model, checked from the datasets' shapes before they are
# read: 16.7M stumps are about 0.6 GB of arrays, far more rounds than any
# training run makes (a round appends to every array).
MAX_STUMPS = 1 << 24
ENSEMBLE_ARRAYS = ("feature", "bin", "left", "right", "missing_left", "coef", "domain", "round")
TREE_ARRAYS = ("feature", "bin", "missing_left", "left", "right", "value", "start")
TREE_KINDS = ("sign", "real", "class")
TREE_STATS = ("gain", "count", "weight")  # per node, since format 4 (older files: zeros)


def write_model(path: str | os.PathLike, header: dict, datasets: dict) -> None:
    """Write a model file atomically (temporary file, then rename): the ``header`` attribute (JSON) and each of
    ``datasets`` (``"group/name"`` -> array).

    The file is built in memory and written with plain file I/O: a full disk then raises OSError, where HDF5's
    own failed writes can leave its library in a state that crashes the process.
    """
    import io

    import h5py

    buf = io.BytesIO()
    with h5py.File(buf, "w") as f:
        f.attrs["header"] = json.dumps(_plain(header), sort_keys=True)
        for name, data in datasets.items():
            f.create_dataset(name, data=data)
    write_bytes(path, buf.getbuffer())


def read_model(cls: type, path: str | os.PathLike):
    """Read a model file (formats 1 to 5), checking everything in it first.

    A model file is untrusted: its header must be a JSON object of at
    most :data:`MAX_HEADER_CHARS` characters with every field of the
    right type, and every array must have the right shape, dtype and
    range (the caller's ``validate``) before a kernel, which checks no bounds,
    sees it.

    Raises
    ------
    InputError
        Naming the file and the field or dataset, for anything that is
        not a model this version reads (HDF5 errors included).
    """
    path = os.fspath(path)
    f = open_checked(path, "HDF5 model file")
    try:
        with f:
            model = _read_model(cls, f, path)
    except InputError:
        raise
    except (OSError, KeyError, TypeError, ValueError, RuntimeError) as exc:
        # Whatever the field checks below did not name (HDF5 metadata damaged).
        raise InputError(f"{path}: not a readable mpiboost model file ({exc})") from None
    return model


def read_header(f, path: str) -> dict:
    """The header attribute as a dict: a string of bounded length, parsed as JSON."""
    import h5py

    try:
        aid = f.attrs.get_id("header")
        info = h5py.check_string_dtype(aid.dtype)
        if aid.shape not in ((), (1,)) or info is None:
            raise InputError(f"{path}: attribute 'header' must be one string, is {aid.dtype} of shape {aid.shape}")
        if info.length is not None and info.length > MAX_HEADER_CHARS:  # fixed length: known unread
            raise InputError(f"{path}: attribute 'header' is {info.length:,} bytes (at most {MAX_HEADER_CHARS:,})")
        raw = f.attrs["header"]
    except InputError:
        raise
    except (OSError, KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise InputError(f"{path}: attribute 'header' cannot be read ({exc})") from None
    if isinstance(raw, np.ndarray):
        raw = raw.reshape(-1)[0]
    if isinstance(raw, (bytes, np.bytes_)):
        try:
            raw = bytes(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{path}: attribute 'header' is not UTF-8 text ({exc})") from None
    if not isinstance(raw, str):
        raise InputError(f"{path}: attribute 'header' must be a string, not {type(raw).__name__}")
    # A variable-length string is known only once read (it is in the file, so no
    # bigger than the file); the bound keeps json.loads's memory in check.
    if len(raw) > MAX_HEADER_CHARS:
        raise InputError(f"{path}: attribute 'header' is {len(raw):,} characters (at most {MAX_HEADER_CHARS:,})")
    try:
        h = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{path}: the model header is not JSON ({exc})") from None
    if not isinstance(h, dict):
        raise InputError(f"{path}: the model header must be a JSON object, not {type(h).__name__}")
    return h


def _header_fields(h: dict, path: str) -> dict:
    """The header's fields as :class:`Model` takes them, every one type-checked.

    Fields format 1 lacks (``output``, ``classes``) take format 1's meaning.
    """
    from .domain_classifier import DomainClassifier

    fmt = h.get("format")
    if type(fmt) is not int or fmt not in READABLE_FORMATS:
        raise InputError(
            f"{path}: model format {fmt} is not supported (this mpiboost reads formats "
            f"{', '.join(map(str, READABLE_FORMATS))})"
        )

    def field(name: str, ok, what: str, default: Any = ...) -> Any:
        if name not in h:
            if default is not ...:
                return default
            raise InputError(f"{path}: header field '{name}' is missing")
        value = h[name]
        if not ok(value):
            raise InputError(f"{path}: header field '{name}' must be {what}, not {_shown(value)}")
        return value

    def strings(v) -> bool:
        return v is None or (isinstance(v, list) and all(isinstance(s, str) for s in v))

    def is_int(v) -> bool:
        return type(v) is int

    field("mpiboost_version", lambda v: isinstance(v, str), "a string", default=None)
    out = {
        "algorithm": field("algorithm", lambda v: isinstance(v, str), "a string"),
        "params": field("params", lambda v: isinstance(v, dict), "an object"),
        "vote": field("vote", lambda v: isinstance(v, str) and v in VOTES, f"one of {', '.join(VOTES)}"),
        "output": field("output", lambda v: isinstance(v, str) and v in OUTPUTS, f"one of {', '.join(OUTPUTS)}",
                        default="sign"),
        "feature_names": field("feature_names", strings, "null or a list of strings", default=None),
        "domain_names": field("domain_names", strings, "null or a list of strings", default=None),
        "info": field("info", lambda v: isinstance(v, dict), "an object", default={}),
        "link": field("link", lambda v: v in LINKS, "null, logistic or softmax", default=None),
    }
    d = field("n_features", lambda v: is_int(v) and 1 <= v <= MAX_FEATURES, f"an integer in 1..{MAX_FEATURES:,}")
    classes = field("classes", lambda v: isinstance(v, list), "a list of label values", default=[-1, 1])
    if out["output"] == "value":
        if classes:
            raise InputError(f"{path}: header field 'classes' of a regression model (output value) must be []")
        out["classes"] = []
    else:
        try:
            out["classes"] = lab.decode_attr(classes, path, "header field 'classes'")
        except ValueError as exc:
            raise InputError(str(exc)) from None
    if len(out["classes"]) < 2 and out["output"] != "value":
        raise InputError(f"{path}: header field 'classes' lists one class; a model has at least two")
    clf = h.get("domain_classifier")
    if clf is not None:
        try:
            clf = DomainClassifier.from_dict(clf, n_features=d)
        except ValueError as exc:
            raise InputError(f"{path}: header field {exc}") from None
    out["domain_classifier"] = clf
    return {**out, "n_features": d}


def _dataset(group, name: str, path: str, file_size: int, kinds: str, length: Optional[int], most: int,
             required: bool = True) -> Optional[np.ndarray]:
    """A 1-D dataset of ``group``, checked from its metadata before it is read.

    Its dtype must be of one of ``kinds`` (numpy kind letters, at most 8
    bytes), its length ``length`` (if given) and at most ``most``, and the
    file must store it (:func:`~mpiboost.data.format.check_stored`).
    Returns None for a missing dataset that is not ``required``.
    """
    import h5py

    where = f"{group.name.strip('/')}/{name}"
    if name not in group:
        if not required:
            return None
        raise InputError(f"{path}: dataset '{where}' is missing")
    try:
        dset = group[name]
        if not isinstance(dset, h5py.Dataset):
            raise InputError(f"{path}: '{where}' must be a dataset, not a group")
        if dset.ndim != 1:
            raise InputError(f"{path}: dataset '{where}' must be 1-D, has shape {dset.shape}")
        if dset.dtype.kind not in kinds or dset.dtype.itemsize > 8:
            raise InputError(f"{path}: dataset '{where}' has dtype {dset.dtype}")
        m = int(dset.shape[0])
        if m > most:
            raise InputError(f"{path}: dataset '{where}' has {m:,} entries (at most {most:,})")
        if length is not None and m != length:
            raise InputError(f"{path}: dataset '{where}' has {m} entries, not {length}")
        check_stored(dset, path, where, file_size)
        return np.asarray(dset[()])
    except InputError:
        raise
    except (OSError, KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise InputError(f"{path}: dataset '{where}' cannot be read ({exc})") from None


def _in_range(a: np.ndarray, where: str, lo: int, hi: int, dtype) -> np.ndarray:
    """``a`` as ``dtype`` once every value is in ``lo..hi`` (so the cast cannot wrap)."""
    if a.size and (int(a.min()) < lo or int(a.max()) > hi):
        raise InputError(f"{where} holds a value outside {lo}..{hi}")
    return a.astype(dtype)


def _read_model(cls, f, path: str):
    """:meth:`Model.load` of an open file: header, bins and ensemble, each checked before use."""
    import h5py

    if "header" not in f.attrs or "ensemble" not in f or "bins" not in f:
        raise InputError(f"{path}: not an mpiboost model file (no header/ensemble/bins)")
    g, b = f["ensemble"], f["bins"]
    if not isinstance(g, h5py.Group) or not isinstance(b, h5py.Group):
        raise InputError(f"{path}: 'ensemble' and 'bins' must be groups")
    h = _header_fields(read_header(f, path), path)
    d = h.pop("n_features")
    size = os.path.getsize(path)
    offsets = _dataset(b, "offsets", path, size, "iu", None, MAX_FEATURES + 1)
    if offsets.shape[0] != d + 1:
        raise InputError(
            f"{path}: header field 'n_features' is {d} but bins/offsets has {offsets.shape[0]} entries "
            f"({offsets.shape[0] - 1} features)"
        )
    edges = _dataset(b, "edges", path, size, "f", None, d * MAX_EDGES)
    offsets = _in_range(offsets, f"{path}: bins/offsets", 0, edges.shape[0], np.int64)
    edges = edges.astype(np.float64)
    try:
        check_flat(edges, offsets)
    except ValueError as exc:
        raise InputError(f"{path}: {exc}") from None
    categorical = _dataset(b, "categorical", path, size, "iub", d, MAX_FEATURES, required=False)
    if categorical is not None:
        categorical = _in_range(categorical.astype(np.int64), f"{path}: bins/categorical", 0, 1, np.uint8)
    bins = BinMapper.from_flat(edges, offsets, categorical)

    n = None
    arrays = {}
    ints = "iu"
    for name, kinds, required in (
        ("coef", "f", True), ("feature", ints, True), ("bin", ints, True), ("left", ints, True),
        ("right", ints, h["output"] == "argmax"), ("missing_left", ints + "b", True),
        ("domain", ints, False), ("round", ints, False),
    ):
        a = _dataset(g, name, path, size, kinds, n, MAX_STUMPS, required)
        if a is None:
            continue
        n = a.shape[0] if n is None else n
        where = f"{path}: ensemble/{name}"
        if name == "coef":
            arrays[name] = a.astype(np.float64)
        elif name == "missing_left":
            arrays[name] = _in_range(a.astype(np.int64) if a.dtype.kind == "b" else a, where, 0, 1, np.uint8)
        else:
            arrays[name] = _in_range(a, where, -(2**31), 2**31 - 1, np.int32)
    left = arrays["left"]
    trees, tree = [], None
    if "trees" in f:
        trees = _read_trees(f["trees"], path, size, len(h["classes"]) if h["output"] == "argmax" else 1)
        tree = _dataset(g, "tree", path, size, ints, n, MAX_STUMPS)
        tree = _in_range(tree, f"{path}: ensemble/tree", -1, max(len(trees) - 1, -1), np.int32)
    elif "tree" in g:
        raise InputError(f"{path}: dataset 'ensemble/tree' without a 'trees' group")
    return cls(
        trees=trees,
        **({"tree": tree} if tree is not None else {}),
        bins=bins,
        right=arrays.get("right", -left),
        domain=arrays.get("domain", np.full(n, -1, np.int32)),
        round=arrays.get("round", np.arange(1, n + 1, dtype=np.int32)),
        **{k: arrays[k] for k in ("feature", "bin", "left", "missing_left", "coef")},
        **h,
    )


def _read_trees(t, path: str, size: int, V: int) -> list:
    """The trees of group ``t``, each array checked from its metadata before it is read."""
    import h5py

    from .weak.tree import Tree

    if not isinstance(t, h5py.Group):
        raise InputError(f"{path}: 'trees' must be a group")
    start = _dataset(t, "start", path, size, "iu", None, MAX_STUMPS + 1)
    start = _in_range(start, f"{path}: trees/start", 0, MAX_NODES, np.int64)
    if start.shape[0] < 1 or start[0] != 0 or np.any(np.diff(start) < 1):
        raise InputError(f"{path}: trees/start must rise from 0 by at least 1 per tree")
    m = int(start[-1])
    a = {}
    for name in ("feature", "bin", "missing_left", "left", "right"):
        raw = _dataset(t, name, path, size, "iu", m, MAX_NODES)
        a[name] = _in_range(raw, f"{path}: trees/{name}", -1, 2**31 - 1, np.int32)
    where = f"{path}: trees/value"
    if "value" not in t or not isinstance(t["value"], h5py.Dataset) or t["value"].shape != (m, V) \
            or t["value"].dtype.kind != "f":
        raise InputError(f"{where} must be a float dataset of shape ({m}, {V})")
    check_stored(t["value"], path, "trees/value", size)
    value = np.asarray(t["value"][()], dtype=np.float64)
    kinds = _dataset(t, "kind", path, size, "iu", start.shape[0] - 1, MAX_STUMPS)
    kinds = _in_range(kinds, f"{path}: trees/kind", 0, len(TREE_KINDS) - 1, np.int64)
    stats = {}
    for name, kind in zip(TREE_STATS, ("f", "iu", "f")):
        raw = _dataset(t, name, path, size, kind, m, MAX_NODES, required=False)
        if raw is None:
            continue  # a model of format <= 3
        if kind == "iu":
            raw = _in_range(raw, f"{path}: trees/{name}", 0, 2**62, np.int64)
        elif not np.isfinite(raw).all() or (name == "weight" and (raw < 0).any()):
            raise InputError(f"{path}: trees/{name} must hold finite{' non-negative' if name == 'weight' else ''} "
                             "numbers")
        stats[name] = np.asarray(raw, dtype=np.int64 if kind == "iu" else np.float64)
    cat = _dataset(t, "cat", path, size, "u", 4 * m, 4 * MAX_NODES, required=False)  # format 5
    cat = np.zeros((m, 4), dtype=np.uint64) if cat is None else np.asarray(cat, dtype=np.uint64).reshape(m, 4)
    out = []
    for k in range(start.shape[0] - 1):
        lo, hi = int(start[k]), int(start[k + 1])
        out.append(Tree(a["feature"][lo:hi], a["bin"][lo:hi], a["missing_left"][lo:hi].astype(np.int64) & 0x1FF,
                        a["left"][lo:hi], a["right"][lo:hi], value[lo:hi], TREE_KINDS[int(kinds[k])],
                        **{name: v[lo:hi] for name, v in stats.items()}, cat=cat[lo:hi]))
    return out


def _shown(value: Any) -> str:
    """A short description of a header value for a message."""
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"


def _plain(obj: Any) -> Any:
    """Numpy scalars/arrays to plain Python for JSON."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _plain(obj.tolist())
    if isinstance(obj, np.generic):
        return obj.item()
    return obj
