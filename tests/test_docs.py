"""The docs stand alone: the generated algorithms page is current, and nothing points outside the project."""
import re
import subprocess

import pytest

from mpi_util import ROOT
from mpiboost.doc import algorithms_markdown


def test_algorithms_page_is_generated_from_the_registry():
    page = (ROOT / "docs" / "algorithms.md").read_text(encoding="utf-8")
    assert page == algorithms_markdown(), "run `python -m mpiboost.doc` to regenerate docs/algorithms.md"


OUTSIDE = re.compile(r"\.\./shared|shared/(seeds|design|datasets)|ALGORITHMS(\.md| §)|ARCHITECTURE\.md|REFERENCE_RESULTS")


def test_nothing_points_outside_the_project():
    try:
        files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    hits = []
    for name in files:
        path = ROOT / name
        if path.suffix not in {".py", ".pyx", ".pxd", ".md", ".sh", ".sbatch", ".pbs", ".toml", ".txt", ".cfg", ""}:
            continue
        if not path.is_file() or name.startswith("tests/fixtures/"):
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if OUTSIDE.search(line) and "OUTSIDE = re.compile" not in line:
                hits.append(f"{name}:{i}: {line.strip()}")
    assert not hits, "\n".join(hits)
