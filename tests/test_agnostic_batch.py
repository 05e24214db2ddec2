"""agnostic-batch: the per-row OGD step and the stump choice against plain references, the model on any partition, and that it learns.

The tests named ``*collective*`` are collective: under plain pytest they run
on one rank, and :func:`test_collective_tests_under_mpiexec` re-runs them
under ``mpiexec -n 4``, where each trains on communicators of 1, 2, 3 and 4
ranks (and with rows cut unevenly, empty ranks included).
"""
import math
import os

import numpy as np
import pytest

from collective import IN_MPI_RUN, comms_of_every_size, shared_tmpdir, splits, world
from mpiboost.boost import AgnosticBatch
from mpiboost.boost.agnostic_batch import draw_classes, ogd_step, row_uniforms
from mpiboost.comm import Comm, _mpi
from mpiboost.data import format as fmt
from mpiboost.data.binning import BinMapper
from mpiboost.data.load import Layout, Shard
from mpiboost.data.synth import multiclass
from mpiboost.protocol import Protocol
from runs import train
from mpiboost.weak.stump import Stump

MISSING = 255


def _project(u):
    """The Euclidean projection onto the simplex, the textbook way (sort, threshold)."""
    s = np.sort(u)[::-1]
    cum = np.cumsum(s) - 1.0
    rho = max(j for j in range(len(u)) if s[j] - cum[j] / (j + 1) > 0)
    return np.maximum(u - cum[rho] / (rho + 1), 0.0)


def _predict(X, stump):
    if stump.feature < 0:
        return np.full(X.shape[0], stump.left)
    col = X[:, stump.feature]
    go_left = np.where(col == MISSING, stump.missing_left, col <= stump.bin)
    return np.where(go_left, stump.left, stump.right)


def _data(seed, n=240, d=4, K=3, noise=0.2):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 5, (n, d)).astype(np.uint8)
    X[rng.random((n, d)) < 0.05] = MISSING
    y = ((X[:, 0] > 2).astype(int) + (X[:, 1] < 2)) % K
    flip = rng.random(n) < noise
    y[flip] = rng.integers(0, K, flip.sum())
    return X, y.astype(np.int32)


def _shard(X, y, K, lo=0, hi=None):
    hi = len(y) if hi is None else hi
    n_bins = np.full(X.shape[1], 5)
    bins = BinMapper([np.arange(k - 1, dtype=float) + 0.5 for k in n_bins])
    return Shard(
        cols=np.ascontiguousarray(X[lo:hi].T, dtype=np.uint8), y=y[lo:hi], domain=np.zeros(hi - lo, np.int32),
        start=lo, n_global=len(y), n_domains=1, files=[], layout=Layout(len(y), 1), bins=bins, classes=list(range(K)),
    )


def _run(params, shard, rounds, comm=None, seed=3):
    algo = AgnosticBatch({"rounds": rounds, "weak_learner": "stump", **params})  # the class stumps' mechanics
    algo.setup(shard, Protocol(comm or Comm(_mpi().COMM_SELF)), seed)
    out = []
    for t in range(1, rounds + 1):
        h = algo.select(t)
        algo.apply(h)
        out.append((h, algo.P.copy()))
    return algo, out


# ------------------------------------------------------------------ the step
def test_ogd_step_is_the_projected_gradient_step():
    rng = np.random.default_rng(0)
    K, gamma, eta = 4, 0.3, 0.3 / math.sqrt(10)
    P = rng.dirichlet(np.ones(K), size=6)
    pred, y = rng.integers(0, K, 6).astype(np.int32), rng.integers(0, K, 6).astype(np.int32)
    pred[0] = y[0]  # a right stump: the two moves meet on one class
    expect = np.empty_like(P)
    for i in range(6):
        g = (2 * np.eye(K)[pred[i]] - 1) / gamma - (2 * np.eye(K)[y[i]] - 1)  # the full linear loss
        expect[i] = _project(P[i] - eta * g)
    got = P.copy()
    ogd_step(got, pred, y, gamma, eta)
    np.testing.assert_allclose(got, expect, atol=1e-12)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, atol=1e-12)
    assert (got >= 0).all()


