#!/usr/bin/env python
"""How online-agnostic's defaults (start, relabel, gamma) are chosen: validation on the seven UCI streams, with and
without label noise.

The protocol of ``online_table1.py``: shuffle s of a data set is
``np.random.default_rng(1000 + s).permutation(n)``, the booster's seed s, one
prequential pass (every example predicted, then learnt), N learners, the
gamma grid; ``test`` is the last 20% of the stream, ``train`` the first 80%.

Question 1 (clean labels, ``--shuffles`` shuffles): start = uniform (the
paper's OCO chain) against start = label (the chain begins at e_y), for
fractional and random relabelling. Per data set: the best gamma by mean
acc_test (the paper's optimistic choice) with its argmax accuracy, and the
fair choice, gamma by mean acc_train (the first 80%: known before the test
part is seen), with its acc_test. Then every (variant, gamma) as one fixed
setting for all data sets: mean acc_test, mean rank among all settings and
among the variant's gammas, mean excess over each data set's best setting
(sets weigh alike whatever their accuracy): the candidate defaults.

Question 2 (symmetric label noise, ``--noise`` rates, ``--noise-shuffles``
shuffles): the label an algorithm LEARNS from is, with probability rho,
replaced by a class drawn uniformly from the k - 1 others (generator
``default_rng(5000 + s)``, two draws per example whatever rho: the same
noisy labels for every algorithm, and the flips at a lower rate are a subset
of those at a higher one). Accuracy is measured against the CLEAN labels on
the test part, from the per-example predictions (randomised and argmax); the
fair gamma is chosen on the noisy train part (all a user has). online-agnostic
(fractional, both starts; ``--noise-relabel`` for more) against online-ocor,
online-mbbm (gamma grid) and online-olm (no gamma).

Every cell (data, variant, gamma, rho, shuffle) is cached in the JSON of
``--out``; a rerun skips the cells it holds. Question 1's cells are the rho = 0
cells of question 2 (the first shuffles). ``--merge`` takes the JSON of
``online_table1.py`` (the same protocol, start = uniform, clean labels) and adds
its B = 1 cells of the same N as rho = 0 cells.

    python scripts/experiments/online_defaults.py --out /tmp/mpiboost-exp/online_defaults.json   # ~50 min, 2 cores
    python scripts/experiments/online_defaults.py --datasets balance-scale car --shuffles 2 --noise-shuffles 1
    python scripts/experiments/online_defaults.py --render-only --out /tmp/mpiboost-exp/online_defaults.json
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402
from cells import Store, acc, gstr, mean, run_tasks  # noqa: E402
from online_data import NAMES, TITLES, load  # noqa: E402

GAMMAS = [0.1, 0.3, 0.5, 0.7, 1.0]
NOISE = [0.0, 0.1, 0.3]
RELABEL = ("fractional", "random")
STARTS = ("uniform", "label")
BASELINES = ("online-ocor", "online-mbbm", "online-olm")
SHORT = {"online-ocor": "OCOR", "online-mbbm": "MBBM", "online-olm": "OLM"}
# rough cost of one pass relative to online-agnostic fractional (for the order of the cells only)
COST = {"fractional": 1.0, "random": 0.5, "online-ocor": 0.2, "online-mbbm": 1.0, "online-olm": 1.5}


# ------------------------------------------------------------------ variants
def agn(relabel: str, start: str) -> dict:
    return {"name": f"agn/{relabel}/{start}", "algorithm": "online-agnostic",
            "params": {"relabel": relabel, "start": start}, "gamma": True, "cost": COST[relabel]}


def baseline(algo: str) -> dict:
    from mpiboost.online import ONLINE

    has_gamma = any(p.name == "gamma" for p in ONLINE[algo].parameters)
    return {"name": SHORT[algo], "algorithm": algo, "params": {}, "gamma": has_gamma, "cost": COST[algo]}


def label_of(v: dict) -> str:
    if v["algorithm"] == "online-agnostic":
        return f"{v['params']['relabel'][:4]}/{v['params']['start']}"
    return v["name"]


# ------------------------------------------------------------------ cells
def key(data, variant, gamma, rho, s, n_learners) -> str:
    return f"{data}|{variant}|g={gamma}|rho={rho:g}|N={n_learners}|s={s}"


def noisy_labels(y: np.ndarray, k: int, rho: float, s: int) -> np.ndarray:
    """Each label replaced with probability rho by a uniformly drawn other class (generator 5000 + s)."""
    rng = np.random.default_rng(5000 + s)
    u = rng.random(len(y))
    shift = rng.integers(1, k, size=len(y))  # 1 .. k-1: never the label itself
    return np.where(u < rho, (y + shift) % k, y).astype(np.int64)


def run_cell(task: dict) -> dict:
    from mpiboost.online import ONLINE
    from mpiboost.online import driver

    X, y, values, k, _ = load(task["data"], Path(task["root"]))
    s = task["shuffle"]
    perm = np.random.default_rng(1000 + s).permutation(len(y))
    X, y = np.ascontiguousarray(X[perm]), np.ascontiguousarray(y[perm])
    y_learn = noisy_labels(y, k, task["rho"], s)
    params = {"n_learners": task["n_learners"], **task["params"]}
    if task["gamma"] is not None:
        params["gamma"] = task["gamma"]
    t0 = time.perf_counter()
    booster = ONLINE[task["algorithm"]](k, params, s)
    st = driver.start(booster, values, n=len(y), seed=s, keep_predictions=True)
    driver.run(st, driver.blocks_of(X, y_learn, 1))
    sec = time.perf_counter() - t0
    pred = np.asarray(st.predictions, dtype=np.int64)
    ts = st.test_start
    summ = st.counts.summary()
    return {
        "data": task["data"], "variant": task["variant"], "gamma": task["gamma"], "rho": task["rho"], "shuffle": s,
        "n_learners": task["n_learners"], "n": len(y), "test_start": ts,
        "flipped": float(np.mean(y_learn != y)),
        # clean test labels (what is measured), noisy train labels (what a user sees, for choosing gamma)
        "acc_test": float(np.mean(pred[ts:, 0] == y[ts:])),
        "argmax_test": float(np.mean(pred[ts:, 1] == y[ts:])),
        "acc_train": float(np.mean(pred[:ts, 0] == y_learn[:ts])),
        "argmax_train": float(np.mean(pred[:ts, 1] == y_learn[:ts])),
        "acc_train_clean": float(np.mean(pred[:ts, 0] == y[:ts])),
        "acc_test_noisy": summ["acc_test"], "exp_test_noisy": summ["exp_test"],
        "seconds": sec, "us_per_example": sec / len(y) * 1e6,
    }


def run_task(task: dict) -> tuple[str, dict]:
    try:
        return task["key"], run_cell(task)
    except Exception as exc:  # reported and retried on the next run, not cached
        return task["key"], {"error": f"{type(exc).__name__}: {exc}"}


def merge_table1(store: Store, path: Path, n_learners: int) -> int:
    """online_table1.py's B = 1 cells (clean labels, start = uniform) as rho = 0 cells; returns how many were added."""
    names = {"online-agnostic/fractional": "agn/fractional/uniform", "online-agnostic/random": "agn/random/uniform",
             **{a: SHORT[a] for a in BASELINES}}
    added = 0
    for c in json.loads(path.read_text()).get("cells", {}).values():
        if c.get("variant") not in names or c.get("block_size") != 1 or c.get("n_learners") != n_learners:
            continue
        k = key(c["data"], names[c["variant"]], c["gamma"], 0.0, c["shuffle"], n_learners)
        if k in store.cells:
            continue
        n, n_test = c["n"], c["n_test"]
        argmax_train = (c["argmax_all"] * n - c["argmax_test"] * n_test) / (n - n_test)
        store.cells[k] = {"data": c["data"], "variant": names[c["variant"]], "gamma": c["gamma"], "rho": 0.0,
                          "shuffle": c["shuffle"], "n_learners": n_learners, "n": n, "test_start": n - n_test,
                          "flipped": 0.0, "acc_test": c["acc_test"], "argmax_test": c["argmax_test"],
                          "acc_train": c["acc_train"], "argmax_train": argmax_train,
                          "acc_train_clean": c["acc_train"], "acc_test_noisy": c["acc_test"],
                          "exp_test_noisy": c["exp_test"], "seconds": c["seconds"],
                          "us_per_example": c["us_per_example"], "merged_from": str(path)}
        added += 1
    return added


