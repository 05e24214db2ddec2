"""In-memory rows as a data "file": each rank passes its own rows, the job sees them concatenated in rank order.

:func:`memory_file` turns this rank's arrays (numpy, pandas, scipy.sparse) into a
:class:`MemoryFile`, a :class:`~mpiboost.data.format.FileInfo` whose rows are held in
memory, and agrees with the other ranks on everything a file's schema would say: the
number of features, the value dtype, the feature and domain names. Its rows are the
concatenation of every rank's rows in rank order, and each rank owns its own block
(``MemoryFile.blocks``), so :func:`mpiboost.data.load.load` reads it through the same
code as a file: the same label codes, bin edges (sampled on the global row order) and
shard as a file of the concatenated rows gives, on any number of ranks.

Every check is collective: a bad input on one rank ends every rank with the same
message (exit 2 from the CLI, :class:`~mpiboost.errors.CollectiveError` from the API),
naming the argument, the rank and the row.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

from ..errors import CollectiveError
from . import labels as lab
from .format import MAX_DOMAINS, X_DTYPES, FileInfo

PATH = "<arrays>"  # what messages call the in-memory rows


@dataclass
class MemoryFile(FileInfo):
    """A data file whose rows are this rank's arrays (see the module docstring)."""

    local: dict = field(default_factory=dict)  # "X", "y" (codes into ``classes``), "domain" (optional)
    local_start: int = 0  # global row of this rank's first row
    blocks: tuple = ()  # rows per rank, in rank order

    def rows(self, name: str, start: int, stop: int) -> np.ndarray:
        """Rows ``[start, stop)`` (file rows = global rows) of ``name``; only this rank's rows exist here."""
        a, b = start - self.local_start, stop - self.local_start
        n_local = self.local["y"].shape[0]
        if a < 0 or b > n_local:
            # the loaders read only a rank's own block; another block is not on this rank
            raise CollectiveError(f"{self.path}: rows {start}..{stop - 1} are not on this rank "
                                  f"(it holds {self.local_start}..{self.local_start + n_local - 1})")
        return self.local[name][a:b]


def _dense_rows(X: Any, what: str) -> tuple[np.ndarray, Optional[list]]:
    """``X`` as a 2-D numpy array (scipy.sparse densified, pandas by its values) and its column names."""
    names = None
    if hasattr(X, "columns") and hasattr(X, "dtypes"):  # a pandas DataFrame
        names = [str(c) for c in X.columns]
        kinds = [str(t) for t in X.dtypes]
        bad = [n for n, t in zip(names, kinds) if not (t.startswith(("int", "uint", "float", "bool"))
                                                        or t in ("Int8", "Int16", "Int32", "Int64", "Float32",
                                                                 "Float64", "boolean"))]
        if bad:
            raise ValueError(f"{what}: column {bad[0]!r} is not numeric ({dict(zip(names, kinds))[bad[0]]}); "
                             "give categories as codes (e.g. df[col].cat.codes) or drop the column")
        X = X.to_numpy(dtype=np.float64, na_value=np.nan) if any(t[0].isupper() for t in kinds) else X.to_numpy()
    elif hasattr(X, "tocsr") and hasattr(X, "nnz"):  # scipy.sparse: bins need every value, zeros included
        X = X.toarray()
    X = np.asarray(X)
    if X.dtype == object:
        try:
            X = X.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{what}: values must be numbers (NaN for missing)") from None
    if X.dtype.kind == "b":
        X = X.astype(np.uint8)
    if X.ndim == 1 and X.size == 0:
        X = X.reshape(0, 0)
    if X.ndim != 2:
        raise ValueError(f"{what}: expected a 2-D array of rows x features, got shape {X.shape}")
    if X.dtype.kind not in "iuf":
        raise ValueError(f"{what}: values must be numbers, got dtype {X.dtype}")
    return X, names


def _agreed_dtype(dtypes: Sequence[str]) -> np.dtype:
    """One value dtype for every rank: the common type of theirs if it is a file's, else float64."""
    t = np.result_type(*[np.dtype(s) for s in dtypes]) if dtypes else np.dtype(np.float64)
    return t if t in X_DTYPES else np.dtype(np.float64)


