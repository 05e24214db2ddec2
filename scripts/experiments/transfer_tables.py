#!/usr/bin/env python
"""Instance transfer (Zhang et al. 2014): AdaBoost, TrAdaBoost, DTrAdaBoost, MSTrA, MSDTrA.

Test error and AUC of the five methods (stumps, histogram weak learner, M
rounds) on two benchmarks, with the defaults of ``mpiboost train`` (a round
whose target error is >= 1/2 ends training, ``--high-error stop``) and, as a
second variant, the four transfer methods with ``--high-error clip``.

Everything runs in this one process through the Python API (a one-rank
world, ``mpiboost.api.train_files`` and ``mpiboost.evaluate.evaluate``, the same
code ``mpiboost train`` / ``mpiboost evaluate`` call), one thread: starting
``mpiexec`` for each of the ~2,000 runs would cost more than the runs.
Parameters are built exactly as ``mpiboost/cli.py`` ``cmd_train`` builds them
for ``--target T.h5 --source S1.h5 ...`` (``target_domain`` 0, ``high_error``;
``hard_error`` False for MSDTrA; each algorithm's default ``vote_from``) and
for ``--algo adaboost --data T.h5`` (AdaBoost on the target rows alone).

Synthetic (``mpiboost synth transfer``, generated in-process with the same
function): repetition r (1..R) draws a new task (``--task-seed r``) and new
samples (``--seed r``); target n_b rows, N sources of ``--source-n`` rows
each (the generator's default: the first ceil(N/2) helpful, the others
misleading), no label noise, d = 20, 5 informative features; the clean test set
is 10,000 target rows of the same task (``--sources 0 --seed 1000 + r``).

Amazon (Blitzer et al., books / dvd / electronics / kitchen, 2,000 reviews
each): one shared vocabulary of the ``--vocab-size`` tokens occurring in the
most reviews of the four domains (``mpiboost convert --format amazon
--domain-per-file``). Each domain in turn is the target: repetition r draws
n_b target reviews at random (numpy default_rng([r, target])), the remaining
2,000 - n_b target reviews are the test set, and the three other domains
(all their rows) are three sources.

    python scripts/experiments/transfer_tables.py                 # everything
    python scripts/experiments/transfer_tables.py --quick         # smoke test, about a minute
    python scripts/experiments/transfer_tables.py --datasets amazon --reps 5 --resume
    python scripts/experiments/transfer_tables.py --render-only --out t.md --plots docs/
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

METHODS = ["adaboost", "tradaboost", "dtradaboost", "mstra", "msdtra"]
TRANSFER = METHODS[1:]
LABEL = {"adaboost": "AdaBoost", "tradaboost": "TrAdaBoost", "dtradaboost": "DTrAdaBoost", "mstra": "MSTrA",
         "msdtra": "MSDTrA"}
DOMAINS = ("books", "dvd", "electronics", "kitchen")
# The paper's claimed order (lower error): MSDTrA < MSTrA < DTrAdaBoost / AdaBoost.
PAIRS = [("msdtra", "mstra"), ("mstra", "dtradaboost"), ("msdtra", "adaboost"), ("msdtra", "dtradaboost")]


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=["synth", "amazon"], choices=["synth", "amazon"])
    p.add_argument("--data-dir", type=Path, default=C.DATASETS,
                   help="the directory holding amazon-multidomain-sentiment/ (default: $MPIBOOST_DATASETS or datasets/)")
    p.add_argument("--rounds", type=int, default=50)
    p.add_argument("--reps", type=int, default=10, help="synthetic repetitions")
    p.add_argument("--amazon-reps", type=int, default=10, help="Amazon repetitions")
    p.add_argument("--synth-nb", type=int, nargs="+", default=[10, 20, 50, 100])
    p.add_argument("--synth-sources", type=int, nargs="+", default=[1, 2, 4, 8])
    p.add_argument("--source-n", type=int, default=200, help="synthetic rows per source")
    p.add_argument("--test-n", type=int, default=10000, help="synthetic test rows")
    p.add_argument("--amazon-nb", type=int, nargs="+", default=[20, 50, 100])
    p.add_argument("--targets", nargs="+", default=list(DOMAINS), choices=DOMAINS)
    p.add_argument("--vocab-size", type=int, default=2000)
    p.add_argument("--variants", nargs="+", default=["stop", "clip"], choices=["stop", "clip"],
                   help="--high-error values of the transfer methods")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--workdir", type=Path, default=C.DEFAULT_WORKDIR / "transfer")
    p.add_argument("--quick", action="store_true", help="2 repetitions, a small grid, 20 rounds")
    p.add_argument("--resume", action="store_true", help="keep earlier records and skip the runs they hold")
    p.add_argument("--render-only", action="store_true")
    p.add_argument("--out", type=Path, help="also write the Markdown here")
    p.add_argument("--plots", type=Path, help="write the PNG curves into this directory")
    args = p.parse_args(argv)
    if args.quick:
        args.reps, args.amazon_reps = min(args.reps, 2), min(args.amazon_reps, 2)
        args.synth_nb, args.synth_sources = args.synth_nb[:2], args.synth_sources[:2]
        args.amazon_nb, args.targets = args.amazon_nb[:1], args.targets[:2]
        args.rounds = min(args.rounds, 20)
    return args


# ------------------------------------------------------------------- runs
def _runtime():
    from mpiboost.callbacks import Callback
    from mpiboost.comm import world

    class Rounds(Callback):
        """Keep each round's metrics (the ``--metrics`` JSONL objects) in memory."""

        def __init__(self) -> None:
            self.rows: list = []

        def on_round_end(self, env):
            self.rows.append(env.metrics)

    return world(), Rounds


