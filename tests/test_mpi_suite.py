"""Re-run the collective test modules under ``mpiexec -n 2, 3, 4``, and check that the harness can fail.

The same test bodies pass under plain pytest (size 1) and on several ranks,
where every rank checks its part against the single-process result. The
verdict comes from every rank's own report (:mod:`mpi_harness`): each rank
saw a world of K, passed every test it collected and failed none. The canary
shows that a failure on one rank ends the job at once, with that rank's
message, instead of leaving the others in their next collective.
"""
import time

import pytest

from collective import IN_MPI_RUN
from mpi_harness import launch, run_collective

COLLECTIVE_MODULES = ["tests/test_comm.py", "tests/test_load.py", "tests/test_protocol.py", "tests/test_algorithms.py"]
# Every algorithm's non-default options on uneven and empty blocks, with a dedicated coordinator and resumed
# from a checkpoint file: once, on 4 ranks (its own layouts cover the shapes that matter).
CONFORMANCE = ["tests/test_conformance.py"]
CANARY = ["tests/mpi_canary.py"]
CANARY_BOUND = 60  # seconds: a hang guard far below the 300 s a stuck collective would take, not a timing

pytestmark = [
    pytest.mark.mpi,
    pytest.mark.skipif(IN_MPI_RUN, reason="already inside an mpiexec run"),
]


@pytest.mark.parametrize("n", [2, 3, 4])
def test_collective_modules(n):
    run_collective(n, COLLECTIVE_MODULES)


def test_the_api_on_1_to_4_ranks():
    """mpiboost.train with each rank's own rows: one run of 4 ranks covers communicators of 1, 2, 3 and 4
    (tests/test_api.py; its one test that starts its own mpiexec skips inside the run)."""
    run_collective(4, ["tests/test_api.py"], timeout=600, allowed_skips=1)


def test_conformance_on_4_ranks():
    run_collective(4, CONFORMANCE, timeout=600)


def test_the_canary_passes_on_every_rank():
    run = run_collective(3, CANARY)
    assert all(rep["passed"] == 2 for rep in run.reports.values())


def test_a_failure_on_rank_2_of_3_ends_the_job_at_once_with_its_message():
    from mpi_canary import MESSAGE

    t0 = time.monotonic()
    run = launch(3, CANARY, env={"MPIBOOST_CANARY": "fail"}, timeout=CANARY_BOUND)  # TimeoutExpired: a hang
    assert run.returncode != 0, run.explain()
    assert "[rank 2/3] " in run.stderr and MESSAGE in run.stderr, run.explain()
    failed = {r for r, rep in run.reports.items() if rep["failed"]}
    assert failed == {2}, run.explain()
    assert MESSAGE in run.reports[2]["failures"][0]
    # the others never finished: they were in the barrier when the job ended
    assert all(run.reports[r].get("status") != "finished" for r in (0, 1) if r in run.reports), run.explain()
    print(f"canary ended in {time.monotonic() - t0:.1f} s")


def test_a_wrong_world_size_is_caught():
    """Told to expect 3 ranks, a job of 2 must not pass: each rank checks the size MPI gives it."""
    from mpi_harness import SIZE_ENV

    run = launch(2, CANARY, env={SIZE_ENV: "3"}, timeout=CANARY_BOUND)
    assert run.returncode != 0 and "expected a world of 3 ranks, MPI says 2" in run.stderr, run.explain()
    assert run.reports and all(rep["status"] == "wrong world size" and rep["passed"] == 0
                               for rep in run.reports.values()), run.explain()
