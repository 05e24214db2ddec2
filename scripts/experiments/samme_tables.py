#!/usr/bin/env python
"""SAMME on seven UCI multiclass sets, beside scikit-learn's SAMME and LightGBM.

Data sets (from $MPIBOOST_DATASETS, else datasets/ in the repository; see
docs/data.md): balance-scale, car, satimage (sat.trn + sat.tst pooled),
segmentation (.data + .test pooled), mice-protein (the .xls, read with xlrd
and written as a CSV in the work directory first), yeast, abalone. Every file
is converted with ``python -m mpiboost convert --format csv`` as a user would
(car: ``--categorical auto``; abalone: sex one-hot, label = rings; yeast and
mice-protein: id columns dropped with ``--drop-columns``); the class counts
are printed and checked against the published UCI counts.

Protocol: for every seed s (default 1..5) the pooled rows are shuffled with
numpy's ``default_rng(s)`` and the first n // 5 become the test set (plain
random, not stratified); train/test HDF5 files are written once per split
and every method sees the same files. Methods, for each T in --rounds:

* mpiboost SAMME, ``histogram`` weak learner: ``mpiexec -n 2 python -m mpiboost
  train --algo samme --weak-learner histogram --threads 1 --seed s``, scored
  with ``python -m mpiboost evaluate``; the same with ``--split gini`` (stumps
  chosen by weighted Gini impurity, as scikit-learn's trees choose them); and
  ``--weak-learner sample`` for T in --sample-rounds (default 100 only);
* scikit-learn: ``AdaBoostClassifier(estimator=DecisionTreeClassifier(max_depth=1),
  n_estimators=T, learning_rate=1.0, random_state=s)`` (SAMME is the only
  algorithm of the installed version); AdaBoostClassifier refuses NaN, so the
  missing cells (mice-protein only) get the training column's median, for
  sklearn only;
* LightGBM: ``LGBMClassifier(objective="multiclass", num_leaves=2,
  n_estimators=T, num_threads=2, verbose=-1)`` (stumps) and the same without
  ``num_leaves`` (LightGBM's default trees).

Test accuracy is over all test rows. ``mpiboost evaluate`` refuses a test row
whose label does not occur in the training file (abalone: rare ring counts),
so for such splits it scores the test rows of the training classes and the
rows of unseen classes count as wrong (no method can predict them). Wall
time: mpiboost = the whole ``mpiexec ... train`` command; peers = ``fit``.

``--diagnose DATASET ...`` measures where mpiboost and sklearn differ
(distinct values per feature against 255 bins; training error per round;
sklearn with mpiboost's bins; a weighted-error stump inside sklearn's
AdaBoost; sklearn's random_state; mpiboost on median-imputed features) and
splits the gap into binning, split criterion and the rest. Raw results go to
WORKDIR/results/samme_tables.jsonl (``--resume`` keeps them and skips the
finished runs); the tables are printed as Markdown.

    python scripts/experiments/samme_tables.py                 # full protocol (~30 min on 2 cores)
    python scripts/experiments/samme_tables.py --quick         # smoke test: 1 split, T = 10 and 30
    python scripts/experiments/samme_tables.py --diagnose satimage yeast     # after the full run (~15 min for all 7)
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402

CAR_NAMES = "buying,maint,doors,persons,lug_boot,safety,class"
ABALONE_NAMES = "sex,length,diameter,height,whole_weight,shucked_weight,viscera_weight,shell_weight,rings"
MICE_DROP = "MouseID,Genotype,Treatment,Behavior"

# name: (title, [files], convert options, expected class counts (the published UCI counts) or None, expected K)
DATASETS = {
    "balance-scale": ("balance-scale", ["balance-scale/balance-scale.data"],
                      ["--no-header", "--label-column", "0"],
                      {"L": 288, "R": 288, "B": 49}, 3),
    "car": ("car", ["car/car.data"],
            ["--no-header", "--names", CAR_NAMES, "--label-column", "class", "--categorical", "auto"],
            {"unacc": 1210, "acc": 384, "good": 69, "vgood": 65}, 4),
    "satimage": ("satimage", ["satimage/sat.trn", "satimage/sat.tst"],
                 ["--skip-lines", "1", "--no-header", "--delimiter", "whitespace", "--label-column", "-1"],
                 {1: 1072 + 461, 2: 479 + 224, 3: 961 + 397, 4: 415 + 211, 5: 470 + 237, 7: 1038 + 470}, 6),
    "segmentation": ("segmentation", ["segmentation/segmentation.data", "segmentation/segmentation.test"],
                     ["--skip-lines", "5", "--no-header", "--label-column", "0"],
                     {c: 330 for c in ("BRICKFACE", "SKY", "FOLIAGE", "CEMENT", "WINDOW", "PATH", "GRASS")}, 7),
    "mice-protein": ("mice-protein", ["mice-protein/Data_Cortex_Nuclear.xls"],
                     ["--label-column", "class", "--drop-columns", MICE_DROP],
                     {"c-CS-m": 150, "c-SC-m": 150, "c-CS-s": 135, "c-SC-s": 135, "t-CS-m": 135, "t-SC-m": 135,
                      "t-SC-s": 135, "t-CS-s": 105}, 8),
    "yeast": ("yeast", ["yeast/yeast.data"],
              ["--no-header", "--delimiter", "whitespace", "--label-column", "-1", "--drop-columns", "0"],
              {"CYT": 463, "NUC": 429, "MIT": 244, "ME3": 163, "ME2": 51, "ME1": 44, "EXC": 35, "VAC": 30,
               "POX": 20, "ERL": 5}, 10),
    "abalone": ("abalone", ["abalone/abalone.data"],
                ["--no-header", "--names", ABALONE_NAMES, "--label-column", "rings", "--categorical", "sex"],
                None, 28),
}
N_EXPECTED = {"balance-scale": 625, "car": 1728, "satimage": 6435, "segmentation": 2310, "mice-protein": 1080,
              "yeast": 1484, "abalone": 4177}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    p.add_argument("--data-dir", type=Path, default=C.DATASETS)
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5], help="split (and training) seeds")
    p.add_argument("--rounds", type=int, nargs="+", default=[100, 500], help="T for every method")
    p.add_argument("--sample-rounds", type=int, nargs="*", default=[100], help="T for SAMME --weak-learner sample")
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--peer-threads", type=int, default=2)
    p.add_argument("--peers", nargs="*", default=["sklearn", "lgb_stumps", "lgb_default"],
                   choices=["sklearn", "lgb_stumps", "lgb_default"])
    p.add_argument("--workdir", type=Path, default=C.DEFAULT_WORKDIR)
    p.add_argument("--quick", action="store_true", help="smoke test: seed 1, T = 10 and 30")
    p.add_argument("--resume", action="store_true", help="keep earlier raw results and skip those runs")
    p.add_argument("--render-only", action="store_true")
    p.add_argument("--diagnose", metavar="DATASET", nargs="+", choices=list(DATASETS),
                   help="measure where mpiboost and sklearn differ on these data sets (largest T; details for the "
                        "first seed, the gap split into binning / criterion / rest over all --seeds)")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    args.convert_dir = args.workdir / "samme" / "convert"  # shared with --quick runs
    if args.quick:
        args.seeds, args.rounds, args.sample_rounds = [1], [10, 30], [10]
        args.workdir = args.workdir / "quick"
    return args


# ------------------------------------------------------------------ data
def mice_csv(src: Path, out: Path) -> Path:
    """The mice-protein .xls as a CSV (header row kept; empty cells stay empty = missing)."""
    if out.exists():
        return out
    try:
        import xlrd
    except ImportError:
        sys.exit("error: reading the mice-protein .xls needs xlrd (pip install xlrd, or the 'bench' extra)")
    sheet = xlrd.open_workbook(str(src)).sheet_by_index(0)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        for r in range(sheet.nrows):
            row = []
            for c in range(sheet.ncols):
                cell = sheet.cell(r, c)
                if cell.ctype == xlrd.XL_CELL_EMPTY or cell.ctype == xlrd.XL_CELL_BLANK:
                    row.append("")
                elif cell.ctype == xlrd.XL_CELL_NUMBER:
                    row.append(repr(float(cell.value)))
                else:
                    row.append(str(cell.value).strip())
            w.writerow(row)
    tmp.rename(out)
    return out


def file_labels(path: Path) -> tuple[np.ndarray, np.ndarray, list]:
    """X, the label value of every row, and the feature names of a converted file."""
    import h5py

    with h5py.File(path, "r") as f:
        X, y = f["X"][...], f["y"][...]
        classes = json.loads(f.attrs["classes"]) if "classes" in f.attrs else None
        names = [n.decode() if isinstance(n, bytes) else str(n) for n in f.attrs.get("feature_names", [])]
    values = np.array([classes[int(i)] for i in y], dtype=object) if classes is not None else y.astype(object)
    return X, values, names


def full_dataset(args, name: str) -> dict:
    """All rows of a data set: its files converted with ``mpiboost convert`` and pooled."""
    from mpiboost.data.labels import canonical, stores_as_values

    title, files, opts, expected, k_expected = DATASETS[name]
    Xs, vals, names = [], [], None
    for i, rel in enumerate(files):
        src = args.data_dir / rel
        if not src.exists():
            sys.exit(f"error: {src} not found (see --data-dir, $MPIBOOST_DATASETS)")
        if src.suffix == ".xls":
            src = mice_csv(src, args.convert_dir / name / "Data_Cortex_Nuclear.csv")
        out = args.convert_dir / name / f"part{i}.h5"
        if not out.exists():
            out.parent.mkdir(parents=True, exist_ok=True)
            proc = C.run([*C.MPIBOOST, "convert", src, "--format", "csv", *opts, "--out", out])
            C.log(proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else f"converted {src}")
        X, v, names = file_labels(out)
        Xs.append(X)
        vals.append(v)
    X, values = np.concatenate(Xs), np.concatenate(vals)
    classes = canonical(values.tolist())
    counts = Counter(values.tolist())
    print(f"{name}: {len(values):,} rows x {X.shape[1]} features, {len(classes)} classes: "
          + " / ".join(f"{c}: {counts[c]:,}" for c in classes), file=sys.stderr)
    problems = []
    if len(values) != N_EXPECTED[name]:
        problems.append(f"{len(values)} rows, expected {N_EXPECTED[name]}")
    if len(classes) != k_expected:
        problems.append(f"{len(classes)} classes, expected {k_expected}")
    if expected is not None and dict(counts) != expected:
        problems.append(f"class counts {dict(counts)} differ from the published UCI counts {expected}")
    if name == "abalone":
        sex = {n.split("=", 1)[1]: int(X[:, j].sum()) for j, n in enumerate(names) if n.startswith("sex=")}
        if sex != {"M": 1528, "F": 1307, "I": 1342}:
            problems.append(f"sex counts {sex} differ from the published UCI counts")
    if name == "mice-protein" and int(np.isnan(X).sum()) != 1396:
        problems.append(f"{int(np.isnan(X).sum())} missing cells, expected 1,396")
    if problems:
        sys.exit(f"error: {name}: " + "; ".join(problems))
    as_values = stores_as_values(classes)
    pos = {c: k for k, c in enumerate(classes)}
    y = values.astype(np.int64) if as_values else np.array([pos[v] for v in values], dtype=np.int64)
    return {"X": X, "y": y, "classes": None if as_values else classes, "labels": classes, "names": names,
            "n": len(y), "d": X.shape[1], "K": len(classes), "missing": int(np.isnan(X).sum())}


def split(args, name: str, data: dict, seed: int) -> dict:
    """Train/test files of one split (written once), and a test file of the training classes only if needed."""
    from mpiboost.data.format import write_dataset

    X, y, n = data["X"], data["y"], data["n"]
    base = args.workdir / "samme" / "splits" / name / f"seed{seed}"
    paths = {"train": Path(f"{base}_train.h5"), "test": Path(f"{base}_test.h5"), "test_seen": Path(f"{base}_test_seen.h5")}
    perm = np.random.default_rng(seed).permutation(n)
    te, tr = np.sort(perm[: n // 5]), np.sort(perm[n // 5:])
    seen = np.isin(y[te], np.unique(y[tr]))
    kw = dict(classes=data["classes"], feature_names=data["names"] or None)
    attrs = {"source": name, "split_seed": seed}
    if not (paths["train"].exists() and paths["test"].exists()):
        paths["train"].parent.mkdir(parents=True, exist_ok=True)
        write_dataset(paths["train"], X[tr], y[tr], attrs={**attrs, "part": "train (4/5)"}, **kw)
        write_dataset(paths["test"], X[te], y[te], attrs={**attrs, "part": "test (1/5)"}, **kw)
    if not seen.all() and not paths["test_seen"].exists():
        tes = te[seen]
        write_dataset(paths["test_seen"], X[tes], y[tes], attrs={**attrs, "part": "test rows of training classes"}, **kw)
    return {**paths, "tr": tr, "te": te, "n_test": len(te), "n_seen": int(seen.sum()),
            "unseen": sorted({data["labels"][int(v)] if data["classes"] else int(v) for v in y[te][~seen]}, key=str),
            "K_train": len(np.unique(y[tr]))}


# --------------------------------------------------------------- methods
def run_mpiboost(args, name: str, sp: dict, seed: int, mode: str, T: int, split_rule: str = "error") -> dict:
    tag = "" if split_rule == "error" else f"_{split_rule}"
    res = C.train_mpiboost(args.workdir / "samme", f"samme_{name}_{mode}{tag}_T{T}_s{seed}", sp["train"],
                           algo="samme", weak_learner=mode, rounds=T, seed=seed, nproc=args.nproc,
                           threads=args.threads, extra=["--split", split_rule] if split_rule != "error" else [])
    test = sp["test"] if sp["n_seen"] == sp["n_test"] else sp["test_seen"]
    ev = C.evaluate_mpiboost(res["model"], test)
    correct = int(round(ev["accuracy"] * ev["n"]))
    s = res["summary"]
    return {"accuracy": correct / sp["n_test"], "accuracy_seen": ev["accuracy"], "macro_f1_seen": ev.get("macro_f1"),
            "seconds": res["process_wall_s"], "seconds_summary": s["seconds"]["total"], "rounds_done": s["rounds"],
            "stop_reason": s["stop_reason"], "train_error": s["train_error"], "classes_train": s.get("classes"),
            "train_error_curve": [r.get("train_error") for r in res["rounds"]],
            "weak_error_curve": [r.get("weak_error") for r in res["rounds"]]}


def median_impute(Xtr: np.ndarray, Xte: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Training column medians in the NaN cells of both (sklearn's AdaBoost refuses NaN)."""
    miss = int(np.isnan(Xtr).sum() + np.isnan(Xte).sum())
    if not miss:
        return Xtr, Xte, 0
    med = np.nanmedian(Xtr, axis=0)
    med = np.where(np.isnan(med), 0.0, med)
    Xtr, Xte = Xtr.copy(), Xte.copy()
    for X in (Xtr, Xte):
        r, c = np.nonzero(np.isnan(X))
        X[r, c] = med[c]
    return Xtr, Xte, miss