def params_for(method: str, variant: str) -> dict:
    """As cli.cmd_train: ``--target T --source S..`` (transfer) or ``--data T`` (adaboost)."""
    params = {"weak_learner": "histogram"}
    if method != "adaboost":
        # the papers' rules, the defaults when these tables were made (transfer_claims.py runs the new defaults)
        params.update(target_domain=0, high_error=variant, candidates="paper", initial_split="paper", eps_floor=0.0)
        if method == "msdtra":
            params.update(hard_error=False, source_update="paper")
    return params


def train_and_score(args, comm, Rounds, method: str, variant: str, train_files, test_files) -> dict:
    from mpiboost.api import train_files as fit
    from mpiboost.evaluate import evaluate

    cb = Rounds()
    model = fit({"algo": method, "rounds": args.rounds, "seed": 0, "threads": args.threads,
                 **params_for(method, variant)}, [str(f) for f in train_files], comm=comm, callbacks=[cb])
    ev = evaluate(comm, model, [str(f) for f in test_files])
    s = model.summary_
    eps = [float(r["eps_t_raw"]) for r in cb.rows if "eps_t_raw" in r]  # full precision: 1/2 is a knife edge
    return {
        "error": ev["error"], "auc": ev["auc"], "rounds_done": s["rounds"], "stop_reason": s["stop_reason"],
        "eps_t_raw": eps, "n_high": int(sum(e >= 0.5 for e in eps)), "seconds": s["seconds"]["total"],
        "n_near_half": int(sum(0.4999 <= e < 0.5 for e in eps)),
        "eps_sources_1": [round(float(x), 4) for x in cb.rows[0].get("eps_sources", [])] if cb.rows else [],
    }


def run_setting(args, rec, comm, Rounds, key: dict, ada_files, train_files, test_files) -> None:
    """The five methods (stop) and the four transfer ones (clip) on one (setting, repetition)."""
    for variant in args.variants:
        for method in METHODS:
            if method == "adaboost" and variant != "stop":
                continue
            k = dict(key, method=method, variant=variant, rounds=args.rounds)
            if rec.find(**k):
                continue
            stop = rec.find(**dict(k, variant="stop")) if variant == "clip" else None
            if stop is not None and stop["rounds_done"] == args.rounds and stop["n_high"] == 0:
                # No round reached 1/2 under "stop": the clip run is the same run (deterministic).
                res = {f: stop[f] for f in ("error", "auc", "rounds_done", "stop_reason", "eps_t_raw", "n_high",
                                            "n_near_half", "seconds", "eps_sources_1")}
                res["same_as_stop"] = True
            else:
                res = train_and_score(args, comm, Rounds, method, variant,
                                      ada_files if method == "adaboost" else train_files, test_files)
            rec.add({**k, **res})