@pytest.mark.parametrize("relabel", ["fractional", "random"])
def test_rounds_against_a_numpy_reference(relabel):
    """P after every round is the reference chain from the round's stump; fractional stumps are the best ones."""
    K, rounds, gamma = 3, 6, 0.5
    X, y = _data(1, K=K)
    algo, hist = _run({"relabel": relabel, "gamma": gamma}, _shard(X, y, K), rounds)
    eta = gamma / math.sqrt(rounds)
    P = np.full((len(y), K), 1.0 / K)
    cands = [(j, b, ml, a, c) for j in range(X.shape[1]) for b in range(5) for ml in (False, True)
             for a in range(K) for c in range(K)]
    for h, got in hist:
        if relabel == "fractional":
            # the stump classifies the most relabelled mass sum_i P_i[h(x_i)] correctly (exhaustive search)
            mass = lambda pred: math.fsum(P[np.arange(len(y)), pred])  # noqa: E731
            best = max([mass(np.full(len(y), a)) for a in range(K)]
                       + [mass(_predict(X, Stump(j, b, a, ml, right=c))) for j, b, ml, a, c in cands])
            assert mass(_predict(X, h.stump)) >= best - 1e-9
            assert abs(h.metrics["weak_error"] - (1 - mass(_predict(X, h.stump)) / len(y))) < 1e-9
        pred = _predict(X, h.stump)
        for i in range(len(y)):
            u = P[i].copy()
            u[pred[i]] -= 2 * eta / gamma
            u[y[i]] += 2 * eta
            P[i] = _project(u)
        np.testing.assert_allclose(got, P, atol=1e-12)
        assert h.coef == 1.0
    # the vote: argmax of proj(v / gamma) with v the vote shares, ties to the highest class (the model's rule)
    v = np.zeros((len(y), K))
    for h, _ in hist:
        v[np.arange(len(y)), _predict(X, h.stump)] += 1.0 / rounds
    D = np.array([_project(r / gamma) for r in v])
    top = D.max(axis=1, keepdims=True)
    expect = K - 1 - np.argmax((D >= top - 1e-12)[:, ::-1], axis=1)
    assert np.array_equal(algo.model.predict_index(_shard(X, y, K).cols), expect)


def test_random_relabel_draws_from_p_by_row():
    rows = np.arange(100_000, dtype=np.int64) + 12345
    u = row_uniforms(7, 3, rows)
    assert np.array_equal(u[500:900], row_uniforms(7, 3, rows[500:900]))  # a row's number, wherever it lives
    assert not np.array_equal(u, row_uniforms(7, 4, rows)) and not np.array_equal(u, row_uniforms(8, 3, rows))
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.01
    P = np.tile([0.2, 0.0, 0.5, 0.3], (len(rows), 1))
    freq = np.bincount(draw_classes(P, u), minlength=4) / len(rows)
    np.testing.assert_allclose(freq, [0.2, 0.0, 0.5, 0.3], atol=0.01)


# ------------------------------------------------------------- collective
@pytest.mark.parametrize("relabel", ["fractional", "random"])
def test_collective_same_stumps_on_every_partition(relabel):
    """Rows cut evenly, unevenly or onto one rank, on communicators of every size: the same stumps and P."""
    K, rounds = 4, 5
    X, y = _data(2, n=203, K=K)
    reference, ref_hist = _run({"relabel": relabel, "n_samples": 64 if relabel == "random" else None},
                               _shard(X, y, K), rounds)
    ref = [h.stump for h, _ in ref_hist]
    for comm in comms_of_every_size()[1:]:
        for cut in splits(len(y), comm.size):
            lo, hi = cut[comm.rank]
            algo, hist = _run({"relabel": relabel, "n_samples": 64 if relabel == "random" else None},
                              _shard(X, y, K, lo, hi), rounds, comm)
            assert [h.stump for h, _ in hist] == ref, (comm.size, cut)
            assert np.array_equal(algo.P, reference.P[lo:hi])


