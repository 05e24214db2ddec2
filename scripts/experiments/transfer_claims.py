#!/usr/bin/env python
"""The transfer claims, re-checkable: MSDTrA (defaults) against AdaBoost on the target alone,
AdaBoost on target + sources pooled and LightGBM (defaults) pooled, with paired tests.

Benchmarks (every setting over repetitions; pairs are (target, repetition)):

* ``synth``: ``mpiboost synth transfer`` (generated in-process with the same
  function): N = ``--synth-sources`` sources of ``--source-n`` rows each, the
  generator's default mix (the first ceil(N/2) helpful, the rest misleading),
  d = 20, 5 informative features; repetition r draws task and sample seed r;
  the clean test set is ``--test-n`` target rows of the same task.
* ``dense``: target rule sign(w.x) on 20 Gaussian features (all informative),
  20 labelled target rows, two sources whose w is perturbed by 0.3 and 0.5
  (w + delta u, u a unit vector orthogonal to w: relatedness rho = 1/sqrt(1 + delta^2))
  and one unrelated source (rho = 0), 2,000 rows each, no input shift.
* ``amazon``: books / dvd / electronics / kitchen (2,000 reviews each, one
  shared vocabulary of ``--vocab-size`` tokens); each domain in turn is the
  target, repetition r draws n_b target reviews (numpy ``default_rng([r, k])``),
  the other 2,000 - n_b are the test set, the three other domains are the sources.

Methods are specs ``name[:param=value,...]``: ``msdtra`` (defaults),
``msdtra:candidates=paper,initial_split=paper,eps_floor=0,source_update=paper`` (the paper's
rules), ``adaboost-target`` (AdaBoost on the target rows), ``adaboost-pooled``
(AdaBoost on every row), ``adaboost-pooled-up`` (AdaBoost on every row, the target rows weighing as much
as all the sources: the source trust's ``balanced``), ``lightgbm-pooled`` (LightGBM with its default
settings on every row), any other transfer algorithm with parameters.
Every run goes through the Python API in this one process (one rank, one
thread), the code ``mpiboost train`` runs; the records are a JSONL file and
``--resume`` skips the runs already recorded.

    python scripts/experiments/transfer_claims.py --quick                     # smoke test, about a minute
    python scripts/experiments/transfer_claims.py --datasets synth dense --reps 10
    python scripts/experiments/transfer_claims.py --datasets amazon --reps 5 --resume
    python scripts/experiments/transfer_claims.py --render-only --datasets synth dense amazon
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

DOMAINS = ("books", "dvd", "electronics", "kitchen")
# Generated cases of one kind of source each (3 sources; relatedness rho of every source): the
# sources help, are unrelated to the target rule, or teach its opposite.
KINDS = {"helpful": (0.95, 0.9, 0.85), "unrelated": (0.0, 0.0, 0.0), "adversarial": (-0.9, -0.8, -0.7)}
# Pixels from a second "scanner": scikit-learn's 8x8 digits, odd against even; the source is half the images as
# they are, the target the other half shifted right by 0-3 pixels (0: the same scanner, a helpful source; 2-3:
# every pixel rule of the source points at the wrong strokes).
DIGIT_SHIFTS = {f"digits-shift{k}": k for k in range(4)}
DATASETS = ["synth", "dense", *KINDS, "amazon", *DIGIT_SHIFTS]
PAPER = "msdtra:candidates=paper,initial_split=paper,eps_floor=0,source_update=paper"
DEFAULT_METHODS = ["msdtra", PAPER, "adaboost-target", "adaboost-pooled", "lightgbm-pooled"]
BASELINES = ["adaboost-target", "adaboost-pooled", "lightgbm-pooled"]


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=["synth", "dense", "amazon"], choices=DATASETS)
    p.add_argument("--data-dir", type=Path, default=C.DATASETS,
                   help="the directory holding amazon-multidomain-sentiment/ (default: $MPIBOOST_DATASETS or datasets/)")
    p.add_argument("--methods", nargs="+", default=DEFAULT_METHODS)
    p.add_argument("--reference", default="msdtra", help="the method every other one is paired against")
    p.add_argument("--rounds", type=int, default=50)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--nb", type=int, nargs="+", default=[10, 20, 50], help="labelled target rows")
    p.add_argument("--synth-sources", type=int, default=4)
    p.add_argument("--source-n", type=int, default=200, help="synthetic rows per source")
    p.add_argument("--test-n", type=int, default=5000, help="synthetic test rows")
    p.add_argument("--targets", nargs="+", default=list(DOMAINS), choices=DOMAINS)
    p.add_argument("--vocab-size", type=int, default=2000)
    p.add_argument("--workdir", type=Path, default=C.DEFAULT_WORKDIR / "transfer-claims")
    p.add_argument("--records", type=Path, default=None, help="JSONL records (default: WORKDIR/records.jsonl)")
    p.add_argument("--quick", action="store_true", help="2 repetitions, n_b 10 and 20, 20 rounds, 2 Amazon targets")
    p.add_argument("--resume", action="store_true", help="keep earlier records and skip the runs they hold")
    p.add_argument("--render-only", action="store_true")
    p.add_argument("--out", type=Path, default=None, help="write the tables here (markdown)")
    a = p.parse_args(argv)
    if a.quick:
        a.reps, a.nb, a.rounds, a.targets = 2, [10, 20], 20, ["books", "kitchen"]
        a.test_n = 2000
        a.workdir = a.workdir.with_name(a.workdir.name + "-quick")
    a.records = a.records or a.workdir / "records.jsonl"
    return a


def parse_method(spec: str) -> tuple[str, dict]:
    """``name[:k=v,...]`` as (name, params) with numbers converted."""
    name, _, rest = spec.partition(":")
    params = {}
    for item in filter(None, rest.split(",")):
        k, _, v = item.partition("=")
        try:
            params[k] = float(v) if k == "eps_floor" else v
        except ValueError:
            params[k] = v
    return name, params


# ------------------------------------------------------------------ runs
def _comm():
    from mpiboost.comm import world

    return world()


def run_method(args, comm, spec: str, target_file: Path, source_files: list, test_file: Path) -> dict:
    """Train ``spec`` and score it on the test file."""
    name, params = parse_method(spec)
    t0 = time.perf_counter()
    if name in ("lightgbm-pooled", "lightgbm-pooled-up", "lightgbm-target"):
        import lightgbm as lgb

        files = [target_file] if name == "lightgbm-target" else [target_file, *source_files]
        Xs, ys = zip(*[C.read_xy(f) for f in files])
        Xte, yte = C.read_xy(test_file)
        weight = None
        if name == "lightgbm-pooled-up":
            # the target rows up-weighted to half the total mass: what a user would try first
            n_b, n_a = len(ys[0]), sum(len(v) for v in ys[1:])
            weight = np.concatenate([np.full(n_b, n_a / n_b), np.ones(n_a)])
        m = lgb.LGBMClassifier(n_jobs=1, random_state=0, verbose=-1)  # LightGBM's defaults
        m.fit(np.vstack(Xs), (np.concatenate(ys) > 0).astype(int), sample_weight=weight)
        err = float(np.mean(np.where(m.predict(Xte) > 0, 1, -1) != np.where(yte > 0, 1, -1)))
        return {"error": err, "rounds_done": None, "empty": False, "seconds": time.perf_counter() - t0}
    from mpiboost.api import train_files
    from mpiboost.evaluate import evaluate

    run = {"rounds": args.rounds, "seed": 0, "threads": 1, "weak_learner": "histogram"}
    if name == "adaboost-pooled-up":
        # AdaBoost on every row, the target rows up-weighted to half the total mass (MSDTrA's "balanced" way)
        from mpiboost.api import train

        Xs, ys = zip(*[C.read_xy(f) for f in [target_file, *source_files]])
        n_b, n_a = len(ys[0]), sum(len(v) for v in ys[1:])
        model = train({"algo": "adaboost", **run, **params}, np.vstack(Xs), np.concatenate(ys),
                      weight=np.concatenate([np.full(n_b, n_a / n_b), np.ones(n_a)]), comm=comm)
        ev = evaluate(comm, model, [str(test_file)])
        return {"error": float(ev["error"]), "rounds_done": model.n_rounds, "empty": model.n_rounds == 0,
                "seconds": time.perf_counter() - t0}
    if name in ("adaboost-target", "adaboost-pooled"):
        files = [target_file] if name == "adaboost-target" else [target_file, *source_files]
        model = train_files({"algo": "adaboost", **run, **params}, [str(f) for f in files], comm=comm)
    else:
        model = train_files({"algo": name, **run, "target_domain": 0, **params},
                            [str(f) for f in [target_file, *source_files]], comm=comm)
    ev = evaluate(comm, model, [str(test_file)])
    s = model.summary_
    return {"error": float(ev["error"]), "auc": ev.get("auc"), "rounds_done": s["rounds"],
            "source_trust": (s.get("source_trust") or {}).get("chosen"),
            "source_trust_tried": (s.get("source_trust") or {}).get("tried"),  # held-out counts
            "source_trust_screen": (s.get("source_trust") or {}).get("screen"),
            "source_trust_record": s.get("source_trust"),  # the whole record: trust_rules.py reads it
            "empty": model.n_rounds == 0, "stop_reason": s["stop_reason"],
            "seconds": time.perf_counter() - t0}


def run_all(args, rec: C.Records, comm, key: dict, target_file, source_files, test_file) -> None:
    for spec in args.methods:
        k = dict(key, method=spec, rounds=args.rounds)
        if rec.find(**k) is None:
            rec.add({**k, **run_method(args, comm, spec, target_file, source_files, test_file)})


def _write(path: Path, X, y, domain=None, names=None, attrs=None) -> Path:
    from mpiboost.data.format import write_dataset

    if not path.exists():
        if domain is None:
            write_dataset(path, X, y, attrs=attrs or {})
        else:
            write_dataset(path, X, y, domain, domain_names=names, attrs=attrs or {})
    return path


def synth_like(args, rec: C.Records, comm, dataset: str) -> None:
    """``synth`` and ``dense``: one target file, one file per source, a clean test file."""
    from mpiboost.data.synth.transfer import generate

    d = args.workdir / "data" / dataset
    d.mkdir(parents=True, exist_ok=True)
    if dataset == "synth":
        opts = dict(sources=args.synth_sources, d=20, informative=5)
        n_src, nbs = args.source_n, args.nb
    elif dataset in KINDS:
        opts = dict(sources=len(KINDS[dataset]), d=20, informative=5, relatedness=list(KINDS[dataset]))
        n_src, nbs = args.source_n, args.nb
    else:
        opts = dict(sources=3, d=20, informative=20, shift=0.0,
                    relatedness=[1 / math.sqrt(1 + 0.3 ** 2), 1 / math.sqrt(1 + 0.5 ** 2), 0.0])
        n_src, nbs = 2000, [20]
    for r in range(1, args.reps + 1):
        t0 = time.perf_counter()
        test = generate(args.test_n, seed=1000 + r, task_seed=r, **dict(opts, sources=0, relatedness=None))
        test_file = _write(d / f"test_r{r}.h5", test.X, test.y)
        for nb in nbs:
            data = generate(n_src, seed=r, task_seed=r, target_n=nb, **opts)
            files = []
            for k in range(opts["sources"] + 1):
                rows = data.domain == k
                files.append(_write(d / f"r{r}_nb{nb}_dom{k}.h5", data.X[rows], data.y[rows],
                                    attrs={"domain_name": data.domain_names[k]}))
            run_all(args, rec, comm, dict(dataset=dataset, target="target", nb=nb, rep=r), files[0], files[1:],
                    test_file)
        C.log(f"{dataset} repetition {r}: {time.perf_counter() - t0:.1f} s")


def amazon(args, rec: C.Records, comm) -> None:
    import h5py

    d = args.workdir / "data" / "amazon"
    d.mkdir(parents=True, exist_ok=True)
    full = C.amazon_reviews(args.data_dir, d / f"amazon-v{args.vocab_size}.h5", DOMAINS, args.vocab_size)
    with h5py.File(full, "r") as f:
        X, y, dom = f["X"][...], f["y"][...], f["domain"][...]
    X = X.astype(np.uint8) if X.max() <= 255 else X  # counts: lossless, 4x smaller files
    srcs = {k: _write(d / f"v{args.vocab_size}_{name}.h5", X[dom == k], y[dom == k], attrs={"domain_name": name})
            for k, name in enumerate(DOMAINS)}
    for r in range(1, args.reps + 1):  # repetition-major: a cut run still covers every setting
        t0 = time.perf_counter()
        for target in args.targets:
            k = DOMAINS.index(target)
            perm = np.random.default_rng([r, k]).permutation(np.flatnonzero(dom == k))
            for nb in args.nb:
                tr, te = np.sort(perm[:nb]), np.sort(perm[nb:])
                trf = _write(d / f"v{args.vocab_size}_{target}_r{r}_nb{nb}_train.h5", X[tr], y[tr],
                             attrs={"domain_name": target})
                tef = _write(d / f"v{args.vocab_size}_{target}_r{r}_nb{nb}_test.h5", X[te], y[te])
                run_all(args, rec, comm, dict(dataset="amazon", target=target, nb=nb, rep=r), trf,
                        [srcs[j] for j in range(len(DOMAINS)) if j != k], tef)
        C.log(f"amazon repetition {r}: {time.perf_counter() - t0:.1f} s")


def digits(args, rec: C.Records, comm, dataset: str) -> None:
    """A source of 8x8 digit images and a target of the other images shifted right (``DIGIT_SHIFTS``)."""
    from sklearn.datasets import load_digits

    shift = DIGIT_SHIFTS[dataset]
    d = args.workdir / "data" / dataset
    d.mkdir(parents=True, exist_ok=True)
    dig = load_digits()
    images, y = dig.images.astype(np.float32), np.where(dig.target % 2 == 1, 1, -1).astype(np.int8)
    half = np.random.default_rng(0xD161).permutation(len(y))
    src, tgt = np.sort(half[: len(y) // 2]), np.sort(half[len(y) // 2:])
    moved = np.zeros_like(images[tgt])
    moved[:, :, shift:] = images[tgt][:, :, : 8 - shift]
    Xs, Xt, yt = images[src].reshape(len(src), 64), moved.reshape(len(tgt), 64), y[tgt]
    source = _write(d / "source.h5", Xs, y[src], attrs={"domain_name": "scanner A"})
    for r in range(1, args.reps + 1):
        perm = np.random.default_rng([r, shift]).permutation(len(tgt))
        for nb in args.nb:
            tr, te = np.sort(perm[:nb]), np.sort(perm[nb:])
            trf = _write(d / f"r{r}_nb{nb}_train.h5", Xt[tr], yt[tr], attrs={"domain_name": "scanner B"})
            tef = _write(d / f"r{r}_nb{nb}_test.h5", Xt[te], yt[te])
            run_all(args, rec, comm, dict(dataset=dataset, target="target", nb=nb, rep=r), trf, [source], tef)
    C.log(f"{dataset}: {args.reps} repetitions")


# ----------------------------------------------------------------- tables
def _mstd(v) -> str:
    v = np.asarray(v, dtype=float)
    return f"{v.mean():.3f} ± {v.std(ddof=1) if v.size > 1 else 0.0:.3f}"


def _p(x: float) -> str:
    return "–" if x is None or not math.isfinite(x) else (f"{x:.2g}" if x < 0.001 else f"{x:.3f}")


def paired_p(a, b) -> tuple[float, float]:
    """One-sided p-values of H1 "a has lower error than b": paired t-test and Wilcoxon signed-rank."""
    from scipy import stats

    a, b = np.asarray(a, float), np.asarray(b, float)
    diff = a - b
    if diff.size < 2 or np.all(diff == 0):
        return float("nan"), float("nan")
    t = stats.ttest_rel(a, b, alternative="less").pvalue
    try:
        w = stats.wilcoxon(diff, alternative="less", zero_method="wilcox").pvalue
    except ValueError:
        w = float("nan")
    return float(t), float(w)


def short_label(spec: str) -> str:
    """A table heading for a method spec (``X (paper)`` for the papers' rules)."""
    names = {"msdtra": "MSDTrA", "mstra": "MSTrA", "dtradaboost": "DTrAdaBoost", "tradaboost": "TrAdaBoost",
             "adaboost-target": "AdaBoost target", "adaboost-pooled": "AdaBoost pooled",
             "lightgbm-pooled": "LightGBM pooled", "lightgbm-pooled-up": "LightGBM pooled, target up-weighted",
             "adaboost-pooled-up": "AdaBoost pooled, target up-weighted",
             "lightgbm-target": "LightGBM target"}
    name, params = parse_method(spec)
    base = names.get(name, name)
    if params.get("candidates") == "paper" and params.get("initial_split") == "paper":
        params = {k: v for k, v in params.items() if k not in ("candidates", "initial_split", "eps_floor",
                                                               "source_update")}
        base += " (paper)"
    return base + (" " + ",".join(f"{k}={v}" for k, v in params.items()) if params else "")


def guard_rows(args, rows_d: list, nbs: list) -> list:
    """The simplest baselines' check: the reference against the better (in the mean) of the target-only and
    the pooled baseline of its weak learner, with the standard error of the paired differences."""
    ref_name, ref_params = parse_method(args.reference)
    tree = ref_params.get("weak_learner") == "tree"
    suffix = ":weak_learner=tree" if tree else ""
    base = [b for b in (f"adaboost-target{suffix}", f"adaboost-pooled{suffix}") if b in args.methods]
    if len(base) < 2 or args.reference in base:
        return []
    out = ["", f"| n_b | {args.reference} | better of target-only and pooled | Δ | SE of Δ | within 1 SE |",
           "|---|---|---|---|---|---|"]
    for nb in nbs:
        by = {m: {(r["target"], r["rep"]): r["error"] for r in rows_d if r["nb"] == nb and r["method"] == m}
              for m in [args.reference, *base]}
        keys = sorted(set.intersection(*[set(v) for v in by.values()]))
        if len(keys) < 2:
            continue
        best = min(base, key=lambda b: np.mean([by[b][k] for k in keys]))
        diff = np.array([by[args.reference][k] - by[best][k] for k in keys])
        se = diff.std(ddof=1) / math.sqrt(diff.size)
        out.append(f"| {nb} | {np.mean([by[args.reference][k] for k in keys]):.3f} | {short_label(best)} "
                   f"{np.mean([by[best][k] for k in keys]):.3f} | {diff.mean():+.3f} | {se:.3f} | "
                   f"{'yes' if diff.mean() <= se else 'NO'} |")
    return out


def render(args, rec: C.Records) -> str:
    out = []
    label = {m: short_label(m) for m in args.methods}
    for dataset in args.datasets:
        rows_d = [r for r in rec.rows if r["dataset"] == dataset and r["rounds"] == args.rounds]
        if not rows_d:
            continue
        nbs = sorted({r["nb"] for r in rows_d})
        out.append(f"**{dataset}**: test error, mean ± sd over (target, repetition) pairs; "
                   f"p: one-sided paired t-test / Wilcoxon of H1 \"{args.reference} lower\"; empty: models with 0 rounds\n")
        head = ["n_b", "pairs", *[label[m] for m in args.methods]]
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        tests = []
        for nb in nbs:
            by = {m: {(r["target"], r["rep"]): r for r in rows_d if r["nb"] == nb and r["method"] == m}
                  for m in args.methods}
            keys = sorted(set.intersection(*[set(v) for v in by.values()]))
            if not keys:
                continue
            cells = []
            for m in args.methods:
                errs = [by[m][k]["error"] for k in keys]
                empty = sum(bool(by[m][k].get("empty")) for k in keys)
                cells.append(_mstd(errs) + (f" (empty {empty})" if empty else ""))
            out.append(f"| {nb} | {len(keys)} | " + " | ".join(cells) + " |")
            ref = [by[args.reference][k]["error"] for k in keys]
            for m in args.methods:
                if m == args.reference:
                    continue
                other = [by[m][k]["error"] for k in keys]
                t, w = paired_p(ref, other)
                wins = sum(x < y for x, y in zip(ref, other))
                losses = sum(x > y for x, y in zip(ref, other))
                tests.append(f"| {nb} | {label[m]} | {np.mean(ref) - np.mean(other):+.3f} | {wins}/{len(keys) - wins - losses}/{losses} "
                             f"| {_p(t)} | {_p(w)} |")
        out += guard_rows(args, rows_d, nbs)
        out.append("")
        out.append(f"| n_b | {args.reference} vs | Δ mean | W/T/L | p (t) | p (Wilcoxon) |")
        out.append("|---|---|---|---|---|---|")
        out += tests
        out.append("")
    return "\n".join(out)


def main(argv=None) -> int:
    args = parse_args(argv)
    rec = C.Records(args.records, fresh=not (args.resume or args.render_only))
    if not args.render_only:
        comm = _comm()
        for ds in args.datasets:
            if ds == "amazon":
                amazon(args, rec, comm)
            elif ds in DIGIT_SHIFTS:
                digits(args, rec, comm, ds)
            else:
                synth_like(args, rec, comm, ds)
    text = render(args, rec)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