def synth_grid(args, rec) -> None:
    from mpiboost.data.format import write_dataset
    from mpiboost.data.synth.transfer import generate

    comm, Rounds = _runtime()
    d = args.workdir / "data" / "synth"
    d.mkdir(parents=True, exist_ok=True)

    def write(path: Path, data) -> Path:
        if not path.exists():
            write_dataset(path, data.X, data.y, data.domain, feature_names=data.feature_names,
                          domain_names=data.domain_names, attrs=data.attrs)
        return path

    for r in range(1, args.reps + 1):
        t0 = time.perf_counter()
        test = write(d / f"test_task{r}.h5", generate(args.test_n, seed=1000 + r, task_seed=r, sources=0))
        for nb in args.synth_nb:
            ada = write(d / f"target_task{r}_nb{nb}.h5", generate(0, seed=r, task_seed=r, sources=0, target_n=nb))
            for n_src in args.synth_sources:
                tr = write(d / f"train_task{r}_nb{nb}_N{n_src}_n{args.source_n}.h5",
                           generate(args.source_n, seed=r, task_seed=r, sources=n_src, target_n=nb))
                key = dict(dataset="synth", nb=nb, N=n_src, source_n=args.source_n, rep=r)
                run_setting(args, rec, comm, Rounds, key, [ada], [tr], [test])
        C.log(f"synth repetition {r}: {time.perf_counter() - t0:.1f} s")


def amazon_grid(args, rec) -> None:
    import h5py

    from mpiboost.data.format import write_dataset

    comm, Rounds = _runtime()
    d = args.workdir / "data" / "amazon"
    d.mkdir(parents=True, exist_ok=True)
    full = C.amazon_reviews(args.data_dir, d / f"amazon-v{args.vocab_size}.h5", DOMAINS, args.vocab_size)
    with h5py.File(full, "r") as f:
        X, y, dom = f["X"][...], f["y"][...], f["domain"][...]
        names = [str(v) for v in f.attrs["domain_names"]]
    assert names == list(DOMAINS), names
    # Counts fit uint8 exactly (a schema dtype): 4x smaller files, the same values.
    assert X.min() >= 0 and X.max() <= 255 and np.array_equal(X, np.round(X))
    X = X.astype(np.uint8)
    C.log(f"amazon: {X.shape[0]:,} rows x {X.shape[1]} features, max count {int(X.max())}")

    def write(path: Path, rows: np.ndarray, name: str) -> Path:
        if not path.exists():
            write_dataset(path, X[rows], y[rows], attrs={"domain_name": name})
        return path

    srcs = {k: write(d / f"v{args.vocab_size}_{name}.h5", np.flatnonzero(dom == k), name)
            for k, name in enumerate(DOMAINS)}
    for r in range(1, args.amazon_reps + 1):  # repetition-major: a cut run still covers every setting
        t0 = time.perf_counter()
        for target in args.targets:
            k = DOMAINS.index(target)
            perm = np.random.default_rng([r, k]).permutation(np.flatnonzero(dom == k))
            for nb in args.amazon_nb:
                tr = write(d / f"v{args.vocab_size}_{target}_rep{r}_nb{nb}_train.h5", np.sort(perm[:nb]), target)
                te = write(d / f"v{args.vocab_size}_{target}_rep{r}_nb{nb}_test.h5", np.sort(perm[nb:]), target)
                sources = [srcs[j] for j in range(len(DOMAINS)) if j != k]
                key = dict(dataset="amazon", target=target, nb=nb, vocab=args.vocab_size, rep=r)
                run_setting(args, rec, comm, Rounds, key, [tr], [tr, *sources], [te])
        C.log(f"amazon repetition {r}: {time.perf_counter() - t0:.1f} s")


# ----------------------------------------------------------------- tables
def mstd(values, digits: int = 3) -> str:
    v = np.asarray([x for x in values if x is not None], float)
    if v.size == 0:
        return "–"
    if v.size == 1:
        return f"{v[0]:.{digits}f}"
    return f"{v.mean():.{digits}f} ± {v.std(ddof=1):.{digits}f}"


def settings(args, dataset: str) -> list[dict]:
    if dataset == "synth":
        return [dict(N=n, nb=nb, source_n=args.source_n) for n in args.synth_sources for nb in args.synth_nb]
    return [dict(target=t, nb=nb, vocab=args.vocab_size) for t in args.targets for nb in args.amazon_nb]


def setting_label(dataset: str, s: dict) -> list[str]:
    return [str(s["N"]), str(s["nb"])] if dataset == "synth" else [s["target"], str(s["nb"])]


def runs(rec, dataset: str, s: dict, method: str, variant: str, rounds: int, reps: int) -> list[dict]:
    v = "stop" if method == "adaboost" else variant
    rs = rec.select(dataset=dataset, method=method, variant=v, rounds=rounds, **s)
    return sorted((r for r in rs if r["rep"] <= reps), key=lambda r: r["rep"])