def memory_file(
    comm,
    X: Any,
    y: Any = None,
    domain: Any = None,
    *,
    feature_names: Optional[Sequence[str]] = None,
    domain_names: Optional[Sequence[str]] = None,
    what: str = "X",
    weight: Any = None,
    targets: bool = False,
) -> MemoryFile:
    """Collective: this rank's rows ``X`` (``n_local x d``), labels ``y`` and domain ids as a :class:`MemoryFile`.

    Parameters
    ----------
    comm
        A :class:`mpiboost.comm.Comm`.
    X
        This rank's rows: a numpy array, a pandas DataFrame (numeric columns; their names are the feature
        names) or a scipy.sparse matrix. NaN marks a missing value; infinities are refused. A rank may pass
        no rows (shape ``(0, d)``, or ``(0, 0)``).
    y
        This rank's labels, any values (numbers or strings, one form for all ranks); ``None``: no labels
        (prediction).
    domain
        This rank's domain (or task) ids, integers ``0 .. MAX_DOMAINS - 1``; ``None``: one domain.
    feature_names, domain_names
        Names to record (the same on every rank); a DataFrame's columns name the features by default.
    what
        The argument's name in messages (``"X"``, ``"valid"``).
    weight
        This rank's sample weights (finite, >= 0), one per row; ``None``: every row weighs 1.
    targets
        ``y`` holds numeric regression targets (kept as float64, as a file's float ``y``), not class labels.

    Returns
    -------
    MemoryFile
        ``n``: the rows of all ranks; ``blocks``: each rank's count; ``x_dtype``: the common value dtype.
    """
    rank = comm.rank
    err = ""
    try:
        Xl, names = _dense_rows(X, what)
    except ValueError as exc:
        Xl, names, err = np.zeros((0, 0)), None, f"rank {rank}: {exc}"
    n_local = int(Xl.shape[0])
    mine = {"n": n_local, "d": int(Xl.shape[1]) if n_local or Xl.shape[1] else -1, "dtype": Xl.dtype.str,
            "names": names, "err": err, "y": y is not None, "domain": domain is not None,
            "weight": weight is not None}
    every = comm.allgather(mine) if comm.size > 1 else [mine]
    errs = [e["err"] for e in every if e["err"]]
    if errs:
        raise CollectiveError(errs[0])
    ds = {e["d"] for e in every if e["d"] >= 0}
    if len(ds) > 1:
        shown = ", ".join(f"rank {r}: {e['d']}" for r, e in enumerate(every) if e["d"] >= 0)
        raise CollectiveError(f"{what}: the ranks' rows have different numbers of features ({shown})")
    d = ds.pop() if ds else 0
    counts = tuple(e["n"] for e in every)
    n = sum(counts)
    if n == 0:
        raise CollectiveError(f"{what}: no rank passed any row")
    if d == 0:
        raise CollectiveError(f"{what}: the rows have no features (shape ({n}, 0))")
    for flag in ("y", "domain", "weight"):
        given = {e[flag] for e in every}
        if len(given) > 1:
            raise CollectiveError(f"{what}: {flag} is given on some ranks and not on others (give it on all, "
                                  "an empty array on a rank without rows)")
    if feature_names is None:
        frames = {tuple(e["names"]) for e in every if e["names"] is not None}
        if len(frames) > 1:
            raise CollectiveError(f"{what}: the ranks' DataFrames have different columns")
        feature_names = list(frames.pop()) if frames else None
    if feature_names is not None:
        feature_names = [str(v) for v in feature_names]
        if len(feature_names) != d:
            raise CollectiveError(f"{what}: {len(feature_names)} feature names for {d} features")
    dtype = _agreed_dtype([e["dtype"] for e in every if e["n"] > 0])
    if Xl.shape != (n_local, d):
        Xl = np.zeros((0, d), dtype=dtype)
    Xl = np.ascontiguousarray(Xl, dtype=dtype)
    start = sum(counts[:rank])
    local = {"X": Xl}
    problem = ""
    classes = None
    if dtype.kind == "f":
        inf = np.isinf(Xl)
        if inf.any():
            r, j = np.argwhere(inf)[0]
            problem = (f"{what} rank {rank} row {r} (global row {start + r}), feature {j}: value {Xl[r, j]} is "
                       "infinite (use NaN for missing values)")
    if not problem and every[0]["y"]:
        yl = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y).reshape(-1) if n_local or np.size(y) else \
            np.zeros(0, dtype=np.int64)
        if yl.shape[0] != n_local:
            problem = f"y on rank {rank}: {yl.shape[0]} labels for {n_local} rows"
        elif targets:
            if yl.dtype.kind not in "iuf":
                problem = f"y on rank {rank}: a regression objective needs numeric targets, got dtype {yl.dtype}"
            else:
                local["y"] = yl.astype(np.float64)
                bad = np.flatnonzero(~np.isfinite(local["y"]))
                if bad.size:
                    problem = (f"y on rank {rank} row {bad[0]} (global row {start + bad[0]}): target "
                               f"{local['y'][bad[0]]} is not finite")
        else:
            try:
                uniq, codes = np.unique(yl, return_inverse=True) if n_local else (np.zeros(0), np.zeros(0))
                classes = [lab.plain(v) for v in uniq]
                local["y"] = codes.astype(np.int32).reshape(-1)
            except (TypeError, ValueError) as exc:
                bad = next((i for i, v in enumerate(yl) if not _is_label(v)), 0)
                problem = f"y on rank {rank} row {bad} (global row {start + bad}): {exc}"
    if not problem and not every[0]["y"]:
        local["y"] = np.zeros(n_local, dtype=np.int32)
    if not problem and every[0]["domain"]:
        dl = np.asarray(domain.to_numpy() if hasattr(domain, "to_numpy") else domain).reshape(-1)
        if dl.shape[0] != n_local:
            problem = f"domain on rank {rank}: {dl.shape[0]} ids for {n_local} rows"
        elif n_local and (dl.dtype.kind not in "iu" and not (dl.dtype.kind == "f" and np.all(np.mod(dl, 1) == 0))):
            problem = f"domain on rank {rank}: ids must be integers 0, 1, ..., got dtype {dl.dtype}"
        elif n_local and (dl.min() < 0 or dl.max() >= MAX_DOMAINS):
            r = int(np.argmax((dl < 0) | (dl >= MAX_DOMAINS)))
            problem = (f"domain on rank {rank} row {r} (global row {start + r}): id {dl[r]} is not in "
                       f"0..{MAX_DOMAINS - 1}")
        else:
            local["domain"] = dl.astype(np.int32)
    if not problem and every[0]["weight"]:
        wl = np.asarray(weight.to_numpy() if hasattr(weight, "to_numpy") else weight).reshape(-1)
        if wl.shape[0] != n_local:
            problem = f"weight on rank {rank}: {wl.shape[0]} weights for {n_local} rows"
        elif wl.dtype.kind not in "iuf":
            problem = f"weight on rank {rank}: weights must be numbers, got dtype {wl.dtype}"
        else:
            local["weight"] = wl.astype(np.float64)  # checked (finite, >= 0) when read, as a file's
    comm.check(not problem, problem)
    return MemoryFile(path=PATH, n=n, d=d, x_dtype=dtype, y_dtype=np.dtype(np.float64 if targets else np.int32),
                      has_domain=bool(every[0]["domain"]), feature_names=feature_names,
                      domain_names=[str(v) for v in domain_names] if domain_names is not None else None,
                      classes=classes, local=local, local_start=start, blocks=counts,
                      has_weight=bool(every[0]["weight"]))