class View:
    """The cells of one (rho, shuffles) slice of the store."""

    def __init__(self, store: Store, rho: float, shuffles: list[int], gammas: list[float], n_learners: int):
        self.store, self.rho, self.shuffles, self.gammas, self.N = store, rho, shuffles, gammas, n_learners

    def cells(self, data, v, g) -> list[dict]:
        out = [self.store.cells.get(key(data, v["name"], g, self.rho, s, self.N)) for s in self.shuffles]
        return out if all(c is not None for c in out) else []

    def grid(self, v) -> list:
        return self.gammas if v["gamma"] else [None]

    def choose(self, data, v, by: str):
        """(gamma, cells) of the highest mean ``by`` over the shuffles (ties: the first gamma of the grid)."""
        best = None
        for g in self.grid(v):
            cs = self.cells(data, v, g)
            if cs and (best is None or mean(c[by] for c in cs) > best[0]):
                best = (mean(c[by] for c in cs), g, cs)
        return (best[1], best[2]) if best else (None, [])


def cell_str(g, cs, metric="acc_test", show_gamma=True) -> str:
    if not cs:
        return "–"
    return f"{acc(c[metric] for c in cs)}" + (f" ({gstr(g)})" if show_gamma and g is not None else "")


def paired(a: list[dict], b: list[dict], metric="acc_test") -> str:
    """Mean ± std over the shuffles of b − a (percentage points)."""
    if not a or not b:
        return "–"
    d = [100 * (y[metric] - x[metric]) for x, y in zip(a, b)]
    return f"{np.mean(d):+.1f}" if len(d) == 1 else f"{np.mean(d):+.1f} ± {np.std(d, ddof=1):.1f}"


