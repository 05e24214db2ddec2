"""The algorithm contract: what every boosting algorithm declares and implements.

An algorithm is a subclass of :class:`Algorithm` that declares, once, as
class attributes:

``name``, ``summary``
    its registry name and a one-line description;
``tasks``
    the kinds of data it trains on (:data:`TASKS`): ``binary`` (two classes),
    ``multiclass`` (more than two), ``multi-domain`` (rows from several
    domains, one file per domain or a domain column) and ``transfer`` (a
    target domain and source domains, ``--target``/``--source``);
``labels``
    how it wants the labels: ``"signed"`` (binary, ``-1/+1``) or ``"index"``
    (class indices ``0..K-1``);
``needs_raw``, ``multi_stump_rounds``, ``needs_rounds``
    capabilities: the raw features are kept beside the bins (a domain
    classifier), a round may add several stumps, the number of rounds is a
    parameter of the algorithm itself;
``parameters``
    its parameters as :class:`Param` declarations (name, type, default,
    range or choices, one-line help).

From these declarations come the ``train`` options and their validation,
``mpiboost train --algo NAME --help``, the options table of the docs, and
the registry-driven contract tests: adding an algorithm is one module plus
one line in :data:`mpiboost.boost.ALGORITHMS`.

And implements the four steps of a run:

``setup(data, proto, seed)``  initial state from this rank's rows;
``select(t) -> Hypothesis``   round t's hypothesis (protocol primitives only), or None to stop;
``apply(h) -> dict``          update the state for h, return round metrics;
``finish() -> Model``         the final ensemble.

``select`` draws randomness only from an RNG seeded by ``(seed, t)`` and
``apply`` depends only on the state and h, so a checkpoint is just the list
of hypotheses: replaying ``apply`` over them restores the state exactly.
Algorithms never open files, print or call MPI directly.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Optional, Sequence

import numpy as np

from ..model import Model
from ..param import PRESETS, SAME, Param, _num  # noqa: F401  (declared here before; algorithms import it from .base)
from ..weak.stump import Stump

TASKS = ("binary", "multiclass", "multi-domain", "transfer", "regression")
LABELS = ("signed", "index")
@dataclass
class Hypothesis:
    """A round's stump, its vote coefficient, and what was learnt about it."""

    stump: Stump
    coef: float  # vote coefficient; apply() derives its update from (stump, coef, domain) alone
    metrics: dict = field(default_factory=dict)
    domain: Optional[int] = None  # Q-ensembles: the stump votes with weight Q(domain|x)
    more: tuple = ()  # further (stump, coef) pairs of the same round (MSDTrA's mixture of candidates)

    def members(self) -> list:
        """Every (stump, coef) pair this round adds to the ensemble."""
        return [(self.stump, self.coef), *self.more]


