"""The stream options every online booster shares, declared once as :class:`~mpiboost.boost.base.Param`.

From :data:`STREAM_PARAMS` come the ``train`` command's "stream options" group, the docs' table,
the Python API's keys (``{"algo": "online-agnostic", "block-size": 16}``) and the online
estimators' constructor arguments; :func:`resolve` checks a given set of them (ValueError naming
the option) and fills in the defaults.
"""
from __future__ import annotations

from typing import Mapping

from .._ext import _nba
from ..param import Param
from .learners import CHILDREN, KINDS
from .learners import spec as learner_spec

MAX_BLOCK = 1 << 20
STREAM = "stream options"

STREAM_PARAMS = (
    Param("block_size", int, 1,
          "examples predicted by learners frozen at the block's start, then learnt: 1 is the sequential "
          "algorithm; a larger B needs one exchange per B examples on several ranks; for a given B the run is "
          "the same on any number of ranks", low=1, high=MAX_BLOCK, metavar="B", origin="beyond"),
    Param("shuffle", int, None,
          "stream the rows in the order numpy.random.default_rng(SEED).permutation(n) instead of the rows' "
          "order", low=0, high=2**63 - 1, metavar="SEED", origin="beyond"),
    Param("nominal", str, "auto",
          "nominal features (value counts, Laplace-smoothed; the others Gaussian): auto = the features whose "
          "values are all integer codes 0..15, none, or 0-based feature indices J,J,...",
          metavar="auto|none|J,J,..."),
    Param("weak_learner", str, "auto",
          "auto: mnb when every value is an integer >= 0, some exceed 15 and a quarter or more are 0 (sparse "
          "counts: words, dark-background pixels), else nba; nba: naive-Bayes-adaptive leaves (naive Bayes with "
          "Gaussian numerics or the majority class, whichever has been right more often); mnb: multinomial "
          "naive-Bayes leaves (every feature a count, Laplace-smoothed; or the majority class, likewise); "
          "hoeffding: depth-1 Hoeffding trees with an nba leaf at the root (the paper's code's learner; splits "
          "need thousands of rows)", choices=KINDS),
    Param("var_prior", float, float(_nba.VAR_PRIOR),
          "each class's Gaussian variance is shrunk toward the learner's pooled variance of the feature with the "
          "weight of A examples; 0: the class's own variance plus a tiny floor, as river's leaves",
          low=0, high=1e6, metavar="A", origin="beyond"),
    Param("grace_period", float, 200.0, "hoeffding: weight learnt between split tries", low=0, low_open=True,
          metavar="W", when=("weak_learner", "hoeffding")),
    Param("split_delta", float, 1e-7, "hoeffding: the Hoeffding bound's confidence delta", low=0, high=1,
          low_open=True, high_open=True, metavar="D", when=("weak_learner", "hoeffding")),
    Param("split_tau", float, 0.05, "hoeffding: split anyway once the bound is below T", low=0, metavar="T",
          when=("weak_learner", "hoeffding")),
    Param("split_children", str, "majority",
          "hoeffding: a split's leaves predict their majority class (river at depth 1) or are "
          "naive-Bayes-adaptive leaves", choices=CHILDREN, when=("weak_learner", "hoeffding")),
    Param("test_fraction", float, 0.2, "acc_test is the accuracy of the predictions on the last F of the stream",
          low=0, high=1, high_open=True, metavar="F", origin="beyond"),
)
LEARNER_KEYS = ("weak_learner", "var_prior", "grace_period", "split_delta", "split_tau", "split_children")


def resolve(given: Mapping) -> dict:
    """Every stream option: the given value (None: not given), checked, or the default; plus ``learner``, the
    weak learners' spec (:func:`mpiboost.online.learners.spec`). ValueError names the option."""
    names = {p.name for p in STREAM_PARAMS}
    unknown = sorted(set(given) - names)
    if unknown:
        raise ValueError(f"no stream option {unknown[0]!r}")
    out = {}
    for p in STREAM_PARAMS:
        v = given.get(p.name)
        out[p.name] = p.default if v is None else p.check(v, STREAM)
    for p in STREAM_PARAMS:
        if p.when is not None and given.get(p.name) is not None and out[p.when[0]] != p.when[1]:
            raise ValueError(f"{p.flag} is an option of --weak-learner hoeffding")
    from .source import parse_nominal

    out["nominal_parsed"] = parse_nominal(out["nominal"])
    spec = {"kind": out["weak_learner"], **{k: given.get(k) for k in LEARNER_KEYS[1:]}}
    out["learner"] = learner_spec(spec)
    return out