def ranks(scores: list[float]) -> list[float]:
    """Rank 1 = highest; ties share their mean rank; NaN last."""
    s = np.array([-x if x == x else np.inf for x in scores])
    order = s.argsort(kind="stable")
    r = np.empty(len(s))
    r[order] = np.arange(1, len(s) + 1)
    for val in np.unique(s):
        idx = s == val
        r[idx] = r[idx].mean()
    return list(r)


# ------------------------------------------------------------------ tables
def q1_tables(args, store: Store, q1: list[dict]) -> list[str]:
    view = View(store, 0.0, list(range(args.shuffles)), args.gammas, args.learners)
    out = []
    for relabel in args.relabel:
        vs = [v for v in q1 if v["params"]["relabel"] == relabel]
        head = ["data", "k", "n"]
        for v in vs:
            st = v["params"]["start"]
            head += [f"{st}: best acc (γ)", f"{st}: argmax (γ)", f"{st}: fair acc (γ)"]
        head += ["label − uniform, best", "label − uniform, fair"]
        rows = []
        for data in args.datasets:
            _, y, _, k, _ = load(data, args.data_dir)
            row = [TITLES[data], k, f"{len(y):,}"]
            best, fair = {}, {}
            for v in vs:
                best[v["name"]] = view.choose(data, v, "acc_test")
                gA, cA = view.choose(data, v, "argmax_test")
                fair[v["name"]] = view.choose(data, v, "acc_train")
                row += [cell_str(*best[v["name"]]), cell_str(gA, cA, "argmax_test"), cell_str(*fair[v["name"]])]
            u, lab = f"agn/{relabel}/uniform", f"agn/{relabel}/label"
            if u in best and lab in best:
                row += [paired(best[u][1], best[lab][1]), paired(fair[u][1], fair[lab][1])]
            rows.append(row)
        out.append(f"**Table 1{'ab'[RELABEL.index(relabel)]} (question 1, {relabel} relabelling, clean labels).** "
                   f"Accuracy (%) on the last 20% of the stream, mean ± std over {args.shuffles} shuffles, "
                   f"N = {args.learners}, γ ∈ {{{', '.join(gstr(g) for g in args.gammas)}}}. best: the randomised "
                   "prediction's acc_test at the γ of the best mean acc_test (optimistic); argmax: the deterministic "
                   "prediction's accuracy at the γ of its own best mean; fair: γ chosen by the mean acc_train (the "
                   "first 80% of the stream), its acc_test. label − uniform: paired difference over the shuffles "
                   "(points), each start at its own chosen γ.")
        out.append(C.markdown_table(head, rows))

    # fixed settings: one (variant, gamma) for every data set
    settings = [(v, g) for v in q1 for g in args.gammas]
    table = {}  # (data, i) -> mean acc_test / argmax_test
    for data in args.datasets:
        for i, (v, g) in enumerate(settings):
            cs = view.cells(data, v, g)
            table[data, i] = (mean(c["acc_test"] for c in cs), mean(c["argmax_test"] for c in cs)) if cs \
                else (math.nan, math.nan)
    all_rank, own_rank, excess = {}, {}, {}
    for data in args.datasets:
        sc = [table[data, i][0] for i in range(len(settings))]
        for i, r in enumerate(ranks(sc)):
            all_rank.setdefault(i, []).append(r)
        top = np.nanmax(sc) if any(x == x for x in sc) else math.nan
        for i, x in enumerate(sc):
            excess.setdefault(i, []).append(top - x)
        for v in q1:
            idx = [i for i, (w, _) in enumerate(settings) if w is v]
            for i, r in zip(idx, ranks([sc[i] for i in idx])):
                own_rank.setdefault(i, []).append(r)
    head = ["relabel/start", "γ"] + [TITLES[d] for d in args.datasets] + \
        ["mean acc", "mean argmax", "mean excess", f"mean rank of {len(settings)}", "rank within variant"]
    rows = []
    for i, (v, g) in enumerate(settings):
        row = [label_of(v), gstr(g)] + [f"{100 * table[d, i][0]:.1f}" if table[d, i][0] == table[d, i][0] else "–"
                                        for d in args.datasets]
        ok = all(table[d, i][0] == table[d, i][0] for d in args.datasets)
        row += [f"{100 * mean(table[d, i][0] for d in args.datasets):.1f}" if ok else "–",
                f"{100 * mean(table[d, i][1] for d in args.datasets):.1f}" if ok else "–",
                f"{100 * mean(excess[i]):.1f}" if ok else "–",
                f"{mean(all_rank[i]):.1f}" if ok else "–", f"{mean(own_rank[i]):.1f}" if ok else "–"]
        rows.append(row)
    out.append(f"**Table 2 (question 1: one fixed setting for all data sets, clean labels).** acc_test (%) of the "
               f"randomised prediction, mean over {args.shuffles} shuffles, per data set and averaged over the data "
               "sets (each weighs alike); mean argmax: the argmax accuracy averaged likewise; mean excess: points "
               "below each data set's best setting of this table, averaged; mean rank among all settings of the "
               "table, and among the variant's own γ values (1 = best; the candidate default γ of a variant has "
               "the lowest).")
    out.append(C.markdown_table(head, rows))
    return out


