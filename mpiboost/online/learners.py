"""The online weak learners: a bank of N of them, made from a small spec that a model file records.

``auto`` (default): ``mnb`` on sparse counts (:func:`counts_like`: words, dark-background pixels), else ``nba``;
``mnb``: multinomial naive-Bayes leaves (:class:`mpiboost._ext._mnb.MNBBank`) for count features;
``nba``: naive-Bayes-adaptive leaves (:class:`mpiboost._ext._nba.NBABank`);
``hoeffding``: depth-1 Hoeffding trees with such a leaf at the root
(:class:`mpiboost._ext._hoeffding.HoeffdingBank`, the learner of the
paper's code: river's HoeffdingTreeClassifier, Gini, grace period 200,
delta 1e-7, tau 0.05). Both take ``var_prior``, the weight of the pooled
variance that each class's Gaussian variance is shrunk toward (0: the
class's own variance plus a tiny floor, as river's leaves do).
"""
from __future__ import annotations

import math
from typing import Mapping, Optional

from .._ext import _hoeffding, _mnb, _nba

KINDS = ("auto", "nba", "hoeffding", "mnb")
CHILDREN = ("majority", "nba")
DEFAULTS = {"kind": "auto", "var_prior": _nba.VAR_PRIOR, "grace_period": 200.0, "split_delta": 1e-7,
            "split_tau": 0.05, "split_children": "majority"}
TREE_OPTIONS = ("grace_period", "split_delta", "split_tau", "split_children")


def spec(given: Optional[Mapping] = None) -> dict:
    """The full, checked learner spec from the given entries (ValueError naming the option)."""
    given = dict(given or {})
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown weak-learner option(s) {', '.join(unknown)}")
    out = {**DEFAULTS, **{k: v for k, v in given.items() if v is not None}}
    if out["kind"] not in KINDS:
        raise ValueError(f"--weak-learner must be one of {', '.join(KINDS)}, not {out['kind']!r}")
    if out["kind"] in ("nba", "mnb", "auto"):
        extra = [k for k in TREE_OPTIONS if given.get(k) is not None and given[k] != DEFAULTS[k]]
        if extra:
            raise ValueError(f"--{extra[0].replace('_', '-')} is an option of --weak-learner hoeffding")
    a = float(out["var_prior"])
    if not (math.isfinite(a) and 0 <= a <= 1e6):
        raise ValueError(f"--var-prior must be in [0, 1e6], got {out['var_prior']}")
    g, d, tau = float(out["grace_period"]), float(out["split_delta"]), float(out["split_tau"])
    if not (math.isfinite(g) and g > 0):
        raise ValueError(f"--grace-period must be > 0, got {out['grace_period']}")
    if not 0 < d < 1:
        raise ValueError(f"--split-delta must be in (0, 1), got {out['split_delta']}")
    if not (math.isfinite(tau) and tau >= 0):
        raise ValueError(f"--split-tau must be >= 0, got {out['split_tau']}")
    if out["split_children"] not in CHILDREN:
        raise ValueError(f"--split-children must be one of {', '.join(CHILDREN)}")
    out.update(var_prior=a, grace_period=g, split_delta=d, split_tau=tau)
    return out


def counts_like(X) -> bool:
    """Whether rows ``X`` look like counts: every value an integer >= 0 (NaN aside), some of them beyond a nominal
    code (>= 16) and at least ``COUNTS_ZERO_SHARE`` of them 0, as :func:`mpiboost.online.source.scan` decides."""
    import numpy as np

    from .source import AUTO_NOMINAL_VALUES, COUNTS_ZERO_SHARE

    X = np.asarray(X, dtype=np.float64)
    finite = X[~np.isnan(X)]
    return bool(finite.size and np.all(finite >= 0) and np.all(finite == np.floor(finite))
                and finite.max() >= AUTO_NOMINAL_VALUES
                and np.count_nonzero(finite == 0) >= COUNTS_ZERO_SHARE * finite.size)


def resolve(learner: Mapping, counts: bool) -> dict:
    """The spec with ``kind = "auto"`` made concrete by the data's kind: ``mnb`` for counts and pixels
    (:func:`counts_like`), ``nba`` otherwise. A model records the resolved spec."""
    s = spec(learner)
    if s["kind"] == "auto":
        s["kind"] = "mnb" if counts else "nba"
    return s


def make_bank(learner: Mapping, n_learners: int, n_classes: int, values):
    """A bank of ``n_learners`` fresh weak learners of ``learner`` (a :func:`spec`, resolved: not ``auto``)."""
    s = spec(learner)
    if s["kind"] == "auto":
        raise ValueError("the weak learners' kind 'auto' must be resolved from the data first (learners.resolve)")
    if s["kind"] == "mnb":
        return _mnb.MNBBank(n_learners, n_classes, values)
    if s["kind"] == "nba":
        return _nba.NBABank(n_learners, n_classes, values, s["var_prior"])
    return _hoeffding.HoeffdingBank(n_learners, n_classes, values, grace_period=s["grace_period"],
                                    delta=s["split_delta"], tau=s["split_tau"], var_prior=s["var_prior"],
                                    nba_children=s["split_children"] == "nba")