def _is_label(v) -> bool:
    try:
        lab.plain(v)
        return True
    except ValueError:
        return False


_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 of each uint64 (wrapping arithmetic): a well-spread 64-bit hash of a row id."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def fingerprint_memory(comm, mf: MemoryFile) -> dict:
    """Collective: a fingerprint of in-memory rows like a file's (:mod:`mpiboost.data.fingerprint`).

    A sum over the rows of a 64-bit hash of (global row id, values, label, domain), reduced exactly, so it is
    the same on any number of ranks and for any blocks; other values, labels or row order almost surely
    change it.

    Parameters
    ----------
    comm : Comm
        The ranks holding the rows (those :func:`memory_file` was given).
    mf : MemoryFile
        The in-memory rows, this rank's block of them (:func:`memory_file`).

    Returns
    -------
    dict
        ``{"file", "n", "d", "X", "y", "domain", "sample_sha256"}``, as
        :func:`mpiboost.data.fingerprint.fingerprint_file` gives for a file; the same on every rank.
    """
    import hashlib

    X = mf.local["X"].astype(np.float64)
    X[np.isnan(X)] = np.nan  # one NaN bit pattern
    n_local = X.shape[0]
    rows = _mix(np.arange(mf.local_start, mf.local_start + n_local, dtype=np.uint64))
    cols = _mix(np.arange(X.shape[1], dtype=np.uint64) + np.uint64(1 << 40))
    with np.errstate(over="ignore"):
        h = (_mix(X.view(np.uint64) ^ cols[None, :]).sum(axis=1, dtype=np.uint64) if X.size else
             np.zeros(n_local, dtype=np.uint64))
        if mf.classes is not None:
            tags = np.array([int.from_bytes(hashlib.sha256(repr(v).encode()).digest()[:8], "little")
                             for v in mf.classes] or [0], dtype=np.uint64)
            h = h + _mix(tags[mf.local["y"]] ^ np.uint64(0x5555))
        elif mf.is_target:  # regression targets: their bits
            h = h + _mix(np.ascontiguousarray(mf.local["y"], dtype=np.float64).view(np.uint64) ^ np.uint64(0x5555))
        if "domain" in mf.local:
            h = h + _mix(mf.local["domain"].astype(np.uint64) ^ np.uint64(0xAAAA))
        total = (_mix(h ^ rows)).sum(dtype=np.uint64) if n_local else np.uint64(0)
    limbs = np.array([(int(total) >> (16 * k)) & 0xFFFF for k in range(4)], dtype=np.int64)
    limbs = comm.allreduce_int(limbs)  # exact: at most 2^47 ranks' limbs
    digest = sum(int(v) << (16 * k) for k, v in enumerate(limbs)) & ((1 << 64) - 1)
    return {"file": PATH, "n": int(mf.n), "d": int(mf.d), "X": str(mf.x_dtype), "y": "labels",
            "domain": bool(mf.has_domain), "sample_sha256": f"{digest:016x}"}


__all__ = ["MemoryFile", "fingerprint_memory", "memory_file"]
