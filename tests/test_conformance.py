"""Registry-driven conformance of every batch algorithm with its non-default options, under real ``mpiexec``.

For every registered algorithm, every option that changes how it trains is
run with each of its values other than the default: each choice of a
``Param`` with choices, each flag, and ``auto`` for the parameters with a
grid (with validation rows). Each such run must give, bit for bit, the
single-process model

* on the world's ranks with even blocks,
* on uneven blocks with an entity that holds no rows,
* with a dedicated coordinator (rank 0 holds no rows) and uneven entities,
* and after a crash: a run on uneven blocks writes a checkpoint file every
  two rounds and dies in round 5 (an exception on every rank, so no end-of-
  training write happens); a run on even blocks resumes from that file,
  through the fingerprint checks of ``--resume``.

Collective: test_mpi_suite.py runs this module under ``mpiexec -n 4`` (plain
pytest runs it on one rank, where the layouts collapse to one block and the
resume from a file still runs). A new algorithm or option is covered by
declaring it; :data:`NEEDS` names what a value needs beside it, and the test
fails for any variant the algorithm refuses, so none drops out silently.
"""
from __future__ import annotations

import hashlib
import os

import numpy as np
import pytest

from collective import shared_tmpdir, world, write_task_files
from mpiboost import boost
from mpiboost.callbacks import Callback, Checkpoint
from mpiboost.comm import Comm, _mpi
from mpiboost.data import format as fmt
from mpiboost.data.synth import multiclass
from mpiboost.model import Model
from runs import train

ROUNDS = 6
CRASH_AT = 5  # the interrupted run dies in this round; its checkpoint file holds round CHECKPOINT_EVERY * k < it
CHECKPOINT_EVERY = 2
VALID_FRACTION = 0.25  # for the variants with an ``auto`` parameter
LARGE_N = 1200  # rows of the defaults' data where a selection needs more (SmoothBoost's noise check: 1,000)

# Values of the free-text parameters (no declared choices) to run besides their defaults, and what a value
# needs beside it; a parameter not named here with no choices is a number (tests/test_param_bounds.py).
FREE_VALUES = {
    "train_domain": ["1", "domain2"],
    "target_domain": ["target"],
    "initial_split": ["balanced", "domains", "0.3"],
    "lam_grid": ["0,0.1"],
}
NEEDS = {
    "lam_grid": ({"lam": "auto"}, VALID_FRACTION),
}
TASK_OF = {"train_domain": "multi-domain"}  # a parameter whose values need data of this task
# values of a parameter that need data of their own task (gbdt's objective: two classes, numeric targets)
TASK_OF_VALUE = {("objective", "binary"): "binary", **{("objective", o): "regression" for o in
                                                       ("regression", "regression_l1", "huber", "quantile")}}
UNVARIED = {"vote"}  # SmoothBoost's vote has one value left (majority)
# Pairs of non-default values that take a path of their own (trees with a loss or a relabelling).
COMBINED = {
    "adaboost": [{"weak_learner": "tree", "loss": "logistic"},
                 {"weak_learner": "tree", "loss": "logistic", "grad_bins": 4},
                 {"weak_learner": "tree", "loss": "logistic", "bagging_fraction": 0.6, "bagging_freq": 1}],
    "softmax": [{"grad_bins": 16}],
    "gbdt": [{"bagging_fraction": 0.6, "bagging_freq": 2, "feature_fraction": 0.7},
             {"objective": "huber", "alpha": 0.5}, {"objective": "quantile", "alpha": 0.3, "bagging_fraction": 0.6},
             {"objective": "regression_l1", "grad_bins": 8}],
    "multiboost": [{"weak_learner": "tree", "loss": "logistic"}],
    "agnostic-batch": [{"weak_learner": "tree", "relabel": "random"}],
}


def home_task(cls) -> str:
    """The data an algorithm's options are exercised on: the most specific task it declares."""
    for task in ("transfer", "multiclass", "multi-domain"):
        if task in cls.tasks and (task != "transfer" or cls.has("target_domain")):
            return task
    return cls.tasks[0]


