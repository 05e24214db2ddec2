"""Slow, obviously correct references for the kernels and primitives."""
import math
import operator

import numpy as np

MISSING = 255


def stump_value(row, feature, bin, left, missing_left):
    if feature < 0:
        return left
    b = int(row[feature])
    if b == MISSING:
        return left if missing_left else -left
    return left if b <= bin else -left


def histogram(X, g):
    hist = np.zeros((X.shape[1], 256), dtype=np.int64)
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            hist[j, X[i, j]] += int(g[i])
    return hist


def best_stump(hist, n_bins):
    """Enumerate every stump in the documented order; strictly larger |edge| wins."""
    total = int(hist[0].sum()) if hist.shape[0] else 0
    best = (-1, 0, 1 if total >= 0 else -1, False, abs(total))
    for j in range(hist.shape[0]):
        M = int(hist[j, MISSING])
        for b in range(int(n_bins[j])):
            L = int(hist[j, : b + 1].sum())
            for ml in (False, True):
                if b == n_bins[j] - 1 and (ml or M == 0):
                    continue
                left = L + (M if ml else 0)
                e = 2 * left - total
                if abs(e) > best[4]:
                    best = (j, b, 1 if e >= 0 else -1, ml, abs(e))
    return best


def projection(w, cap):
    """Sort-based KL projection onto {max D <= cap}: the least feasible number of clipped rows."""
    w = np.asarray(w, dtype=np.float64)
    n = w.size
    if n == 0 or w.max() <= cap:
        return w.copy()
    order = np.argsort(-w, kind="stable")
    s = w[order]
    for m in range(n + 1):
        rest = math.fsum(s[m:])
        lam = (1 - m * cap) / rest if rest > 0 else 1.0
        if m == n or s[m] * lam <= cap:
            out = np.minimum(cap, w * lam)
            out[order[:m]] = cap
            return out


def relative_projection(w, base, kappa):
    """Sort-based KL projection onto {D : D_i <= kappa base_i}: sort by the ratio w_i / base_i and clip the
    least number of top rows after which the largest unclipped ratio, scaled to the unit total, is within kappa."""
    w, base = np.asarray(w, dtype=np.float64), np.asarray(base, dtype=np.float64)
    r = np.divide(w, base, out=np.zeros_like(w), where=base > 0)
    order = np.argsort(-r, kind="stable")
    for m in range(w.size + 1):
        rest = math.fsum(w[order[m:]])
        lam = (1 - kappa * math.fsum(base[order[:m]])) / rest if rest > 0 else 1.0
        if m == w.size or r[order[m]] * lam <= kappa:
            out = np.minimum(kappa * base, w * lam)
            out[order[:m]] = kappa * base[order[:m]]
            return out