def paired(rec, args, dataset: str, variant: str, reps: int) -> list[list[str]]:
    from scipy import stats

    rows = []
    for a, b in PAIRS:
        da, db = [], []
        for s in settings(args, dataset):
            ra = {r["rep"]: r for r in runs(rec, dataset, s, a, variant, args.rounds, reps)}
            rb = {r["rep"]: r for r in runs(rec, dataset, s, b, variant, args.rounds, reps)}
            for rep in sorted(set(ra) & set(rb)):
                da.append(ra[rep])
                db.append(rb[rep])
        if len(da) < 2:
            continue
        cells = [f"{LABEL[a]} < {LABEL[b]}", str(len(da))]
        for metric, sign in (("error", 1), ("auc", -1)):  # H1: a has lower error / higher AUC
            diff = sign * (np.array([r[metric] for r in da]) - np.array([r[metric] for r in db]))
            wins, ties, losses = int((diff < 0).sum()), int((diff == 0).sum()), int((diff > 0).sum())
            if np.all(diff == 0):
                pw = pt = float("nan")
            else:
                pw = float(stats.wilcoxon(diff, alternative="less", zero_method="wilcox").pvalue)
                pt = float(stats.ttest_rel(diff, np.zeros_like(diff), alternative="less").pvalue)
            cells += [f"{sign * diff.mean():+.4f}", f"{wins}/{ties}/{losses}", f"{pw:.2g}", f"{pt:.2g}"]
        rows.append(cells)
    return rows


def paired_by_nb(rec, args, dataset: str, variant: str, reps: int) -> list[list[str]]:
    """Per n_b: mean error difference, wins/losses and the one-sided Wilcoxon p of each pair."""
    from scipy import stats

    nbs = args.synth_nb if dataset == "synth" else args.amazon_nb
    rows = []
    for a, b in PAIRS:
        cells = [f"{LABEL[a]} < {LABEL[b]}"]
        for nb in nbs:
            diff = []
            for s in settings(args, dataset):
                if s["nb"] != nb:
                    continue
                ra = {r["rep"]: r["error"] for r in runs(rec, dataset, s, a, variant, args.rounds, reps)}
                rb = {r["rep"]: r["error"] for r in runs(rec, dataset, s, b, variant, args.rounds, reps)}
                diff += [ra[k] - rb[k] for k in sorted(set(ra) & set(rb))]
            diff = np.array(diff)
            if diff.size < 2:
                cells.append("–")
                continue
            p = (float(stats.wilcoxon(diff, alternative="less", zero_method="wilcox").pvalue)
                 if np.any(diff != 0) else float("nan"))
            cells.append(f"{diff.mean():+.3f} ({int((diff < 0).sum())}/{int((diff > 0).sum())}, p {p:.2g})")
        rows.append(cells)
    return rows