def sk_samme(T: int, seed: int, estimator=None):
    from sklearn.ensemble import AdaBoostClassifier
    from sklearn.tree import DecisionTreeClassifier

    return AdaBoostClassifier(estimator=estimator if estimator is not None else DecisionTreeClassifier(max_depth=1),
                              n_estimators=T, learning_rate=1.0, random_state=seed)


def run_sklearn(Xtr, ytr, Xte, yte, seed: int, T: int) -> dict:
    Xtr, Xte, imputed = median_impute(Xtr, Xte)
    m = sk_samme(T, seed)
    t0 = time.perf_counter()
    m.fit(Xtr, ytr)
    fit_s = time.perf_counter() - t0
    train_curve = [float(np.mean(p != ytr)) for p in m.staged_predict(Xtr)]
    return {"accuracy": float(np.mean(m.predict(Xte) == yte)), "seconds": fit_s, "rounds_done": len(m.estimators_),
            "train_error": train_curve[-1] if train_curve else None, "imputed_cells": imputed,
            "train_error_curve": train_curve, "weak_error_curve": [float(e) for e in m.estimator_errors_]}


def run_lightgbm(Xtr, ytr, Xte, yte, seed: int, T: int, threads: int, stumps: bool) -> dict:
    import lightgbm as lgb

    extra = {"num_leaves": 2} if stumps else {}
    m = lgb.LGBMClassifier(objective="multiclass", n_estimators=T, num_threads=threads, verbose=-1, **extra)
    t0 = time.perf_counter()
    m.fit(Xtr, ytr)
    fit_s = time.perf_counter() - t0
    return {"accuracy": float(np.mean(m.predict(Xte) == yte)), "seconds": fit_s,
            "train_error": float(np.mean(m.predict(Xtr) != ytr))}


