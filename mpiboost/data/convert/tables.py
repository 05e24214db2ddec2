"""Parquet / Arrow tables and ``.npy`` arrays into an HDF5 data file (``--format parquet`` / ``npy``).

A Parquet (or Arrow/Feather) file is read with pyarrow (the optional ``parquet`` extra): its numeric
columns are features as they are; its text and dictionary columns are categorical, as the indices of
their values among the column's categories (sorted), kept in the output's recipe so that ``--recipe``
gives a later file the same codes, and declared categorical (the ``categorical`` attribute, for a column of
at most 255 categories) so that gbdt's trees split them natively. The label column is named
(``--label-column``) or absent
(``--no-label``, rows to score). A ``.npy`` file holds the rows (n, d); ``--labels y.npy`` their labels.
"""
from __future__ import annotations

import json
import os
import time
from typing import Optional, Sequence

import numpy as np

from ...errors import InputError
from .. import labels as lab
from ..format import CATEGORICAL_ATTR, MAX_CATEGORIES, categorical_attr, write_dataset
from .common import ConvertResult, PathLike, refuse_continuous


def _read_table(path: PathLike):
    try:
        import pyarrow.feather as feather
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(f"{path}: Parquet and Arrow files are read with pyarrow, which is not installed "
                         "(pip install 'mpiboost[parquet]')") from None
    name = os.fspath(path)
    if not os.path.isfile(name):
        raise InputError(f"{name}: no such file")
    try:
        if name.lower().endswith((".feather", ".arrow")):
            return feather.read_table(name).to_pandas()
        return pq.read_table(name).to_pandas()
    except Exception as exc:  # pyarrow's errors have no common base: any is "not readable"
        raise InputError(f"{name}: not a readable Parquet / Arrow file ({type(exc).__name__}: {exc})") from None


def _labels(name: str, y: np.ndarray) -> tuple[np.ndarray, list, dict]:
    """Codes into the canonical class list, the classes, and the rows per class (an InputError names a bad row)."""
    vals = [lab.plain(v) for v in y.tolist()]
    bad = next((i for i, v in enumerate(vals) if v is None or (isinstance(v, float) and v != v)), None)
    if bad is not None:
        raise InputError(f"{name}: the label of row {bad} is missing")
    try:
        classes = lab.canonical(set(vals))
    except ValueError as exc:
        raise InputError(f"{name}: {exc}") from None
    index = {c: i for i, c in enumerate(classes)}
    codes = np.array([index[v] for v in vals], dtype=np.int32)
    return codes, classes, {c: int(k) for c, k in zip(classes, np.bincount(codes, minlength=len(classes)))}


def _targets(name: str, y: np.ndarray) -> tuple[np.ndarray, dict]:
    """``--task regression``: the label values as float64 targets and their summary (InputError naming a row
    that is missing, not a number or not finite)."""
    try:
        t = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        bad = next(i for i, v in enumerate(y.tolist()) if not lab.is_number(v))
        raise InputError(f"{name}: the target of row {bad} is {y[bad]!r}, not a number (--task regression)") from None
    bad = np.flatnonzero(~np.isfinite(t))
    if bad.size:
        raise InputError(f"{name}: the target of row {bad[0]} is missing or not finite")
    return t, {"n": int(t.size), "min": float(t.min()), "max": float(t.max()), "mean": float(t.mean())}


def _write_labelled(name, out, X, y, task, **kw) -> tuple[dict, Optional[dict]]:
    """Write ``X`` with labels ``y`` (class codes, or float targets for ``task = "regression"``); (class counts,
    targets' summary)."""
    if task == "regression":
        t, summary = _targets(name, y)
        write_dataset(out, X, t, y_dtype=np.float64, **kw)
        return {}, summary
    codes, classes, counts = _labels(name, y)
    refuse_continuous(f"{name}: the label", classes, task)
    write_dataset(out, X, codes, classes=classes, **kw)
    return counts, None


