import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mpi_util import DATASETS, REQUIRE_DATASETS, mpiexec  # noqa: E402

try:  # the same examples on every run: a failure seen once is seen again, and CI never draws new ones
    from hypothesis import settings

    settings.register_profile("mpiboost", derandomize=True, database=None, deadline=None)
    settings.load_profile("mpiboost")
except ImportError:  # pragma: no cover - hypothesis is in the test extra
    pass

REAL_DATA_FIXTURES = {"datasets", "adult"}
_real_data_outcomes: dict = {}


def pytest_configure(config):
    if os.environ.get("MPIBOOST_COLLECTIVE_RUN") == "1":
        from mpi_harness import RankReporter

        config.pluginmanager.register(RankReporter(), "mpiboost-rank-reporter")


def pytest_collection_modifyitems(config, items):
    if mpiexec() is None:
        skip = pytest.mark.skip(reason="no mpiexec on this machine (install mpiboost[mpich] or a system MPI)")
        for item in items:
            if "mpi" in item.keywords:
                item.add_marker(skip)
    for item in items:
        if REAL_DATA_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.realdata)


def pytest_runtest_logreport(report):
    if "realdata" in report.keywords and (report.when == "call" or report.outcome != "passed"):
        _real_data_outcomes[report.nodeid] = report.outcome


def pytest_terminal_summary(terminalreporter):
    """Name the real-data tests and their outcomes, so a log shows that they ran (and did not skip)."""
    if not _real_data_outcomes:
        return
    tally: dict = {}
    for outcome in _real_data_outcomes.values():
        tally[outcome] = tally.get(outcome, 0) + 1
    terminalreporter.section(f"real-data tests on {DATASETS} ({', '.join(f'{v} {k}' for k, v in tally.items())})")
    for nodeid, outcome in sorted(_real_data_outcomes.items()):
        terminalreporter.line(f"{outcome.upper():8s} {nodeid}")


@pytest.fixture(params=[1, 2, 3])
def threads(request):
    """The kernels' OpenMP thread count for one test: 1, 2 and 3 (results must not depend on it)."""
    from mpiboost._ext import _openmp

    before = _openmp.get_max_threads()
    _openmp.set_num_threads(request.param)
    yield request.param
    _openmp.set_num_threads(before)


@pytest.fixture(scope="session")
def datasets():
    """The public data sets folder (:func:`mpi_util.find_datasets`).

    Absent, the test skips, unless ``MPIBOOST_REQUIRE_DATASETS=1`` (set by
    ``.ci/run``), where it fails: CI must run the real-data tests.
    """
    if not DATASETS.is_dir():
        why = f"public data sets not found at {DATASETS} (set MPIBOOST_DATASETS)"
        if REQUIRE_DATASETS:
            pytest.fail(why + "; MPIBOOST_REQUIRE_DATASETS=1 requires them")
        pytest.skip(why)
    return DATASETS