def method_keys(args, peers) -> list[tuple[str, str]]:
    """(method key, column title) in table order."""
    out = [(f"hist_T{T}", f"SAMME hist T={T}") for T in args.rounds]
    out += [(f"gini_T{T}", f"SAMME hist gini T={T}") for T in args.rounds]
    out += [(f"sample_T{T}", f"SAMME sample T={T}") for T in args.sample_rounds]
    if "sklearn" in peers:
        out += [(f"sklearn_T{T}", f"sklearn SAMME T={T}") for T in args.rounds]
    if "lgb_stumps" in peers:
        out += [(f"lgb_stumps_T{T}", f"LightGBM stumps T={T}") for T in args.rounds]
    if "lgb_default" in peers:
        out += [(f"lgb_default_T{T}", f"LightGBM default T={T}") for T in args.rounds]
    return out


def available(peers: list[str]) -> tuple[list[str], list[str]]:
    return C.importable([(p, p, "sklearn" if p == "sklearn" else "lightgbm") for p in peers])


def run_all(args, rec: C.Records, peers: list[str]) -> dict:
    meta = {}
    for name in args.datasets:
        data = full_dataset(args, name)
        meta[name] = {k: data[k] for k in ("n", "d", "K", "missing")}
        for seed in args.seeds:
            sp = split(args, name, data, seed)
            if sp["unseen"]:
                C.log(f"{name} seed {seed}: {sp['n_test'] - sp['n_seen']} test rows of classes absent from the "
                      f"training split ({', '.join(map(str, sp['unseen']))}); {sp['K_train']} training classes")
            base = dict(dataset=name, seed=seed, n=data["n"], d=data["d"], K=data["K"], K_train=sp["K_train"],
                        n_test=sp["n_test"], n_test_unseen=sp["n_test"] - sp["n_seen"])
            jobs = [(f"hist_T{T}", "mpiboost", ("histogram", T)) for T in args.rounds]
            jobs += [(f"gini_T{T}", "mpiboost", ("histogram", T, "gini")) for T in args.rounds]
            jobs += [(f"sample_T{T}", "mpiboost", ("sample", T)) for T in args.sample_rounds]
            for T in args.rounds:
                if "sklearn" in peers:
                    jobs.append((f"sklearn_T{T}", "sklearn", (T,)))
                if "lgb_stumps" in peers:
                    jobs.append((f"lgb_stumps_T{T}", "lgb", (T, True)))
                if "lgb_default" in peers:
                    jobs.append((f"lgb_default_T{T}", "lgb", (T, False)))
            arrays = None
            for method, kind, params in jobs:
                if rec.find(dataset=name, seed=seed, method=method):
                    continue
                if kind == "mpiboost":
                    out = run_mpiboost(args, name, sp, seed, *params)
                else:
                    if arrays is None:
                        X, y = data["X"], data["y"]
                        arrays = (X[sp["tr"]], y[sp["tr"]], X[sp["te"]], y[sp["te"]])
                    if kind == "sklearn":
                        out = run_sklearn(*arrays, seed, *params)
                    else:
                        out = run_lightgbm(*arrays, seed, params[0], args.peer_threads, params[1])
                rec.add({**base, "method": method, **out})
                extra = f", {out['rounds_done']} rounds" if "rounds_done" in out else ""
                C.log(f"{name} seed {seed} {method}: accuracy {100 * out['accuracy']:.2f}% ({out['seconds']:.2f} s{extra})")
    return meta


