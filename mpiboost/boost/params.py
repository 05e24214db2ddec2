"""Parameter declarations that several algorithms share (see :class:`.base.Param`)."""
from __future__ import annotations

from dataclasses import replace

from ..param import Param

# Before trees, --weak-learner named the search: histogram/sample stay accepted and mean a stump
# found that way (Algorithm.resolve rewrites them).
LEGACY_WEAK_LEARNERS = ("histogram", "sample")
WEAK_LEARNER = Param(
    "weak_learner", str, "stump",
    "the weak learner: stump (one split) or tree (a histogram tree grown leaf-wise, see --max-leaves); "
    "histogram and sample, the older spellings, mean a stump with that --search",
    choices=("stump", "tree", *LEGACY_WEAK_LEARNERS),
)
WEAK_LEARNER_STUMP = Param(
    "weak_learner", str, "stump", "the weak learner: stump only (histogram, the older spelling, means the same)",
    choices=("stump", "histogram"),
)
SEARCH = Param(
    "search", str, "histogram",
    "how the weak learner is found: histogram (exact, per (feature, bin) sums over all rows) or sample "
    "(the best one on N rows drawn in proportion to the weights, the SmoothBoost paper's protocol)",
    choices=("histogram", "sample"),
)
SEARCH_EXACT = Param(
    "search", str, "histogram", "how the weak learner is found: exact histograms only", choices=("histogram",),
)
WEAK_LEARNER_EXACT = WEAK_LEARNER_STUMP  # the stump-only algorithms (exact search)
WEAK_LEARNER_TREE_EXACT = Param(
    "weak_learner", str, "stump",
    "the weak learner: stump (one split) or tree (a histogram tree grown leaf-wise, see --max-leaves), "
    "found from exact histograms (histogram, the older spelling, means a stump)",
    choices=("stump", "tree", "histogram"),
)
BETA = Param(
    "beta", float, 0.2, "weak learner slack beta: sets the sample size N of sample mode",
    low=0.0, high=1.0, low_open=True, high_open=True,
)
BETA_SAMPLE = Param(
    "beta", float, 0.2, "sample mode: weak learner slack beta, which sets the sample size N",
    low=0.0, high=1.0, low_open=True, high_open=True, when=("search", "sample"),
)
N_SAMPLES = Param(
    "n_samples", int, 0, "sample mode: rows drawn per round (0: N = factor (d / beta^2) ln(1 / beta))",
    low=0, high=10**7, option="--samples", metavar="N", when=("search", "sample"),
)
SAMPLE_FACTOR = Param(
    "sample_factor", float, 1.0, "sample mode: the factor of N = factor (d / beta^2) ln(1 / beta)",
    low=0.0, low_open=True, high=1000.0, when=("search", "sample"),
)
TRAIN_DOMAIN = Param(
    "train_domain", str, None,
    "train on the rows of one domain only (index or name; --target sets the target): the AdaBoost-k baseline",
    metavar="K",
)
ENTITY_BALANCED = Param(
    "entity_balanced", bool, False,
    "start every rank with the same total weight (the SmoothBoost paper's Algorithm 4; the model then "
    "depends on the number of ranks)",
    rank_dependent=True,
)

_TREE = ("weak_learner", "tree")
MAX_LEAVES = Param("max_leaves", int, 31, "trees: most leaves, grown best-first (leaf-wise, as LightGBM)",
                   low=2, high=4096, when=_TREE, metavar="L")
MAX_DEPTH = Param("max_depth", int, 0, "trees: most levels below the root (0: no limit)", low=0, high=64,
                  when=_TREE, metavar="D")
MIN_DATA_IN_LEAF = Param("min_data_in_leaf", int, 20, "trees: fewest rows in a leaf", low=0, high=10**9,
                         when=_TREE, metavar="N")
MIN_CHILD_WEIGHT = Param("min_child_weight", float, 1e-3,
                         "trees: least hessian in a leaf (weights scaled to a mean of 1 per row for the "
                         "classifier trees)", low=0.0, high=1e12, when=_TREE)
L2 = Param("l2", float, 0.0, "trees: L2 penalty of the leaf values (the Newton step -G/(H + l2))", low=0.0,
           high=1e12, when=_TREE)
SPLIT_GAIN = Param("split_gain", str, "newton",
                   "trees of sign leaves: the split gain, newton (the exponential loss's second-order gain, "
                   "S^2/W per side: weighted Gini) or error (the drop of the weighted error; two leaves are then "
                   "the stump, bit for bit)", choices=("newton", "error"), when=_TREE)