class Algorithm(ABC):
    """Base class of every boosting algorithm: declarations plus the four steps.

    ``Algorithm(params)`` checks ``params`` against :attr:`parameters`
    (unknown names, types, ranges, choices, :meth:`check_params`) and keeps
    the complete, resolved dict in ``self.params``; a ValueError names the
    offending option and the algorithm.
    """

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    kind: ClassVar[str] = "batch"  # the registry's family (mpiboost.registry): trained round by round
    paper: ClassVar[str] = ""  # where the algorithm comes from (its parameters' origin "paper" means this one)
    tasks: ClassVar[tuple] = ("binary",)
    labels: ClassVar[str] = "signed"
    needs_raw: ClassVar[bool] = False
    multi_stump_rounds: ClassVar[bool] = False
    needs_rounds: ClassVar[bool] = False
    # Capabilities the driver, the command line and the estimators read (never the algorithm's type or name):
    # needs_target: the rows are a target domain and sources (domain 0 is the target unless --target-domain says
    #   otherwise; the estimators fall back to AdaBoost on the target without a source);
    # curve_scores_model: the per-round validation curve scores the model that is kept, so --best-round and
    #   --early-stop may cut it (not so where the final vote depends on every round trained);
    # empty_model_fails: a model of no round, or of zero votes only, is a failed run (nothing is saved).
    needs_target: ClassVar[bool] = False
    # weight_rule: how the algorithm trains on sample weights (a 'weight' dataset, the API's weight=), for
    # docs/algorithms.md; empty: it does not take them. See accepts_weights.
    weight_rule: ClassVar[str] = ""
    curve_scores_model: ClassVar[bool] = True
    empty_model_fails: ClassVar[bool] = False
    # chooses_on_valid: the run makes choices of its own on its validation rows (``valid`` below), beyond the
    #   round the driver keeps; a selection that must not judge a model on the rows that shaped it
    #   (the baseline guard's cross-fitting) trains it once per half of those rows.
    chooses_on_valid: ClassVar[bool] = False
    # baselines: the simplest models a user would train instead, which the baseline guard (--baseline-guard,
    # mpiboost.driver.selection.baseline_guard) trains beside the algorithm on the same rows and keeps when they
    # validate better: name -> (algorithm, parameters fixed for it, what it is, parameters fixed when it grows
    # trees). The run's other parameters that the baseline declares are carried (the weak learner, the trees'
    # shape).
    baselines: ClassVar[dict] = {}
    # Parameters whose default depends on the number of rounds (SmoothBoost's gamma): filled in by
    # :meth:`defaults_for_rounds` when left unset; a resumed run takes the checkpoint's values instead.
    vote: ClassVar[str] = "weighted"
    # Capabilities: the weak learners it boosts (``stump``, ``tree``) and the losses it minimizes
    # (``exponential`` the papers' AdaBoost-style reweighting; ``logistic`` Newton steps on the log-loss).
    weak_learners: ClassVar[tuple] = ("stump",)
    losses: ClassVar[tuple] = ("exponential",)
    parameters: ClassVar[tuple] = ()
    stop_message: ClassVar[str] = "no weak edge left (weighted error >= 1/2)"
    # The validation rows (a Shard binned with the training edges), set by the driver before setup, or None.
    # For choices an algorithm makes inside setup (IS multi-task's per-task fits); the rounds' validation
    # error is the driver's.
    valid = None
    # The rounds the run asks for (set by the driver after the parameters are checked), for defaults that
    # depend on the rounds and the data together (IS multi-task's nu: T / J steps per task); None if unknown.
    planned_rounds: Optional[int] = None

    def __init__(self, params: Optional[Mapping] = None) -> None:
        self.params = self.resolve(params or {})

    # ------------------------------------------------------ declarations
    @classmethod
    def declared(cls, name: str) -> Param:
        """The declaration of parameter ``name``."""
        for p in cls.parameters:
            if p.name == name:
                return p
        raise KeyError(f"{cls.name} has no parameter {name!r}")

    @classmethod
    def grid_values(cls, name: str, given: Optional[str] = None) -> tuple:
        """The values ``name auto`` tries: the declared grid, or ``given`` ("v1,v2,...") checked one by one."""
        p = cls.declared(name)
        if given is None:
            return tuple(p.grid)
        flag = cls.declared(name + "_grid").flag if cls.has(name + "_grid") else p.flag
        parts = [x.strip() for x in str(given).split(",")]
        if any(x == "" or x == "auto" for x in parts):
            raise ValueError(f"{flag} {given!r}: give values separated by commas, e.g. 0,0.01,0.1")
        values = []
        for x in parts:
            try:
                values.append(p.check(x, cls.name))
            except ValueError as exc:
                raise ValueError(f"{flag}: {exc}") from None
        return tuple(dict.fromkeys(values))  # a value given twice is tried once

    @classmethod
    def has(cls, name: str) -> bool:
        return any(p.name == name for p in cls.parameters)

    @classmethod
    def resolve(cls, given: Mapping) -> dict:
        """Every declared parameter: the given value, checked, or the default."""
        names = [p.name for p in cls.parameters]
        given = cls._legacy(given)
        unknown = sorted(set(given) - set(names))
        if unknown:
            raise ValueError(
                f"{cls.name} has no parameter {unknown[0]!r} (its parameters: {', '.join(names) or 'none'})"
            )
        out = {}
        # --preset paper: every parameter not given takes its paper's value (Param.paper) instead of the default
        paper = cls.has("preset") and given.get("preset") == "paper"
        for p in cls.parameters:
            v = given.get(p.name)
            out[p.name] = (p.paper_value if paper else p.default) if v is None else p.check(v, cls.name)
        for p in cls.parameters:
            if p.when is not None and given.get(p.name) is not None and out[p.when[0]] != p.when[1]:
                other = cls.declared(p.when[0])
                raise ValueError(
                    f"{p.flag} applies to {cls.name} only with {other.flag} {p.when[1]} (not {out[p.when[0]]})"
                )
        cls.check_params(out, given)
        return out

    @classmethod
    def _legacy(cls, given: Mapping) -> Mapping:
        """Older spellings rewritten: ``weak_learner`` histogram/sample is a stump with that ``search``."""
        wl = given.get("weak_learner")
        if wl in ("histogram", "sample") and cls.has("search"):
            search = given.get("search")
            if search is not None and search != wl:
                raise ValueError(f"--weak-learner {wl} (a stump found by --search {wl}) contradicts --search {search}")
            return {**given, "weak_learner": "stump", "search": wl}
        if wl == "histogram" and not cls.has("search"):
            return {**given, "weak_learner": "stump"}
        return given

    @classmethod
    def check_params(cls, params: dict, given: Mapping) -> None:
        """Rules between parameters (override; raise ValueError naming the options)."""

    @classmethod
    def weak_learner_of(cls, params: Mapping) -> Optional[str]:
        """The weak learner a run with ``params`` (as given, before the defaults) trains: the one given, else the
        declared default, or its paper's value under ``--preset paper``; None for an algorithm without one.
        Defaults that follow the weak learner (a learning rate, SmoothBoost's gamma) ask this, not ``params``
        alone, where an unset weak learner would read as a stump."""
        if not cls.has("weak_learner"):
            return None
        if params.get("weak_learner") is not None:
            return str(params["weak_learner"])
        p = cls.declared("weak_learner")
        return p.paper_value if params.get("preset") == "paper" else p.default

    @classmethod
    def defaults_for_rounds(cls, params: Mapping, rounds: int) -> dict:
        """Values for parameters left unset whose default depends on ``rounds`` (override).

        The driver fills them in before the algorithm is made; a resumed run
        keeps the checkpoint's values, so training on to more rounds continues
        the same run.
        """
        return {}

    # ------------------------------------------------------------- steps
    def check_data(self, data) -> None:
        """Refuse data the algorithm cannot train on (ValueError), from what every rank knows alike.

        No collectives and no rank-local facts: the driver runs it on every
        rank before :meth:`setup`, so a refusal is agreed and printed once.
        ``setup`` calls it too (it must be cheap and idempotent).
        """

    def load_task(self) -> str:
        """How the training labels are read (:func:`mpiboost.data.load.load`'s ``task``): ``"binary"`` (-1/+1)
        for ``labels = "signed"``, ``"multiclass"`` (class indices), or ``"regression"`` (numeric targets)."""
        return "binary" if self.labels == "signed" else "multiclass"

    def accepts_weights(self) -> bool:
        """Whether this algorithm, with its parameters, trains on sample weights (default: it has a ``weight_rule``)."""
        return bool(self.weight_rule)

    @abstractmethod
    def setup(self, data, proto, seed: int = 0) -> None:
        """Initial state from this rank's rows (``data``: a :class:`mpiboost.data.load.Shard`)."""

    @abstractmethod
    def select(self, t: int) -> Optional[Hypothesis]:
        """Round ``t``'s hypothesis, the same on every rank; None ends training."""

    @abstractmethod
    def apply(self, h: Hypothesis) -> dict:
        """Update the state for ``h``; the round's metrics (``train_errors``: a global count)."""

    def finish(self) -> Model:
        """The final ensemble."""
        return self.model

    def start_train_errors(self) -> Optional[int]:
        """Collective: the training errors (over every rank) of the model's start, its round-0 members fitted in
        setup, for a run that ends before its first round; None without a start (override)."""
        return None

    def n_train(self, data) -> int:
        """The rows the algorithm trains on: the summary's ``n`` and the denominator of ``train_error``.

        All rows by default; an algorithm restricted to one domain (AdaBoost-k,
        AdaBoost on the target only) overrides it.
        """
        return int(data.n_global)

    def new_model(self, data, **extra) -> Model:
        """An empty ensemble of this algorithm for ``data`` (bins, class list, names); ``extra``: further fields."""
        return Model(
            algorithm=self.name,
            params=self.params,
            bins=data.bins,
            vote=self.vote,
            feature_names=data.feature_names,
            classes=data.classes,
            domain_names=data.domain_names,
            **extra,
        )

    def rng(self, t: int) -> np.random.Generator:
        """Round ``t``'s random numbers (the same on every rank)."""
        return np.random.default_rng([self.seed, int(t)])