# ------------------------------------------------------------------ tables
def acc(values) -> str:
    v = np.asarray(values, float) * 100
    if v.size == 0:
        return "–"
    if v.size == 1:
        return f"{v[0]:.2f}"
    return f"{v.mean():.2f} ± {v.std(ddof=1):.2f}"


def render(args, rec: C.Records, peers: list[str], notes: list[str]) -> str:
    methods = method_keys(args, peers)
    rows_of = {d: [r for r in rec.select(dataset=d) if r["seed"] in args.seeds] for d in args.datasets}
    head = ["data set", "n", "d", "K"]
    arows, trows = [], []
    for d in args.datasets:
        rs = rows_of[d]
        if not rs:
            continue
        info = [d, f"{rs[0]['n']:,}", str(rs[0]["d"]), str(rs[0]["K"])]
        acells, tcells = [], []
        for key, _ in methods:
            m = [r for r in rs if r["method"] == key]
            acells.append(acc([r["accuracy"] for r in m]))
            tcells.append(f"{np.median([r['seconds'] for r in m]):.2f}" if m else "–")
        arows.append(info + acells)
        trows.append(info + tcells)
    titles = [t for _, t in methods]
    out = [
        f"Test accuracy (%), mean ± std (ddof=1) over random 80/20 splits, seeds {args.seeds} "
        f"(mpiboost on {args.nproc} ranks × {args.threads} thread; LightGBM {args.peer_threads} threads):",
        "",
        C.markdown_table(head + titles, arows),
        "",
        "Wall time (s, median over splits): mpiboost = the whole `mpiexec -n 2 python -m mpiboost train` "
        "command (MPI start-up, load, binning, rounds, model file); peers = `fit` on in-memory arrays:",
        "",
        C.markdown_table(head + titles, trows),
        "",
    ]
    # Paired differences SAMME (each split rule) - sklearn.
    if "sklearn" in peers:
        prow = []
        for d in args.datasets:
            rs = rows_of[d]
            if not rs:
                continue
            cells = []
            for ours in ("hist", "gini"):
                for T in args.rounds:
                    a = {r["seed"]: r["accuracy"] for r in rs if r["method"] == f"{ours}_T{T}"}
                    b = {r["seed"]: r["accuracy"] for r in rs if r["method"] == f"sklearn_T{T}"}
                    common = sorted(set(a) & set(b))
                    if not common:
                        cells.append("–")
                        continue
                    diff = np.array([a[s] - b[s] for s in common]) * 100
                    w, t, l = int((diff > 1e-9).sum()), int((np.abs(diff) <= 1e-9).sum()), int((diff < -1e-9).sum())
                    ok = "yes" if abs(diff.mean()) <= 0.5 else ("ahead" if diff.mean() > 0 else "**no**")
                    cells.append(f"{diff.mean():+.2f} ({w}/{t}/{l}; {ok})")
            prow.append([d] + cells)
        out += [
            "Paired difference mpiboost SAMME − sklearn SAMME, accuracy points, mean over splits, for the two "
            "split rules (`--split error`, the default, and `--split gini`) "
            "(splits mpiboost wins / ties / loses; within 0.5 points: yes, ahead = more than 0.5 points better, "
            "**no** = more than 0.5 points worse):",
            "",
            C.markdown_table(["data set"] + [f"{r} T={T}" for r in ("error", "gini") for T in args.rounds], prow),
            "",
        ]
    # Stops and unseen classes.
    stops, unseen = [], []
    for d in args.datasets:
        for key, title in methods:
            m = [r for r in rows_of[d] if r["method"] == key and "rounds_done" in r]
            T = int(key.rsplit("T", 1)[1])
            short = [r for r in m if r["rounds_done"] < T]
            if short:
                stops.append(f"{title} on {d}: {len(short)} of {len(m)} runs ended early "
                             f"(after {', '.join(str(r['rounds_done']) for r in short)} rounds).")
        us = {r["seed"]: r["n_test_unseen"] for r in rows_of[d] if r.get("n_test_unseen")}
        if us:
            unseen.append(f"{d}: " + ", ".join(f"seed {s} {k} row(s)" for s, k in sorted(us.items())))
    if stops:
        out += ["Early ends: " + " ".join(stops), ""]
    if unseen:
        out += ["Test rows whose class is absent from the training split (counted as errors for every method): "
                + "; ".join(unseen) + ".", ""]
    imputed = {d: r["imputed_cells"] for d in args.datasets for r in rows_of[d] if r.get("imputed_cells")}
    if imputed:
        out += ["sklearn only: missing cells replaced by the training column median ("
                + ", ".join(f"{d}: {k} cells" for d, k in imputed.items()) + " in one split).", ""]
    if notes:
        out += ["Skipped: " + " ".join(notes), ""]
    return "\n".join(out)


