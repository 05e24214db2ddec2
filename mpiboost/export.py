"""A model in LightGBM's text model format, for serving it with LightGBM, treelite or ONNX converters.

Every ensemble member becomes one LightGBM tree per class (a stump: two
leaves; a constant stump: one leaf; a tree: the same tree), with the vote
coefficient folded into the leaf values, so LightGBM's raw score
(``Booster.predict(X, raw_score=True)``) is mpiboost's score, missing values
included: each split tests ``x <= threshold`` with the bin edge as threshold
and sends NaN the way the stump or tree sends the missing bin (LightGBM's
missing type NaN). A class stump of an ``argmax`` model adds its coefficient
to one class on each side: class k's tree holds ``coef`` where the side
predicts k and 0 elsewhere. A categorical split (the bins of a categorical feature, which are its category
codes, going left) is LightGBM's categorical decision: the codes going left as a bitset (``cat_threshold``),
NaN and every other value to the right, as mpiboost sends the missing bin and codes it never saw.

The objective line says how LightGBM turns raw scores into probabilities:
``binary sigmoid:1`` for the logistic loss (the model's own probabilities),
``binary sigmoid:2`` for AdaBoost's exponential loss (whose score estimates
half the log-odds), ``multiclass`` (softmax) for class models. Models that
weigh members per row (MultiBoost's Q-ensembles, one ensemble per task) have
no LightGBM equivalent and are refused.
"""
from __future__ import annotations

import re

import numpy as np

from .errors import InputError
from .links import LINKS as LINK_OF


def _num(x: float) -> str:
    """Shortest round-trip decimal of a double (what LightGBM parses back to the same bits).

    The last value bin's rule "bin <= last" has threshold +inf: written as the largest double
    (every finite value goes left, as in mpiboost)."""
    x = float(x)
    if x == float("inf"):
        return "1.7976931348623157e+308"
    return repr(x)


def _name(s: str, j: int) -> str:
    s = re.sub(r"\s+", "_", str(s)) or f"Column_{j}"
    return s


def _lgb_tree(index: int, feature, thresholds, decision, left_child, right_child, leaf_values,
              leaf_count=None, leaf_weight=None, gains=None, internal_count=None, internal_weight=None,
              cat_words=None) -> str:
    """One tree in LightGBM's text format. The node statistics (rows and hessian of every node, the
    split gains) are what LightGBM's ``feature_importance`` and ``pred_contrib`` read. ``cat_words``: the
    32-bit bitset words of each categorical split in order (its threshold is its index in that list)."""
    n_leaves = len(leaf_values)
    cats = cat_words or []
    lines = [f"Tree={index}", f"num_leaves={n_leaves}", f"num_cat={len(cats)}"]
    if n_leaves > 1:
        lines += [
            "split_feature=" + " ".join(str(int(f)) for f in feature),
            "split_gain=" + " ".join(_num(g) for g in (gains if gains is not None else np.zeros(len(feature)))),
            "threshold=" + " ".join(_num(t) for t in thresholds),
            "decision_type=" + " ".join(str(int(t)) for t in decision),
            "left_child=" + " ".join(str(int(c)) for c in left_child),
            "right_child=" + " ".join(str(int(c)) for c in right_child),
        ]
    if cats:
        bounds = np.concatenate([[0], np.cumsum([len(w) for w in cats])])
        lines += ["cat_boundaries=" + " ".join(str(int(b)) for b in bounds),
                  "cat_threshold=" + " ".join(str(int(x)) for w in cats for x in w)]
    lines.append("leaf_value=" + " ".join(_num(v) for v in leaf_values))
    if leaf_weight is not None:
        lines.append("leaf_weight=" + " ".join(_num(v) for v in leaf_weight))
    if leaf_count is not None:
        lines.append("leaf_count=" + " ".join(str(int(v)) for v in leaf_count))
    if n_leaves > 1 and internal_weight is not None:
        lines.append("internal_weight=" + " ".join(_num(v) for v in internal_weight))
    if n_leaves > 1 and internal_count is not None:
        lines.append("internal_count=" + " ".join(str(int(v)) for v in internal_count))
    lines += ["is_linear=0", "shrinkage=1", "", ""]
    return "\n".join(lines)


