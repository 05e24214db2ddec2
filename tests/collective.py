"""Helpers for tests that run unchanged under plain pytest and under ``mpiexec -n K pytest``.

A *collective test* uses :func:`comms` to get every communicator it should run
on (COMM_SELF, and COMM_WORLD when it has more than one rank) and must call the
same collectives in the same order on every rank. ``test_mpi_suite.py``
re-runs those modules under ``mpiexec -n 2, 3, 4``.
"""
from __future__ import annotations

import os
import tempfile

from mpiboost.comm import Comm, _mpi

IN_MPI_RUN = os.environ.get("MPIBOOST_COLLECTIVE_RUN") == "1"


def world() -> Comm:
    return Comm(_mpi().COMM_WORLD)


def comms() -> list[Comm]:
    MPI = _mpi()
    out = [Comm(MPI.COMM_SELF)]
    if MPI.COMM_WORLD.Get_size() > 1:
        out.append(Comm(MPI.COMM_WORLD))
    return out


def shared_tmpdir(comm: Comm) -> str:
    """A directory every rank of ``comm`` sees (created by its rank 0)."""
    path = tempfile.mkdtemp(prefix="mpiboost-test-") if comm.is_center else None
    return comm.bcast(path)


def splits(n: int, k: int) -> list[list[tuple[int, int]]]:
    """Several ways to cut ``n`` rows into ``k`` contiguous parts: even, skewed, with empty parts."""
    out = []
    even = [(r * n // k, (r + 1) * n // k) for r in range(k)]
    out.append(even)
    # everything on the last rank, others empty
    out.append([(0, 0)] * (k - 1) + [(0, n)])
    # geometric-ish uneven cuts
    cuts = [0]
    for r in range(1, k):
        cuts.append(min(n, cuts[-1] + max(1, (n - cuts[-1]) * 2 // 3)))
    cuts.append(n)
    out.append([(cuts[r], cuts[r + 1]) for r in range(k)])
    # first rank empty
    if k > 1:
        out.append([(0, 0)] + [(((r - 1) * n) // (k - 1), (r * n) // (k - 1)) for r in range(1, k)])
    return out


def comms_of_every_size() -> list[Comm]:
    """COMM_SELF, COMM_WORLD and, under ``mpiexec -n k``, a communicator of every size 2..k-1.

    For size s the world is split into ranks ``< s`` and the rest, so every
    rank takes part in one communicator of each split: one ``mpiexec -n 4``
    run covers 1, 2, 3 and 4 ranks. Every rank must use the returned list in
    the same order (the splits are collective).
    """
    MPI = _mpi()
    world_comm = MPI.COMM_WORLD
    out = [Comm(MPI.COMM_SELF)]
    for s in range(2, world_comm.Get_size()):
        out.append(Comm(world_comm.Split(0 if world_comm.Get_rank() < s else 1, world_comm.Get_rank())))
    if world_comm.Get_size() > 1:
        out.append(Comm(world_comm))
    return out


def write_task_files(comm: Comm, *, n: int, transfer_n: int, target_n: int,
                     large_n: int = 0) -> tuple[dict, str]:
    """Collective: one small synthetic file per task of the algorithm contract, in a shared folder.

    Returns ``({task: path}, folder)``: ``binary`` (Long-Servedio), ``multiclass``
    (4 classes), ``multi-domain`` (3 domains), ``transfer`` (a target and 2
    sources in a domain column) and ``regression`` (numeric targets, float ``y``);
    with ``large_n``, also ``binary-large`` (Long-Servedio of that many rows).
    """
    import numpy as np

    from mpiboost.boost.base import TASKS
    from mpiboost.data import format as fmt
    from mpiboost.data.synth import longservedio, multiclass, multisource, transfer

    tmp = shared_tmpdir(comm)
    paths = {t: os.path.join(tmp, f"{t}.h5") for t in (*TASKS, *(("binary-large",) if large_n else ()))}
    if comm.is_center:
        gens = {
            "binary": longservedio.generate(n=n, noise=0.05, seed=1),
            "multiclass": multiclass.generate(n=n, noise=0.05, seed=1, task_seed=0, classes=4, d=6),
            "multi-domain": multisource.generate(n=n, seed=1),
            "transfer": transfer.generate(n=transfer_n, noise=0.0, seed=1, task_seed=3, sources=2,
                                          target_n=target_n, d=6),
        }
        if large_n:
            gens["binary-large"] = longservedio.generate(n=large_n, noise=0.05, seed=2)
        for task, g in gens.items():
            fmt.write_dataset(paths[task], g.X, g.y, g.domain, domain_names=g.domain_names,
                              y_dtype=g.y.dtype if g.y.dtype != np.int64 else np.int32)
        rng = np.random.default_rng(1)
        X = rng.standard_normal((n, 6)).astype(np.float32)
        X[rng.random(X.shape) < 0.03] = np.nan  # missing values, as the other sets have
        Z = np.nan_to_num(X)
        y = 2.0 * Z[:, 0] + np.sin(2.0 * Z[:, 1]) * Z[:, 2] + 0.3 * rng.standard_t(3, size=n)
        fmt.write_dataset(paths["regression"], X, y, y_dtype=np.float64)
    comm.barrier()
    return paths, tmp
