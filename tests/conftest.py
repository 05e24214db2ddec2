import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mpi_util import DATASETS, mpiexec  # noqa: E402


def pytest_collection_modifyitems(config, items):
    if mpiexec() is None:
        skip = pytest.mark.skip(reason="no mpiexec on this machine (install mpiboost[mpich] or a system MPI)")
        for item in items:
            if "mpi" in item.keywords:
                item.add_marker(skip)


@pytest.fixture
def datasets():
    """The public data sets folder ($MPIBOOST_DATASETS or datasets/); skips the test if it is absent."""
    if not DATASETS.is_dir():
        pytest.skip(f"public data sets not found at {DATASETS} (set MPIBOOST_DATASETS)")
    return DATASETS