def domain_index(which, data) -> int:
    """A domain given by index or by name."""
    names = list(data.domain_names or [])
    if isinstance(which, str) and not which.lstrip("-").isdigit():
        if which not in names:
            raise ValueError(f"no domain named {which!r}; the domains are {names}")
        return names.index(which)
    k = int(which)
    if not 0 <= k < data.n_domains:
        raise ValueError(f"domain {k} out of range: the data have {data.n_domains} domain(s)")
    return k


def describe(cls: type) -> dict:
    """An algorithm's declarations as plain data (docs, ``--help``, tests)."""
    return {
        "name": cls.name,
        "summary": cls.summary,
        "paper": cls.paper,
        "tasks": list(cls.tasks),
        "labels": cls.labels,
        "needs_raw": cls.needs_raw,
        "multi_stump_rounds": cls.multi_stump_rounds,
        "needs_rounds": cls.needs_rounds,
        "needs_target": cls.needs_target,
        "curve_scores_model": cls.curve_scores_model,
        "empty_model_fails": cls.empty_model_fails,
        "vote": cls.vote,
        "weak_learners": list(cls.weak_learners),
        "losses": list(cls.losses),
        "parameters": [
            {"name": p.name, "option": p.flag if p.cli else None, "type": p.type.__name__, "default": p.default,
             "range": p.range_text(), "help": p.help, "origin": p.origin}
            for p in cls.parameters
        ],
    }