def q2_tables(args, store: Store, q2: list[dict]) -> list[str]:
    shuffles = list(range(args.noise_shuffles))
    out = []
    agn_vs = [v for v in q2 if v["algorithm"] == "online-agnostic"]
    base_vs = [v for v in q2 if v["algorithm"] != "online-agnostic"]
    summary = {}  # (variant name, rho, metric, how) -> list of per-data means
    wins = {}
    fair_all = {}  # (rho, metric, variant name) -> per-data fair means
    for metric, train in (("acc_test", "acc_train"), ("argmax_test", "argmax_train")):
        for rho in args.noise:
            view = View(store, rho, shuffles, args.gammas, args.learners)
            head = ["data"]
            for v in q2:
                head += [f"{label_of(v)} best (γ)", f"{label_of(v)} fair (γ)"] if v["gamma"] else [label_of(v)]
            head += ["agn − best baseline (fair)"]
            rows = []
            for data in args.datasets:
                row = [TITLES[data]]
                fair_means = {}
                for v in q2:
                    gb, cb = view.choose(data, v, metric)
                    gf, cf = view.choose(data, v, train)
                    row += [cell_str(gb, cb, metric), cell_str(gf, cf, metric)] if v["gamma"] \
                        else [cell_str(gf, cf, metric, False)]
                    for how, cs in (("best", cb), ("fair", cf)):
                        summary.setdefault((v["name"], rho, metric, how), []).append(
                            mean(c[metric] for c in cs) if cs else math.nan)
                    fair_means[v["name"]] = mean(c[metric] for c in cf) if cf else math.nan
                    fair_all.setdefault((rho, metric, v["name"]), []).append(fair_means[v["name"]])
                a = max((fair_means[v["name"]] for v in agn_vs), default=math.nan)
                b = max((fair_means[v["name"]] for v in base_vs), default=math.nan)
                if a == a and b == b:
                    row.append(f"{100 * (a - b):+.1f}")
                    wins.setdefault((rho, metric), []).append(np.sign(round(a - b, 9)))
                else:
                    row.append("–")
                rows.append(row)
            what = "randomised prediction" if metric == "acc_test" else "argmax (deterministic) prediction"
            out.append(f"**Table 3 (question 2, ρ = {rho:g}, {what}).** Accuracy (%) against the CLEAN labels on the "
                       f"last 20% of the stream, mean ± std over {len(shuffles)} shuffles; the algorithms learnt "
                       f"labels flipped with probability {rho:g} to a uniform other class. best: γ of the best clean "
                       f"test accuracy (optimistic); fair: γ of the best {train} on the noisy first 80% (what a user "
                       "can see). Last column: the better agnostic start minus the best baseline, both fair, points.")
            out.append(C.markdown_table(head, rows))

    # summary across data sets
    head = ["algorithm", "metric"] + [f"ρ = {r:g} best" for r in args.noise] + [f"ρ = {r:g} fair" for r in args.noise]
    if len(args.noise) > 1:
        head += [f"fair drop {args.noise[0]:g} → {args.noise[-1]:g}"]
    rows = []
    for metric in ("acc_test", "argmax_test"):
        for v in q2:
            row = [label_of(v), "randomised" if metric == "acc_test" else "argmax"]
            vals = {}
            for how in ("best", "fair"):
                for rho in args.noise:
                    xs = summary.get((v["name"], rho, metric, how), [])
                    vals[how, rho] = mean(xs) if xs and all(x == x for x in xs) else math.nan
                    row.append(f"{100 * vals[how, rho]:.1f}" if vals[how, rho] == vals[how, rho] else "–")
            if len(args.noise) > 1:
                d = vals["fair", args.noise[0]] - vals["fair", args.noise[-1]]
                row.append(f"{100 * d:.1f}" if d == d else "–")
            rows.append(row)
    out.append(f"**Table 4 (question 2, across data sets).** Clean test accuracy (%) averaged over the "
               f"{len(args.datasets)} data sets (each the mean of {len(shuffles)} shuffles), at the best and at the "
               "fair γ of Table 3; drop: points lost by the fair choice from the lowest to the highest noise rate.")
    out.append(C.markdown_table(head, rows))
    wrows = [[f"{rho:g}", "randomised" if m == "acc_test" else "argmax",
              f"{sum(x > 0 for x in w)} / {sum(x == 0 for x in w)} / {sum(x < 0 for x in w)}"]
             for (rho, m), w in sorted(wins.items(), key=lambda kv: (kv[0][1], kv[0][0]))]
    out.append("**Table 5 (question 2: where agnostic wins).** Data sets where the better agnostic start (fair γ) "
               "beats every baseline (fair γ) / ties / loses, clean test accuracy (mean over the shuffles).")
    out.append(C.markdown_table(["ρ", "prediction", "agnostic wins / ties / losses"], wrows))
    head = ["agnostic", "ρ", "prediction"] + [f"vs {label_of(b)}: W/T/L, mean diff" for b in base_vs]
    rows = []
    for v in agn_vs:
        for metric in ("acc_test", "argmax_test"):
            for rho in args.noise:
                row = [label_of(v), f"{rho:g}", "randomised" if metric == "acc_test" else "argmax"]
                a = fair_all.get((rho, metric, v["name"]), [])
                for b in base_vs:
                    d = [x - y for x, y in zip(a, fair_all.get((rho, metric, b["name"]), [])) if x == x and y == y]
                    r = [np.sign(round(x, 9)) for x in d]
                    row.append(f"{sum(x > 0 for x in r)}/{sum(x == 0 for x in r)}/{sum(x < 0 for x in r)}, "
                               f"{100 * mean(d):+.1f}" if d else "–")
                rows.append(row)
    out.append("**Table 5b (question 2: each agnostic start against each baseline).** Over the data sets, both at "
               "the fair γ: wins / ties / losses of the agnostic variant's clean test accuracy (mean over the "
               "shuffles), and the mean difference (points).")
    out.append(C.markdown_table(head, rows))

    # fixed gamma under noise, agnostic variants
    head = ["relabel/start", "γ"] + [f"ρ = {r:g}" for r in args.noise] + [f"rank ρ = {r:g}" for r in args.noise]
    rows = []
    settings = [(v, g) for v in agn_vs for g in args.gammas]
    means, rks = {}, {}
    for rho in args.noise:
        view = View(store, rho, shuffles, args.gammas, args.learners)
        per = {}
        for i, (v, g) in enumerate(settings):
            per[i] = [mean(c["acc_test"] for c in cs) if (cs := view.cells(d, v, g)) else math.nan
                      for d in args.datasets]
            means[i, rho] = mean(per[i]) if all(x == x for x in per[i]) else math.nan
        rr = {i: [] for i in per}
        for j in range(len(args.datasets)):
            for i, r in zip(per, ranks([per[i][j] for i in per])):
                rr[i].append(r)
        for i in per:
            rks[i, rho] = mean(rr[i])
    for i, (v, g) in enumerate(settings):
        rows.append([label_of(v), gstr(g)] +
                    [f"{100 * means[i, r]:.1f}" if means[i, r] == means[i, r] else "–" for r in args.noise] +
                    [f"{rks[i, r]:.1f}" if means[i, r] == means[i, r] else "–" for r in args.noise])
    out.append(f"**Table 6 (question 2: one fixed γ under noise).** online-agnostic's clean acc_test (%) averaged "
               f"over the data sets ({len(shuffles)} shuffles each) at each fixed γ, and its mean rank among the "
               f"{len(settings)} settings of this table per data set.")
    out.append(C.markdown_table(head, rows))
    return out


