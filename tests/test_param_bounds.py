"""Every numeric parameter of every algorithm, batch and online, at both ends of its range and beyond.

For each declared ``Param`` of type int or float that is a ``train`` option:

* each finite end of its range is accepted when closed and refused when
  open, and the nearest value outside it is refused;
* NaN, +inf and -inf are refused (an int option refuses them as text);
* every accepted end value really trains (a couple of rounds, or one pass
  over a short stream): the run ends with a model whose numbers are finite,
  or with a clean refusal (exit 2), never a crash.

Refusals go through ``mpiboost train`` itself (in this process), and must
exit 2 with one message naming the option, before any file is read: the
data file given does not exist, so an accepted value reaches the error
about that file instead.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from mpiboost import boost, cli
from mpiboost.comm import Comm, _mpi
from mpiboost.data import format as fmt
from mpiboost.data.synth import multiclass, multisource, transfer
from mpiboost.errors import CollectiveError, InputError
from mpiboost.online import ONLINE

MISSING = "no-such-data.h5"
ROUNDS = 2
# End values that train for minutes on any data (their own cost, not a fault): validated, not trained.
TOO_SLOW_TO_TRAIN = {
    ("n_samples", 10**7),  # ten million sampled rows per round
}


def _declared(cls, name: str):
    return next(p for p in cls.parameters if p.name == name)


def _numeric(cls):
    return [p for p in cls.parameters if p.cli and p.type in (int, float)]


def _probes(p):
    """``(value text, accepted?)`` for the ends of ``p``'s range, beyond them, and the non-finite values."""
    out = []
    for end, is_open, outward in ((p.low, p.low_open, -math.inf), (p.high, p.high_open, math.inf)):
        if end is None:
            continue
        if p.type is int:
            out.append((str(int(end)), not is_open))
            out.append((str(int(end) + (1 if outward > 0 else -1)), False))
        else:
            out.append((repr(float(end)), not is_open))
            out.append((repr(float(np.nextafter(end, outward))), False))
    out += [("nan", False), ("inf", False), ("-inf", False)]
    return out


def _cases():
    for name, cls in {**boost.ALGORITHMS, **ONLINE}.items():
        for p in _numeric(cls):
            for text, ok in _probes(p):
                yield pytest.param(name, p.name, text, ok, id=f"{name}-{p.flag}={text}")


def _enabling(cls, p) -> list:
    """The options that make a conditional parameter apply, as ``train`` arguments."""
    if p.when is None:
        return []
    return [_declared(cls, p.when[0]).flag, str(p.when[1])]


def _run(argv, capsys):
    code = cli.main(["train", *argv])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("name,param,text,accepted", list(_cases()))
def test_the_ends_of_every_range_are_checked_before_any_work(name, param, text, accepted, capsys, tmp_path):
    cls = {**boost.ALGORITHMS, **ONLINE}[name]
    p = _declared(cls, param)
    argv = ["--algo", name, "--data", str(tmp_path / MISSING), "--model", str(tmp_path / "m.h5"), "--quiet",
            *_enabling(cls, p), p.flag, text]
    if name in boost.ALGORITHMS:
        argv += ["--rounds", str(ROUNDS)]
    code, err = _run(argv, capsys)
    assert code == 2, (code, err)
    assert err.count("error:") == 1 and "Traceback" not in err, err
    if accepted:
        assert MISSING in err and p.flag not in err.split(MISSING)[0].split("error:")[-1], err
    else:
        assert p.flag in err and MISSING not in err, err
    assert not (tmp_path / "m.h5").exists()


# ------------------------------------------------------------ training at the ends
@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("bounds")
    gens = {
        "binary": multisource.generate(n=300, seed=3),
        "multiclass": multiclass.generate(n=300, noise=0.05, seed=1, task_seed=0, classes=3, d=5),
        "transfer": transfer.generate(n=100, noise=0.0, seed=1, task_seed=3, sources=2, target_n=40, d=5),
    }
    paths = {}
    # 100,000 learners cost their number times the examples: a short stream for the online end values
    gens["stream"] = multiclass.generate(n=24, noise=0.05, seed=2, task_seed=0, classes=3, d=5)
    for task, g in gens.items():
        paths[task] = d / f"{task}.h5"
        fmt.write_dataset(paths[task], g.X, g.y, g.domain, domain_names=g.domain_names,
                          y_dtype=g.y.dtype if g.y.dtype != np.int64 else np.int32)
    return paths


def _task(cls) -> str:
    if "transfer" in cls.tasks and cls.has("target_domain"):
        return "transfer"
    return "binary" if "binary" in cls.tasks else "multiclass"


def _accepted_ends():
    for name, cls in {**boost.ALGORITHMS, **ONLINE}.items():
        for p in _numeric(cls):
            for text, ok in _probes(p):
                if not ok:
                    continue
                value = float(text) if p.type is float else int(text)
                if (p.name, value) not in TOO_SLOW_TO_TRAIN:
                    yield pytest.param(name, p.name, value, id=f"{name}-{p.flag}={text}")


def _finite(doc) -> bool:
    if isinstance(doc, float):
        return math.isfinite(doc)
    if isinstance(doc, dict):
        return all(_finite(v) for v in doc.values())
    if isinstance(doc, list):
        return all(_finite(v) for v in doc)
    return True


@pytest.mark.parametrize("name,param,value", list(_accepted_ends()))
def test_every_accepted_end_trains_or_is_refused_cleanly(data, name, param, value, tmp_path, capsys):
    cls = {**boost.ALGORITHMS, **ONLINE}[name]
    p = _declared(cls, param)
    params = {param: value}
    if p.when is not None:
        params[p.when[0]] = p.when[1]
    if name in ONLINE:
        model = tmp_path / "m.h5"
        argv = ["--algo", name, "--data", str(data["stream"]), "--model", str(model), "--quiet"]
        if param != "n_learners":
            argv += ["--n-learners", "4"]
        for k, v in params.items():
            argv += [_declared(cls, k).flag, str(v)]
        code, err = _run(argv, capsys)
        assert code in (0, 2) and "Traceback" not in err, err
        if code == 0:
            from mpiboost.online.model import load_any

            saved = load_any(model)
            for part in (saved.learners, saved.booster):
                for key, array in part.items():
                    a = np.asarray(array)
                    assert a.dtype.kind not in "fc" or np.isfinite(a).all(), key
        return
    from runs import train

    comm = Comm(_mpi().COMM_SELF)
    task = _task(cls)
    try:
        result = train(comm, [str(data[task])], algorithm=name, rounds=ROUNDS, params=params, seed=1, threads=1)
    except (InputError, CollectiveError) as exc:
        assert str(exc), "a refusal says why"
        return
    model = result.model
    assert _finite(json.loads(model.to_json())["ensemble"])
    import h5py

    with h5py.File(data[task], "r") as f:
        X, domain = f["X"][()].astype(np.float64), f["domain"][()] if "domain" in f else None
    cols = np.empty((X.shape[1], X.shape[0]), dtype=np.uint8)
    model.bins.transform(X, out=cols.T)
    scores = model.decision_binned(cols, X if model.needs_raw else None, domain if model.vote == "task" else None)
    assert np.isfinite(scores).all()