# ---------------------------------------------------------------- diagnose
class WeightedErrorStump:
    """A class stump that minimizes the weighted error (as mpiboost's), for sklearn's AdaBoost.

    Thresholds at midpoints of distinct values; each side predicts its
    heaviest class. Ties (within 1e-12 of the total weight: float sums) go to
    the first feature, the lowest threshold and the highest class, as in
    mpiboost (which compares exact fixed-point sums). No missing values
    (impute first, or pass mpiboost's bins, where the missing bin 255 is one
    more value that can only go right).
    """

    _estimator_type = "classifier"

    def __init__(self, max_depth=1):
        self.max_depth = max_depth

    def get_params(self, deep=True):
        return {"max_depth": self.max_depth}

    def set_params(self, **p):
        for k, v in p.items():
            setattr(self, k, v)
        return self

    def __sklearn_tags__(self):
        from sklearn.utils import ClassifierTags, InputTags, Tags, TargetTags

        return Tags(estimator_type="classifier", target_tags=TargetTags(required=True),
                    classifier_tags=ClassifierTags(), input_tags=InputTags())

    def fit(self, X, y, sample_weight=None):
        X = np.asarray(X, dtype=np.float64)
        self.classes_, yi = np.unique(y, return_inverse=True)
        K = self.n_classes_ = len(self.classes_)
        w = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        onehot = np.zeros((len(y), K))
        onehot[np.arange(len(y)), yi] = w
        total = onehot.sum(axis=0)
        tol = 1e-12 * total.sum()

        def top(v):  # the heaviest class; ties: the highest class
            return int(np.nonzero(v >= v.max() - tol)[0][-1])

        best = (total.max(), -1, np.inf, top(total), top(total))  # the constant stump comes first
        for j in range(X.shape[1]):
            order = np.argsort(X[:, j], kind="stable")
            xs = X[order, j]
            cut = np.nonzero(xs[1:] > xs[:-1])[0]  # split after sorted position c
            if cut.size == 0:
                continue
            left = np.cumsum(onehot[order], axis=0)[cut]
            right = total - left
            score = left.max(axis=1) + right.max(axis=1)
            i = int(np.nonzero(score >= score.max() - tol)[0][0])  # the lowest of (nearly) tied thresholds
            if score[i] > best[0] + tol:
                c = cut[i]
                best = (score[i], j, (xs[c] + xs[c + 1]) / 2, top(left[i]), top(right[i]))
        _, self.feature_, self.threshold_, self.left_, self.right_ = best
        return self

    def predict(self, X):
        X = np.asarray(X, dtype=np.float64)
        if self.feature_ < 0:
            return np.full(len(X), self.classes_[self.left_])
        return np.where(X[:, self.feature_] <= self.threshold_, self.classes_[self.left_], self.classes_[self.right_])


