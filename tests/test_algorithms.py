"""Registry-driven tests: every registered algorithm, on every task it declares.

For each (algorithm, task, weak-learner mode) from :data:`mpiboost.boost.ALGORITHMS`:
the declarations hold together (CLI options, ``--help``, validation); the
same seed gives the same model; resuming from a mid-run checkpoint gives
the uninterrupted model; and the model is bit for bit the single-process
one on communicators of every size and with a dedicated coordinator.

Collective: test_mpi_suite.py re-runs this module under ``mpiexec -n 2, 3, 4``,
where each run trains on communicators of every size up to the world's. A
new algorithm is covered by registering it.
"""
import json
import os

import numpy as np
import pytest

from collective import comms_of_every_size, shared_tmpdir, world, write_task_files
from mpiboost import boost
from mpiboost.cli import train as train_cli
from mpiboost.boost.base import Param, describe
from mpiboost.callbacks import Callback
from mpiboost.data import format as fmt
from mpiboost.errors import InputError
from mpiboost.driver.algorithm import make_algorithm
from runs import train

ROUNDS = 8


def _cases():
    for name, cls in boost.ALGORITHMS.items():
        modes = cls.declared("weak_learner").choices if cls.has("weak_learner") else (None,)
        for task in cls.tasks:
            for mode in modes:
                yield pytest.param(name, task, mode, id=f"{name}-{task}-{mode}")


def _task_params(cls, task: str) -> dict:
    """What a run of ``task`` tells an algorithm beyond the data (from its declarations only)."""
    params = {}
    if task == "transfer" and not cls.has("target_domain"):
        params["train_domain"] = "target"  # a baseline trained on the target rows only
    if task == "regression":
        params["objective"] = "regression"  # the declared choice that makes the run a regression
    if cls.has("high_error"):
        params["high_error"] = "clip"  # every round runs, so resuming after round 3 is a real test
    if cls.has("start_rounds"):
        params["start_rounds"] = 5  # a start forest of 5 trees: the same code as 100, a twentieth the time
    return params


@pytest.fixture(scope="module")
def task_data():
    return write_task_files(world(), n=900, transfer_n=150, target_n=60)[0]


def _fit(comm, name, task, mode, paths, rounds=ROUNDS, **kw):
    cls = boost.get(name)
    params = _task_params(cls, task)
    if mode is not None:
        params["weak_learner"] = mode
    if cls.has("source_folds"):
        # the default choice by folds with the default weak learner (2 folds: 7 trainings instead of 31);
        # the algorithm's own model with the others
        params.update({"source_folds": 2} if mode in (None, "stump") else {"source_trust": "algorithm"})
    return train(comm, [paths[task]], algorithm=name, rounds=rounds, params=params, seed=11, threads=1, **kw)


class _StopAt(Callback):
    def __init__(self, t):
        self.t = t

    def on_round_end(self, env):
        return env.t >= self.t


# ------------------------------------------------------------------ contract
@pytest.mark.parametrize("name", sorted(boost.ALGORITHMS))
def test_declarations_make_the_cli_and_its_checks(name):
    cls = boost.get(name)
    info = describe(cls)
    assert info["name"] == name and info["summary"] and info["tasks"]
    assert issubclass(cls, boost.Algorithm)
    help_text = train_cli.parser_for(name).format_help()
    own = {p.flag for p in cls.parameters if p.cli}
    for p in cls.parameters:
        if p.cli:
            assert p.flag in help_text, p.flag
    others = {p.flag for c in boost.ALGORITHMS.values() for p in c.parameters if p.cli} - own
    for flag in others:
        assert flag + " " not in help_text and flag + "\n" not in help_text, flag
        with pytest.raises(InputError, match=f"{flag} is not an option of {name}"):
            train_cli.parse(["--algo", name, "--data", "x.h5", "--rounds", "3", "--model", "m.h5", flag, "1"])
    # the defaults are valid and complete: the resolved parameters are every declared one
    algo = make_algorithm(name, {}, 5) if not cls.needs_rounds else make_algorithm(name, {}, 5)
    assert set(algo.params) == {p.name for p in cls.parameters}
    # out-of-range and wrong-choice values are refused, naming the option and the algorithm
    for p in cls.parameters:
        bad = _bad_value(p)
        if bad is None or not p.cli:
            continue
        with pytest.raises(InputError) as err:
            make_algorithm(name, {p.name: bad, **_enabling(cls, p)}, 5)
        assert p.flag in str(err.value) and name in str(err.value)


