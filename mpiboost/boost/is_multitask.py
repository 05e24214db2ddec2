"""Itakura–Saito multi-task boosting (Takenouchi, Komori, Eguchi et al., Entropy 2015), Case 2.

J binary tasks are the data's domains (one file per task or a domain
column); every task k has its own stump ensemble F_k, and a row is predicted
by its own task's ensemble (the model's ``vote = "task"``). Each round is one
exact Case-1 step (:mod:`.is_costs`) on one task: the outer round
``ceil(t / S)`` draws the task k uniformly from an RNG keyed by (seed, outer
round), and S consecutive rounds (``--steps-per-visit``) step F_k with every
other F_j at its current value (a task without a weak edge left hands its
round to the next task of that draw's order). A step:

* per row i of task k: the costs a_i (of f(x_i) = +1) and b_i (of -1) from
  u_i = exp(-F_k y_i) and lambda e^{+-(F_k - F_j)} of every other task j;
* the stump chosen for pseudo-labels sign(b_i - a_i) and weights |a_i - b_i|
  (the ordinary weighted stump learner: histogram or sample mode);
* eps = the exact global sum of the chosen stump's costs over Z = sum(a + b),
  alpha = 1/2 ln((1 - eps) / eps), F_k += nu alpha f on the rows of every
  task (F_k enters every other task's regulariser); nu = ``--learning-rate``,
  1 (the paper's exact step) by default.

``--lambda 0`` is AdaBoost on each task separately (method C of the paper):
a task whose lambda_kj are all 0 takes AdaBoost's rounds with AdaBoost's
own arithmetic (its weights normalised per task, the same exact masses and
alpha), so its stumps, coefficients and F_k are those of ``adaboost
--train-domain k`` bit for bit. ``--lambda L`` with every lambda_kj = L is
the paper's scenario A; ``--lambda-scale is`` makes lambda_kj = L / IS_kj
(scenario B), IS_kj the Itakura–Saito distance between per-task AdaBoost
fits on task k's rows (``--is-rounds`` rounds each, fitted in set-up and,
with validation rows, cut at each task's best validation round).
``--lambda auto`` chooses lambda (from ``--lambda-grid``) and the rounds
together by the mean of the tasks' validation errors.

Beyond the paper (the paper's rule is ``--start zero --task-order random``,
which leaves lambda at 0.1 and nu at 1):

* ``--start logistic`` (the default) starts every F_k from one gradient-boosted
  forest of logistic trees on all the tasks' rows (LightGBM's defaults: 31
  leaves, learning rate 0.1, 100 trees, from the class prior), halved onto the
  exponential loss's scale (its minimiser is half the log-odds), stored as
  the model's round 0. With 2 to 64 tasks (``--start-task-splits auto``) the
  trees also see each task's indicator, as LightGBM sees a task id column; a
  tree that splits on one is stored once per task with its task splits
  decided. Many small tasks share most of their rule: the forest learns it
  from every row, the class prior handles few positives, and the task steps
  (lambda 0, nu = min(1, 1.5 / sqrt(T / J))) learn what is each task's own.
  ``--start pooled`` starts from one AdaBoost of the weak learner on all rows
  instead. Both are cut at their best validation round when there are
  validation rows (the forest by the validation log-loss); a task alone
  continues AdaBoost from the start. ``--start auto`` lets validation choose
  among zero, pooled and logistic.
* ``--task-order cycle`` (the default) steps every task once per cycle of J
  outer rounds, in a seeded order each cycle, so a budget of T steps gives
  each task about T / J of them; the paper's uniform draw (``random``) leaves
  some of many tasks without a step (their F_k = 0 predicts +1 on every row).

The random numbers of task k's s-th step are keyed by (seed, s), as
AdaBoost's round s; the task draws by (seed, outer round). Every sum that
decides anything is exact, so the model is the same on any number of ranks.
"""
from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Optional

import numpy as np

from .._ext import _exact, _multitask, _weights
from ..weak.stump import StumpLearner
from ..weak.tree import Tree, as_stump, stump_tree
from . import is_costs
from .base import Algorithm, Hypothesis, Param
from .losses import grows_trees
from .params import BASELINE_GUARD, GRAD_BINS_BINARY, POOLED_WITH_DOMAIN_ID, SAMPLING

