"""Models of every algorithm are bit-identical to the reference models (tests/fixtures/make_reference.py).

The reference was made by the code before the algorithm contract and the
multiclass core; the same CLI arguments must give the same ensemble, bin
edges, domain classifier and vote: bit for bit where the BLAS and SIMD
kernels are the reference machine's, and to a relative 1e-9 where a CPU's
own kernels round differently (MultiBoost's domain classifier is an L-BFGS
fit through BLAS; e.g. OPENBLAS_CORETYPE=SkylakeX reproduces the bits on any
x86-64). Model files in the old format (format 1)
must still load and predict the same scores.
"""
import hashlib
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


REL = 1e-9  # a different CPU's BLAS / SIMD kernels round the last bits differently; a changed rule moves far more


def _close(got, want, where: str = "") -> list:
    """Where ``got`` differs from ``want``: exactly for structure, ints, strings; to ``REL`` for floats."""
    if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        same = got == want or abs(got - want) <= REL * max(abs(got), abs(want))
        return [] if same else [f"{where}: {got!r} != {want!r}"]
    if isinstance(want, dict) and isinstance(got, dict):
        if set(got) != set(want):
            return [f"{where}: keys {sorted(got)} != {sorted(want)}"]
        return [d for k in want for d in _close(got[k], want[k], f"{where}.{k}")]
    if isinstance(want, list) and isinstance(got, list):
        if len(got) != len(want):
            return [f"{where}: {len(got)} items != {len(want)}"]
        return [d for i, (g, w) in enumerate(zip(got, want)) for d in _close(g, w, f"{where}[{i}]")]
    return [] if got == want else [f"{where}: {got!r} != {want!r}"]


@pytest.mark.parametrize("case", sorted(REFERENCE["cases"]))
def test_same_model_as_the_reference(data, case):
    """The reference's stumps, bins and classifier; bit for bit on the reference's kernels, else to 1e-9."""
    work, paths = data
    ref = REFERENCE["cases"][case]
    model = work / f"{case}.h5"
    _run("train", *mk.expand(ref["args"], paths), "--preset", "paper", "--model", model, "--quiet")
    doc = json.loads(Model.load(model).to_json())
    if mk.core_hash(doc) == ref["core_sha256"]:
        return  # bit for bit
    core = mk.model_core(doc)
    edges = json.dumps(core.pop("bin_edges"), sort_keys=True, allow_nan=True, separators=(",", ":"))
    assert hashlib.sha256(edges.encode()).hexdigest() == ref["core"]["bin_edges_sha256"], "other bin edges"
    want = {k: v for k, v in ref["core"].items() if k != "bin_edges_sha256"}
    differences = _close(core.pop("ensemble"), ref["ensemble"], "ensemble") + _close(core, want, "core")
    assert not differences, "\n".join(differences[:20])


def test_the_comparison_sees_a_changed_coefficient_and_a_changed_stump():
    ref = REFERENCE["cases"]["multiboost"]["ensemble"]
    ulp = [dict(e, coef=e["coef"] * (1 + 1e-15)) for e in ref]  # what another CPU gives
    assert not _close(ulp, ref)
    assert _close([dict(ref[0], coef=ref[0]["coef"] * (1 + 1e-6)), *ref[1:]], ref)
    assert _close([dict(ref[0], bin=ref[0]["bin"] + 1), *ref[1:]], ref)
    assert _close([dict(ref[0], left=-ref[0]["left"], right=-ref[0]["right"]), *ref[1:]], ref)


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
