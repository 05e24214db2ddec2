"""Shared helpers for the SmoothBoost-paper experiments (Tables 1 and 2).

Everything runs mpiboost through its command line (``mpiexec -n K python -m
mpiboost train ...`` and ``python -m mpiboost evaluate ...``), exactly as a
user would, and runs the peer libraries in-process on the same HDF5 files.
Generated data, models and raw results go to a work directory outside the
repository (default ``/tmp/mpiboost-exp``, or ``$MPIBOOST_EXP_DIR``).
"""
from __future__ import annotations

import datetime
import hashlib
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

REPO = Path(__file__).resolve().parents[2]
# The public data sets (see docs/data.md for the files): $MPIBOOST_DATASETS, else datasets/ in the repository.
DATASETS = Path(os.environ.get("MPIBOOST_DATASETS") or REPO / "datasets")
DEFAULT_WORKDIR = Path(os.environ.get("MPIBOOST_EXP_DIR", "/tmp/mpiboost-exp"))
MPIBOOST = [sys.executable, "-m", "mpiboost"]


# --------------------------------------------------------------------- tools
def tool(name: str) -> str:
    """An executable next to this Python (the venv's bin/) or else on PATH."""
    here = Path(sys.executable).parent / name
    if here.exists():
        return str(here)
    found = shutil.which(name)
    if not found:
        sys.exit(f"error: {name} not found next to {sys.executable} or on PATH")
    return found


def run(cmd: Sequence[str], *, quiet: bool = True) -> subprocess.CompletedProcess:
    """Run a command; on failure print its output and stop."""
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(f"command failed ({proc.returncode}): {' '.join(map(str, cmd))}\n")
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise RuntimeError(f"command failed: {' '.join(map(str, cmd))}")
    if not quiet:
        sys.stdout.write(proc.stdout)
    return proc


