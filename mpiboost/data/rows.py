"""Raw rows handed to a fitted model: one check for every model kind (batch and online)."""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ..errors import InputError


def raw_rows(X: Any, n_features: int, feature_names: Optional[Sequence[str]], hint: str = "") -> np.ndarray:
    """``X`` (numpy, pandas with the model's columns in any order, scipy.sparse) as a 2-D array of numbers.

    Raises
    ------
    InputError
        Naming the columns that differ from the model's, the shapes, or the first infinite value.
    """
    if hasattr(X, "columns") and hasattr(X, "dtypes"):  # a pandas DataFrame: its columns must be the model's
        names = [str(c) for c in X.columns]
        if feature_names is not None and names != list(feature_names):
            missing = [c for c in feature_names if c not in names]
            extra = [c for c in names if c not in feature_names]
            if missing or extra:
                raise InputError(f"X: the columns differ from the model's features (missing: "
                                 f"{', '.join(missing[:5]) or 'none'}; not the model's: {', '.join(extra[:5]) or 'none'})")
            X = X[list(feature_names)]  # the same columns in another order: the model's order
        X = X.to_numpy(dtype=np.float64, na_value=np.nan)
    elif hasattr(X, "tocsr") and hasattr(X, "nnz"):
        X = X.toarray()
    X = np.asarray(X)
    if X.ndim == 1 and X.size == n_features:
        X = X.reshape(1, -1)
    if X.ndim != 2 or X.shape[1] != n_features:
        raise InputError(f"X: expected rows of the model's {n_features} features, shape (n, {n_features}), got "
                         f"shape {X.shape}{hint}")
    if X.dtype.kind not in "iufb":
        try:
            X = X.astype(np.float64)
        except (TypeError, ValueError):
            raise InputError("X: values must be numbers (NaN for missing)") from None
    if X.dtype.kind == "f" and np.isinf(X).any():
        r, j = np.argwhere(np.isinf(X))[0]
        raise InputError(f"X row {r}, feature {j}: value {X[r, j]} is infinite (use NaN for missing values)")
    return X