VARIANTS = [
    # key, title, estimator (None: sklearn's Gini stump), features ("raw": median-imputed values, "bins": mpiboost's)
    ("gini_raw", "sklearn SAMME, Gini stumps, raw values (the table's column)", None, "raw"),
    ("gini_bins", "sklearn SAMME, Gini stumps, mpiboost's bins", None, "bins"),
    ("werr_raw", "sklearn SAMME, weighted-error stumps, raw values", "werr", "raw"),
    ("werr_bins", "sklearn SAMME, weighted-error stumps, mpiboost's bins", "werr", "bins"),
]


def diagnose_split(args, name: str, data: dict, seed: int, T: int, detail: bool) -> tuple[dict, list]:
    """Every variant on one split: {key: (test accuracies at the stages, last test labels, train curve, rounds)}."""
    from mpiboost.model import Model

    sp = split(args, name, data, seed)
    X, y = data["X"], data["y"]
    Xtr, ytr, Xte, yte = X[sp["tr"]], y[sp["tr"]], X[sp["te"]], y[sp["te"]]
    labels = np.array(data["labels"], dtype=object)
    vte = labels[yte] if data["classes"] else yte
    stages = sorted({k for k in (100, T) if k <= T})
    lines = []

    def mp_model(train: Path, tag: str):
        stem = args.workdir / "samme" / "runs" / f"samme_{name}_histogram_T{T}_s{seed}{tag}"
        model_p, metrics_p = Path(f"{stem}.model.h5"), Path(f"{stem}.metrics.jsonl")
        if not (model_p.exists() and metrics_p.exists()):  # else: the main run's model (training is deterministic)
            C.train_mpiboost(args.workdir / "samme", stem.name, train, algo="samme", weak_learner="histogram",
                             rounds=T, seed=seed, nproc=args.nproc, threads=args.threads)
        rows = [json.loads(x) for x in metrics_p.read_text().splitlines() if x.strip()]
        return Model.load(model_p), [r for r in rows if "round" in r]

    def mp_entry(model, rounds, Z):
        preds = [model.truncated(k).predict_raw(Z) for k in stages]
        return ([float(np.mean(p == vte)) for p in preds], preds[-1], [r["train_error"] for r in rounds], len(rounds))

    model, rounds = mp_model(sp["train"], "")
    Itr, Ite, _ = median_impute(Xtr, Xte)
    res = {"mpiboost": mp_entry(model, rounds, Xte)}
    if data["missing"]:
        # mpiboost on median-imputed features: how much is its missing-value bin?
        from mpiboost.data.format import write_dataset

        imp = args.workdir / "samme" / "splits" / name / f"seed{seed}_train_imputed.h5"
        if not imp.exists():
            write_dataset(imp, Itr, ytr, classes=data["classes"])
        res["mpiboost_imputed"] = mp_entry(*mp_model(imp, "_imputed"), Ite)

    def binned(Z):
        out = np.empty(Z.shape, dtype=np.uint8)
        model.bins.transform(Z, out=out)  # missing values: bin 255
        return out.astype(np.float64)

    feats = {"raw": (Itr, Ite), "bins": (binned(Xtr), binned(Xte))}
    for key, _, est, kind in VARIANTS:
        A, B = feats[kind]
        m = sk_samme(T, seed, WeightedErrorStump() if est == "werr" else None).fit(A, ytr)
        train_curve = [float(np.mean(p != ytr)) for p in m.staged_predict(A)]
        staged = list(m.staged_predict(B))
        last = labels[staged[-1]] if data["classes"] else staged[-1]
        res[key] = ([float(np.mean(staged[k - 1] == yte)) for k in stages], last, train_curve, len(m.estimators_))
    if not detail:
        return res, lines
    distinct = np.array([len(np.unique(Xtr[~np.isnan(Xtr[:, j]), j])) for j in range(Xtr.shape[1])])
    nb = model.bins.n_bins
    lossy = int((distinct > nb).sum())
    lines.append(f"**{name}**, split seed {seed} ({len(ytr):,} training rows, {len(yte):,} test rows, K = {sp['K_train']}). "
                 f"Distinct training values per feature: min {distinct.min()}, median {int(np.median(distinct))}, "
                 f"max {distinct.max()}; {lossy} of {len(distinct)} features have more distinct values than bins "
                 f"(at most {int(nb.max())}); binning is lossless for the other {len(distinct) - lossy}.")
    checkpoints = [k for k in (1, 2, 5, 10, 20, 50, 100, 200, 500) if k <= T]
    head = (["variant", "rounds"] + [f"test acc % @{k}" for k in stages] + [f"same test labels as mpiboost @{T}, %"]
            + [f"train err % @{k}" for k in checkpoints])
    titles = {"mpiboost": "mpiboost SAMME, histogram (weighted-error stumps on its bins)",
              "mpiboost_imputed": "mpiboost SAMME, histogram, median-imputed features",
              **{k: t for k, t, _, _ in VARIANTS}}
    rows = []
    for key, (accs, pred, curve, done) in res.items():
        cells = [f"{100 * curve[k - 1]:.2f}" if k <= len(curve) else "–" for k in checkpoints]
        rows.append([titles[key], str(done)] + [f"{100 * a:.2f}" for a in accs]
                    + [f"{100 * np.mean(pred == res['mpiboost'][1]):.1f}"] + cells)
    lines += ["", C.markdown_table(head, rows), ""]
    # Tie-breaking in sklearn: random_state permutes the features its tree scans.
    accs = []
    for rs in range(10):
        staged = list(sk_samme(T, rs).fit(Itr, ytr).staged_predict(Ite))
        accs.append([float(np.mean(staged[k - 1] == yte)) for k in stages])
    accs = np.array(accs) * 100
    lines.append("sklearn (Gini, raw values) with random_state 0..9 (which permutes the features its tree scans, "
                 "so it breaks ties between equally good splits): test accuracy "
                 + "; ".join(f"@{k} {accs[:, i].min():.2f}–{accs[:, i].max():.2f}" for i, k in enumerate(stages))
                 + f". Stop rule 1 − 1/K = {1 - 1 / sp['K_train']:.4f}; mpiboost's largest weighted error "
                 f"{max(r['weak_error'] for r in rounds):.4f} (round 1: {rounds[0]['weak_error']:.4f}).")
    lines.append("")
    return res, lines


