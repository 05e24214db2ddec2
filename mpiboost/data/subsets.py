"""Parts of a shard's rows on the global row order: the validation split, a subset, the classes' indices.

Every rule here depends on the global order of the rows and a seed alone, never on how the rows are spread
over the ranks, so a model trained on a part is the same on any number of ranks.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import CollectiveError
from .load import Layout, Shard

if TYPE_CHECKING:  # annotations only
    from ..comm import Comm


def class_index(y: np.ndarray) -> np.ndarray:
    """Class indices 0..K-1 of labels held as -1/+1 (binary) or as indices already."""
    y = np.asarray(y)
    if y.dtype == np.int8:  # lab.signed: -1/+1 for classes 0/1
        return (y > 0).astype(np.int64)
    return y.astype(np.int64)


def valid_mask(shard: Shard, fraction: float, seed: int, comm: Comm) -> np.ndarray:
    """Collective: which of this rank's rows form the validation part (a boolean mask).

    The rule is stratified and systematic on the global row order: the rows
    of each (domain, class) group are numbered 0, 1, ... in the files' order
    (an exclusive scan of the group counts over the ranks), and row k of a
    group is a validation row when ``floor((k + 1) F + u) > floor(k F + u)``,
    with ``u`` in [0, 1) drawn per group from ``seed``. Every group thus gives
    ``floor(F n_g)`` or ``ceil(F n_g)`` rows, spread evenly over the file
    order, and the split depends only on the global order and the seed, not
    on how the rows are spread over the ranks.

    Parameters
    ----------
    shard : Shard
        This rank's rows.
    fraction : float
        ``F``, the validation part's share of each (domain, class) group.
    seed : int
        The seed of the groups' offsets ``u``.
    comm : Comm
        The ranks holding the shard: each group's rows before this rank's are counted over them.

    Returns
    -------
    numpy.ndarray of bool, shape (n_local,)
        True for this rank's rows of the validation part.
    """
    K = 1 if shard.regression else shard.n_classes  # regression: stratified by domain alone
    group = shard.domain.astype(np.int64) * K + (0 if shard.regression else class_index(shard.y))
    n_groups = max(1, shard.n_domains) * K
    counts = np.bincount(group, minlength=n_groups).astype(np.int64)
    table = comm.allgather_array(counts) if comm.size > 1 else counts[None, :]
    before = table[: comm.rank].sum(axis=0)
    order = np.argsort(group, kind="stable")
    k = np.empty(group.size, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    k[order] = np.arange(group.size) - np.repeat(starts, counts)
    k += before[group]
    u = np.array([np.random.default_rng([int(seed), 0x5E1EC7, g]).random() for g in range(n_groups)])[group]
    return np.floor((k + 1) * fraction + u) > np.floor(k * fraction + u)


def subset(shard: Shard, keep: np.ndarray, comm: Comm) -> Shard:
    """Collective: the shard of the rows ``keep`` of every rank, in the same global order.

    Parameters
    ----------
    shard : Shard
        This rank's rows.
    keep : numpy.ndarray of bool, shape (n_local,)
        Which of this rank's rows the subset holds.
    comm : Comm
        The ranks holding the shard: the subset's global row numbers, class and domain counts are agreed.

    Returns
    -------
    Shard
        The rows kept, their binned columns, raw rows and weights copied, the global counts recomputed.
    """
    n_local = int(keep.sum())
    table = comm.allgather_array(np.array([n_local], dtype=np.int64)) if comm.size > 1 else np.array([[n_local]])
    start = int(table[: comm.rank, 0].sum())
    n = int(table[:, 0].sum())
    domain = shard.domain[keep]
    dcounts = comm.allreduce_int(np.bincount(domain, minlength=shard.n_domains).astype(np.int64))
    labels: dict = {}
    if not shard.regression:
        index = class_index(shard.y[keep])
        classes = shard.classes if shard.classes is not None else [-1, 1]
        local = np.bincount(index[index >= 0], minlength=len(classes)).astype(np.int64)
        labels = dict(zip(classes, comm.allreduce_int(local).tolist()))
    return Shard(
        cols=None if shard.cols is None else np.ascontiguousarray(shard.cols[:, keep]),
        weight=None if shard.weight is None else np.ascontiguousarray(shard.weight[keep]),
        X=None if shard.X is None else np.ascontiguousarray(shard.X[keep]),
        y=np.ascontiguousarray(shard.y[keep]),
        domain=np.ascontiguousarray(domain),
        start=start,
        n_global=n,
        n_domains=shard.n_domains,
        files=shard.files,
        # the rows are no longer the layout's even blocks; only the global order (start, n) is used from here on
        layout=Layout(n, shard.layout.size, shard.layout.dedicated_coordinator),
        bins=shard.bins,
        feature_names=shard.feature_names,
        domain_names=shard.domain_names,
        label_counts=labels,
        domain_counts=dcounts,
        timings=dict(shard.timings),
        classes=shard.classes,
        extra=shard.extra,
        regression=shard.regression,
    )


def split_valid(comm: Comm, shard: Shard, fraction: float, seed: int) -> tuple[Shard, Shard]:
    """Collective: (training part, validation part) of ``shard`` by :func:`valid_mask`.

    Parameters
    ----------
    comm : Comm
        The ranks holding the shard.
    shard : Shard
        This rank's rows.
    fraction : float
        The validation part's share of each (domain, class) group.
    seed : int
        The seed of the groups' offsets.

    Raises
    ------
    CollectiveError
        On every rank alike, when the validation part would hold no rows.
    """
    mask = valid_mask(shard, fraction, seed, comm)
    train_part, valid_part = subset(shard, ~mask, comm), subset(shard, mask, comm)
    if valid_part.n_global == 0:
        raise CollectiveError(f"--valid-fraction {fraction} of {shard.n_global:,} rows leaves no validation rows")
    return train_part, valid_part


__all__ = ["class_index", "split_valid", "subset", "valid_mask"]