def render_dataset(args, rec, dataset: str) -> list[str]:
    reps = args.reps if dataset == "synth" else args.amazon_reps
    head0 = ["N", "n_b"] if dataset == "synth" else ["target", "n_b"]
    out = []
    done_reps = sorted({r["rep"] for r in rec.select(dataset=dataset, rounds=args.rounds) if r["rep"] <= reps})
    if not done_reps:
        return out
    for variant in args.variants:
        methods = METHODS if variant == "stop" else ["adaboost", *TRANSFER]
        for metric in ("error", "auc"):
            table, n_min = [], None
            for s in settings(args, dataset):
                cells = setting_label(dataset, s)
                for m in methods:
                    rs = runs(rec, dataset, s, m, variant, args.rounds, reps)
                    n_min = len(rs) if n_min is None else min(n_min, len(rs))
                    cells.append(mstd([r[metric] for r in rs]))
                table.append(cells)
            hdr = head0 + [LABEL[m] + (" (stop)" if variant == "clip" and m == "adaboost" else "") for m in methods]
            out += [f"**{dataset}, `--high-error {variant}`: test {metric.upper() if metric == 'auc' else metric}**"
                    f" (mean ± std over {n_min} repetitions)", "", C.markdown_table(hdr, table), ""]
        # rounds actually trained
        table = []
        for s in settings(args, dataset):
            cells = setting_label(dataset, s)
            for m in TRANSFER:
                rs = runs(rec, dataset, s, m, variant, args.rounds, reps)
                cells.append(f"{np.mean([r['rounds_done'] for r in rs]):.1f}" if rs else "–")
            table.append(cells)
        out += [f"**{dataset}, `--high-error {variant}`: rounds trained** (mean; of M = {args.rounds})"
                + ("" if variant == "stop" else "; with clip every run trains M rounds, the cells give the mean "
                   "number of rounds whose raw target error was >= 1/2 (trained with eps_t = 0.499)"), ""]
        if variant == "clip":
            table = []
            for s in settings(args, dataset):
                cells = setting_label(dataset, s)
                for m in TRANSFER:
                    rs = runs(rec, dataset, s, m, variant, args.rounds, reps)
                    cells.append(f"{np.mean([r['n_high'] for r in rs]):.1f}" if rs else "–")
                table.append(cells)
        out += [C.markdown_table(head0 + [LABEL[m] for m in TRANSFER], table), ""]
        notes = []
        for m in TRANSFER:
            rs = [r for s in settings(args, dataset) for r in runs(rec, dataset, s, m, variant, args.rounds, reps)]
            if not rs:
                continue
            zero = sum(r["rounds_done"] == 0 for r in rs)
            near = np.mean([r.get("n_near_half", 0) for r in rs])
            notes.append(f"{LABEL[m]}: {zero} of {len(rs)} runs trained 0 rounds, {near:.1f} rounds per run had "
                         f"0.4999 <= eps_t < 1/2")
        out += ["Per method over all settings: " + "; ".join(notes) + " (a 0-round model is empty and predicts "
                "+1 for every row; a round at eps_t just below 1/2 votes with ln(1/beta_t) ~ 0).", ""]
        rows = paired(rec, args, dataset, variant, reps)
        if rows:
            out += [f"**{dataset}, `--high-error {variant}`: one-sided paired tests**, pairs = (setting, "
                    "repetition); H1: the first method has lower error (higher AUC). W/T/L = pairs where the "
                    "first is better / equal / worse; p from scipy.stats.wilcoxon (zero_method='wilcox', "
                    "alternative='less') and ttest_rel (alternative='less').", "",
                    C.markdown_table(["comparison", "pairs", "Δ error", "W/T/L (error)", "p Wilcoxon", "p t-test",
                                      "Δ AUC", "W/T/L (AUC)", "p Wilcoxon", "p t-test"], rows), ""]
            nbs = args.synth_nb if dataset == "synth" else args.amazon_nb
            out += [f"By n_b (`--high-error {variant}`): mean error difference (first − second), (wins/losses "
                    "of the first), one-sided Wilcoxon p.", "",
                    C.markdown_table(["comparison", *[f"n_b = {nb}" for nb in nbs]],
                                     paired_by_nb(rec, args, dataset, variant, reps)), ""]
    return out


def render(args, rec) -> str:
    out = []
    for dataset in args.datasets:
        out += render_dataset(args, rec, dataset)
    rs = [r for r in rec.rows if r.get("rounds") == args.rounds and not r.get("same_as_stop")]
    if rs:
        out.append(f"{len(rs)} training runs ({sum(r['seconds'] for r in rs) / 60:.1f} min of training and "
                   f"loading, evaluation not counted); clip runs identical to their stop run (no round reached 1/2) "
                   f"were not rerun: {sum(1 for r in rec.rows if r.get('same_as_stop'))}.")
    return "\n".join(out)


