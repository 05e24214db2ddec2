#!/usr/bin/env python
"""MultiBoost paper (Cortes, Mohri, Storcheus, Suresh 2021): the Adult and Sentiment tables.

Per-domain test errors (Err-k), their mean (Uniform) and their maximum
(Agnostic) for the baselines AdaBoost-k (trained on domain k only) and
AdaBoost-all (the union of the domains) and for MultiBoost and FedMultiBoost,
all with stumps and T rounds, mpiboost run through its command line
(``mpiexec -n NPROC python -m mpiboost train ...``, ``mpiboost evaluate``).

Adult (UCI, ``adult.data`` + ``adult.test`` merged: 48,842 rows): converted with
``mpiboost convert`` exactly as in docs/data.md -- the seven text columns one-hot
(89 features), three domains by ``education``: university = Bachelors, Masters,
Doctorate, Prof-school; hs = HS-grad; other = every other level; the
education column is the domain, not a feature (``education-num`` stays a
feature). 10-fold cross-validation per domain as in the paper: each domain's
rows are shuffled (numpy default_rng(0)) and cut into 10 folds; test fold i =
the union of the domains' i-th folds, training = the rest.

Sentiment (Amazon reviews of Blitzer et al., books / dvd / electronics,
2,000 reviews each): bag-of-words counts over the 5,000 tokens that occur in the
most reviews of the three domains (labels unused; ``mpiboost convert --format
amazon``). 10 random splits: for split s each domain's rows are shuffled with
default_rng(s) and 80% train, 20% test.

    python scripts/experiments/multiboost_tables.py             # both tables (about 25 minutes on 2 cores)
    python scripts/experiments/multiboost_tables.py --quick     # smoke test, about 2 minutes
    python scripts/experiments/multiboost_tables.py --datasets adult --out adult.md
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

ADULT_NAMES = ("age,workclass,fnlwgt,education,education-num,marital-status,occupation,relationship,race,sex,"
               "capital-gain,capital-loss,hours-per-week,native-country,income")
ADULT_DOMAINS = "Bachelors,Masters,Doctorate,Prof-school=university;HS-grad=hs;*=other"
SENTIMENT_DOMAINS = ("books", "dvd", "electronics")

# The paper's table (test error; Uniform = mean, Agnostic = max over the domains).
PAPER = {
    "adult": {
        "adaboost-1": (".201", ".249", ".215", ".222", ".249"),
        "adaboost-2": (".298", ".131", ".142", ".190", ".298"),
        "adaboost-3": (".225", ".138", ".133", ".165", ".225"),
        "adaboost-all": (".221", ".134", ".131", ".155", ".221"),
        "dmsa": (".195", ".137", ".131", ".154", ".195"),
        "multiboost": (".190", ".132", ".130", ".150", ".190"),
    },
    "sentiment": {
        "adaboost-all": (".354", ".325", ".313", ".324", ".354"),
        "multiboost": (".332", ".288", ".284", ".301", ".332"),
    },
}
PAPER_LABEL = {"adaboost-1": "AdaBoost-1", "adaboost-2": "AdaBoost-2", "adaboost-3": "AdaBoost-3",
               "adaboost-all": "AdaBoost-all", "dmsa": "DMSA", "multiboost": "MultiBoost"}
METHODS = ["adaboost-1", "adaboost-2", "adaboost-3", "adaboost-all", "multiboost", "fedmultiboost"]
PEERS = ["lightgbm-stumps", "lightgbm", "lightgbm-domain"]  # pooled domains, in-process (scikit-learn API)
LABEL = {**PAPER_LABEL, "fedmultiboost": "FedMultiBoost", "lightgbm-stumps": "LightGBM pooled, T stumps",
         "lightgbm": "LightGBM pooled, default trees",
         "lightgbm-domain": "LightGBM pooled + domain id, default trees"}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=["adult", "sentiment", "multisource"],
                   choices=["adult", "sentiment", "multisource"],
                   help="multisource: `mpiboost synth multisource` (3 domains whose experts conflict), "
                        "6,000 training and 6,000 test rows per split")
    p.add_argument("--data-dir", type=Path, default=C.DATASETS)
    p.add_argument("--methods", nargs="+", default=METHODS, choices=METHODS + PEERS,
                   help=f"mpiboost methods and peers ({', '.join(PEERS)}: pooled domains, same threads)")
    p.add_argument("--folds", type=int, default=10, help="Adult: cross-validation folds")
    p.add_argument("--use-folds", type=int, nargs="+", help="Adult: run only these folds (0-based)")
    p.add_argument("--splits", type=int, nargs="+", default=list(range(1, 11)), help="Sentiment: split seeds")
    p.add_argument("--vocab-size", type=int, default=5000)
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--extra", default="", help="extra options for MultiBoost and FedMultiBoost (one string)")
    p.add_argument("--tag", default="", help="name of this configuration in the records (with --extra)")
    p.add_argument("--workdir", type=Path, default=C.DEFAULT_WORKDIR / "multiboost")
    p.add_argument("--quick", action="store_true", help="2 folds / 2 splits, 20 rounds")
    p.add_argument("--resume", action="store_true", help="keep earlier records and skip the runs they hold")
    p.add_argument("--render-only", action="store_true")
    p.add_argument("--out", type=Path, help="also write the Markdown here")
    args = p.parse_args(argv)
    if args.quick:
        args.use_folds = args.use_folds or [0, 1]
        args.splits = args.splits[:2]
        args.rounds = min(args.rounds, 20)
    if args.use_folds is None:
        args.use_folds = list(range(args.folds))
    return args


# ------------------------------------------------------------------- data
def _read(path: Path) -> dict:
    import h5py

    with h5py.File(path, "r") as f:
        out = {"X": f["X"][...], "y": f["y"][...], "domain": f["domain"][...]}
        names = f.attrs.get("domain_names")
        out["domain_names"] = [str(v) for v in names]
        fn = f.attrs.get("feature_names")
        out["feature_names"] = None if fn is None else [str(v) for v in fn]
    return out


def adult(args) -> dict:
    """The merged Adult rows (converted once, cached under the work directory)."""
    out = args.workdir / "data" / "adult"
    out.mkdir(parents=True, exist_ok=True)
    src = args.data_dir / "adult"
    common = ["--format", "csv", "--no-header", "--names", ADULT_NAMES, "--label-column", "income",
              "--positive-label", ">50K", "--label-strip", ".", "--domain-column", "education",
              "--domain-map", ADULT_DOMAINS]
    cats = out / "adult-categories.json"
    if not (out / "adult-test.h5").exists():
        C.run([*C.MPIBOOST, "convert", src / "adult.data", *common, "--categorical", "auto",
               "--categories-out", cats, "--out", out / "adult-train.h5"])
        C.run([*C.MPIBOOST, "convert", src / "adult.test", *common, "--comment-char", "|",
               "--categories-in", cats, "--out", out / "adult-test.h5"])
    a, b = _read(out / "adult-train.h5"), _read(out / "adult-test.h5")
    assert a["domain_names"] == b["domain_names"] and a["feature_names"] == b["feature_names"]
    return {"X": np.concatenate([a["X"], b["X"]]), "y": np.concatenate([a["y"], b["y"]]),
            "domain": np.concatenate([a["domain"], b["domain"]]), "domain_names": a["domain_names"],
            "feature_names": a["feature_names"]}


def sentiment(args) -> dict:
    """Books, dvd and electronics with one vocabulary, as one array with a domain column."""
    out = args.workdir / "data" / "sentiment"
    out.mkdir(parents=True, exist_ok=True)
    path = C.amazon_reviews(args.data_dir, out / f"sentiment-v{args.vocab_size}.h5", SENTIMENT_DOMAINS,
                            args.vocab_size)
    data = _read(path)
    data["feature_names"] = None  # 5,000 names do not fit an HDF5 attribute; the file keeps its vocabulary
    return data


def multisource_split(args, seed: int) -> tuple[Path, Path]:
    """A generated training and test set (seeds ``seed`` and ``seed + 1000``; same task)."""
    d = args.workdir / "data" / "multisource"
    d.mkdir(parents=True, exist_ok=True)
    out = []
    for name, s in (("train", seed), ("test", seed + 1000)):
        path = d / f"split{seed}-{name}.h5"
        if not path.exists():
            C.run([*C.MPIBOOST, "synth", "multisource", "--n", 6000, "--seed", s, "--out", path])
        out.append(path)
    return out[0], out[1]


def write_split(data: dict, train_idx: np.ndarray, test_idx: np.ndarray, train: Path, test: Path) -> None:
    from mpiboost.data.format import write_dataset

    for idx, path in ((train_idx, train), (test_idx, test)):
        if path.exists():
            continue
        idx = np.sort(idx)
        write_dataset(path, data["X"][idx], data["y"][idx], data["domain"][idx].astype(np.int32),
                      feature_names=data["feature_names"], domain_names=data["domain_names"])


def adult_folds(data: dict, k: int) -> list[np.ndarray]:
    """Row indices of the k folds: each domain's rows shuffled and cut into k parts, fold i = union of parts i."""
    rng = np.random.default_rng(0)
    parts = [[] for _ in range(k)]
    for dom in range(len(data["domain_names"])):
        rows = np.flatnonzero(data["domain"] == dom)
        for i, chunk in enumerate(np.array_split(rng.permutation(rows), k)):
            parts[i].append(chunk)
    return [np.concatenate(p) for p in parts]


