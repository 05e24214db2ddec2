"""The structured generators: multisource, transfer, multitask.

Each is checked for the file contract (shapes, dtypes, seeds, noise, domains)
and for the structure it promises (Propositions 1-2 of the MultiBoost paper,
controlled source relatedness, the multi-task paper's task relations).
"""
from __future__ import annotations

import itertools
import subprocess
import sys

import h5py
import numpy as np
import pytest

from mpiboost.data.synth import multisource, multitask, transfer

# Small settings for every generator: (module, keyword options, rows it yields for n).
CASES = {
    "multisource": (multisource, {"domains": 3, "d": 8}, lambda n: n),
    "transfer": (transfer, {"sources": 3, "target_n": 50, "d": 10}, lambda n: 50 + 3 * n),
    "multitask": (multitask, {"dataset": 2}, lambda n: 6 * n),
}
# Extra datasets that describe the distribution (fixed by task_seed alone).
PARAMS = {
    "multisource": ("mixture", "domain_means", "label_feature", "label_sign", "threshold"),
    "transfer": ("relatedness", "agreement", "helpful", "target_w", "source_w", "source_shift"),
    "multitask": ("c", "orientation", "task_noise"),
}


def best_stump(X: np.ndarray, y: np.ndarray) -> tuple[float, int, int]:
    """Lowest-error stump ``h(x) = s if x_j > t else -s``: (error, j, s)."""
    n = y.size
    best = (2.0, -1, 0)
    for j in range(X.shape[1]):
        order = np.argsort(X[:, j], kind="stable")
        xs, ys = X[order, j], y[order]
        left_pos = np.concatenate([[0], np.cumsum(ys == 1)])
        i = np.arange(n + 1)
        # errors of "left -1, right +1" (s = +1) at every split point
        err_plus = left_pos + (n - i) - (left_pos[-1] - left_pos)
        valid = np.ones(n + 1, bool)
        valid[1:n] = xs[1:] > xs[:-1]  # split only between distinct values
        for s, err in ((1, err_plus), (-1, n - err_plus)):
            k = int(np.argmin(np.where(valid, err, n + 1)))
            if err[k] / n < best[0]:
                best = (err[k] / n, j, s)
    return best


def fit_softmax(X: np.ndarray, labels: np.ndarray, k: int, steps: int = 300) -> np.ndarray:
    """Multinomial logistic regression (gradient descent, standardized inputs); returns predictions."""
    Z = (X - X.mean(0)) / X.std(0)
    Z = np.column_stack([Z, np.ones(len(Z))])
    W = np.zeros((Z.shape[1], k))
    onehot = np.eye(k)[labels]
    for _ in range(steps):
        logits = Z @ W
        P = np.exp(logits - logits.max(1, keepdims=True))
        P /= P.sum(1, keepdims=True)
        W -= 0.5 * Z.T @ (P - onehot) / len(Z)
    return (Z @ W).argmax(1)


# ------------------------------------------------------------ common contract
@pytest.mark.parametrize("name", sorted(CASES))
def test_shapes_dtypes_labels(name):
    mod, opts, rows = CASES[name]
    data = mod.generate(200, noise=0.1, seed=1, task_seed=2, **opts)
    n = rows(200)
    assert data.X.shape[0] == n and data.X.dtype == np.float32
    assert data.y.shape == (n,) and data.y.dtype == np.int8
    assert set(np.unique(data.y)) <= {-1, 1}
    assert data.domain.dtype == np.int32 and data.domain.shape == (n,)
    assert data.domain.min() == 0 and data.domain.max() == len(data.domain_names) - 1
    assert len(data.feature_names) == data.X.shape[1]
    assert data.extra["y_clean"].dtype == np.int8 and data.extra["y_clean"].shape == (n,)
    assert np.isfinite(data.X).all()
    assert data.attrs["generator"] == name