EXCHANGE = Param("exchange", str, "center",
                 "trees: how the ranks' histograms are summed: center (reduced to rank 0, which picks the "
                 "splits) or reduce-scatter (each rank sums and scans a block of features, LightGBM's "
                 "data-parallel exchange; the same tree)", choices=("center", "reduce-scatter"),
                 option="--tree-exchange", when=_TREE)
# mpiboost's own, beyond the papers (whose weak learners are stumps found on a sample): trees, the exact
# histogram search, the logistic loss's step
WEAK_LEARNER, WEAK_LEARNER_TREE_EXACT, SEARCH, MAX_LEAVES, MAX_DEPTH, MIN_DATA_IN_LEAF, MIN_CHILD_WEIGHT, L2, \
    SPLIT_GAIN, EXCHANGE = (replace(p, origin="beyond") for p in (
        WEAK_LEARNER, WEAK_LEARNER_TREE_EXACT, SEARCH, MAX_LEAVES, MAX_DEPTH, MIN_DATA_IN_LEAF, MIN_CHILD_WEIGHT, L2,
        SPLIT_GAIN, EXCHANGE))
TREE = (MAX_LEAVES, MAX_DEPTH, MIN_DATA_IN_LEAF, MIN_CHILD_WEIGHT, L2, SPLIT_GAIN, EXCHANGE)
TREE_NEWTON = (MAX_LEAVES, MAX_DEPTH, MIN_DATA_IN_LEAF, MIN_CHILD_WEIGHT, L2, EXCHANGE)
# Native categorical splits (features the data declare categorical; LightGBM's parameters and defaults)
CATEGORICAL_SPLITS = (
    Param("max_cat_to_onehot", int, 4, "trees of one output: a categorical feature of at most this many bins (its "
          "categories and the missing bin) splits one category against the rest, else many against many "
          "(LightGBM's max_cat_to_onehot)",
          low=1, high=255, when=_TREE, origin="beyond"),
    Param("max_cat_threshold", int, 32, "trees: most categories on the left of a many-vs-many split (categories "
          "sorted by G / (H + cat_smooth), taken from either end)", low=1, high=255, when=_TREE, origin="beyond"),
    Param("cat_smooth", float, 10.0, "trees: added to a category's hessian in its sort key; a category of fewer "
          "rows in a node never goes left there", low=0.0, high=1e12, when=_TREE, origin="beyond"),
    Param("cat_l2", float, 10.0, "trees: L2 added for a many-vs-many split's gain and its children's leaf values",
          low=0.0, high=1e12, when=_TREE, origin="beyond"),
    Param("min_data_per_group", int, 100, "trees: rows added per group of categories before a many-vs-many "
          "candidate counts, and fewest rows on its right", low=1, high=10**9, when=_TREE, origin="beyond"),
)
LEARNING_RATE = Param("learning_rate", float, 0.1, "shrinkage of each tree's Newton step (LightGBM's default)",
                      low=0.0, high=1.0, low_open=True, origin="beyond")
GRAD_BINS = Param("grad_bins", int, 0,
                  "Newton trees: grow each tree on gradients and hessians rounded to integers of this many levels "
                  "(stochastic rounding keyed by seed, round and row, so the same on any number of ranks; LightGBM's "
                  "use_quantized_grad with num_grad_quant_bins), leaf values from the full-precision sums: about "
                  "twice as fast and a third of the bytes; 0: full precision", low=0, high=1024, origin="beyond",
                  metavar="B")
# The defaults of the accuracy study (scripts/experiments/tree_tables.py, 5 seeds, every binary and multiclass
# set): 4 levels keep the binary sets' test error within 0.1 point of full precision, multiclass sets need 16
# to stay within 0.3 (4 lose up to 0.5 on car and segmentation).
GRAD_BINS_BINARY = Param(**{**GRAD_BINS.__dict__, "default": 4})
# Subsampling as LightGBM users set it; every draw keyed by the seed and the global row or the round, so the
# model is the same on any number of ranks.
BAGGING_FRACTION = Param("bagging_fraction", float, 1.0,
                         "Newton trees: grow each tree, and its leaf values, on this fraction of the rows (each row "
                         "in at random, keyed by the seed, the bag and the global row: the same rows on any number "
                         "of ranks), a new bag every --bagging-freq rounds (LightGBM's bagging_fraction)",
                         low=0.0, high=1.0, low_open=True, origin="beyond")
BAGGING_FREQ = Param("bagging_freq", int, None,
                     "Newton trees: draw a new bag of rows every K rounds (LightGBM's bagging_freq; default 1 when "
                     "--bagging-fraction is below 1, where LightGBM's 0 would silently turn bagging off; 0: no "
                     "bagging)", low=0, high=10**6, metavar="K", origin="beyond")
