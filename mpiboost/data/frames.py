"""pandas DataFrames with categorical columns: categories as codes, agreed over the ranks, kept in the model.

A categorical column (``category`` dtype, or text in an ``object`` / ``string`` column) becomes the
index of its value in the column's categories, in canonical order (numbers ascending, text by code
point) over every rank's values; a missing value stays missing (NaN). The model records each such
column's categories (``info["categories"]``), and prediction maps a DataFrame's values through them,
by name: a category the training rows never had is a missing value. Such a column (of at most 255
categories) is a categorical feature: gbdt's trees of one output split it many categories against the
rest; multiclass trees and stumps split on the codes as on numbers (ranges of categories in that order).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from . import labels as lab


def _is_frame(X: Any) -> bool:
    return hasattr(X, "columns") and hasattr(X, "dtypes")


def categorical_columns(X: Any) -> list:
    """The names of ``X``'s categorical or text columns (none for anything but a DataFrame)."""
    if not _is_frame(X):
        return []
    out = []
    for name, dtype in zip(X.columns, X.dtypes):
        kind = str(dtype)
        if kind == "category" or kind in ("object", "string", "str") or kind.startswith("string"):
            out.append(str(name))
    return out


def encode(comm, X: Any) -> tuple[Any, Optional[dict]]:
    """Collective: ``X`` with its categorical columns as codes, and ``{column: categories}`` (None: none).

    Every rank passes its own rows; the categories are the union of every rank's values (so the codes
    are the same on every rank). Not a DataFrame, or no categorical column: ``(X, None)`` unchanged.

    Parameters
    ----------
    comm : Comm
        The ranks whose rows share the categories.
    X : array-like
        This rank's rows: a pandas DataFrame, or anything else (returned as it is).

    Returns
    -------
    X : array-like
        A copy of the DataFrame whose categorical columns hold their codes (float64, NaN for a missing value),
        or ``X`` itself.
    categories : dict or None
        ``{column name: its categories in code order}``, the same on every rank; None where no rank has a
        categorical column.
    """
    cols = categorical_columns(X)
    every = comm.allgather(cols) if comm.size > 1 else [cols]
    names = sorted({c for r in every for c in r}, key=lambda c: (0, every[0].index(c)) if c in every[0] else (1, c))
    if not names:
        return X, None
    mine = {}
    for c in names:
        if _is_frame(X) and c in [str(k) for k in X.columns]:
            v = X[_column(X, c)]
            vals = v.cat.categories.tolist() if str(v.dtype) == "category" else v.dropna().unique().tolist()
            mine[c] = [lab.plain(x) for x in vals]
        else:
            mine[c] = []
    parts = comm.allgather(mine) if comm.size > 1 else [mine]
    cats = {}
    for c in names:
        values = {x for p in parts for x in p.get(c, [])}
        try:
            cats[c] = lab.canonical(values)
        except ValueError:  # the same rule as labels, but this is a feature: say which column
            numbers = sorted(v for v in values if not isinstance(v, str))
            texts = sorted(v for v in values if isinstance(v, str))
            raise ValueError(f"X: column {c!r} mixes numbers ({', '.join(map(str, numbers[:3]))}) and text "
                             f"({', '.join(map(repr, texts[:3]))}): make it numbers (NaN for missing) or, for a "
                             "categorical column, all text or a pandas 'category' of one kind") from None
    return apply(X, cats), cats


def _column(X: Any, name: str):
    return next(k for k in X.columns if str(k) == name)


def apply(X: Any, categories: Optional[dict]) -> Any:
    """A copy of DataFrame ``X`` whose categorical columns hold their codes in ``categories`` (unknown: NaN)."""
    if not categories or not _is_frame(X):
        return X
    X = X.copy()
    for c, values in categories.items():
        if c not in [str(k) for k in X.columns]:
            continue
        key = _column(X, c)
        index = {v: i for i, v in enumerate(values)}
        col = X[key].astype(object)
        X[key] = np.array([np.nan if v is None or (isinstance(v, float) and v != v) else
                           float(index.get(lab.plain(v), np.nan)) for v in col], dtype=np.float64)
    return X