@pytest.mark.parametrize("name", sorted(CASES))
def test_seeds(name):
    mod, opts, _ = CASES[name]
    a = mod.generate(300, noise=0.1, seed=5, task_seed=7, **opts)
    b = mod.generate(300, noise=0.1, seed=5, task_seed=7, **opts)
    for field in ("X", "y", "domain"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    for key in a.extra:
        np.testing.assert_array_equal(a.extra[key], b.extra[key])

    other_sample = mod.generate(300, noise=0.1, seed=6, task_seed=7, **opts)
    assert not np.array_equal(a.X, other_sample.X)
    for key in PARAMS[name]:
        np.testing.assert_array_equal(a.extra[key], other_sample.extra[key])

    other_task = mod.generate(300, noise=0.1, seed=5, task_seed=8, **opts)
    assert any(not np.array_equal(a.extra[k], other_task.extra[k]) for k in PARAMS[name])


@pytest.mark.parametrize("name", sorted(CASES))
def test_noise_rate(name):
    mod, opts, _ = CASES[name]
    clean = mod.generate(4000, noise=0.0, seed=3, task_seed=1, **opts)
    np.testing.assert_array_equal(clean.y, clean.extra["y_clean"])
    noisy = mod.generate(4000, noise=0.2, seed=3, task_seed=1, **opts)
    np.testing.assert_array_equal(noisy.X, clean.X)  # noise changes labels only
    np.testing.assert_array_equal(noisy.extra["y_clean"], clean.y)
    rate = np.mean(noisy.y != noisy.extra["y_clean"])
    assert abs(rate - 0.2) < 0.02, rate


def test_domain_names():
    assert multisource.generate(10, domains=4, d=9).domain_names == ["domain1", "domain2", "domain3", "domain4"]
    assert transfer.generate(10, sources=2).domain_names == ["target", "source1", "source2"]
    assert multitask.generate(10, dataset=1).domain_names == ["task1", "task2", "task3"]


@pytest.mark.parametrize(
    "call",
    [
        lambda: multisource.generate(10, domains=3, d=4),
        lambda: multisource.generate(10, domains=3, mixture=[1, 1]),
        lambda: multisource.generate(10, conflict=1.5),
        lambda: transfer.generate(10, sources=2, relatedness=[0.5]),
        lambda: transfer.generate(10, relatedness=[2.0]),
        lambda: transfer.generate(10, sources=2, related=3),
        lambda: transfer.generate(10, informative=0),
        lambda: multitask.generate(10, dataset=3),
        lambda: multitask.generate(10, dataset=1, task_noise=[0.1, 0.2]),
    ],
)
def test_bad_options_raise_value_error(call):
    with pytest.raises(ValueError):
        call()


# ---------------------------------------------------------------- multisource
@pytest.fixture(scope="module")
def ms():
    return multisource.generate(6000, seed=1, task_seed=4)


def test_multisource_experts_are_perfect_stumps(ms):
    e, dom, y = ms.extra, ms.domain, ms.extra["y_clean"]
    Xl = ms.X[:, e["label_feature"]].astype(np.float64)
    experts = np.where(Xl > e["threshold"], e["label_sign"], -e["label_sign"])
    np.testing.assert_array_equal(experts, e["experts"])
    for k in range(3):
        rows = dom == k
        assert np.all(experts[rows, k] == y[rows])
        err, j, s = best_stump(ms.X[rows], y[rows])
        assert err == 0.0 and j == e["label_feature"][k] and s == e["label_sign"][k]
        for other in set(range(3)) - {k}:  # a foreign expert is anti-correlated
            assert np.mean(experts[dom == other, k] != y[dom == other]) > 0.75


def test_multisource_domains_need_different_stumps(ms):
    assert len(set(ms.extra["label_feature"].tolist())) == 3
    # AdaBoost on the union starts from a poor stump: no feature separates all domains.
    err, _, _ = best_stump(ms.X, ms.extra["y_clean"])
    assert err > 0.3


def test_multisource_convex_combinations_fail(ms):
    H, y = ms.extra["experts"].astype(np.float64), ms.extra["y_clean"]
    grid = np.linspace(0.0, 1.0, 21)
    errors = [
        np.mean(y * (H @ np.array([a, b, 1.0 - a - b])) <= 0)
        for a, b in itertools.product(grid, grid)
        if a + b <= 1.0 + 1e-9
    ]
    assert min(errors) > 0.45


def test_multisource_q_combination_succeeds(ms):
    H, q, y = ms.extra["experts"].astype(np.float64), ms.extra["q"], ms.extra["y_clean"]
    for alpha in ([1 / 3, 1 / 3, 1 / 3], [0.6, 0.3, 0.1]):
        f = (q * H * np.array(alpha)).sum(1)
        assert np.mean(y * f <= 0) < 0.05
    f = (q * H).sum(1)
    assert np.mean(y * f <= 0) < 0.03
    assert np.mean(q.argmax(1) == ms.domain) > 0.97


def test_multisource_proposition1_exact_with_full_conflict():
    data = multisource.generate(3000, seed=2, task_seed=3, conflict=1.0)
    H, y = data.extra["experts"].astype(np.float64), data.extra["y_clean"]
    grid = np.linspace(0.0, 1.0, 21)
    for a, b in itertools.product(grid, grid):
        if a + b <= 1.0 + 1e-9:
            # right on at most one domain of three
            assert np.mean(y * (H @ np.array([a, b, 1.0 - a - b])) <= 0) >= 2 / 3 - 0.01


def test_multisource_domain_is_learnable_by_logistic_regression(ms):
    pred = fit_softmax(ms.X.astype(np.float64), ms.domain, 3)
    assert np.mean(pred == ms.domain) > 0.95


def test_multisource_mixture_counts():
    data = multisource.generate(1000, mixture=[2, 1, 1], seed=0)
    np.testing.assert_array_equal(np.bincount(data.domain), [500, 250, 250])
    np.testing.assert_allclose(data.extra["mixture"], [0.5, 0.25, 0.25])
    only3 = multisource.generate(100, mixture=[0, 0, 1])
    assert np.all(only3.domain == 2) and np.allclose(only3.extra["q"][:, :2], 0.0)


# ------------------------------------------------------------------- transfer
def test_transfer_relatedness_controls_agreement():
    data = transfer.generate(500, seed=1, task_seed=5, sources=6, target_n=20000)
    e = data.extra
    assert e["helpful"].tolist() == [1, 1, 1, 0, 0, 0]
    x = data.X[data.domain == 0].astype(np.float64)  # the same x for every rule
    target = np.sign(x @ e["target_w"])
    agree = np.array([np.mean(np.sign(x @ w) == target) for w in e["source_w"]])
    np.testing.assert_allclose(agree, e["agreement"], atol=0.02)
    assert agree[:3].min() > 0.75 and agree[3:].max() < 0.55
    assert agree[:3].min() - agree[3:].max() > 0.25
    # The same holds on each source's own (shifted) rows.
    for k in range(1, 7):
        rows = data.domain == k
        assert abs(np.mean(e["target_rule"][rows] == e["y_clean"][rows]) - e["agreement"][k - 1]) < 0.07


def test_transfer_explicit_relatedness_and_shift():
    rho = [1.0, 0.0, -1.0]
    data = transfer.generate(3000, relatedness=rho, shift=2.0, target_n=10)
    e = data.extra
    assert data.domain_names == ["target", "source1", "source2", "source3"]
    np.testing.assert_allclose(e["relatedness"], rho)
    np.testing.assert_allclose(data.attrs["relatedness"], rho)
    rows = [data.domain == k for k in range(4)]
    assert np.all(e["target_rule"][rows[1]] == e["y_clean"][rows[1]])
    assert np.all(e["target_rule"][rows[3]] == -e["y_clean"][rows[3]])
    np.testing.assert_allclose(np.linalg.norm(e["source_shift"], axis=1), 2.0)
    for k in (1, 2, 3):
        np.testing.assert_allclose(data.X[rows[k]].mean(0), e["source_shift"][k - 1], atol=0.1)
        assert abs(np.mean(data.y[rows[k]] == 1) - 0.5) < 0.05


def test_transfer_target_does_not_depend_on_sources():
    with_sources = transfer.generate(100, seed=3, task_seed=9, sources=4, target_n=40)
    alone = transfer.generate(40, seed=3, task_seed=9, sources=0)
    assert alone.domain_names == ["target"] and alone.X.shape == (40, 20)
    assert alone.extra["relatedness"].shape == (0,) and alone.extra["source_w"].shape == (0, 20)
    np.testing.assert_array_equal(alone.extra["target_w"], with_sources.extra["target_w"])
    np.testing.assert_array_equal(alone.X, with_sources.X[:40])
    # Source k's parameters depend on k (and its helpful/misleading role) only.
    more = transfer.generate(100, seed=3, task_seed=9, sources=6, related=2, target_n=40)
    np.testing.assert_array_equal(more.extra["source_w"][:4], with_sources.extra["source_w"])
    w = alone.extra["target_w"]
    assert np.count_nonzero(w) == 5 and np.isclose(np.linalg.norm(w), 1.0)


def test_transfer_target_n_defaults_to_n():
    data = transfer.generate(30, sources=2)
    np.testing.assert_array_equal(np.bincount(data.domain), [30, 30, 30])


# ------------------------------------------------------------------ multitask
def test_multitask_labels_follow_the_papers_rules():
    for dataset, J in ((1, 3), (2, 6)):
        data = multitask.generate(400, seed=1, task_seed=2, dataset=dataset)
        assert data.X.shape == (400 * J, 2) and np.bincount(data.domain).tolist() == [400] * J
        assert np.all(np.abs(data.X) <= 1.0)
        c, orient = data.extra["c"], data.extra["orientation"]
        assert c.shape == (J, 2)
        assert orient.tolist() == ([1] * 3 if dataset == 1 else [1, 1, 1, -1, -1, -1])
        for j in range(J):
            rows = data.domain == j
            x = data.X[rows].astype(np.float64)
            F = orient[j] * ((1 + c[j, 1]) * (x[:, 0] - c[j, 0]) - x[:, 1])
            np.testing.assert_array_equal(data.extra["y_clean"][rows], np.where(F > 0, 1, -1))


def test_multitask_parameter_spread():
    # c_j1 ~ N(0, 0.2^2) in Dataset 1 and N(0, 0.1^2) in Dataset 2; c_j2 ~ N(0, 0.1^2).
    for dataset, sd1 in ((1, 0.2), (2, 0.1)):
        c = np.concatenate([multitask.generate(1, task_seed=s, dataset=dataset).extra["c"] for s in range(300)])
        assert abs(c[:, 0].std() / sd1 - 1) < 0.12 and abs(c[:, 1].std() / 0.1 - 1) < 0.12
        assert abs(c.mean(0)).max() < 0.03


def _task_agreement(data, J):
    """Agreement of every pair of task rules on one common set of inputs."""
    x = data.X[data.domain == 0].astype(np.float64)
    c, o = data.extra["c"], data.extra["orientation"]
    labels = [multitask.discriminant(x, c[j], int(o[j])) > 0 for j in range(J)]
    return np.array([[np.mean(labels[i] == labels[j]) for j in range(J)] for i in range(J)])


def test_multitask_task_relations():
    for task_seed in range(3):
        A = _task_agreement(multitask.generate(5000, task_seed=task_seed, dataset=1), 3)
        assert A.min() > 0.7  # Dataset 1: one shared boundary, shifted and tilted
        d2 = multitask.generate(2000, task_seed=task_seed, dataset=2)
        A = _task_agreement(d2, 6)
        assert A[:3, :3].min() > 0.7 and A[3:, 3:].min() > 0.7  # two groups of related tasks
        assert A[:3, 3:].max() < 0.3  # opposite structures
        # pooled, the six tasks look randomly labelled (paper: AdaBoost on all ~ 0.5 error)
        assert best_stump(d2.X, d2.extra["y_clean"])[0] > 0.4


def test_multitask_task_noise():
    data = multitask.generate(5000, seed=4, dataset=1, task_noise=[0.0, 0.1, 0.3])
    flipped = data.y != data.extra["y_clean"]
    rates = [flipped[data.domain == j].mean() for j in range(3)]
    assert rates[0] == 0.0 and abs(rates[1] - 0.1) < 0.02 and abs(rates[2] - 0.3) < 0.02
    np.testing.assert_allclose(data.extra["task_noise"], [0.0, 0.1, 0.3])


# ------------------------------------------------------------------------ CLI
def _synth(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mpiboost", "synth", *args], capture_output=True, text=True, timeout=120
    )


def test_cli_multisource(tmp_path):
    out = tmp_path / "ms.h5"
    r = _synth("multisource", "--n", "900", "--domains", "3", "--d", "6", "--mixture", "1", "2", "3",
               "--noise", "0.1", "--task-seed", "4", "--out", str(out))
    assert r.returncode == 0, r.stderr
    with h5py.File(out, "r") as f:
        assert f["X"].shape == (900, 6) and f["X"].dtype == np.float32 and f["y"].dtype == np.int8
        assert np.bincount(f["domain"][:]).tolist() == [150, 300, 450]
        assert [s.decode() if isinstance(s, bytes) else s for s in f.attrs["domain_names"]] == [
            "domain1", "domain2", "domain3"]
        assert f["synth/q"].shape == (900, 3) and f["synth/experts"].shape == (900, 3)
        np.testing.assert_allclose(f["synth/mixture"][:], [1 / 6, 2 / 6, 3 / 6])
        assert f.attrs["generator"] == "multisource"
    direct = multisource.generate(900, noise=0.1, task_seed=4, domains=3, d=6, mixture=[1, 2, 3])
    with h5py.File(out, "r") as f:
        np.testing.assert_array_equal(f["X"][:], direct.X)
        np.testing.assert_array_equal(f["y"][:], direct.y)


def test_cli_transfer_split_domains(tmp_path):
    out = tmp_path / "tr.h5"
    r = _synth("transfer", "--n", "100", "--target-n", "20", "--relatedness", "0.9", "-0.5",
               "--seed", "2", "--out", str(out), "--split-domains")
    assert r.returncode == 0, r.stderr
    names = ["target", "source1", "source2"]
    assert r.stdout.split() == [str(tmp_path / f"tr-{k}.h5") for k in names]
    for name, rows in zip(names, (20, 100, 100)):
        with h5py.File(tmp_path / f"tr-{name}.h5", "r") as f:
            assert f["X"].shape == (rows, 20) and "domain" not in f
            assert f.attrs["domain_name"] == name
            assert f["synth/y_clean"].shape == (rows,) and f["synth/target_rule"].shape == (rows,)
            # per-file parts keep only per-row ground truth; relatedness is an attribute
            np.testing.assert_allclose(f.attrs["relatedness"], [0.9, -0.5])
    test = tmp_path / "test.h5"
    r = _synth("transfer", "--n", "500", "--sources", "0", "--seed", "9", "--out", str(test))
    assert r.returncode == 0, r.stderr
    with h5py.File(test, "r") as f:
        assert f["X"].shape == (500, 20) and np.all(f["domain"][:] == 0)
        assert np.array_equal(f["y"][:], f["synth/target_rule"][:])


def test_cli_multitask(tmp_path):
    out = tmp_path / "mt.h5"
    r = _synth("multitask", "--n", "400", "--dataset", "2", "--noise", "0.05", "--out", str(out))
    assert r.returncode == 0, r.stderr
    with h5py.File(out, "r") as f:
        assert f["X"].shape == (2400, 2) and np.bincount(f["domain"][:]).tolist() == [400] * 6
        assert f["synth/c"].shape == (6, 2) and f.attrs["dataset"] == 2


def test_cli_help_and_bad_input(tmp_path):
    r = subprocess.run([sys.executable, "-m", "mpiboost", "synth", "--help"], capture_output=True, text=True)
    assert r.returncode == 0
    for name in ("multisource", "transfer", "multitask"):
        assert name in r.stdout
    r = _synth("multisource", "--n", "10", "--domains", "3", "--d", "3", "--out", str(tmp_path / "x.h5"))
    assert r.returncode == 2 and "--d" in r.stderr


def test_multitask_paper_noise_cycles_5_10_15_percent():
    for dataset, J in ((1, 3), (2, 6)):
        data = multitask.generate(20000, seed=3, dataset=dataset, paper_noise=True)
        want = [multitask.PAPER_NOISE[j % 3] for j in range(J)]
        np.testing.assert_array_equal(data.extra["task_noise"], want)
        for j in range(J):
            rows = data.domain == j
            rate = np.mean(data.y[rows] != data.extra["y_clean"][rows])
            assert abs(rate - want[j]) < 0.01, (dataset, j, rate)
    with pytest.raises(ValueError):
        multitask.generate(10, dataset=1, paper_noise=True, task_noise=[0.1, 0.1, 0.1])
