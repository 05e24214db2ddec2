"""Minimizing the maximum of a few smooth convex functions of one variable.

MultiBoost's step size is ``argmin_{eta >= 0} max_l F_l(eta)`` over the p
domains. Each evaluation returns every F_l with its first and second
derivatives (one pass over the rows, exact sums), so the search builds the
quadratic model of each F_l at the current point and jumps to the minimum of
the maximum of the models (a stationary point of one model, or where two
cross), inside a bracket that every evaluation shrinks; a model step next to
an end of the bracket is moved just inside it rather than replaced by a
bisection. That converges in a handful of evaluations both when the optimum
is smooth (one F_l active) and when it is a kink (two F_l equal).
Everything is deterministic, so every rank takes the same steps.
"""
from __future__ import annotations

import math
from typing import Callable, Optional

import numpy as np

Evaluate = Callable[[float], tuple[np.ndarray, np.ndarray, np.ndarray]]


def _model_argmin(F, F1, F2, x0: float, lo: float, hi: float) -> float:
    """Minimizer over [lo, hi] of max_l of the quadratic models around x0."""
    p = len(F)
    cands = [lo, hi] if math.isfinite(hi) else [lo]
    for a in range(p):
        if F2[a] > 0:
            cands.append(x0 - F1[a] / F2[a])
        for b in range(a + 1, p):
            c2, c1, c0 = 0.5 * (F2[a] - F2[b]), F1[a] - F1[b], F[a] - F[b]
            if abs(c2) < 1e-300:
                if abs(c1) > 1e-300:
                    cands.append(x0 - c0 / c1)
                continue
            disc = c1 * c1 - 4 * c2 * c0
            if disc >= 0:
                r = math.sqrt(disc)
                cands += [x0 + (-c1 - r) / (2 * c2), x0 + (-c1 + r) / (2 * c2)]
    best, best_val = None, math.inf
    top = max(F)  # values relative to it: changes far below F's rounding still count
    for x in cands:
        if not (lo <= x <= hi) or not math.isfinite(x):
            continue
        s = x - x0
        val = max((F[l] - top) + F1[l] * s + 0.5 * F2[l] * s * s for l in range(p))
        if val < best_val:
            best, best_val = x, val
    return best if best is not None else lo


def minimize_max(
    evaluate: Evaluate,
    eta0: float,
    *,
    rtol: float = 1e-7,
    max_evals: int = 60,
    max_eta: float = 50.0,
    at_zero: Optional[tuple] = None,
) -> tuple[float, int]:
    """``argmin_{0 <= eta <= max_eta} max_l F_l(eta)`` for convex F_l; returns ``(eta, evaluations)``.

    ``evaluate(eta)`` returns arrays ``(F, F', F'')`` over l. ``eta0 > 0`` is
    the first guess. The result is 0 when no step decreases the maximum;
    ``max_eta`` caps the step when the maximum keeps decreasing (separable data).
    ``at_zero``, the caller's ``evaluate(0)`` if it has it, saves an evaluation.
    """
    F, F1, F2 = at_zero if at_zero is not None else evaluate(0.0)
    evals = 0 if at_zero is not None else 1
    top = F.max()
    active = F >= top * (1 - 1e-12)
    if not active.any() or F1[active].max() >= 0:
        # no descent from 0; or no finite maximum (a loss underflowed to nothing on separable rows)
        return 0.0, evals
    lo, hi = 0.0, math.inf
    best_eta, best_val, best_slope = 0.0, top, -float(F1[active].max())
    eta = eta0 if eta0 > 0 and math.isfinite(eta0) else 1.0
    clamped = 0
    while evals < max_evals:
        F, F1, F2 = evaluate(eta)
        evals += 1
        top = F.max()
        active = F >= top * (1 - 1e-12)
        right, left = F1[active].max(), F1[active].min()
        if left <= 0 <= right:
            return eta, evals  # 0 is in the subdifferential
        # The best point so far: the lowest maximum; among maxima equal up to
        # rounding, the one closest to stationary (its slope is accurate where
        # the values no longer tell points apart).
        slope = left if left > 0 else -right
        tie = abs(top - best_val) <= 1e-15 * abs(best_val)
        if (top < best_val and not tie) or (tie and slope < best_slope):
            best_eta, best_val, best_slope = eta, min(top, best_val), slope
        if right < 0:
            lo = eta
        else:
            hi = eta
        if math.isfinite(hi) and hi - lo <= rtol * hi:
            break
        nxt = _model_argmin(F, F1, F2, eta, lo, min(hi, max_eta))
        if abs(nxt - eta) <= rtol * eta:
            break  # the model step is negligible: converged
        if not math.isfinite(hi):
            if not lo < nxt:
                nxt = min(max(4 * eta, 1e-12), max_eta)
        elif not (lo < nxt < hi) or clamped >= 3:
            nxt, clamped = 0.5 * (lo + hi), 0
        else:
            # A model step that lands next to an end of the bracket is moved
            # inside: evaluating just inside shrinks the bracket to that side
            # (bisecting instead would throw the fast model steps away).
            margin = 1e-3 * (hi - lo)
            inside = min(max(nxt, lo + margin), hi - margin)
            clamped = clamped + 1 if inside != nxt else 0
            nxt = inside
        if nxt >= max_eta and eta >= max_eta:
            break  # still descending at the cap: the data are separated
        eta = nxt
    return best_eta, evals


def exponential_family(weights: np.ndarray, directions: np.ndarray) -> Evaluate:
    """Evaluator of ``F_l(eta) = sum_j weights[l, j] exp(-eta directions[l, j])`` (small closed forms)."""

    def evaluate(eta: float):
        e = weights * np.exp(-eta * directions)
        return e.sum(axis=1), -(directions * e).sum(axis=1), (directions**2 * e).sum(axis=1)

    return evaluate