FEATURE_FRACTION = Param("feature_fraction", float, 1.0,
                         "Newton trees: each tree splits on a random round(d x F) of the d features (at least one; "
                         "drawn from the seed and the round; LightGBM's feature_fraction)",
                         low=0.0, high=1.0, low_open=True, metavar="F", origin="beyond")
NEWTON_SAMPLING = (BAGGING_FRACTION, BAGGING_FREQ, FEATURE_FRACTION)


def bagging_freq(params: dict) -> int:
    """Rounds per bag: the given ``bagging_freq``, else 1 where ``bagging_fraction`` is below 1 (0: no bagging)."""
    freq = params.get("bagging_freq")
    if freq is None:
        return 1 if float(params.get("bagging_fraction") or 1.0) < 1.0 else 0
    return int(freq)


def check_newton_sampling(params: dict, given) -> None:
    """A fraction below 1 with ``--bagging-freq 0`` given would do nothing (LightGBM's silent rule): refused."""
    fraction = float(params.get("bagging_fraction") or 1.0)
    if fraction < 1.0 and given.get("bagging_freq") is not None and int(given["bagging_freq"]) == 0:
        raise ValueError(f"--bagging-fraction {fraction:g} with --bagging-freq 0: a frequency of 0 turns bagging "
                         "off; give --bagging-freq K >= 1 (or leave it out: a new bag every round)")
GRAD_BINS_MULTICLASS = Param(**{**GRAD_BINS.__dict__, "default": 16})

WEAK_LEARNER_STUMP_SEARCH = Param(
    "weak_learner", str, "stump",
    "the weak learner: stump only (histogram and sample, the older spellings, mean a stump with that --search)",
    choices=("stump", *LEGACY_WEAK_LEARNERS),
)

SAMPLING = (WEAK_LEARNER, SEARCH, BETA_SAMPLE, N_SAMPLES, SAMPLE_FACTOR, *TREE)


def trees_by_default(params: tuple) -> tuple:
    """``params`` with --weak-learner tree as the default and the paper's stump for --preset paper: for the
    algorithms whose trees validate better than stumps on the shared sets (docs/results/trees.md)."""
    return tuple(replace(p, default="tree", paper="stump", origin="beyond") if p.name == "weak_learner" else p
                 for p in params)
EXACT_TREES = (WEAK_LEARNER_TREE_EXACT, *TREE)  # stump or tree, exact search only
SAMPLING_CLASS = (WEAK_LEARNER, SEARCH, BETA_SAMPLE, N_SAMPLES, SAMPLE_FACTOR, *TREE_NEWTON)  # class trees: Gini
SAMPLING_STUMP = (WEAK_LEARNER_STUMP_SEARCH, SEARCH, BETA_SAMPLE, N_SAMPLES, SAMPLE_FACTOR)
ROW_WEIGHTS = (TRAIN_DOMAIN, ENTITY_BALANCED)


BASELINE_GUARD_CHOICES = ("holdout", "domain-free", "off")
# Baselines declared by more than one algorithm (Algorithm.baselines: algorithm, fixed parameters, what it is,
# parameters fixed with trees). Logistic trees on every row that may split on each domain's (task's) indicator:
# LightGBM's defaults with a domain id column, IS multi-task's logistic start alone.
POOLED_WITH_DOMAIN_ID = ("is-multitask", {"start": "logistic", "refine": "off", "start_rounds": None, "lam": 0.0,
                                          "lam_grid": None, "start_task_splits": "auto"})
BASELINE_GUARD = Param(
    "baseline_guard", str, "holdout",
    "holdout (the default): with validation rows (--valid or --valid-fraction), the algorithm and its simplest "
    "baselines are trained on the same training rows and scored on the same validation rows, and the one that "
    "validates best is the model, on a tie the algorithm (fewest errors; least mean log-loss under the "
    "candidate's own probabilities with --valid-metric logloss; largest AUC with --valid-metric auc; with "
    "--best-round or --early-stop each half of the validation rows at the best round of the other half, and a "
    "candidate that makes choices on its validation rows trained once per "
    "half and scored on the other), and the choice is recorded in the model; no validation rows: no guard; "
    "domain-free: as holdout, but only the baselines that predict without a row's domain (the pooled ones: a "
    "model for rows of unknown domain); off: the algorithm as asked (the paper)", choices=BASELINE_GUARD_CHOICES,
    origin="beyond", paper="off")