@pytest.fixture(scope="module")
def synth_files():
    comm = world()
    tmp = shared_tmpdir(comm)
    paths = {part: os.path.join(tmp, f"{part}.h5") for part in ("train", "test")}
    if comm.is_center:
        for part, seed in (("train", 1), ("test", 2)):
            g = multiclass.generate(n=1500 if part == "train" else 1000, seed=seed, task_seed=4, classes=4, d=6)
            fmt.write_dataset(paths[part], g.X, g.y, g.domain, y_dtype=np.int32)
    comm.barrier()
    return paths


@pytest.mark.parametrize("relabel", ["fractional", "random"])
def test_collective_the_model_file_is_the_same_on_1_to_4_ranks(synth_files, relabel):
    comms = comms_of_every_size()
    fit = lambda comm, **kw: train(comm, [synth_files["train"]], algorithm="agnostic-batch", rounds=12,  # noqa: E731
                                   params={"relabel": relabel, "weak_learner": "stump"}, seed=5, threads=1,
                                   **kw).model.to_json()
    reference = fit(comms[0])
    for comm in comms[1:]:
        assert fit(comm) == reference, f"{comm.size} ranks"
        if comm.size > 1:
            assert fit(comm, dedicated_coordinator=True) == reference, f"{comm.size} ranks, dedicated coordinator"


@pytest.mark.mpi
@pytest.mark.skipif(IN_MPI_RUN, reason="already inside an mpiexec run")
def test_collective_tests_under_mpiexec():
    from mpi_harness import run_collective

    # this test matches "collective" too, and skips itself inside the run
    run_collective(4, ["tests/test_agnostic_batch.py"], extra=["-k", "collective"], timeout=180, allowed_skips=1)


# ------------------------------------------------------------------ learns
@pytest.mark.parametrize("relabel", ["fractional", "random"])
def test_it_learns(synth_files, relabel):
    import h5py

    comm = Comm(_mpi().COMM_SELF)
    model = train(comm, [synth_files["train"]], algorithm="agnostic-batch", rounds=60,
                  params={"relabel": relabel}, seed=1, threads=1).model
    with h5py.File(synth_files["test"], "r") as f:
        X, y = f["X"][()], f["y"][()]
    acc = float(np.mean(model.predict_raw(X.astype(np.float64)) == y))
    assert acc > 0.6, acc  # chance: 0.25
    assert model.vote == "majority" and model.output == "argmax" and set(model.coef.tolist()) == {1.0}


def test_many_classes_do_not_collapse(tmp_path):
    """Ten pixel classes (scikit-learn's digits): a class stump is right on about 2/K of the relabelled mass, so
    gamma = 0.3 is out of its reach and every P_i locks onto its true class (the same few stumps repeat). The
    default gamma follows the stump's own accuracy on the true labels and learns as SAMME does."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    tr, te = order[:1300], order[1300:]
    fmt.write_dataset(tmp_path / "tr.h5", X[tr].astype(np.float64), y[tr].astype(np.int32))
    comm = Comm(_mpi().COMM_SELF)

    def accuracy(algorithm, **params):
        model = train(comm, [str(tmp_path / "tr.h5")], algorithm=algorithm, rounds=100, params=params, seed=1,
                      threads=1).model
        return float(np.mean(model.predict_raw(X[te].astype(np.float64)) == y[te])), model

    fixed, _ = accuracy("agnostic-batch", gamma=0.3, weak_learner="stump")
    default, model = accuracy("agnostic-batch", weak_learner="stump")
    samme, _ = accuracy("samme", weak_learner="stump")  # class stumps against class stumps
    assert fixed < 0.65 < default, (fixed, default)
    assert default > samme - 0.05, (default, samme)
