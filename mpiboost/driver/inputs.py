"""The run's inputs: the training and validation rows, loaded and checked against the algorithm's tasks."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Optional, Sequence, TYPE_CHECKING

import numpy as np

from .. import boost
from ..data import labels as lab
from ..data.format import FileInfo, inspect
from ..data.load import check_same_columns, load, load_raw
from ..errors import CollectiveError, InputError
from ..data.subsets import split_valid

if TYPE_CHECKING:  # annotations only
    from ..boost.base import Algorithm
    from ..data.load import Shard
    from ..comm import Comm
    from ..data.load import Shard


@dataclass
class Inputs:
    """The rows a run trains on (:func:`mpiboost.driver.inputs.load_inputs` reads them).

    Attributes
    ----------
    shard : Shard
        This rank's training rows, binned.
    valid : Shard or None
        This rank's validation rows, binned with the training edges.
    seconds : float
        What loading them took.
    valid_metric : str
        What the validation rows measure: ``"error"``, ``"auc"`` (scored as 1 - AUC) or a regression metric.
    """

    shard: Shard
    valid: Optional[Shard] = None
    seconds: float = 0.0
    valid_metric: str = "error"


def _check_task(cls: type, shard: Shard) -> None:
    """The data must be of a kind the algorithm declares."""
    if shard.regression:
        return  # numeric targets: any values
    K = shard.n_classes
    shown = ", ".join(map(str, shard.classes[:8])) + (", ..." if K > 8 else "")
    files = ", ".join(os.path.basename(f.path) for f in shard.files[:4]) + (", ..." if len(shard.files) > 4 else "")
    if K < 2:
        raise CollectiveError(f"the training data ({files}) hold one class only ({shown}): nothing to learn")
    if K > 2 and "multiclass" not in cls.tasks:
        raise CollectiveError(
            f"{cls.name} is a binary algorithm but the training data ({files}) have {K} classes ({shown}); "
            f"for multiclass data use {', '.join(boost.with_task('multiclass'))}"
        )


def load_inputs(comm: Comm, algo: Algorithm, data: Sequence[str], valid: Optional[Sequence[str]], *, seed: int,
                dedicated_coordinator: bool, valid_fraction: Optional[float] = None,
                blocks: Optional[Sequence[int]] = None) -> Inputs:
    """Collective: the training rows (labels as the algorithm takes them), validation rows and extra inputs.

    Parameters
    ----------
    comm : Comm
        The ranks that train together; each reads its block of the rows.
    algo : Algorithm
        The algorithm asked for: its task (how the labels are read), whether it keeps the raw features, its
        list parameters (files of extra rows, read here and named in the model by their file names).
    data, valid : sequence of paths or in-memory files
        The training files in order, and the validation files (binned with the training edges).
    seed : int
        The seed of the binning sample and of the ``valid_fraction`` split.
    dedicated_coordinator : bool
        Rank 0 holds no rows.
    valid_fraction : float, optional
        Hold out this stratified part of the training rows instead of ``valid`` files
        (:func:`mpiboost.data.subsets.split_valid`, the same rows on any number of ranks).
    blocks : sequence of int, optional
        Rows per rank (``comm.size`` counts); None: even blocks.

    Returns
    -------
    Inputs
        The rows, and the seconds their loading took.

    Raises
    ------
    InputError, CollectiveError
        Naming the file, row or option, on every rank alike, before any training.
    """
    t0 = time.perf_counter()
    cls = type(algo)
    raw = cls.needs_raw
    if valid:
        # the validation files' columns are the training files', before any row is read
        with comm.collective_guard():
            first = data[0] if isinstance(data[0], FileInfo) else inspect(data[0])
            check_same_columns(first, [v if isinstance(v, FileInfo) else inspect(v) for v in valid])
    task = algo.load_task()
    shard = load(comm, data, task="regression" if task == "regression" else "multiclass",
                 dedicated_coordinator=dedicated_coordinator, seed=seed, keep_raw=raw, blocks=blocks)
    _check_task(cls, shard)
    if shard.weight is not None and not algo.accepts_weights():
        takers = [n for n, c in boost.ALGORITHMS.items() if c.weight_rule]
        raise CollectiveError(f"the training data have sample weights, which {cls.name} does not take (yet): "
                              f"train {', '.join(takers)}, or drop the 'weight' dataset")
    if shard.weight is not None and not shard.regression:
        _check_weighted_classes(comm, shard)
    if task == "binary":
        shard.y = lab.signed(shard.y)
    vshard = None
    if valid_fraction:
        shard, vshard = split_valid(comm, shard, valid_fraction, seed)
        _check_task(cls, shard)
        present = [c for c, k in shard.label_counts.items() if k > 0]  # global counts: every rank agrees
        if len(present) < 2 and not shard.regression:
            raise InputError(f"--valid-fraction {valid_fraction} leaves the training rows one class "
                             f"({present[0] if present else None!r}): too few rows of the others to hold some out")
    elif valid:
        # a validation row of a class the training rows lack counts as an error (no model predicts it)
        vshard = load(comm, valid, task=task, classes=None if task == "regression" else shard.classes,
                      unseen=None if task == "regression" else {}, dedicated_coordinator=dedicated_coordinator,
                      bins=shard.bins, keep_raw=raw)
    for p in cls.parameters:
        if p.type is list and algo.params.get(p.name):
            # Files of extra rows (MultiBoost's --q-data): read raw, domains matched to the training domains
            # by name; the model keeps their file names only.
            shard.extra[p.name] = load_aligned_rows(comm, algo.params[p.name], shard, dedicated_coordinator, p.flag)
            algo.params[p.name] = [os.path.basename(str(f)) for f in algo.params[p.name]]
    return Inputs(shard, vshard, time.perf_counter() - t0)


def load_aligned_rows(comm: Comm, paths: Sequence[str], shard: Shard, dedicated_coordinator: bool,
                      option: str) -> tuple[np.ndarray, np.ndarray]:
    """Collective: this rank's block of extra rows ``(X, domain)``, with the domain ids of the training data.

    Parameters
    ----------
    comm : Comm
        The ranks that read the files, each its block of their rows.
    paths : sequence of str
        The files of extra rows (MultiBoost's ``--q-data``), read raw; their domains are matched to the training
        domains by name where both have names, else by id.
    shard : Shard
        This rank's training rows (their raw values must be kept), whose domains the extra rows take.
    dedicated_coordinator : bool
        Rank 0 holds no rows.
    option : str
        The parameter's command-line option, named in the messages.

    Returns
    -------
    X : numpy.ndarray of shape (m_local, d)
        This rank's extra rows, their raw values.
    domain : numpy.ndarray of int32, shape (m_local,)
        Their training domain ids.
    """
    if shard.X is None:
        raise InputError(f"{option} needs an algorithm that keeps the raw features")
    extra = load_raw(comm, paths, task=None, dedicated_coordinator=dedicated_coordinator)
    if extra.d != shard.d:
        raise InputError(f"{option} files have {extra.d} features but the training data has {shard.d}")
    names = list(shard.domain_names or [])
    ids = np.arange(extra.n_domains)
    extra_names = extra.domain_names
    if len(extra.files) == 1 and not extra.files[0].has_domain:
        # One file without a domain column: all its rows are of the domain its attribute names.
        one = extra.files[0].attrs.get("domain_name")
        if not one:
            raise InputError(
                f"{extra.files[0].path}: {option} rows need a domain: a 'domain' column, a 'domain_name' "
                "attribute, or one file per domain"
            )
        extra_names = [str(one)]
    if extra_names and names:
        unknown = [nm for nm in extra_names if nm not in names]
        if unknown:
            raise InputError(
                f"{option} domain {unknown[0]!r} is not a training domain (training domains: {', '.join(names)})"
            )
        ids = np.array([names.index(nm) for nm in extra_names])
    elif extra.n_domains > shard.n_domains:
        raise InputError(f"{option} has {extra.n_domains} domains but the training data has {shard.n_domains}")
    return extra.X, ids[extra.domain].astype(np.int32)


def _check_weighted_classes(comm: Comm, shard: Shard) -> None:
    """Collective: a classifier's weighted rows must hold two classes (CollectiveError otherwise): rows of weight
    0 do not count, as in LightGBM and scikit-learn."""
    from .._ext import _exact

    classes = list(shard.classes) if shard.classes is not None else [-1, 1]
    index = np.asarray(shard.y)
    if shard.classes is None:
        index = (index > 0).astype(np.int64)
    w = np.asarray(shard.weight, dtype=np.float64)
    terms = [_exact.partials(np.ascontiguousarray(w[index == k])) for k in range(len(classes))]
    with comm.primitive("reduce_stats"):
        sums = comm.sum_terms(terms)
    weighted = [c for c, s in zip(classes, sums) if s > 0]
    if len(weighted) < 2:
        raise CollectiveError(f"the sample weights leave {len(weighted)} class of positive weight "
                              f"({', '.join(map(repr, weighted)) or 'none'}): a classifier needs two classes "
                              "with weight")