def check_declarations(classes: Sequence[type]) -> None:
    """Raise TypeError if a registered algorithm's declarations are incomplete or inconsistent."""
    seen = set()
    for cls in classes:
        if not cls.name or cls.name in seen:
            raise TypeError(f"{cls.__name__}: a unique name is required")
        seen.add(cls.name)
        if not cls.summary:
            raise TypeError(f"{cls.name}: a one-line summary is required")
        if not cls.paper:
            raise TypeError(f"{cls.name}: the paper it comes from (or 'beyond the papers: ...') is required")
        if not cls.tasks or set(cls.tasks) - set(TASKS):
            raise TypeError(f"{cls.name}: tasks must be a non-empty subset of {TASKS}")
        if cls.labels not in LABELS:
            raise TypeError(f"{cls.name}: labels must be one of {LABELS}")
        if cls.needs_target and ("transfer" not in cls.tasks or not cls.has("target_domain")):
            raise TypeError(f"{cls.name}: an algorithm that needs a target declares the transfer task and "
                            "--target-domain")
        if "multiclass" in cls.tasks and cls.labels != "index":
            raise TypeError(f"{cls.name}: a multiclass algorithm takes class indices (labels = 'index')")
        names = [p.name for p in cls.parameters]
        if len(set(names)) != len(names):
            raise TypeError(f"{cls.name}: a parameter is declared twice")
        if not set(cls.weak_learners) <= {"stump", "tree"} or "stump" not in cls.weak_learners and \
                "tree" not in cls.weak_learners:
            raise TypeError(f"{cls.name}: weak_learners must name stump and/or tree")
        for p in cls.parameters:
            if p.paper is not SAME and p.choices is not None and p.paper not in p.choices:
                raise TypeError(f"{cls.name}: {p.flag}'s paper value {p.paper!r} is not one of its choices")
        offered = set(cls.declared("weak_learner").choices or ()) if "weak_learner" in names else {"stump"}
        if ("tree" in cls.weak_learners) != ("tree" in offered) or ("tree" in offered) != ("max_leaves" in names):
            raise TypeError(f"{cls.name}: weak_learners, the --weak-learner choices and the tree options disagree")
        if not cls.losses or not set(cls.losses) <= {"exponential", "logistic"}:
            raise TypeError(f"{cls.name}: losses must be a non-empty subset of exponential, logistic")
        if (len(cls.losses) > 1) != ("loss" in names):
            raise TypeError(f"{cls.name}: an algorithm of several losses declares a loss parameter")
        for p in cls.parameters:
            if not p.help:
                raise TypeError(f"{cls.name}: parameter {p.name} needs a help line")
            if p.default is not None:
                p.check(p.default, cls.name)
            for v in p.grid or ():
                p.check(v, cls.name)
            if p.when is not None and p.when[0] not in names:
                raise TypeError(f"{cls.name}: parameter {p.name} depends on undeclared {p.when[0]}")
