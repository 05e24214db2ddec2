"""Training on real public data: the same model on 1 and several ranks, and errors in the documented range.

The converter tests check that the files are read right; these check that the
algorithms then learn what docs/results.md says they learn, on real rows
(sparse binary features, one-hot text columns, a domain column, ten classes),
and that the model is bit for bit the same under ``mpiexec`` as in one
process. Each data set is converted once per module, as docs/data.md shows.
"""
from __future__ import annotations

import json

import pytest

from mpi_util import run_cli

pytestmark = pytest.mark.mpi

ADULT_NAMES = ("age,workclass,fnlwgt,education,education-num,marital-status,occupation,relationship,race,sex,"
               "capital-gain,capital-loss,hours-per-week,native-country,income")
ADULT_EDU = "Bachelors,Masters,Doctorate,Prof-school=university;HS-grad=hs;*=other"


def _ok(proc):
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="module")
def real(datasets, tmp_path_factory):
    """a9a, Adult (three education domains) and yeast converted: {name: (train, test)} paths."""
    work = tmp_path_factory.mktemp("real")
    out = {}
    a9a = (work / "a9a.h5", work / "a9a-test.h5")
    for src, dst in ((datasets / "a9a" / "a9a", a9a[0]), (datasets / "a9a" / "a9a.t", a9a[1])):
        _ok(run_cli(["convert", str(src), "--format", "libsvm", "--n-features", "123", "--out", str(dst)]))
    out["a9a"] = a9a
    adult = (work / "adult.h5", work / "adult-test.h5")
    common = ["--format", "csv", "--no-header", "--names", ADULT_NAMES, "--label-column", "income",
              "--positive-label", ">50K", "--label-strip", ".", "--domain-column", "education",
              "--domain-map", ADULT_EDU]
    _ok(run_cli(["convert", str(datasets / "adult" / "adult.data"), *common, "--categorical", "auto",
                 "--categories-out", str(work / "cats.json"), "--out", str(adult[0])]))
    _ok(run_cli(["convert", str(datasets / "adult" / "adult.test"), *common, "--comment-char", "|",
                 "--categories-in", str(work / "cats.json"), "--out", str(adult[1])]))
    out["adult"] = adult
    yeast = work / "yeast.h5"
    _ok(run_cli(["convert", str(datasets / "yeast" / "yeast.data"), "--format", "csv", "--no-header",
                 "--delimiter", "whitespace", "--label-column", "-1", "--drop-columns", "0", "--out", str(yeast)]))
    out["yeast"] = (yeast, None)
    return work, out


def _train_both(work, name, n, args):
    """The model's JSON trained in one process and on ``n`` ranks (must be identical)."""
    models = []
    for ranks in (0, n):
        path = work / f"{name}-{ranks}.h5"
        _ok(run_cli(["train", *args, "--model", str(path), "--quiet", "--threads", "1"], n=ranks, timeout=300))
        models.append(_ok(run_cli(["export", "--model", str(path)])).stdout)
    assert models[0] == models[1], f"{name}: the model on {n} ranks differs from the single-process one"
    return work / f"{name}-{n}.h5"


def _evaluate(model, data, n=2) -> dict:
    proc = _ok(run_cli(["evaluate", "--model", str(model), "--data", str(data)], n=n))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a9a_adaboost_same_model_on_3_ranks_and_its_documented_error(real):
    work, files = real
    train, test = files["a9a"]
    model = _train_both(work, "a9a", 3, ["--algo", "adaboost", "--data", str(train), "--rounds", "200"])
    report = _evaluate(model, test)
    # docs/results.md: every stump booster lies within 14.9-16.3 % on a9a; the majority class is 23.6 %
    assert 0.145 <= report["error"] <= 0.165, report


def test_adult_multiboost_same_model_on_2_ranks_and_its_error(real):
    work, files = real
    train, test = files["adult"]
    model = _train_both(work, "adult", 2, ["--algo", "multiboost", "--data", str(train), "--rounds", "100"])
    report = _evaluate(model, test)
    assert report["error"] < 0.16, report  # measured 0.141; the majority class: 0.236
    for name in ("university", "hs", "other"):
        assert name in json.dumps(report), report  # the per-domain errors are reported by name


def test_yeast_samme_same_model_on_4_ranks_and_better_than_the_majority(real):
    work, files = real
    train, _ = files["yeast"]
    model = _train_both(work, "yeast", 4, ["--algo", "samme", "--data", str(train), "--rounds", "100"])
    report = _evaluate(model, train)
    assert report["error"] < 0.55, report  # ten classes; the majority (CYT) leaves 0.688; SAMME: 0.50