def sentiment_split(data: dict, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    train, test = [], []
    for dom in range(len(data["domain_names"])):
        rows = rng.permutation(np.flatnonzero(data["domain"] == dom))
        cut = int(round(0.8 * len(rows)))
        train.append(rows[:cut])
        test.append(rows[cut:])
    return np.concatenate(train), np.concatenate(test)


# ------------------------------------------------------------------- runs
def peer_and_score(args, train: Path, test: Path, method: str, seed: int) -> dict:
    """LightGBM on the pooled domains (stumps for T rounds, or its defaults), scored per domain."""
    import lightgbm as lgb

    a, b = _read(train), _read(test)
    kw = dict(n_estimators=args.rounds, num_leaves=2, max_depth=1, learning_rate=0.5) if method == "lightgbm-stumps" else {}
    clf = lgb.LGBMClassifier(n_jobs=args.threads, random_state=seed, verbose=-1, **kw)
    Xa, Xb, fit_kw = a["X"], b["X"], {}
    if method == "lightgbm-domain":  # the domain as one more, categorical, column
        Xa, Xb = (np.column_stack([d["X"], d["domain"]]) for d in (a, b))
        fit_kw = {"categorical_feature": [Xa.shape[1] - 1]}
    t0 = time.perf_counter()
    clf.fit(Xa, a["y"], **fit_kw)
    wall = time.perf_counter() - t0
    wrong = clf.predict(Xb) != b["y"]
    per = {n: float(wrong[b["domain"] == k].mean()) for k, n in enumerate(b["domain_names"])}
    return {"error": float(wrong.mean()), "uniform": float(np.mean(list(per.values()))),
            "agnostic": float(max(per.values())), "per_domain": per, "rounds_done": args.rounds,
            "stop_reason": "rounds", "seconds": wall, "round_seconds": None, "bytes_per_round": None,
            "process_wall_s": wall}


def train_and_score(args, name: str, train: Path, test: Path, method: str, seed: int) -> dict:
    if method in PEERS:
        return peer_and_score(args, train, test, method, seed)
    rundir = args.workdir / "runs"
    rundir.mkdir(parents=True, exist_ok=True)
    model, metrics = rundir / f"{name}.model.h5", rundir / f"{name}.metrics.jsonl"
    if metrics.exists():
        metrics.unlink()
    algo = {"multiboost": "multiboost", "fedmultiboost": "fedmultiboost"}.get(method, "adaboost")
    cmd = [C.tool("mpiexec"), "-n", args.nproc, *C.MPIBOOST, "train", "--algo", algo, "--weak-learner", "histogram",
           "--data", train, "--rounds", args.rounds, "--model", model, "--seed", seed, "--threads", args.threads,
           "--metrics", metrics, "--quiet"]
    if method.startswith("adaboost-") and method != "adaboost-all":
        cmd += ["--train-domain", int(method.split("-")[1]) - 1]
    if algo != "adaboost" and args.extra:
        cmd += args.extra.split()
    t0 = time.perf_counter()
    C.run(cmd)
    wall = time.perf_counter() - t0
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    summary = next(r["summary"] for r in rows if "summary" in r)
    rounds = [r for r in rows if "round" in r]
    ev = json.loads(C.run([*C.MPIBOOST, "evaluate", "--model", model, "--data", test]).stdout.strip().splitlines()[-1])
    sec = summary["seconds"]
    out = {
        "error": ev["error"],
        "uniform": ev["uniform_error"],
        "agnostic": ev["agnostic_error"],
        "per_domain": {k: v["error"] for k, v in ev["per_domain"].items()},
        "rounds_done": summary["rounds"],
        "stop_reason": summary["stop_reason"],
        "seconds": sec["total"],
        "round_seconds": sec.get("rounds"),
        # the center's traffic: what it sends (hypotheses) and receives (the reduced histograms)
        "bytes_per_round": (sum(r.get("bytes_sent", 0) + r.get("bytes_received", 0) for r in rounds) / len(rounds))
        if rounds else None,
        "process_wall_s": wall,
    }
    if rounds and "q_train_accuracy" in rounds[0]:
        out["q_train_accuracy"] = rounds[0]["q_train_accuracy"]
    model.unlink(missing_ok=True)
    return out


def run_all(args, rec: C.Records) -> None:
    for dataset in args.datasets:
        if dataset == "multisource":
            for s in args.splits:
                train, test = multisource_split(args, s)
                run_split(args, rec, dataset, f"split{s}", s, train, test)
            continue
        data = adult(args) if dataset == "adult" else sentiment(args)
        counts = np.bincount(data["domain"], minlength=len(data["domain_names"]))
        C.log(f"{dataset}: {len(data['y']):,} rows x {data['X'].shape[1]} features, domains "
              + ", ".join(f"{n} {c:,}" for n, c in zip(data["domain_names"], counts)))
        if dataset == "adult":
            folds = adult_folds(data, args.folds)
            splits = []
            for i in args.use_folds:
                test_idx = folds[i]
                train_idx = np.concatenate([folds[j] for j in range(args.folds) if j != i])
                splits.append((f"fold{i}", i, train_idx, test_idx))
        else:
            splits = [(f"split{s}", s, *sentiment_split(data, s)) for s in args.splits]
        for tag, seed, train_idx, test_idx in splits:
            d = args.workdir / "data" / dataset
            train, test = d / f"{tag}-train.h5", d / f"{tag}-test.h5"
            write_split(data, train_idx, test_idx, train, test)
            run_split(args, rec, dataset, tag, seed, train, test)


def run_split(args, rec: C.Records, dataset: str, tag: str, seed: int, train: Path, test: Path) -> None:
    for method in args.methods:
        if dataset == "multisource" and method.startswith("adaboost-") and method != "adaboost-all":
            continue  # AdaBoost-k names the real sets' domains
        key = dict(dataset=dataset, split=tag, method=method, rounds=args.rounds,
                   config=args.tag if method in ("multiboost", "fedmultiboost") else "")
        if rec.find(**key):
            continue
        res = train_and_score(args, f"mb_{dataset}_{tag}_{method}", train, test, method, seed)
        rec.add({**key, **res})
        C.log(f"{dataset} {tag} {method}: uniform {res['uniform']:.4f} agnostic {res['agnostic']:.4f} "
              f"({res['seconds']:.2f} s)")


# ----------------------------------------------------------------- tables
def f3(values) -> str:
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return "–"
    if v.size == 1:
        return f"{v[0]:.3f}"
    return f"{v.mean():.3f} ± {v.std(ddof=1):.3f}"


def _paired_p(diff: np.ndarray) -> float:
    """One-sided paired t-test p-value for 'the mean difference is below 0'."""
    from scipy import stats

    if np.allclose(diff, diff[0]):
        return 0.0 if diff[0] < 0 else 1.0
    return float(stats.ttest_1samp(diff, 0.0, alternative="less").pvalue)


def render(args, rec: C.Records) -> str:
    out = []
    for dataset in args.datasets:
        rows_all = [r for r in rec.select(dataset=dataset, rounds=args.rounds)]
        wanted = {f"fold{i}" for i in args.use_folds} if dataset == "adult" else {f"split{s}" for s in args.splits}
        rows_all = [r for r in rows_all if r["split"] in wanted]
        if not rows_all:
            continue
        names = list(rows_all[0]["per_domain"])
        order = {"adult": ["university", "hs", "other"], "sentiment": list(SENTIMENT_DOMAINS)}.get(dataset, [])
        names = [n for n in order if n in names] + [n for n in names if n not in order]
        head = ["method"] + [f"Err-{i + 1} ({n})" for i, n in enumerate(names)] + ["Uniform", "Agnostic", "s / run"]
        table = []
        for m, cells in PAPER.get(dataset, {}).items():
            table.append([f"paper: {PAPER_LABEL[m]}", *cells, ""])
        configs = sorted({r["config"] for r in rows_all})
        for method in args.methods:
            for config in configs if method in ("multiboost", "fedmultiboost") else [""]:
                rs = [r for r in rows_all if r["method"] == method and r["config"] == config]
                if not rs:
                    continue
                label = ("" if method in PEERS else "mpiboost ") + LABEL[method] + (f" ({config})" if config else "")
                table.append([label, *[f3([r["per_domain"][n] for r in rs]) for n in names],
                              f3([r["uniform"] for r in rs]), f3([r["agnostic"] for r in rs]),
                              f"{np.mean([r['seconds'] for r in rs]):.1f}"])
        paired = []
        base = {r["split"]: r for r in rows_all if r["method"] == "adaboost-all"}
        for method in ("multiboost", "fedmultiboost", *PEERS):
            for config in configs if method in ("multiboost", "fedmultiboost") else [""]:
                rs = [r for r in rows_all if r["method"] == method and r["config"] == config and r["split"] in base]
                if len(rs) < 2:
                    continue
                diff = np.array([r["agnostic"] - base[r["split"]]["agnostic"] for r in rs])
                udiff = np.array([r["uniform"] - base[r["split"]]["uniform"] for r in rs])
                p_value = _paired_p(diff)
                ratio = [r["bytes_per_round"] / base[r["split"]]["bytes_per_round"] for r in rs
                         if r.get("bytes_per_round") and base[r["split"]].get("bytes_per_round")]
                paired.append(f"{LABEL[method]}{f' ({config})' if config else ''} − AdaBoost-all: agnostic "
                              f"{diff.mean():+.4f} ± {diff.std(ddof=1):.4f}, lower or equal in "
                              f"{int((diff <= 0).sum())} of {len(diff)} runs (one-sided paired t-test p = "
                              f"{p_value:.3g}); uniform {udiff.mean():+.4f} ± {udiff.std(ddof=1):.4f}"
                              + (f"; bytes per round {np.median(ratio):.2f}× AdaBoost-all's (median)" if ratio else ""))
        n_runs = len({r["split"] for r in rows_all})
        what = (f"{len(args.use_folds)} of {args.folds} cross-validation folds" if dataset == "adult"
                else f"{n_runs} random 80/20 splits (seeds {', '.join(map(str, args.splits))})")
        if dataset == "multisource":
            what = f"{n_runs} generated training/test pairs (seeds {', '.join(map(str, args.splits))})"
        out += [f"**{dataset.capitalize()}**: test error, mean ± std over {what}; T = {args.rounds} stumps, "
                f"`mpiexec -n {args.nproc}` × {args.threads} thread"
                + (f", MultiBoost/FedMultiBoost options `{args.extra}`" if args.extra else "") + ".", "",
                C.markdown_table(head, table), ""]
        if paired:
            out += ["Paired by run:", "", *[f"* {line}." for line in paired], ""]
        q = [r["q_train_accuracy"] for r in rows_all if r.get("q_train_accuracy") is not None]
        if q:
            out += [f"Domain classifier Q: training accuracy {np.mean(q):.3f} (mean over runs).", ""]
        early = [r for r in rows_all if r["stop_reason"] != "rounds"]
        if early:
            out += ["Early stops: " + "; ".join(f"{r['method']} {r['split']} after {r['rounds_done']} rounds "
                                              f"({r['stop_reason']})" for r in early), ""]
    return "\n".join(out)


def main(argv=None) -> int:
    args = parse_args(argv)
    return C.table_main(args, "multiboost.jsonl", lambda rec: run_all(args, rec), lambda rec: render(args, rec))


if __name__ == "__main__":
    sys.exit(main())