def convert_table(path: PathLike, out: PathLike, *, label_column: Optional[str] = None, no_label: bool = False,
                  drop_columns: Optional[Sequence[str]] = None, dtype: str = "float32",
                  recipe: Optional[dict] = None, task: Optional[str] = None,
                  weight_column: Optional[str] = None) -> ConvertResult:
    """A Parquet / Arrow file to an HDF5 data file (module docstring); ``recipe``: a training file's."""
    t0 = time.perf_counter()
    name = os.fspath(path)
    frame = _read_table(path)
    columns = [str(c) for c in frame.columns]
    frame.columns = columns
    recipe = recipe or {}
    if label_column is None and not no_label:
        label_column = recipe.get("label_column")
        if label_column is not None and label_column not in columns:
            no_label, label_column = True, None  # the training file's label is not here: rows to score
        elif label_column is None:
            raise InputError(f"{name}: give --label-column (one of {', '.join(columns[:10])}) or --no-label")
    drop = list(drop_columns or recipe.get("drop_columns") or [])
    if weight_column is None and recipe.get("weight_column") in columns:
        weight_column = recipe["weight_column"]  # a recipe's weight column, where this file has it
    for c in drop + ([label_column] if label_column else []) + ([weight_column] if weight_column else []):
        if c not in columns:
            raise InputError(f"{name}: no column named {c!r} (columns: {', '.join(columns[:10])})")
    if weight_column is not None and (weight_column == label_column or weight_column in drop):
        raise InputError(f"{name}: --weight-column {weight_column!r} is the label or a dropped column")
    features = [c for c in columns if c != label_column and c != weight_column and c not in drop]
    weight = None
    if weight_column is not None:
        weight = frame[weight_column].to_numpy(dtype=np.float64, na_value=np.nan)
        bad = np.flatnonzero(~(np.isfinite(weight) & (weight >= 0)))
        if bad.size:
            raise InputError(f"{name}: row {bad[0]}, weight column {weight_column!r}: {weight[bad[0]]} is not a "
                             "finite number >= 0")
    want = recipe.get("feature_names")
    if want is not None:
        missing, extra = [c for c in want if c not in features], [c for c in features if c not in want]
        if missing or extra:
            raise InputError(f"{name}: the columns are not the recipe's (missing: {', '.join(missing[:5]) or 'none'}; "
                             f"not in the recipe: {', '.join(extra[:5]) or 'none'})")
        features = list(want)
    if not features:
        raise InputError(f"{name}: no feature columns")
    cats = dict(recipe.get("categories") or {})
    task = task or recipe.get("task") or "auto"
    X = np.empty((len(frame), len(features)), dtype=np.dtype(dtype))
    for j, c in enumerate(features):
        col = frame[c]
        kind = str(col.dtype)
        if c in cats or kind in ("object", "category", "string", "str", "bool") or kind.startswith("string"):
            if kind == "bool" and c not in cats:
                X[:, j] = col.to_numpy(dtype=np.float64)
                continue
            values = cats.get(c)
            if values is None:
                values = lab.canonical({lab.plain(v) for v in col.dropna().tolist()})
                cats[c] = values
            index = {v: i for i, v in enumerate(values)}
            X[:, j] = [np.nan if v is None or (isinstance(v, float) and v != v) else
                       float(index.get(lab.plain(v), np.nan)) for v in col.astype(object).tolist()]
        else:
            try:
                X[:, j] = col.to_numpy(dtype=np.float64, na_value=np.nan)
            except (TypeError, ValueError):
                raise InputError(f"{name}: column {c!r} ({kind}) is neither numeric nor categorical") from None
    if np.isinf(X).any():
        r, j = np.argwhere(np.isinf(X))[0]
        raise InputError(f"{name}: row {r}, column {features[j]!r}: an infinite value (use null for missing)")
    native = {j: max(1, len(cats[c])) for j, c in enumerate(features) if c in cats and len(cats[c]) <= MAX_CATEGORIES}
    attrs = {"source": os.path.basename(name), "source_format": "parquet",
             **({CATEGORICAL_ATTR: categorical_attr(native)} if native else {}),
             "recipe": json.dumps({"format": "parquet", "label_column": label_column, "drop_columns": drop or None,
                                   "categories": {c: cats[c] for c in features if c in cats} or None,
                                   "feature_names": features, "dtype": str(np.dtype(dtype)),
                                   **({"task": "regression"} if task == "regression" else {}),
                                   **({"weight_column": weight_column} if weight_column else {})}, sort_keys=True)}
    targets = None
    if no_label:
        attrs["unlabelled"] = 1
        write_dataset(out, X, np.zeros(len(frame), dtype=np.int8), feature_names=features, attrs=attrs)
        counts: dict = {}
    else:
        counts, targets = _write_labelled(name, out, X, frame[label_column].to_numpy(dtype=object), task,
                                          feature_names=features, attrs=attrs, weight=weight)
    return ConvertResult(name, os.fspath(out), len(frame), len(features), str(np.dtype(dtype)), counts, None,
                         time.perf_counter() - t0, targets=targets)


def convert_npy(path: PathLike, out: PathLike, *, labels: Optional[PathLike] = None,
                dtype: str = "float32", task: Optional[str] = None) -> ConvertResult:
    """Rows of a ``.npy`` file (n, d), labels from ``labels`` (a ``.npy`` of n values; None: rows to score)."""
    t0 = time.perf_counter()
    name = os.fspath(path)
    try:
        X = np.load(name, allow_pickle=False, mmap_mode="r")
    except (OSError, ValueError) as exc:
        raise InputError(f"{name}: not a readable .npy file ({exc})") from None
    if X.ndim != 2 or X.dtype.kind not in "iufb":
        raise InputError(f"{name}: expected a 2-D array of numbers (rows x features), got {X.dtype} {X.shape}")
    X = np.asarray(X, dtype=np.dtype(dtype))
    if np.isinf(X).any():
        r, j = np.argwhere(np.isinf(X))[0]
        raise InputError(f"{name}: row {r}, feature {j}: an infinite value (NaN marks a missing one)")
    attrs = {"source": os.path.basename(name), "source_format": "npy"}
    targets = None
    if labels is None:
        attrs["unlabelled"] = 1
        write_dataset(out, X, np.zeros(len(X), dtype=np.int8), attrs=attrs)
        counts: dict = {}
    else:
        try:
            y = np.load(os.fspath(labels), allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise InputError(f"--labels {labels}: not a readable .npy file ({exc})") from None
        if y.shape != (len(X),):
            raise InputError(f"--labels {labels}: {y.shape} labels for {len(X)} rows (one a row, 1-D)")
        counts, targets = _write_labelled(os.fspath(labels), out, X, y.astype(object), task or "auto", attrs=attrs)
    return ConvertResult(name, os.fspath(out), len(X), X.shape[1], str(X.dtype), counts, None,
                         time.perf_counter() - t0, targets=targets)
