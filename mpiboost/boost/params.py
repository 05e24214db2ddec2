"""Parameter declarations that several algorithms share (see :class:`.base.Param`)."""
from __future__ import annotations

from .base import Param

WEAK_LEARNER = Param(
    "weak_learner", str, "histogram",
    "stump search: histogram (exact, per (feature, bin) sums over all rows) or sample "
    "(the best stump on N rows drawn in proportion to the weights)",
    choices=("histogram", "sample"),
)
WEAK_LEARNER_EXACT = Param(
    "weak_learner", str, "histogram", "stump search: exact histograms only", choices=("histogram",),
)
BETA = Param(
    "beta", float, 0.2, "weak learner slack beta: sets the sample size N of sample mode",
    low=0.0, high=1.0, low_open=True, high_open=True,
)
BETA_SAMPLE = Param(
    "beta", float, 0.2, "sample mode: weak learner slack beta, which sets the sample size N",
    low=0.0, high=1.0, low_open=True, high_open=True, when=("weak_learner", "sample"),
)
N_SAMPLES = Param(
    "n_samples", int, 0, "sample mode: rows drawn per round (0: N = factor (d / beta^2) ln(1 / beta))",
    low=0, high=10**7, option="--samples", metavar="N", when=("weak_learner", "sample"),
)
SAMPLE_FACTOR = Param(
    "sample_factor", float, 1.0, "sample mode: the factor of N = factor (d / beta^2) ln(1 / beta)",
    low=0.0, low_open=True, high=1000.0, when=("weak_learner", "sample"),
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

SAMPLING = (WEAK_LEARNER, BETA_SAMPLE, N_SAMPLES, SAMPLE_FACTOR)
ROW_WEIGHTS = (TRAIN_DOMAIN, ENTITY_BALANCED)