def variants(cls) -> list:
    """``(id, params, valid_fraction, task)`` of every non-default option value of ``cls``, plus the defaults."""
    task = home_task(cls)
    # The defaults on rows enough for the choices made before the rounds (SmoothBoost's noise check needs
    # MIN_ROWS): the check's held-out part and the candidates' rows then meet uneven and empty blocks.
    out = [("defaults", {}, None, "binary-large" if cls.has("noise_check") else task)]
    for p in cls.parameters:
        if not p.cli:
            continue
        enabling = {p.when[0]: p.when[1]} if p.when is not None else {}
        values = []
        if p.choices is not None:
            values = [c for c in p.choices if c != p.default]
        elif p.type is bool:
            values = [not p.default]
        elif p.type is str and p.name not in UNVARIED:
            values = FREE_VALUES[p.name]  # a new free-text parameter must say here what to run it with
        needs, vf = NEEDS.get(p.name, ({}, None))
        for v in values:
            out.append((f"{p.flag}={v}", {**enabling, **needs, p.name: v}, vf,
                        TASK_OF_VALUE.get((p.name, v), TASK_OF.get(p.name, task))))
        if p.grid:
            out.append((f"{p.flag}=auto", {**enabling, p.name: "auto"}, VALID_FRACTION, task))
    for params in COMBINED.get(cls.name, []):
        out.append(("+".join(f"{k}={v}" for k, v in params.items()), dict(params), None,
                    TASK_OF_VALUE.get(("objective", params.get("objective")), task)))
    return out


def _cases():
    for name, cls in boost.ALGORITHMS.items():
        for vid, params, vf, task in variants(cls):
            yield pytest.param(name, task, params, vf, id=f"{name}-{task}-{vid}")


class _Crash(Exception):
    pass


class _CrashAt(Callback):
    """Kill the run in round ``t`` (on every rank alike), after the earlier rounds' checkpoints."""

    order = 90  # after the checkpoint writer

    def __init__(self, t: int) -> None:
        self.t = t

    def on_round_end(self, env):
        if env.t >= self.t:
            raise _Crash(env.t)


@pytest.fixture(scope="module")
def task_data():
    comm = world()
    paths, tmp = write_task_files(comm, n=600, transfer_n=120, target_n=50, large_n=LARGE_N)
    rows = {t: fmt.inspect(p).n for t, p in paths.items()}
    return paths, rows, tmp