def exact_units(w):
    """The float weights ``w`` as Python integers in one common unit (each float is m 2^e: exact)."""
    ratios = [float(v).as_integer_ratio() for v in w]
    den = max((d for _, d in ratios), default=1)
    return [num * (den // d) for num, d in ratios]


def brute_force_stump(X, y, w, n_bins):
    """The binary stump of largest edge sum_i w_i y_i h(x_i), by trying every one; exact sums.

    Candidates, in this order: the constants +1 then -1; then for every
    feature j, every threshold bin b = 0 .. n_bins[j] - 1, missing values
    right then left, and ``left`` = +1 then -1, the stump ``h = left`` where
    bin(x_j) <= b (or x_j is missing and sent left), ``-left`` elsewhere. A
    candidate wins only with a strictly larger edge, so ties go to the
    constant, then the lowest feature, then the lowest threshold (the stated
    rule), then missing values sent right (the project's choice where the
    rule stops). A candidate that predicts the same on every row as an
    earlier one (the last threshold, say) never wins.

    The edges are exact: every weight is an integer multiple of one power of
    two (:func:`exact_units`), so they are sums of Python integers.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Bins; 255 is missing.
    y : ndarray of {-1, +1}
    w : ndarray of float >= 0
    n_bins : sequence of int

    Returns
    -------
    (feature, bin, left, missing_left)
        ``feature = -1``: the constant ``left`` (bin 0, missing right).
    """
    signed = [u * int(v) for u, v in zip(exact_units(w), y)]
    candidates = [(-1, 0, 1, False), (-1, 0, -1, False)]
    for j in range(X.shape[1]):
        for b in range(int(n_bins[j])):
            for ml in (False, True):
                candidates += [(j, b, 1, ml), (j, b, -1, ml)]
    best, best_edge = None, None
    for stump in candidates:
        edge = sum(map(operator.mul, signed, stump_predictions(X, *stump).tolist()))
        if best is None or edge > best_edge:
            best, best_edge = stump, edge
    return best


def stump_predictions(X, feature, bin, left, missing_left):
    """:func:`stump_value` of every row of X (n, d), as a vector of -1/+1."""
    if feature < 0:
        return np.full(X.shape[0], left, dtype=np.int64)
    col = X[:, feature].astype(np.int64)
    goes_left = np.where(col == MISSING, missing_left, col <= bin)
    return np.where(goes_left, left, -left).astype(np.int64)


def smoothboost(X, y, n_bins, rounds, epsilon, gamma):
    """SmoothBoost on one process with its own brute-force stumps: the rounds' stumps and weights.

    D starts uniform; each round picks the stump of largest edge under D
    (:func:`brute_force_stump`), multiplies the weight of every row it gets
    right by (1 - gamma), normalises, and projects onto {D : max D <= 1 /
    (epsilon n)} (:func:`projection`). The vote is the unweighted majority, so
    every coefficient is 1.

    Parameters
    ----------
    X : ndarray, shape (n, d)
        Bins; 255 is missing.
    y : ndarray of {-1, +1}
    n_bins : sequence of int
        Every feature's number of value bins (its thresholds are 0 .. n_bins - 1).
    rounds : int
    epsilon, gamma : float
        Smoothness and shrink.

    Returns
    -------
    list of ((feature, bin, left, missing_left), D after the round)
    """
    X = np.asarray(X)
    n = len(y)
    cap = 1.0 / (epsilon * n)
    D = np.full(n, 1.0 / n)
    out = []
    for _ in range(rounds):
        stump = brute_force_stump(X, y, D, n_bins)
        right = stump_predictions(X, *stump) == y
        shrunk = np.where(right, D * (1.0 - gamma), D)
        D = projection(shrunk / math.fsum(shrunk), cap)
        out.append((stump, D))
    return out


def logistic_loss_grad(X, mean, scale, label, W):
    """Loss and gradient sums of multinomial logistic regression, one row at a time.

    ``z = (x - mean) / scale`` with NaN as 0; returns ``(sum_i -log p_i[label_i],
    G)`` with ``G[j, k] = sum_i z_ij (p_ik - [label_i == k])`` and the bias in
    row d; each per-row -log p is capped at -log(1e-300). Sums by math.fsum.
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    p = W.shape[1]
    losses, terms = [], [[[] for _ in range(p)] for _ in range(d + 1)]
    for i in range(n):
        z = [0.0 if math.isnan(X[i, j]) else (X[i, j] - mean[j]) / scale[j] for j in range(d)] + [1.0]
        logit = [math.fsum(z[j] * W[j, k] for j in range(d + 1)) for k in range(p)]
        top = max(logit)
        tot = math.fsum(math.exp(v - top) for v in logit)
        losses.append(min(math.log(tot) - (logit[label[i]] - top), -math.log(1e-300)))
        for k in range(p):
            r = math.exp(logit[k] - top) / tot - (1.0 if k == label[i] else 0.0)
            for j in range(d + 1):
                terms[j][k].append(z[j] * r)
    G = np.array([[math.fsum(terms[j][k]) for k in range(p)] for j in range(d + 1)]).reshape(d + 1, p)
    return math.fsum(losses), G


# ---------------------------------------------------------------- multiclass


def class_stump_value(row, feature, bin, left, right, missing_left):
    """The class a class stump predicts for one row of bins; feature < 0 is the constant ``left``."""
    if feature < 0:
        return left
    b = int(row[feature])
    if b == MISSING:
        return left if missing_left else right
    return left if b <= bin else right


def class_histogram(X, g, cls, K):
    """hist[j, b, c] = sum of g over the rows of X (n, d) in bin b of feature j and class c."""
    hist = np.zeros((X.shape[1], 256, K), dtype=np.int64)
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            hist[j, X[i, j], cls[i]] += int(g[i])
    return hist


def argmax_high(values):
    """Index of the largest value, ties to the highest index."""
    best = 0
    for c in range(1, len(values)):
        if values[c] >= values[best]:
            best = c
    return best


def best_class_stump(hist, n_bins, criterion=0):
    """Enumerate every class stump in the documented order; a strictly larger score wins.

    criterion 0: the weight classified correctly; 1: sum over sides of sum_c W_c^2 / W (Gini).
    """
    d, _, K = hist.shape
    T = [int(v) for v in hist[0].sum(axis=0)] if d else [0] * K
    a = argmax_high(T)
    best = (-1, 0, a, a, False, T[a])

    def purity(v):
        tot = float(sum(float(x) for x in v))
        return sum(float(x) * float(x) for x in v) / tot if tot > 0 else 0.0

    best_g = purity(T)
    for j in range(d):
        M = [int(v) for v in hist[j, MISSING]]
        for b in range(int(n_bins[j])):
            L = [int(v) for v in hist[j, : b + 1].sum(axis=0)]
            for ml in (False, True):
                if b == n_bins[j] - 1 and (ml or not any(M)):
                    continue
                left = [L[c] + (M[c] if ml else 0) for c in range(K)]
                right = [T[c] - left[c] for c in range(K)]
                al, ar = argmax_high(left), argmax_high(right)
                if criterion == 1:
                    g = purity(left) + purity(right)
                    if g > best_g:
                        best_g = g
                        best = (j, b, al, ar, ml, left[al] + right[ar])
                elif left[al] + right[ar] > best[5]:
                    best = (j, b, al, ar, ml, left[al] + right[ar])
    return best


def class_scores(X, stumps, K, scores=None):
    """scores[i, h_t(x_i)] += coef_t for stumps (feature, bin, left, right, missing_left, coef) in order."""
    out = np.zeros((X.shape[0], K)) if scores is None else scores.copy()
    for f, b, left, right, ml, coef in stumps:
        for i in range(X.shape[0]):
            h = class_stump_value(X[i], f, b, left, right, ml)
            out[i, h] = out[i, h] + coef
    return out