# ------------------------------------------------------------------ plots
def plots(args, rec, outdir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    style = {"adaboost": ("k", "o"), "tradaboost": ("tab:orange", "v"), "dtradaboost": ("tab:green", "^"),
             "mstra": ("tab:blue", "s"), "msdtra": ("tab:red", "D")}

    def curve(ax, xs, getter, m, variant):
        c, mk = style[m]
        ys = [getter(x) for x in xs]
        mean = [np.mean(v) if v else np.nan for v in ys]
        sem = [np.std(v, ddof=1) / math.sqrt(len(v)) if len(v) > 1 else 0 for v in ys]
        ls = "-" if variant == "stop" else "--"
        lab = LABEL[m] + ("" if variant == "stop" else " (clip)")
        ax.errorbar(xs, mean, yerr=sem, color=c, marker=mk, ls=ls, ms=4, capsize=2, label=lab,
                    alpha=1.0 if variant == "stop" else 0.6)

    if "synth" in args.datasets and rec.select(dataset="synth"):
        for metric in ("error", "auc"):
            fig, axes = plt.subplots(2, len(args.synth_sources), figsize=(4 * len(args.synth_sources), 7.5),
                                     squeeze=False)
            for j, n_src in enumerate(args.synth_sources):
                for row, variants in enumerate((["stop"], ["clip"])):
                    ax = axes[row, j]
                    for variant in variants:
                        for m in METHODS:
                            curve(ax, args.synth_nb, lambda nb: [r[metric] for r in runs(
                                rec, "synth", dict(N=n_src, nb=nb, source_n=args.source_n), m, variant,
                                args.rounds, args.reps)], m, "stop" if m == "adaboost" else variant)
                    ax.set_xscale("log")
                    ax.set_xticks(args.synth_nb, [str(x) for x in args.synth_nb])
                    ax.set_title(f"N = {n_src} sources, --high-error {variants[0]}", fontsize=9)
                    ax.set_xlabel("labelled target rows n_b")
                    ax.set_ylabel(f"test {metric}")
                    ax.grid(alpha=0.3)
            axes[0, 0].legend(fontsize=7)
            axes[1, 0].legend(fontsize=7)
            fig.suptitle(f"Synthetic transfer: test {metric} vs n_b (mean ± s.e. over {args.reps} repetitions, "
                         f"{args.source_n} rows per source, M = {args.rounds})", fontsize=10)
            fig.tight_layout()
            p = outdir / f"transfer_synth_{metric}_vs_nb.png"
            fig.savefig(p, dpi=90)
            plt.close(fig)
            written.append(p)
        fig, axes = plt.subplots(1, len(args.synth_nb), figsize=(4 * len(args.synth_nb), 3.8), squeeze=False)
        for j, nb in enumerate(args.synth_nb):
            ax = axes[0, j]
            for m in METHODS:
                curve(ax, args.synth_sources, lambda n: [r["error"] for r in runs(
                    rec, "synth", dict(N=n, nb=nb, source_n=args.source_n), m, "stop", args.rounds, args.reps)],
                      m, "stop")
            ax.set_xscale("log", base=2)
            ax.set_xticks(args.synth_sources, [str(x) for x in args.synth_sources])
            ax.set_title(f"n_b = {nb}", fontsize=9)
            ax.set_xlabel("sources N (first ceil(N/2) helpful)")
            ax.set_ylabel("test error")
            ax.grid(alpha=0.3)
        axes[0, 0].legend(fontsize=7)
        fig.suptitle("Synthetic transfer: test error vs N, defaults (--high-error stop)", fontsize=10)
        fig.tight_layout()
        p = outdir / "transfer_synth_error_vs_N.png"
        fig.savefig(p, dpi=90)
        plt.close(fig)
        written.append(p)
    if "amazon" in args.datasets and rec.select(dataset="amazon"):
        fig, axes = plt.subplots(2, len(args.targets), figsize=(4 * len(args.targets), 7.5), squeeze=False)
        for j, t in enumerate(args.targets):
            for row, variant in enumerate(("stop", "clip")):
                ax = axes[row, j]
                for m in METHODS:
                    curve(ax, args.amazon_nb, lambda nb: [r["error"] for r in runs(
                        rec, "amazon", dict(target=t, nb=nb, vocab=args.vocab_size), m, variant, args.rounds,
                        args.amazon_reps)], m, "stop" if m == "adaboost" else variant)
                ax.set_title(f"target {t}, --high-error {variant}", fontsize=9)
                ax.set_xlabel("labelled target reviews n_b")
                ax.set_ylabel("test error")
                ax.grid(alpha=0.3)
        axes[0, 0].legend(fontsize=7)
        axes[1, 0].legend(fontsize=7)
        n = len({r["rep"] for r in rec.select(dataset="amazon") if r["rep"] <= args.amazon_reps})
        fig.suptitle(f"Amazon sentiment: test error vs n_b (mean ± s.e. over {n} repetitions, "
                     f"vocabulary {args.vocab_size}, M = {args.rounds})", fontsize=10)
        fig.tight_layout()
        p = outdir / "transfer_amazon_error_vs_nb.png"
        fig.savefig(p, dpi=90)
        plt.close(fig)
        written.append(p)
    return written


def main(argv=None) -> int:
    args = parse_args(argv)
    rec = C.Records(args.workdir / "results" / "transfer.jsonl", fresh=not (args.resume or args.render_only))
    if not args.render_only:
        if "synth" in args.datasets:
            synth_grid(args, rec)
        if "amazon" in args.datasets:
            amazon_grid(args, rec)
    body = render(args, rec)
    if args.plots:
        body += "\n\nPlots: " + ", ".join(str(p) for p in plots(args, rec, args.plots))
    C.publish(body, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