def _bad_value(p: Param):
    if p.choices is not None:
        return "no-such-choice"
    if p.type in (int, float) and p.low is not None:
        return p.low - 1 if not p.low_open else p.low
    if p.type in (int, float) and p.high is not None:
        return p.high + 1
    return None


def _enabling(cls, p: Param) -> dict:
    """The setting that makes a conditional parameter apply."""
    return {p.when[0]: p.when[1]} if p.when is not None else {}


def test_the_registry_is_the_only_list():
    """Every module under mpiboost/boost defining an Algorithm subclass with a name is registered."""
    registered = set(boost.ALGORITHMS.values())
    for cls in _subclasses(boost.Algorithm):
        if cls.name and cls.summary:
            assert cls in registered, cls


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


# ------------------------------------------------------------------ same model
@pytest.mark.parametrize("name,task,mode", list(_cases()))
def test_same_seed_same_model_on_every_communicator(task_data, name, task, mode):
    comms = comms_of_every_size()
    reference = _fit(comms[0], name, task, mode, task_data).model.to_json()
    assert _fit(comms[0], name, task, mode, task_data).model.to_json() == reference  # same seed, same model
    for comm in comms[1:]:
        assert _fit(comm, name, task, mode, task_data).model.to_json() == reference, f"{comm.size} ranks"
        if comm.size > 1:
            got = _fit(comm, name, task, mode, task_data, dedicated_coordinator=True).model.to_json()
            assert got == reference, f"{comm.size} ranks, dedicated coordinator"


@pytest.mark.parametrize("name,task,mode", list(_cases()))
def test_resume_from_a_checkpoint_is_the_uninterrupted_model(task_data, name, task, mode):
    comms = comms_of_every_size()
    full = _fit(comms[0], name, task, mode, task_data).model
    # every round runs, or the run ends without a weak edge left (IS multi-task's sampled stumps after its
    # start forest) after the checkpoint's round 3: resuming is still a real test
    assert 3 < full.n_rounds <= ROUNDS
    # the interrupted run: the same run stopped after round 3 (its model is the checkpoint)
    part = _fit(comms[-1], name, task, mode, task_data, callbacks=[_StopAt(3)]).model
    assert part.n_rounds == min(3, full.n_rounds)
    resumed = _fit(comms[0], name, task, mode, task_data, resume=part).model
    assert resumed.to_json() == full.to_json()
    again = _fit(comms[-1], name, task, mode, task_data, resume=part).model
    assert again.to_json() == full.to_json()


@pytest.mark.parametrize("name,task", sorted({(p.values[0], p.values[1]) for p in _cases()
                                              if p.values[1] != "regression"}))  # targets are numbers, not text
def test_labels_as_text_give_the_same_model_and_come_back(task_data, tmp_path_factory, name, task):
    """Every algorithm: text labels (a classes attribute) train the model of the integer labels and predict text."""
    import h5py

    comm = world()
    tmp = shared_tmpdir(comm)
    text = os.path.join(tmp, f"text-{task}.h5")
    with h5py.File(task_data[task], "r") as f:
        X, y = f["X"][()], f["y"][()]
        dom = f["domain"][()] if "domain" in f else None
        names = [v.decode() if isinstance(v, bytes) else str(v) for v in f.attrs.get("domain_names", [])] or None
    values = sorted(set(y.tolist()))
    classes = [f"class {k:03d}" for k in range(len(values))]  # text that sorts as the integers do
    if comm.is_center:
        fmt.write_dataset(text, X, np.searchsorted(values, y).astype(np.int8), dom, domain_names=names,
                          classes=classes)
    comm.barrier()
    paths = dict(task_data, **{task: text})
    comm0 = comms_of_every_size()[0]
    plain = _fit(comm0, name, task, None, task_data).model
    labelled = _fit(comm0, name, task, None, paths).model
    assert plain.classes == values and labelled.classes == classes
    a, b = (json.loads(m.to_json()) for m in (plain, labelled))
    assert a["ensemble"] == b["ensemble"] and a["bin_edges"] == b["bin_edges"]
    rows_task = dom if labelled.vote == "task" else None  # a task model scores each row with its task's ensemble
    pred = labelled.predict_raw(X.astype(np.float64), rows_task) if rows_task is not None else \
        labelled.predict_raw(X.astype(np.float64))
    assert set(pred.tolist()) <= set(classes)
    again = plain.predict_raw(X.astype(np.float64), rows_task) if rows_task is not None else \
        plain.predict_raw(X.astype(np.float64))
    assert np.array_equal(again, np.asarray(values)[[classes.index(p) for p in pred]])