# ------------------------------------------------------------------ main
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=list(NAMES), choices=list(NAMES))
    p.add_argument("--data-dir", type=Path, default=C.DATASETS)
    p.add_argument("--shuffles", type=int, default=5, help="shuffles of question 1 (clean labels)")
    p.add_argument("--noise-shuffles", type=int, default=3, help="shuffles of question 2 (the first ones)")
    p.add_argument("--noise", type=float, nargs="+", default=NOISE, help="label-noise rates of question 2")
    p.add_argument("--gammas", type=float, nargs="+", default=GAMMAS)
    p.add_argument("--learners", type=int, default=100)
    p.add_argument("--relabel", nargs="+", default=list(RELABEL), choices=list(RELABEL),
                   help="online-agnostic relabelling rules of question 1")
    p.add_argument("--noise-relabel", nargs="+", default=["fractional"], choices=list(RELABEL),
                   help="online-agnostic relabelling rules of question 2")
    p.add_argument("--baselines", nargs="*", default=list(BASELINES), choices=list(BASELINES))
    p.add_argument("--no-q1", action="store_true", help="skip question 1")
    p.add_argument("--no-q2", action="store_true", help="skip question 2")
    p.add_argument("--jobs", type=int, default=2, help="worker processes (one thread each)")
    p.add_argument("--out", type=Path, default=C.DEFAULT_WORKDIR / "online_defaults.json",
                   help="JSON of every cell (read first: cached cells are skipped)")
    p.add_argument("--merge", type=Path, nargs="+", default=[],
                   help="online_table1.py JSON files whose clean start=uniform / baseline cells are added first")
    p.add_argument("--table", type=Path, help="also write the markdown here")
    p.add_argument("--render-only", action="store_true")
    args = p.parse_args(argv)
    args.noise = sorted(set(args.noise))
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    q1 = [agn(r, s) for r in args.relabel for s in STARTS]
    q2 = [agn(r, s) for r in args.noise_relabel for s in STARTS] + [baseline(a) for a in args.baselines]
    store = Store(args.out)
    meta = {"protocol": "shuffle s: default_rng(1000 + s).permutation(n), booster seed s; noise: default_rng(5000 + s) "
            "(u < rho: label + randint(1, k) mod k) on the learnt labels; acc_test vs clean labels on the last 20%",
            "command": C.command_line()}
    for extra in args.merge:
        C.log(f"{extra}: {merge_table1(store, extra, args.learners)} cells added")
    if args.merge and not args.render_only:
        store.save(meta)
    for data in args.datasets:
        load(data, args.data_dir)  # the checks, once, before the workers start
    size = {d: len(load(d, args.data_dir)[1]) * (1 + load(d, args.data_dir)[3] / 10) for d in args.datasets}
    root = str(args.data_dir)

    def tasks_of(vs, rhos, n_shuffles):
        out = []
        for v in vs:
            for rho in rhos:
                for g in (args.gammas if v["gamma"] else [None]):
                    for s in range(n_shuffles):
                        for data in args.datasets:
                            out.append({"key": key(data, v["name"], g, rho, s, args.learners), "data": data,
                                        "variant": v["name"], "algorithm": v["algorithm"], "params": v["params"],
                                        "gamma": g, "rho": rho, "shuffle": s, "n_learners": args.learners,
                                        "root": root, "cost": v["cost"] * size[data]})
        return out

    if not args.render_only:
        tasks = (tasks_of(q1, [0.0], args.shuffles) if not args.no_q1 else []) + \
            (tasks_of(q2, args.noise, args.noise_shuffles) if not args.no_q2 else [])
        tasks = list({t["key"]: t for t in tasks}.values())
        # shuffle by shuffle (a cut-short run still renders with --shuffles / --noise-shuffles lowered), the
        # longest cells of each first (the pool ends evenly)
        tasks.sort(key=lambda t: (t["shuffle"], -t["cost"]))
        run_tasks(tasks, store, meta, args.jobs, "questions 1 and 2", run_task)

    body = []
    notes = [f"Question 1: {args.shuffles} shuffles; question 2: the first {args.noise_shuffles}, noise rates "
             f"{', '.join(f'{r:g}' for r in args.noise)}; γ grid {{{', '.join(gstr(g) for g in args.gammas)}}}."]
    if not args.no_q1:
        body += q1_tables(args, store, q1)
    if not args.no_q2:
        body += q2_tables(args, store, q2)
    notes.append("start = label at γ = 1 is not boosting: the chain never leaves e_y (a right learner's step is 0, "
                 "a wrong one's is projected back onto e_y), so every learner learns (x, y) with weight 1, the N "
                 "learners are identical and the booster predicts as one weak learner (N = 1 gives the same "
                 "accuracies on balance-scale, car and yeast); fractional and random relabelling coincide there.")
    body.append("Notes: " + " ".join(notes))
    C.publish("\n\n".join(body), args.table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