def uneven(n: int, size: int, dedicated: bool = False) -> list:
    """Rows per rank: skewed, with an empty entity (rank 1, or rank 2 behind a dedicated coordinator)."""
    if size == 1:
        return [n]
    first = 1 if dedicated else 0
    entities = list(range(first, size))
    empty = entities[1] if len(entities) > 2 else None
    counts = [0] * size
    left = n
    holders = [r for r in entities if r != empty]
    for k, r in enumerate(holders):
        share = left if k == len(holders) - 1 else max(1, left * 2 // 3)
        counts[r], left = share, left - share
    return counts


def _fit(comm, name, params, task_data, task, vf, **kw):
    paths, _, _ = task_data
    defaults = not params
    params = dict(params)
    cls = boost.get(name)
    if cls.has("high_error"):
        params.setdefault("high_error", "clip")  # every round runs, so the crash in round 5 is a real interruption
    if cls.has("source_folds") and "source_trust" not in params:
        # The defaults run the choice by folds (2 folds: 7 trainings a run instead of 31), on every layout and
        # through the crash; every other option is the algorithm's own and runs without folds.
        params.update({"source_folds": 2} if defaults else {"source_trust": "algorithm"})
    if cls.has("start_rounds"):
        params.setdefault("start_rounds", 5)  # a start forest of 5 trees: the same code as 100, a twentieth the time
    return train(comm, [paths[task]], algorithm=name, rounds=ROUNDS, params=params, seed=7, threads=1,
                 valid_fraction=vf, **kw).model


@pytest.mark.parametrize("name,task,params,vf", list(_cases()))
def test_every_option_gives_the_same_model_on_any_layout_and_after_a_crash(task_data, name, task, params, vf):
    _, rows, tmp = task_data
    n = rows[task]
    comm = world()
    cls = boost.get(name)
    crashed_on = dict(blocks=uneven(n, comm.size))
    layouts = [dict(), crashed_on]
    if comm.size > 1:
        layouts.append(dict(dedicated_coordinator=True, blocks=uneven(n, comm.size, dedicated=True)))
    if any(cls.declared(k).rank_dependent for k in params):
        # Declared to depend on the layout: each layout must give the same model twice (and train with an
        # empty rank); the resumed run below continues on the crashed run's own layout.
        for kw in layouts:
            once = _fit(comm, name, params, task_data, task, vf, **kw).to_json()
            assert _fit(comm, name, params, task_data, task, vf, **kw).to_json() == once, (comm.size, kw)
        resume_on = crashed_on
        reference = _fit(comm, name, params, task_data, task, vf, **crashed_on)
    else:
        reference = _fit(Comm(_mpi().COMM_SELF), name, params, task_data, task, vf)
        for kw in layouts:
            assert _fit(comm, name, params, task_data, task, vf, **kw).to_json() == reference.to_json(), \
                (comm.size, kw)
        resume_on = {}  # even blocks: a checkpoint of one layout resumes on another
    want = reference.to_json()
    if task == "binary-large":  # the data are large for the noise check: it must have been made
        assert "tried" in reference.info["noise_check"], reference.info["noise_check"]
    if reference.n_rounds < CRASH_AT:
        # the model ends before the crash round (a start alone, e.g. IS multi-task's pooled baseline, which the
        # guard may choose): no round to crash in (the layouts were checked)
        assert reference.n_stumps > 0 or reference.n_rounds > 0, "an empty model"
        return
    # the crash: checkpoints every 2 rounds on uneven blocks, killed in round 5
    key = hashlib.sha256(repr((name, task, sorted(params.items()), vf)).encode()).hexdigest()[:16]
    ckpt = os.path.join(tmp, f"ckpt-{key}.h5")  # the same name on every rank
    if comm.is_center and os.path.exists(ckpt):
        os.unlink(ckpt)
    comm.barrier()
    with pytest.raises(_Crash):
        _fit(comm, name, params, task_data, task, vf, blocks=uneven(n, comm.size),
             callbacks=[Checkpoint(ckpt, CHECKPOINT_EVERY), _CrashAt(CRASH_AT)])
    comm.barrier()
    if reference.n_rounds < CHECKPOINT_EVERY:
        return  # the run stopped by itself before its first checkpoint: nothing to resume (the layouts were checked)
    saved = Model.load(ckpt)
    assert saved.n_rounds == min(reference.n_rounds, (CRASH_AT - 1) // CHECKPOINT_EVERY * CHECKPOINT_EVERY) \
        or saved.n_rounds == reference.n_rounds
    resumed = _fit(comm, name, params, task_data, task, vf, resume=saved, **resume_on)
    assert resumed.to_json() == want, f"resumed from {saved.n_rounds} rounds on {comm.size} rank(s)"


def test_every_algorithm_has_variants():
    for name, cls in boost.ALGORITHMS.items():
        assert variants(cls), name


# ------------------------------------------------------------------ online
# The online boosters spread their N weak learners over the ranks (every rank reads the whole stream), so
# "uneven blocks" are N not divisible by the ranks and "an empty rank" one that holds no learner: N = 5 and
# N = 2 on the world (on 4 ranks: shares 1, 1, 1, 2 and 0, 1, 0, 1) against one rank. They have no dedicated coordinator and no checkpoints
# (both refused with exit 2, tests/test_online_cli.py): one pass over the stream is the whole run.
ONLINE_N = (5, 2)
STREAM_OPTIONS = {"--weak-learner": ["hoeffding", "nba"], "--block-size": ["7"], "--shuffle": ["3"]}


def online_variants(cls) -> list:
    """``(id, argv)`` of the defaults, every non-default choice of ``cls`` and every stream option."""
    out = [("defaults", [])]
    for p in cls.parameters:
        for v in [c for c in (p.choices or ()) if c != p.default]:
            out.append((f"{p.flag}={v}", [p.flag, str(v)]))
    for flag, values in STREAM_OPTIONS.items():
        out += [(f"{flag}={v}", [flag, v]) for v in values]
    return out


def _online_cases():
    from mpiboost.online import ONLINE

    for name, cls in ONLINE.items():
        for vid, argv in online_variants(cls):
            yield pytest.param(name, argv, id=f"{name}-{vid}")


@pytest.fixture(scope="module")
def stream_file():
    comm = world()
    path = os.path.join(shared_tmpdir(comm), "stream.h5")
    if comm.is_center:
        g = multiclass.generate(n=120, noise=0.05, seed=2, task_seed=1, classes=3, d=4)
        fmt.write_dataset(path, g.X, g.y.astype(np.int32))
    comm.barrier()
    return path


def _online_fit(comm, name, argv, path, n_learners) -> str:
    """The model's JSON after one pass on ``comm`` (written by its rank 0 to a file of its own)."""
    from mpiboost.cli import train as train_cli
    from mpiboost.cli import online as online_train
    from mpiboost.online.model import load_any

    leader = comm.bcast(_mpi().COMM_WORLD.Get_rank())  # names this communicator's output among the splits
    out = os.path.join(os.path.dirname(path), f"online-{name}-{n_learners}-{comm.size}-{leader}.h5")
    args = train_cli.parse(["--algo", name, "--data", path, "--model", out, "--quiet", "--n-learners",
                            str(n_learners), *argv])
    online_train.check_options(args)
    assert online_train.run(comm, args, train_cli.algorithm_params(args)) == 0
    comm.barrier()
    return load_any(out).to_json()


@pytest.mark.parametrize("name,argv", list(_online_cases()))
def test_every_online_option_gives_the_same_model_with_uneven_and_empty_learner_shares(stream_file, name, argv,
                                                                                        capsys):
    from collective import comms

    comms = comms()
    for n_learners in ONLINE_N:
        want = _online_fit(comms[0], name, argv, stream_file, n_learners)
        for comm in comms[1:]:
            assert _online_fit(comm, name, argv, stream_file, n_learners) == want, (comm.size, n_learners)
    capsys.readouterr()  # the summaries the runs printed


@pytest.fixture(scope="module")
def count_stream_file():
    """Sparse counts (integers 0..40, 40% or more of them 0): what --weak-learner auto gives multinomial
    naive-Bayes leaves."""
    comm = world()
    path = os.path.join(shared_tmpdir(comm), "counts.h5")
    if comm.is_center:
        rng = np.random.default_rng(4)
        y = rng.integers(0, 3, 150)
        X = rng.poisson(rng.gamma(1.0, 6.0, size=(3, 8))[y]) * (rng.random((150, 8)) < 0.6)  # sparse
        fmt.write_dataset(path, X.astype(np.float64), y.astype(np.int32))
    comm.barrier()
    return path


@pytest.mark.parametrize("name", ["online-agnostic", "online-ocor"])
def test_multinomial_leaves_give_the_same_model_with_uneven_and_empty_learner_shares(count_stream_file, name,
                                                                                     capsys):
    from collective import comms

    comms = comms()
    for n_learners in ONLINE_N:
        want = _online_fit(comms[0], name, [], count_stream_file, n_learners)
        assert '"kind":"mnb"' in want.replace(' ', '')
        for comm in comms[1:]:
            assert _online_fit(comm, name, [], count_stream_file, n_learners) == want, (comm.size, n_learners)
    capsys.readouterr()


def test_blocks_that_do_not_cover_the_rows_are_refused():
    from mpiboost.data.load import Layout
    from mpiboost.errors import InputError

    assert Layout(10, 3, counts=(0, 7, 3)).block(1) == (0, 7)
    assert Layout(10, 3, counts=(0, 7, 3)).block(2) == (7, 10)
    for counts, dedicated in (((5, 4), False), ((5, 6, -1), False), ((5, 5), False), ((1, 9, 0), True)):
        with pytest.raises(InputError, match="blocks"):
            Layout(10, 3, dedicated, counts=counts)