def diagnose(args, names: list[str]) -> str:
    """Where mpiboost's SAMME and sklearn's differ: a per-round look at the first split, and the gap split into parts."""
    T = max(args.rounds)
    stages = sorted({k for k in (100, T) if k <= T})
    out = [f"Diagnosis at T = {T} (accuracies also at T = 100), splits {args.seeds}; details for split {args.seeds[0]}.", ""]
    summary = []
    for name in names:
        data = full_dataset(args, name)
        per_seed = []
        for i, seed in enumerate(args.seeds):
            res, lines = diagnose_split(args, name, data, seed, T, detail=i == 0)
            out += lines
            per_seed.append(res)
            C.log(f"diagnose {name} seed {seed}: " + ", ".join(f"{k} {100 * v[0][-1]:.2f}" for k, v in res.items()))
        for si, k in enumerate(stages):
            acc_of = {key: np.array([r[key][0][si] for r in per_seed]) * 100 for key in per_seed[0]}
            gap = acc_of["mpiboost"] - acc_of["gini_raw"]
            binning = acc_of["gini_bins"] - acc_of["gini_raw"]
            criterion = acc_of["werr_bins"] - acc_of["gini_bins"]
            rest = acc_of["mpiboost"] - acc_of["werr_bins"]
            same = np.mean([np.mean(r["mpiboost"][1] == r["werr_bins"][1]) for r in per_seed]) * 100
            ident = sum(bool(np.all(r["mpiboost"][1] == r["werr_bins"][1])) for r in per_seed)
            imp = (f"{(acc_of['mpiboost'] - acc_of['mpiboost_imputed']).mean():+.2f}"
                   if "mpiboost_imputed" in acc_of else "–")
            summary.append([name, str(k), f"{gap.mean():+.2f}", f"{binning.mean():+.2f}", f"{criterion.mean():+.2f}",
                            f"{rest.mean():+.2f}", imp, f"{acc_of['werr_raw'].mean() - acc_of['gini_raw'].mean():+.2f}",
                            f"{same:.1f} ({ident}/{len(per_seed)})" if k == T else "–"])
    out += [
        "The gap mpiboost − sklearn split into parts (accuracy points, mean over the splits): binning = sklearn's Gini "
        "stumps on mpiboost's bins − on the raw values; criterion = sklearn's AdaBoost with weighted-error stumps − "
        "with Gini stumps, both on mpiboost's bins; rest = mpiboost − sklearn's AdaBoost with weighted-error stumps on "
        "mpiboost's bins (tie-breaking, missing values, float vs. exact sums); the parts add up to the gap. Also: "
        "mpiboost − mpiboost on median-imputed features (missing-value handling), and the criterion alone on raw "
        "values (weighted-error − Gini stumps, both in sklearn):",
        "",
        C.markdown_table(["data set", "T", "gap", "binning", "criterion", "rest", "missing bin vs imputed",
                          "criterion on raw values", f"same test labels, mpiboost vs weighted-error on bins @{T}, % "
                          "(splits identical)"], summary),
        "",
    ]
    return "\n".join(out)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.diagnose:
        C.publish(diagnose(args, args.diagnose), args.out)
        return 0
    peers, notes = available(args.peers)
    return C.table_main(args, "samme_tables.jsonl", lambda rec: run_all(args, rec, peers),
                        lambda rec: render(args, rec, peers, notes))


if __name__ == "__main__":
    sys.exit(main())