def log(msg: str) -> None:
    print(f"[{datetime.datetime.now():%H:%M:%S}] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------- provenance
def provenance() -> str:
    """One Markdown paragraph: code version, libraries, machine."""
    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()
        except OSError:
            return "?"

    import mpiboost

    pkg_root = Path(mpiboost.__file__).resolve().parents[1]
    if pkg_root == REPO and (REPO / ".git").exists():
        head = git("rev-parse", "--short", "HEAD") or "?"
        dirty = git("status", "--porcelain", "--untracked-files=no")
        if dirty:
            diff = subprocess.run(["git", "diff", "HEAD"], cwd=REPO, capture_output=True).stdout
            head += f" + uncommitted changes (diff sha256 {hashlib.sha256(diff).hexdigest()[:12]})"
    else:
        # A clean export of a commit (git archive + build_ext --inplace), put first on PYTHONPATH.
        marker = pkg_root / "SNAPSHOT_COMMIT"
        commit = marker.read_text().strip() if marker.exists() else "unknown commit"
        head = f"{commit} (clean export at {pkg_root}, via PYTHONPATH)"
    libs = []
    for mod in ("mpiboost", "mpi4py", "numpy", "lightgbm", "xgboost", "sklearn"):
        try:
            m = __import__(mod)
            libs.append(f"{mod} {getattr(m, '__version__', '?')}")
        except ImportError:
            libs.append(f"{mod} (missing)")
    return (
        f"Code: mpiboost commit {head}. Libraries: {', '.join(libs)}. Python {platform.python_version()}, "
        f"{os.cpu_count()} CPU cores ({platform.machine()}), run {datetime.datetime.now():%Y-%m-%d %H:%M}."
    )


# ------------------------------------------------------------------ data
def synth_longservedio(workdir: Path, n: int, noise: float, seed: int) -> Path:
    """Generate (once) a Long-Servedio file; the generator is deterministic in (n, noise, seed)."""
    out = workdir / "longservedio" / f"ls_n{n}_noise{noise:g}_seed{seed}.h5"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        run([*MPIBOOST, "synth", "longservedio", "--n", n, "--noise", noise, "--seed", seed, "--out", out])
    return out


def amazon_reviews(data_dir: Path, out: Path, domains: Sequence[str], vocab_size: int) -> Path:
    """The Amazon multi-domain reviews of ``domains``, converted once to ``out``.

    Bag-of-words counts over the ``vocab_size`` tokens that occur in the most
    reviews, one domain per directory (``mpiboost convert --format amazon
    --domain-per-file``); labels from the positive/negative files.
    """
    if not out.exists():
        src = data_dir / "amazon-multidomain-sentiment"
        files = [src / dom / f"{s}.review" for dom in domains for s in ("positive", "negative")]
        run([*MPIBOOST, "convert", *files, "--format", "amazon", "--vocab-size", vocab_size, "--domain-per-file",
             "--out", out])
    return out


def read_xy(path: Path) -> tuple[np.ndarray, np.ndarray]:
    import h5py

    with h5py.File(path, "r") as f:
        return f["X"][...], f["y"][...]


# --------------------------------------------------------------- mpiboost
def train_mpiboost(
    workdir: Path,
    name: str,
    data: Path,
    *,
    algo: str,
    weak_learner: str,
    rounds: int,
    seed: int,
    nproc: int = 2,
    threads: int = 1,
    epsilon: Optional[float] = None,
    beta: Optional[float] = None,
    gamma: Optional[float] = None,
    vote: Optional[str] = None,
    valid: Optional[Path] = None,
    extra: Sequence[str] = (),
    noise_check: Optional[str] = None,
) -> dict:
    """Train with ``mpiexec -n nproc python -m mpiboost train``; return the summary,
    the per-round metrics, the model path and the command (as a string).

    ``extra``: further options of the algorithm, as command-line words; ``noise_check``: SmoothBoost's
    ``--noise-check`` (``"off"`` in the scripts that reproduce the paper's SmoothBoost; ignored for others)."""
    rundir = workdir / "runs"
    rundir.mkdir(parents=True, exist_ok=True)
    model, metrics = rundir / f"{name}.model.h5", rundir / f"{name}.metrics.jsonl"
    if metrics.exists():
        metrics.unlink()
    cmd = [tool("mpiexec"), "-n", nproc, *MPIBOOST, "train", "--algo", algo, "--weak-learner", weak_learner,
           "--data", data, "--rounds", rounds, "--model", model, "--seed", seed, "--threads", threads,
           "--metrics", metrics, "--quiet"]
    for flag, value in (("--epsilon", epsilon), ("--beta", beta), ("--gamma", gamma), ("--vote", vote)):
        if value is not None:
            cmd += [flag, value]
    if valid is not None:
        cmd += ["--valid", valid]
    if noise_check is not None and algo == "smoothboost":
        cmd += ["--noise-check", noise_check]
    cmd += list(extra)
    t0 = time.perf_counter()
    proc = run(cmd)
    wall = time.perf_counter() - t0
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    summary = next(r["summary"] for r in rows if "summary" in r)
    return {
        "summary": summary,
        "rounds": [r for r in rows if "round" in r],
        "model": model,
        "line": proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "",
        "process_wall_s": wall,
    }


def evaluate_mpiboost(model: Path, data: Path) -> dict:
    """``python -m mpiboost evaluate`` (one rank): error, accuracy, auc."""
    proc = run([*MPIBOOST, "evaluate", "--model", model, "--data", data])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def vote_curves(model_path: Path, round_metrics: list, data: Path) -> dict:
    """Error of the majority and of the alpha-weighted vote after every round, on ``data``.

    The SmoothBoost weights do not depend on the vote (the vote only enters
    the final combination), so one run gives both votes: the majority vote is
    sum_t h_t, the weighted vote sum_t alpha_t h_t with alpha_t = 1/2
    ln((1-e_t)/e_t) from the exact weighted error e_t logged for round t
    (clipped like mpiboost does). Returns arrays indexed by round - 1.
    """
    from mpiboost.model import Model

    model = Model.load(model_path)
    X, y = read_xy(data)
    cols = np.empty((X.shape[1], X.shape[0]), dtype=np.uint8)
    model.bins.transform(X, out=cols.T)
    maj = np.zeros(X.shape[0])
    wtd = np.zeros(X.shape[0])
    err_maj, err_wtd = [], []
    for (stump, _), r in zip(model.stumps(), round_metrics):
        h = stump.predict(cols).astype(np.float64)
        e = min(max(r["weak_error"], 1e-12), 1 - 1e-12)
        maj += h
        wtd += 0.5 * math.log((1 - e) / e) * h
        err_maj.append(float(np.mean(np.where(maj >= 0, 1, -1) != y)))
        err_wtd.append(float(np.mean(np.where(wtd >= 0, 1, -1) != y)))
    return {"majority": np.array(err_maj), "weighted": np.array(err_wtd)}


# ------------------------------------------------------------------ peers
def _to01(y: np.ndarray) -> np.ndarray:
    return (y > 0).astype(np.int32)


def peer_lightgbm(Xtr, ytr, Xte, yte, seed, threads=2, rounds=100):
    import lightgbm as lgb

    m = lgb.LGBMClassifier(n_estimators=rounds, num_leaves=2, max_bin=255, n_jobs=threads,
                           random_state=seed, verbose=-1)
    return _fit_score(m, Xtr, _to01(ytr), Xte, _to01(yte))


def peer_xgboost(Xtr, ytr, Xte, yte, seed, threads=2, rounds=100):
    import xgboost as xgb

    m = xgb.XGBClassifier(n_estimators=rounds, max_depth=1, tree_method="hist", n_jobs=threads,
                          random_state=seed, verbosity=0)
    return _fit_score(m, Xtr, _to01(ytr), Xte, _to01(yte))


def peer_sk_adaboost(Xtr, ytr, Xte, yte, seed, threads=2, rounds=100):
    from sklearn.ensemble import AdaBoostClassifier
    from sklearn.tree import DecisionTreeClassifier

    m = AdaBoostClassifier(estimator=DecisionTreeClassifier(max_depth=1), n_estimators=rounds, random_state=seed)
    return _fit_score(m, Xtr, ytr, Xte, yte)


def peer_sk_lr(Xtr, ytr, Xte, yte, seed, threads=2, rounds=100):
    from sklearn.linear_model import LogisticRegression

    m = LogisticRegression(solver="liblinear", C=1.0)
    return _fit_score(m, Xtr, ytr, Xte, yte)


def _fit_score(model, Xtr, ytr, Xte, yte) -> dict:
    t0 = time.perf_counter()
    model.fit(Xtr, ytr)
    fit_s = time.perf_counter() - t0
    err = float(np.mean(model.predict(Xte) != yte))
    return {"error": err, "seconds": fit_s}


PEERS: dict[str, tuple[str, str, Callable]] = {
    # key: (column title, module that must import, function)
    "lightgbm": ("LightGBM (num_leaves=2)", "lightgbm", peer_lightgbm),
    "xgboost": ("XGBoost (hist, depth 1)", "xgboost", peer_xgboost),
    "sk_adaboost": ("sklearn AdaBoost (stumps)", "sklearn", peer_sk_adaboost),
    "sk_lr": ("sklearn LR (liblinear, C=1)", "sklearn", peer_sk_lr),
}


def importable(wanted: Sequence[tuple[str, str, str]]) -> tuple[list[str], list[str]]:
    """Of ``(key, title, module)`` triples, the keys whose module imports, and notes about the others."""
    ok, notes = [], []
    for key, title, module in wanted:
        try:
            __import__(module)
            ok.append(key)
        except ImportError:
            notes.append(f"{title}: skipped ({module} is not installed).")
    return ok, notes


def available_peers(wanted: Sequence[str]) -> tuple[list[str], list[str]]:
    """(usable peer keys, notes about the skipped ones)."""
    for key in wanted:
        if key not in PEERS:
            sys.exit(f"error: unknown peer {key!r}; choose from {', '.join(PEERS)}")
    return importable([(key, PEERS[key][0], PEERS[key][1]) for key in wanted])


# ----------------------------------------------------------------- tables
def pct(values: Sequence[float], digits: int = 2) -> str:
    """'mean ± std' of error fractions, in percent (sample std, ddof=1)."""
    v = np.asarray([x for x in values if x is not None and not (isinstance(x, float) and math.isnan(x))], float) * 100
    if v.size == 0:
        return "–"
    if v.size == 1:
        return f"{v[0]:.{digits}f}"
    return f"{v.mean():.{digits}f} ± {v.std(ddof=1):.{digits}f}"


def secs(values: Sequence[float]) -> str:
    v = [x for x in values if x is not None]
    return f"{np.mean(v):.2f}" if v else "–"


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def command_line() -> str:
    """How this script was started (for the tables' captions)."""
    rel = os.path.relpath(sys.argv[0], REPO) if os.path.isabs(sys.argv[0]) else sys.argv[0]
    return " ".join(["python", rel, *sys.argv[1:]])


def publish(body: str, out: Optional[Path] = None) -> None:
    """Print a table with its command and provenance (and write it to ``out``)."""
    text = "\n".join([f"Command: `{command_line()}`", "", provenance(), "", body])
    print(text)
    if out:
        out.write_text(text + "\n")


def table_main(args, records: str, run: Callable[["Records"], None], render: Callable[["Records"], str]) -> int:
    """The ``main`` of a table script: its raw records (``args.workdir/results/records``: kept with
    ``--resume``, read alone with ``--render-only``), the runs, and the table published with its command and
    provenance (and written to ``--out``)."""
    rec = Records(args.workdir / "results" / records, fresh=not (args.resume or args.render_only))
    if not args.render_only:
        run(rec)
    publish(render(rec), args.out)
    return 0


class Records:
    """Raw results of a table, one JSON object per line, for re-rendering (--render-only)."""

    def __init__(self, path: Path, fresh: bool):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        if fresh and path.exists():
            path.unlink()
        self.rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []

    def find(self, **key) -> Optional[dict]:
        for r in self.rows:
            if all(r.get(k) == v for k, v in key.items()):
                return r
        return None

    def add(self, row: dict) -> None:
        self.rows.append(row)
        with open(self.path, "a") as f:
            f.write(json.dumps(row, sort_keys=True) + "\n")

    def select(self, **key) -> list[dict]:
        return [r for r in self.rows if all(r.get(k) == v for k, v in key.items())]
