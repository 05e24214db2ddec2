"""Models of every algorithm are bit-identical to the reference models (tests/fixtures/make_reference.py).

The reference was made by the code before the algorithm contract and the
multiclass core; the same CLI arguments must give the same ensemble, bin
edges, domain classifier and vote. Model files in the old format (format 1)
must still load and predict the same scores.
"""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from mpiboost import cli
from mpiboost.model import Model

FIXTURES = Path(__file__).resolve().parent / "fixtures"
sys.path.insert(0, str(FIXTURES))

import make_reference as mk  # noqa: E402

REFERENCE = json.loads((FIXTURES / "reference_models.json").read_text())
PREDICTIONS = json.loads((FIXTURES / "v1" / "predictions.json").read_text())


def _run(*args):
    code = cli.main([str(a) for a in args])
    assert code == 0, args


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    work = tmp_path_factory.mktemp("reference")
    paths = {}
    for name, (train, test) in mk.DATA.items():
        out = work / f"{name}.h5"
        _run("synth", *train, "--out", out)
        paths[name] = str(out) if "--split-domains" not in train else str(work / name)
        if test is not None:
            _run("synth", *test, "--out", work / f"{name}-test.h5")
            paths[f"{name}_test"] = str(work / f"{name}-test.h5")
    return work, paths


@pytest.mark.parametrize("case", sorted(REFERENCE["cases"]))
def test_same_model_as_the_reference(data, case):
    work, paths = data
    ref = REFERENCE["cases"][case]
    model = work / f"{case}.h5"
    _run("train", *mk.expand(ref["args"], paths), "--model", model, "--quiet")
    doc = json.loads(Model.load(model).to_json())
    core = mk.model_core(doc)
    assert core["ensemble"] == ref["ensemble"]
    assert mk.core_hash(doc) == ref["core_sha256"]


@pytest.mark.parametrize("case", sorted(PREDICTIONS))
def test_format_1_models_load_and_predict_the_same(data, case, tmp_path):
    work, paths = data
    expected = PREDICTIONS[case]
    path = FIXTURES / "v1" / f"{case}.h5"
    model = Model.load(path)
    assert model.classes == [-1, 1] and model.output == "sign"
    test = paths[f"{expected['data']}_test"]
    for flag, key, read in (("--scores", "scores", float), (None, "labels", int)):
        out = tmp_path / f"{key}.csv"
        _run("predict", "--model", path, "--data", test, "--out", out, *([flag] if flag else []))
        values = [read(v) for v in out.read_text().split()[1:]]
        assert values == expected[key]
    # an old model re-saved in the current format keeps its ensemble
    again = tmp_path / "again.h5"
    model.save(again)
    assert mk.core_hash(json.loads(Model.load(again).to_json())) == REFERENCE["cases"][case]["core_sha256"]
    assert np.array_equal(Model.load(again).right, -model.left)
