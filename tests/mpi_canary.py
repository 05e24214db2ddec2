"""The canary of the MPI harness (run by tests/test_mpi_suite.py, never collected by itself).

Under ``mpiexec -n 3``: with ``MPIBOOST_CANARY=fail`` rank 2 fails an assert
while ranks 0 and 1 wait for it in a barrier that will never complete; the
harness must end the job at once and show rank 2's message. Without it every
rank passes both tests.
"""
import os

from mpiboost.comm import _mpi

MESSAGE = "canary: rank 2 broke its promise"


def test_every_rank_meets_the_others():
    _mpi().COMM_WORLD.barrier()


def test_rank_2_fails_while_the_others_wait():
    world = _mpi().COMM_WORLD
    if os.environ.get("MPIBOOST_CANARY") == "fail" and world.Get_rank() == 2:
        assert world.Get_rank() != 2, MESSAGE
    world.barrier()  # without the harness's abort, ranks 0 and 1 would wait here until the launch timeout