_TASK_DRAW = 0x15A7  # RNG stream of the outer rounds' task draws
_TASK_CYCLE = 0x15A8  # RNG stream of the cycles' task orders
START_LEARNING_RATE = 0.1  # the logistic start's shrinkage: LightGBM's default
START_ROUNDS = {"pooled": 200, "logistic": 100}  # the start's rounds at most (logistic: LightGBM's 100 trees)
# The exponential loss's population minimiser is half the log-odds: the logistic start's F, halved, is on
# the scale of the exponential steps that follow (their costs exp(-y F) are then sqrt((1 - p) / p)).
START_SCALE = 0.5
# nu after a fitted start: its steps refine a model that already holds the shared rule, and the exact
# step on a few hundred rows would overfit it. nu = c / sqrt(steps per task), at most 1, lets a task's
# summed step grow as the square root of its steps, as MultiBoost's 1/sqrt(T) with trees; c = 1.5 was
# the best within 0.003 AUC at 10, 20 and 50 steps per task of the many-task generator and on the
# paper's Dataset 2 (docs/results.md, "Many small imbalanced tasks").
REFINE_C = 1.5
REFINE_LEARNING_RATE = 0.3  # without a number of rounds (the algorithm made directly): 20 steps per task
# The logistic start's trees split on each task's indicator (J uint8 features beside the data's, as LightGBM
# with a task id column) with at most this many tasks under --start-task-splits auto: J bytes a row more.
TASK_SPLITS_MAX = 64
# `--lambda auto`: the paper's experiments' grid; 0 is in it (method C: the tasks alone)
LAMBDA_GRID = (0.0, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
LAMBDA_MAX = 1e6  # the largest lambda (and lambda_kj of scenario B)


class ISMultitask(Algorithm):
    """Itakura-Saito multi-task boosting: one ensemble per task, each step regularised toward the other tasks'.

    Paper: Takenouchi, Komori, Eguchi et al., Entropy 2015. Every task (the data's domains) has its own ensemble;
    a step on task k minimizes its exponential risk plus ``lambda`` times the Itakura-Saito divergence to the
    other tasks' ensembles, in closed form (Case 1), so related tasks share what they have in common and
    ``lambda = 0`` is AdaBoost on each task alone. Guarantee (the paper's): each exact step lowers the
    regularised risk it minimizes. mpiboost's: the same model bit for bit on any number of ranks; by default a
    logistic forest over every task's rows (which may split on the task) is the shared start; with validation
    rows, the baseline guard keeps the pooled forest or each task alone where that validates better
    (:mod:`mpiboost.driver.selection.baseline_guard`).
    """

    name = "is-multitask"
    paper = "Takenouchi, Komori, Eguchi et al., Entropy 2015 (Itakura-Saito multi-task boosting)"
    summary = ("Itakura-Saito multi-task boosting: one stump ensemble per task (domain), each step regularised "
               "toward the other tasks' ensembles")
    tasks = ("binary", "multi-domain")
    labels = "signed"
    vote = "task"
    weight_rule = ("each row's loss counts its weight times in its task's risk (the steps' costs, the pooled "
                   "start's and the tasks-alone AdaBoost's first distribution, the logistic start's gradients)")
    weak_learners = ("stump", "tree")
    # its start (the pooled forest, AdaBoost pooled) and the per-task fits behind lambda are cut on the
    # validation rows
    chooses_on_valid = True
    baselines = {
        "pooled": (*POOLED_WITH_DOMAIN_ID, "gradient-boosted logistic trees on every task's rows pooled, which may "
                   "split on the task (LightGBM's defaults with a task id column)", {}),
        "per-task": ("is-multitask", {"lam": 0.0, "start": "zero", "lam_grid": None, "refine": "on"},
                     "AdaBoost on each task's rows alone (lambda 0 from a zero start)", {}),
    }
    parameters = (
        *SAMPLING,
        Param("lam", float, None, "lambda: the weight of each other task's ensemble in a task's risk (0: AdaBoost "
              "on every task alone); default 0 after the logistic start (the pooled forest already shares what "
              "the tasks have in common), 0.1 otherwise; auto: chosen from the grid with the rounds on validation "
              "rows", low=0.0,
              high=LAMBDA_MAX, option="--lambda", grid=LAMBDA_GRID, metavar="LAMBDA|auto"),
        Param("lam_grid", str, None, "with --lambda auto: the values to try, comma-separated (default "
              + ",".join(f"{v:g}" for v in LAMBDA_GRID) + ")", option="--lambda-grid", metavar="L1,L2,..."),
        Param("lambda_scale", str, "shared", "lambda_kj: lambda for every pair of tasks (shared, the paper's "
              "scenario A) or lambda / IS_kj, the Itakura-Saito distance between the per-task AdaBoost fits of "
              "tasks k and j on task k's rows (is, scenario B)", choices=("shared", "is")),
        Param("is_rounds", int, 200, "with --lambda-scale is: the rounds (at most) of each per-task AdaBoost fit "
              "that measures the distances; with validation rows each fit is cut at its best round", low=1,
              high=100_000),
        Param("steps_per_visit", int, 5, "steps S on a drawn task before the next task is drawn", low=1,
              high=10_000),
        Param("start", str, "logistic", "the ensembles' start, shared by every task's ensemble, which the steps "
              "then refine: logistic (gradient-boosted logistic trees on every task's rows, LightGBM's defaults, "
              "from the class prior, halved onto the exponential loss's scale), pooled (one AdaBoost of the weak "
              "learner on every task's rows) or zero (the paper's); both fitted starts are cut at their best "
              "validation round when there are validation rows; auto: chosen with the other auto values on "
              "validation rows", choices=("zero", "pooled", "logistic"), grid=("zero", "pooled", "logistic"),
              origin="beyond", paper="zero"),
        Param("start_rounds", int, None, "the rounds (at most) of the start: default 100 trees for logistic "
              "(LightGBM's), 200 for pooled", low=1, high=100_000),
        Param("refine", str, "on", "on: the tasks' steps refine the start (the rounds are the steps); off: the "
              "model is the start alone, its --start-rounds trees (with the logistic start, gradient-boosted "
              "logistic trees on every task's rows that may split on each task: LightGBM's defaults on the rows "
              "pooled with a task id column)",
              choices=("on", "off")),
        Param("learning_rate", float, None, "each step adds nu alpha f, alpha the exact step: default "
              "min(1, 1.5 / sqrt(T / J)) after the logistic start (T / J steps per task refine the fitted forest; "
              "0.34 at 20) and with trees (a 31-leaf tree's exact step overfits a task's rows), 1 (the paper's) "
              "with stumps otherwise; the pooled start and the per-task fits of --lambda-scale "
              "is take the same nu", low=0.0, low_open=True, high=1.0, metavar="NU"),
        Param("start_task_splits", str, "auto", "the logistic start's trees may split on each task's indicator, "
              "as LightGBM's on a task id column (a tree that does is stored once per task, its task splits "
              "decided): on, off, or auto (on with 2 to 64 tasks)", choices=("auto", "on", "off")),
        Param("task_order", str, "cycle", "the task each outer round steps: cycle (every task with rows once per "
              "cycle, in a seeded order: T steps give each task about T / J) or random (a uniform draw each "
              "outer round, the paper's)", choices=("cycle", "random")),
        Param("teacher", str, "all", "the regulariser: every other task's ensemble (all, the paper's Case 1) or "
              "their lambda-weighted mean as one teacher (average, Eq. 26)", choices=("all", "average")),
        BASELINE_GUARD,
    )

    @classmethod
    def check_params(cls, params: dict, given) -> None:
        # Defaults that follow the start (filled in here, so the model and a resumed run record the values).
        start = params.get("start")
        if params.get("refine") == "off" and start == "zero":
            raise ValueError("--refine off keeps the start alone: it needs a fitted start (--start logistic or "
                             "pooled), not zero")
        if params.get("lam") is None:
            params["lam"] = 0.0 if start == "logistic" else 0.1
        if params.get("learning_rate") is None and start != "logistic" and params.get("weak_learner") != "tree":
            params["learning_rate"] = 1.0  # after the logistic start or with trees: set by setup from T and J
        if params.get("start_rounds") is None:
            params["start_rounds"] = START_ROUNDS.get(start, START_ROUNDS["pooled"])

    @classmethod
    def defaults_for_rounds(cls, params, rounds: int) -> dict:
        # nu after the logistic start follows the steps per task, T / J: J is known in setup, which fills it
        # in; a resumed run takes the checkpoint's value (recorded values win over these).
        return {"learning_rate": None}

    def refine_rate(self, J: int) -> float:
        """The default nu after the logistic start: min(1, c / sqrt(T / J)), T the rounds the run asks for."""
        T = self.planned_rounds
        if not T:
            return REFINE_LEARNING_RATE
        return min(1.0, REFINE_C / math.sqrt(max(1.0, T / max(1, J))))

    def check_data(self, data) -> None:
        counts = np.asarray(data.domain_counts if data.domain_counts is not None else [data.n_global])
        if not np.any(counts > 0):
            raise ValueError("is-multitask: no task has a training row")

    def setup(self, data, proto, seed: int = 0) -> None:
        self.check_data(data)
        self.data, self.proto, self.seed = data, proto, int(seed)
        self.J = max(int(data.n_domains), 1)
        v = self.valid
        if v is not None and int(v.n_domains) > self.J:
            raise ValueError(f"the validation rows hold {int(v.n_domains)} tasks (domains), the training rows {self.J}")
        task = np.asarray(data.domain, dtype=np.int64)
        if self.params.get("learning_rate") is None:
            self.params["learning_rate"] = self.refine_rate(int(np.count_nonzero(np.asarray(data.domain_counts) > 0)))
        mode = self.params.get("search", "histogram")
        # The learners never fit at the same time: one histogram buffer serves them all.
        hist = np.zeros((data.cols.shape[0], 256), dtype=np.int64) if mode == "histogram" else None
        self.counts = np.asarray(data.domain_counts, dtype=np.int64)  # every task's rows, over all ranks
        self.blocks = [_Block(k, np.flatnonzero(task == k), data, self.J, int(self.counts[k]), self.params, proto,
                              self.sample_size(data), hist) for k in range(self.J)]
        self.steps = np.zeros(self.J, dtype=np.int64)  # steps taken on each task (its random numbers' key)
        self._masses = None
        lam = float(self.params["lam"])
        # lam[k, j]: the weight of task j's ensemble in task k's risk (the diagonal is never used)
        self.lam = np.full((self.J, self.J), lam)
        np.fill_diagonal(self.lam, 0.0)
        self.distances = None
        if self.params["lambda_scale"] == "is" and lam > 0 and self.J > 1:
            # The fits do not depend on lambda: a search over the lambda grid measures them once per data.
            key = ("is_distances", *self._fit_key("is_rounds"))
            if key not in data.extra:
                data.extra[key] = (self.is_distances(), self.is_fit_rounds)
            self.distances, self.is_fit_rounds = data.extra[key]
            # IS_kj = 0 (the same fits) would make lambda_kj infinite: at most the largest lambda one may give
            self.lam = np.minimum(lam / np.maximum(self.distances, np.finfo(float).tiny), LAMBDA_MAX)
            np.fill_diagonal(self.lam, 0.0)
        self.model = self.new_model(data, output="sign")
        self.use_trees = grows_trees(self.params)
        if self.params["start"] == "logistic":
            # the trees do not depend on the validation rows, only where they are cut: runs that validate on
            # other rows (the baseline guard's halves) grow them once
            key = ("logistic_forest", self.params["start_task_splits"], *self._fit_key("start_rounds", valid=False))
            if key not in data.extra:
                data.extra[key] = self.grow_logistic()
            forest = self.cut_logistic(data.extra[key])
            for tree, k in forest:  # round 0, rebuilt on resume: shared by every task (k None) or task k's
                self.model.append(tree, START_SCALE, domain=k, round=0)
            for blk in self.blocks:
                score = np.zeros(blk.n)
                for tree, k in forest:  # in the model's order and arithmetic: out += coef * value
                    if k is None or k == blk.k:
                        score += START_SCALE * tree.values(blk.cols)[:, 0]
                blk.F[:] = score
                blk.errors = int(_weights.margin_errors(blk.F[blk.k], blk.y))
                if self.alone(blk.k) and self.counts[blk.k] > 0:
                    blk.start_alone(score)
        elif self.params["start"] == "pooled":
            key = ("pooled_start", *self._fit_key("start_rounds"))
            if key not in data.extra:
                data.extra[key] = self.fit_pooled(hist)
            start = data.extra[key]
            for stump, alpha in start:
                self.model.append(stump, alpha, round=0)  # round 0: shared by every task, rebuilt on resume
            for blk in self.blocks:
                score = np.zeros(blk.n)  # the start on this task's rows, summed once: every F_j starts from it
                for stump, alpha in start:
                    _weights.add_stump(score, stump.column(blk.cols), *stump.args(), alpha)
                    if self.alone(blk.k) and self.counts[blk.k] > 0:
                        # a task alone continues AdaBoost from the start: its weights follow the start's rounds
                        blk.reweight_alone(blk.w, stump, alpha)
                blk.F[:] = score
                blk.errors = int(_weights.margin_errors(blk.F[blk.k], blk.y))

    def new_model(self, data, **extra):
        # One ensemble per task: the model names its tasks (domain k is "k" when the data names none), so
        # every rank and every reader of the model knows J.
        model = super().new_model(data, **extra)
        if not model.domain_names:
            model.domain_names = [str(k) for k in range(self.J)]
        return model

    def _fit_key(self, rounds: str, valid: bool = True) -> tuple:
        """What a set-up fit depends on besides the data (the cache key of a search over other parameters);
        ``valid`` False: a fit that does not read the validation rows."""
        v = self.valid if valid else None
        return (self.seed, int(self.params[rounds]), float(self.params["learning_rate"]),
                None if v is None else (int(v.n_global), id(v)),
                *((p.name, self.params.get(p.name)) for p in SAMPLING))

    def fit_pooled(self, hist) -> list:
        """AdaBoost on every task's rows: its (stump, alpha) rounds, cut at the round of the lowest mean
        validation error over tasks (the earliest of equal ones) when there are validation rows."""
        data = self.data
        pool = _Block(-1, None, data, 1, int(data.n_global), self.params, self.proto, self.sample_size(data), hist)
        return self._boost_alone(pool, int(self.params["start_rounds"]), self.valid, None)

    def task_splits(self) -> bool:
        """Whether the logistic start's trees may split on the tasks (``--start-task-splits``)."""
        mode = self.params["start_task_splits"]
        return self.J > 1 and (mode == "on" or (mode == "auto" and self.J <= TASK_SPLITS_MAX))

    def _with_tasks(self, cols: np.ndarray, task: np.ndarray) -> np.ndarray:
        """The bins ``cols`` (d, n) with each task's indicator below them (J rows of 0/1): (d + J, n)."""
        ind = (np.arange(self.J)[:, None] == np.asarray(task, dtype=np.int64)[None, :]).astype(np.uint8)
        return np.ascontiguousarray(np.vstack([cols, ind]))

    def grow_logistic(self) -> list:
        """Gradient-boosted logistic trees on every task's rows (LightGBM's defaults, ``start_rounds`` trees at
        most), uncut: :meth:`cut_logistic` makes them the start.

        With task splits the trees also see each task's indicator (features d..d+J-1).
        """
        from .newton import NewtonBoost

        data = self.data
        # the forest `adaboost --loss logistic --weak-learner tree` grows by default (quantized gradients too)
        params = {**self.params, "weak_learner": "tree", "learning_rate": START_LEARNING_RATE,
                  "grad_bins": GRAD_BINS_BINARY.default}
        if self.task_splits():
            n_bins = np.concatenate([np.asarray(data.bins.n_bins), np.full(self.J, 2)]).astype(
                np.asarray(data.bins.n_bins).dtype)
            data = SimpleNamespace(cols=self._with_tasks(data.cols, data.domain), y=data.y, n_local=data.n_local,
                                   n_global=data.n_global, bins=SimpleNamespace(n_bins=n_bins), start=data.start,
                                   weight=getattr(data, "weight", None))
        boost = NewtonBoost(data, self.proto, params, 1, seed=self.seed)
        trees = []
        for t in range(1, int(self.params["start_rounds"]) + 1):
            h = boost.select(t)
            if h is None:
                break
            boost.apply(h)
            trees.append(h.stump)
        return trees

    def cut_logistic(self, trees: list) -> list:
        """The start from :meth:`grow_logistic`'s ``trees``: cut at the lowest validation log-loss (the earliest
        of equal ones) when there are validation rows, as the model's round-0 members, ``(tree, task)`` in
        order, task None for a tree every task shares.

        A tree that splits on a task's indicator is stored as J trees, the task's splits decided in each (task
        None: the tree splits on none). The trees' sum is the log-odds; the start is half of it
        (``START_SCALE``).
        """
        from ..weak.tree import resolve_splits

        v, d = self.valid, int(self.data.cols.shape[0])
        n_valid = int(self.proto.reduce_counts(np.array([len(v.y)], dtype=np.int64))[0]) if v is not None else 0
        if n_valid:
            vcols = self._with_tasks(v.cols, v.domain) if self.task_splits() else v.cols
            vscore, vy = np.zeros(len(v.y)), np.asarray(v.y, dtype=np.float64)
            losses = []
            for tree in trees:
                vscore += tree.values(vcols)[:, 0]
                terms = np.logaddexp(0.0, -vy * vscore)  # each row's log-loss: its own arithmetic, then exact sums
                losses.append(self.proto.reduce_terms([_exact.partials(np.ascontiguousarray(terms))])[0])
            if losses:
                trees = trees[: int(np.argmin(losses)) + 1]
        out = []
        for tree in trees:
            if not np.any(tree.feature >= d):
                out.append((tree, None))
                continue
            for k in range(self.J):  # task k's indicator is 1 (bin 1), every other task's 0
                out.append((resolve_splits(tree, lambda f, k=k: None if f < d else int(f - d == k)), k))
        return out

    def alone(self, k: int) -> bool:
        """Task k's risk has no other task in it (lambda_kj = 0 for every j): its steps are AdaBoost's rounds."""
        return not np.any(self.lam[k] > 0)

    def is_distances(self) -> np.ndarray:
        """IS_kj = (1/n_k) sum_{i in k} (e^D + e^-D - 2), D = F_k - F_j of the per-task AdaBoost fits (method C).

        Each fit is AdaBoost on one task alone (``is_rounds`` rounds at most);
        with validation rows it is cut at the round of lowest validation error
        on that task's rows (the earliest of equal ones), as method C is
        validated. The fits shape lambda only, not the model. Exact global
        sums, so the matrix is the same on any number of ranks.
        """
        fits = [self.fit_alone(k) for k in range(self.J)]
        self.is_fit_rounds = [len(f) for f in fits]
        out = np.zeros((self.J, self.J))
        for k, blk in enumerate(self.blocks):
            G = np.zeros((self.J, blk.n))  # every fit on task k's rows
            for j, fit in enumerate(fits):
                for stump, alpha in fit:
                    G[j] += alpha * stump.predict(blk.cols)
            D = G[k][None, :] - G
            with np.errstate(over="ignore"):
                terms = np.exp(D) + np.exp(-D) - 2.0
            # fits that disagree by more than e^709 on a row are as far apart as can be: IS_kj = inf (lambda 0)
            wild = self.proto.reduce_counts((~np.isfinite(terms)).sum(axis=1).astype(np.int64))
            sums = self.proto.reduce_terms([_exact.partials(np.ascontiguousarray(np.where(np.isfinite(t), t, 0.0)))
                                            for t in terms])
            out[k] = np.where(wild > 0, np.inf, np.asarray(sums) / blk.n_global)
        return out

    def fit_alone(self, k: int) -> list:
        """AdaBoost on task k alone (scratch weights): its (stump, alpha) rounds, cut at the best validation round."""
        return self._boost_alone(self.blocks[k], int(self.params["is_rounds"]), self.valid, k)

    def _boost_alone(self, blk: "_Block", rounds: int, v, k: Optional[int]) -> list:
        """AdaBoost on a block's rows (scratch weights), ``rounds`` at most: its (stump, alpha) rounds, cut at
        the best round on the validation rows of task ``k`` (all tasks, by their mean error, for None)."""
        w = blk.initial_weights()
        if v is not None:
            vrows = np.flatnonzero(v.domain == k) if k is not None else np.arange(len(v.y))
            vcols, vy = np.ascontiguousarray(v.cols[:, vrows]), v.y[vrows]
            vtask = np.asarray(v.domain, dtype=np.int64)[vrows] if k is None else np.zeros(len(vrows), np.int64)
            groups = self.J if k is None else 1
            sizes = self.proto.reduce_counts(np.bincount(vtask, minlength=groups).astype(np.int64))
            vscore = np.zeros(len(vrows))
        out, errors = [], []
        for r in range(1, rounds + 1):
            step = blk.fit_alone_step(w, np.random.default_rng([self.seed, r]))
            if step is None:
                break
            stump, alpha, _, masses = step
            blk.reweight_alone(w, stump, alpha, masses)
            out.append((stump, alpha))
            if v is not None and sizes.sum():
                vscore += alpha * stump.predict(vcols)
                wrong = np.where(vscore >= 0, 1, -1) != vy
                counts = self.proto.reduce_counts(np.bincount(vtask[wrong], minlength=groups).astype(np.int64))
                has = sizes > 0
                errors.append(float(np.mean(counts[has] / sizes[has])))
        if errors:
            out = out[: int(np.argmin(errors)) + 1]
        return out

    def sample_size(self, data) -> int:
        from .reweighting import Reweighting

        return Reweighting.sample_size(self, data)

    def task_order(self, t: int) -> list:
        """The tasks round t tries, in order: one per outer round of S steps, the next ones in case a task has
        no weak edge left; a task without rows is never drawn.

        ``cycle``: outer round o of a cycle of m tasks (those with rows) takes
        the (o mod m)-th task of the cycle's seeded order; ``random`` (the
        paper's): a uniform draw each outer round.
        """
        outer = (int(t) - 1) // int(self.params["steps_per_visit"]) + 1
        if self.params["task_order"] == "random":
            order = np.random.default_rng([self.seed, _TASK_DRAW, outer]).permutation(self.J)
            return [int(k) for k in order if self.counts[k] > 0]
        tasks = [k for k in range(self.J) if self.counts[k] > 0]
        if not tasks:
            return []
        cycle, pos = divmod(outer - 1, len(tasks))
        order = [tasks[i] for i in np.random.default_rng([self.seed, _TASK_CYCLE, cycle]).permutation(len(tasks))]
        return order[pos:] + order[:pos]

    def task_rng(self, k: int) -> np.random.Generator:
        """The random numbers of task k's next step: keyed by (seed, its step number), as AdaBoost's by its round."""
        return np.random.default_rng([self.seed, int(self.steps[k]) + 1])

    def start_train_errors(self) -> Optional[int]:
        if self.params["start"] == "zero":
            return None
        return int(self.proto.reduce_counts(np.array([sum(b.errors for b in self.blocks)], dtype=np.int64))[0])

    def select(self, t: int) -> Optional[Hypothesis]:
        if self.params.get("refine") == "off":
            self.stop_message = "--refine off: the model is the start alone"
            return None
        # The drawn task steps; one without a weak edge left hands the round to the next task of the order
        # (a function of the state, so a resumed run chooses alike); no task with an edge ends training.
        for k in self.task_order(t):
            blk = self.blocks[k]
            if self.alone(k):
                step = blk.fit_alone_step(blk.w, self.task_rng(k))
                if step is None:
                    continue
                stump, alpha, eps, masses = step
                self._masses = (k, stump, masses)  # apply's new total (a replayed apply computes it itself)
            else:
                step = blk.fit_step(self.lam[k], self.params["teacher"], self.task_rng(k))
                if step is None:
                    continue
                stump, alpha, eps = step
            return Hypothesis(stump, alpha, {"task": k, "weak_error": eps, "edge": 1.0 - 2.0 * eps}, domain=k)
        return None

    def apply(self, h: Hypothesis) -> dict:
        k = int(h.domain)
        blk = self.blocks[k]
        if isinstance(h.stump, Tree) and not self.use_trees:
            # a replayed stump of a model that holds trees (the logistic start's): the stump it stands for
            h = Hypothesis(as_stump(h.stump), h.coef, h.metrics, domain=h.domain)
        if self.alone(k):
            cached = self._masses
            masses = cached[2] if cached is not None and cached[0] == k and cached[1] == h.stump else None
            blk.reweight_alone(blk.w, h.stump, h.coef, masses)
            self._masses = None
        self.steps[k] += 1
        # F_k enters the regulariser of every task j with lambda_jk > 0 (lambda is fixed after setup, and a
        # teacher of weight 0 is never read), so it is kept on those tasks' rows and task k's own: a step of
        # lambda = 0 touches one task's rows, whatever the number of tasks.
        for other in self.blocks:
            if other is blk or self.lam[other.k, k] > 0:
                _weights.add_stump(other.F[k], h.stump.column(other.cols), *h.stump.args(), h.coef)
        blk.errors = int(_weights.margin_errors(blk.F[k], blk.y))
        member = stump_tree(h.stump) if self.model.trees and not isinstance(h.stump, Tree) else h.stump
        self.model.append(member, h.coef, domain=k)
        errors = sum(b.errors for b in self.blocks)
        return {"train_errors": int(self.proto.reduce_counts(np.array([errors]))[0])}

    def finish(self):
        return self.model


class _Block:
    """One task's rows on this rank: their bins and labels, every task's score on them, the task's learner.

    A step on task k reads task k's rows only, so its histograms, costs and
    sums are over n_k rows, not all of the rank's; rows of other tasks would
    carry weight 0 and change no sum.
    """

    def __init__(self, k: int, rows: Optional[np.ndarray], data, J: int, n_global: int, params: dict, proto,
                 n_samples: int, hist) -> None:
        # rows None: every row of the rank (the pooled start), without a copy
        self.k, self.rows, self.proto = k, rows, proto
        self.empty = n_global == 0  # no rows on any rank: never steps
        n_global = max(n_global, 1)
        self.nu = float(params.get("learning_rate", 1.0))  # 1.0 * alpha is alpha: the exact step, bit for bit
        self.n, self.n_global = (data.n_local if rows is None else len(rows)), n_global
        self.cols = data.cols if rows is None else np.ascontiguousarray(data.cols[:, rows])
        self.y = data.y if rows is None else np.ascontiguousarray(data.y[rows])
        self.labels = np.ones(self.n, dtype=np.int8)  # the step's pseudo-labels (the learner reads them)
        if grows_trees(params):
            from ..weak.tree import TreeClassifierLearner, TreeSpec

            # the Case-1 step's weak learner: a sign tree for the step's costs as weights and its pseudo-labels
            self.learner = TreeClassifierLearner(TreeSpec.from_params(params), proto, self.cols, self.labels,
                                                 data.bins.n_bins, n_global, search=params.get("search", "histogram"),
                                                 n_samples=n_samples, start=data.start)
        else:
            self.learner = StumpLearner(params.get("search", "histogram"), proto, self.cols, self.labels,
                                        data.bins.n_bins, n_samples, start=data.start, hist=hist)
        self.F = np.zeros((J, self.n))  # F[j]: task j's ensemble on these rows
        self.a, self.b, self.weights = (np.zeros(self.n) for _ in range(3))  # a step's per-row costs
        sw = getattr(data, "weight", None)
        # sample weights: every row's loss counts s_i times in its task's risk (and in AdaBoost's start)
        self.s = None if sw is None else np.ascontiguousarray(sw if rows is None else sw[rows], dtype=np.float64)
        self.w = self.initial_weights()
        self.errors = int(np.count_nonzero(self.y != 1))  # F = 0 predicts +1

    def initial_weights(self) -> np.ndarray:
        """AdaBoost's start on this task alone: 1 / n_k on every row, or the sample weights' distribution."""
        if self.s is None:
            return np.full(self.n, 1.0 / self.n_global)
        (total,) = self.proto.reduce_terms([_exact.partials(self.s)])
        if self.empty:
            return np.zeros(self.n)
        if not total > 0:
            raise ValueError(f"the sample weights of task {self.k} sum to 0")
        return self.s / total

    # ---------------------------------------------- the task alone: AdaBoost
    def fit_alone_step(self, w: np.ndarray, rng) -> Optional[tuple]:
        """AdaBoost's round for the weights ``w``: (stump, nu alpha, error, masses), or None without an edge.

        The same arithmetic as ``adaboost --train-domain k`` (whose other
        rows weigh 0), so lambda = 0 with nu = 1 gives its stumps and
        coefficients bit for bit.
        """
        if self.empty:
            return None  # a task without rows (every rank knows it): nothing to fit
        self.labels[:] = self.y
        stump = self.learner.fit(w, rng).stump
        masses = self.masses(w, stump)
        right, wrong = masses
        err = wrong / (right + wrong) if right + wrong > 0 else 0.5
        alpha = is_costs.step_alpha(err)
        return None if alpha is None else (stump, self.nu * alpha, err, masses)

    def masses(self, w: np.ndarray, stump) -> tuple:
        """Exact global weight of the rows the stump gets right and wrong."""
        right, wrong = self.learner.error_terms(stump, w)
        return tuple(self.proto.reduce_terms([right, wrong]))

    def start_alone(self, score: np.ndarray) -> None:
        """AdaBoost's weights after a start of scores ``score``: exp(-y F) over their exact global sum."""
        w = np.exp(-self.y * score)
        if self.s is not None:
            w *= self.s
        (total,) = self.proto.reduce_terms([_exact.partials(w)])
        self.w[:] = w / total

    def reweight_alone(self, w: np.ndarray, stump, alpha: float, masses: Optional[tuple] = None) -> None:
        """AdaBoost's reweighting for the coefficient ``alpha`` (the new total from the round's exact masses)."""
        self.labels[:] = self.y
        right, wrong = masses if masses is not None else self.masses(w, stump)
        down, up = math.exp(-alpha), math.exp(alpha)
        total = down * right + up * wrong
        self.learner.update(w, np.zeros(self.n), stump, down / total, up / total, alpha)

    # ---------------------------------------------- a regularised step
    def fit_step(self, lam: np.ndarray, teacher: str, rng) -> Optional[tuple]:
        """The exact Case-1 step: (stump, alpha, eps), or None without an edge. ``lam``: lambda_kj over j."""
        if self.empty:
            return None
        a, b, weights = self.a, self.b, self.weights
        if teacher == "average":
            total = float(lam.sum())
            teachers = np.zeros((1 if total > 0 else 0, self.n))
            for j in np.flatnonzero(lam > 0):  # elementwise, so a row's mean does not depend on the split
                teachers[0] += lam[j] * self.F[j]
            teachers /= total if total > 0 else 1.0
            lam = np.array([total]) if total > 0 else lam[:0]
        else:
            teachers = self.F  # lam[k] = 0: the task is no teacher of itself
        _multitask.task_costs(self.F[self.k], teachers, np.ascontiguousarray(lam), self.y, a, b, self.labels,
                              weights)
        if self.s is not None:  # each row's cost s_i times: its pseudo-label's weight too (|a - b| s_i)
            a *= self.s
            b *= self.s
            weights *= self.s
        # exact sums travel as a few partials per rank, not as the rows' values
        total, Z = self.proto.reduce_terms([_exact.partials(weights), _exact.partials(a + b)])
        if not total > 0:
            return None  # every row of the task costs the same either way: no step can help
        stump = self.learner.fit(weights / total, rng).stump
        (cost,) = self.proto.reduce_terms([_multitask.stump_cost_terms(stump.column(self.cols), a, b,
                                                                       *stump.args())])
        eps = float(cost / Z) if Z > 0 else 0.5
        alpha = is_costs.step_alpha(eps, clip=False)
        return None if alpha is None else (stump, self.nu * alpha, eps)