def _decision(missing_left: bool) -> int:
    # bit 1: default (missing) left; bits 2-3: missing type 2 (NaN)
    return (2 << 2) | (2 if missing_left else 0)


CATEGORICAL_DECISION = (2 << 2) | 1  # bit 0: a categorical split; NaN (missing type 2) goes right


def _bitset32(codes: list) -> list:
    """The category codes as LightGBM's bitset: 32-bit words, as few as hold the largest code."""
    words = [0] * (max(codes) // 32 + 1 if codes else 1)
    for c in codes:
        words[c // 32] |= 1 << (c % 32)
    return words


def _tree_parts(tree, bins, coef: float, k: int):
    """One of our trees (class k's values) in LightGBM's numbering: internal nodes 0.., leaves ~0.."""
    internal = [i for i in range(tree.n_nodes) if tree.feature[i] >= 0]
    leaves = [i for i in range(tree.n_nodes) if tree.feature[i] < 0]
    inum = {node: j for j, node in enumerate(internal)}
    lnum = {node: j for j, node in enumerate(leaves)}

    def ref(node: int) -> int:
        return inum[node] if node in inum else ~lnum[node]

    feature = [int(tree.feature[i]) for i in internal]
    thresholds, decision, cat_words = [], [], []
    for i in internal:
        if tree.bin[i] < 0:  # categorical: bin b is category code b; the threshold indexes the bitsets
            thresholds.append(float(len(cat_words)))
            cat_words.append(_bitset32(tree.left_bins(i)))
            decision.append(CATEGORICAL_DECISION)
        else:
            thresholds.append(bins.threshold(int(tree.feature[i]), int(tree.bin[i])))
            decision.append(_decision(bool(tree.missing_left[i])))
    lc = [ref(int(tree.left[i])) for i in internal]
    rc = [ref(int(tree.right[i])) for i in internal]
    values = [coef * float(tree.value[i, k]) for i in leaves]
    # a tree of K-value leaves becomes K trees: the first carries the split gains, the others 0, so that
    # LightGBM's importances (which count and sum the splits of positive gain) are the model's own
    gains = [float(tree.gain[i]) if k == 0 else 0.0 for i in internal]
    stats = {"gains": gains, "cat_words": cat_words}
    if tree.count.any():  # a model of format >= 4 (older files keep no node statistics)
        stats["leaf_count"] = [int(tree.count[i]) for i in leaves]
        stats["internal_count"] = [int(tree.count[i]) for i in internal]
        if tree.n_values == 1:  # the hessian is one class's only with one value a leaf
            stats["leaf_weight"] = [float(tree.weight[i]) for i in leaves]
            stats["internal_weight"] = [float(tree.weight[i]) for i in internal]
    return (feature, thresholds, decision, lc, rc, values), stats


def to_lightgbm(model) -> str:
    """The model as LightGBM's text model format (``lightgbm.Booster(model_file=...)`` reads it)."""
    if model.domain_classifier is not None or model.takes_task:
        raise InputError(f"a {model.algorithm} model weighs its members per row ({model.vote} vote): LightGBM's "
                         "format has no such ensembles; export it as JSON")
    d = model.n_features
    names = model.feature_names or [f"Column_{j}" for j in range(d)]
    K = model.n_classes if model.output == "argmax" else 1
    coef = model.vote_coefficients()
    trees_text = []
    for t in range(model.n_stumps):
        for k in range(K):
            index = t * K + k
            if model.tree[t] >= 0:
                parts, stats = _tree_parts(model.trees[int(model.tree[t])], model.bins, float(coef[t]), k)
                trees_text.append(_lgb_tree(index, *parts, **stats))
                continue
            f, b, ml = int(model.feature[t]), int(model.bin[t]), bool(model.missing_left[t])
            if K == 1:
                lv, rv = coef[t] * model.left[t], coef[t] * model.right[t]
            else:
                lv, rv = coef[t] * (model.left[t] == k), coef[t] * (model.right[t] == k)
            if f < 0:
                trees_text.append(_lgb_tree(index, [], [], [], [], [], [float(lv)]))
            else:
                trees_text.append(_lgb_tree(index, [f], [model.bins.threshold(f, b)], [_decision(ml)], [-1], [-2],
                                            [float(lv), float(rv)]))
    if model.output == "value":  # a regression: the scores are the predictions (LightGBM's own objective names)
        objective = model.params.get("objective", "regression")
        if objective in ("huber", "quantile"):
            objective += f" alpha:{_num(float(model.params.get('alpha') or 0.9))}"
    elif model.output == "argmax":
        objective = f"multiclass num_class:{K}"
    elif model.link in LINK_OF:
        objective = LINK_OF[model.link].lightgbm_objective(K)
    elif model.vote == "weighted":
        objective = "binary sigmoid:2"
    else:
        objective = "binary sigmoid:1"
    infos = []
    categories = model.bins.categories
    for j, e in enumerate(model.bins.edges):
        if j in categories:  # a categorical feature: its codes, as LightGBM lists categories
            infos.append(":".join(str(c) for c in range(categories[j])))
        else:
            infos.append(f"[{_num(e[0])}:{_num(e[-1])}]" if len(e) else "none")
    head = [
        "tree", "version=v3", f"num_class={K}", f"num_tree_per_iteration={K}", "label_index=0",
        f"max_feature_idx={d - 1}", f"objective={objective}",
        "feature_names=" + " ".join(_name(s, j) for j, s in enumerate(names)),
        "feature_infos=" + " ".join(infos), "", "",
    ]
    return ("\n".join(head) + "".join(trees_text) + "end of trees\n\n" + _importance_section(model, names)
            + "pandas_categorical:null\n")


def _importance_section(model, names) -> str:
    """LightGBM's ``feature_importances:`` block: each used feature's split count, most used first.

    ``Booster.feature_importance()`` does not read this block: it counts the splits of positive
    ``split_gain``, which trees carry (models of stumps, and tree models saved before format 4, keep
    no gains: written as 0); the block (and ``mpiboost export --format importance``) holds the counts."""
    imp = model.feature_importances("split")
    order = sorted((j for j in range(len(imp)) if imp[j] > 0), key=lambda j: (-imp[j], j))
    if not order:
        return ""
    return "feature_importances:\n" + "".join(f"{_name(names[j], j)}={int(imp[j])}\n" for j in order) + "\n"


def importance_table(model, by: str = "split") -> str:
    """Each feature's importance as CSV, most used first (``by``: split or gain): ``feature,split,split_share,gain``.

    ``split`` counts the feature's splits (stumps and tree nodes), ``split_share`` is its
    share of all splits (what ``Model.feature_importances_`` gives), ``gain`` sums the
    loss reductions of its tree splits as grown (0 for stumps).
    """
    if not hasattr(model, "feature_importances"):
        raise InputError(f"a {getattr(model, 'algorithm', 'this')} model (online) keeps no split counts")
    split, gain = model.feature_importances("split"), model.feature_importances("gain")
    total = split.sum()
    names = model.feature_names or [f"x{j}" for j in range(model.n_features)]
    if by == "gain":
        order = sorted(range(len(split)), key=lambda j: (-gain[j], -split[j], j))
    else:
        order = sorted(range(len(split)), key=lambda j: (-split[j], -gain[j], j))
    rows = ["feature,split,split_share,gain"]
    for j in order:
        name = str(names[j])
        if any(c in name for c in ',"\n\r'):
            name = '"' + name.replace('"', '""') + '"'
        share = split[j] / total if total > 0 else 0.0
        rows.append(f"{name},{int(split[j])},{share:.6g},{gain[j]:.6g}")
    return "\n".join(rows) + "\n"
