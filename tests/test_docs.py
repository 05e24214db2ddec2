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
# The tests and CI may read the shared data folder beside the checkout (where CI lays it out); nothing else
# outside the project may be named anywhere, and user-facing files (docs, README, the package, scripts) name
# nothing outside it at all.
DATA_FOLDER = re.compile(r"(\.\./)?shared/datasets")
MAY_READ_DATA = ("tests/", ".ci/")


def outside_references(name: str, text: str) -> list:
    """The lines of tracked file ``name`` that point outside the project (``file:line: text``)."""
    hits = []
    for i, line in enumerate(text.splitlines(), 1):
        if "OUTSIDE = re.compile" in line or "DATA_FOLDER = re.compile" in line:
            continue
        rest = DATA_FOLDER.sub("", line) if name.startswith(MAY_READ_DATA) else line
        if OUTSIDE.search(rest):
            hits.append(f"{name}:{i}: {line.strip()}")
    return hits


def test_the_outside_check_refuses_docs_and_allows_the_tests_data():
    shared = "../" + "shared/"  # spelt in two parts, so this file does not name the folders itself
    line = f"read {shared}datasets/a9a"
    assert outside_references("docs/data.md", line) and outside_references("README.md", line)
    assert outside_references("mpiboost/cli.py", line) and outside_references("scripts/x.py", line)
    assert not outside_references("tests/mpi_util.py", line) and not outside_references(".ci/run", line)
    assert outside_references("tests/x.py", f"see {shared}design/")  # only the data folder
    assert outside_references("tests/x.py", f"{shared}datasets and {shared}seeds")


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
        hits += outside_references(name, path.read_text(encoding="utf-8", errors="replace"))
    assert not hits, "\n".join(hits)


MACHINE_PATH = re.compile(r"(?<![\w.~])/(tmp|work|root|home|Users)/")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _pages() -> list:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_docs_name_no_folder_of_one_machine():
    """Commands in the docs use relative work folders (runs/...), never where one machine kept its files."""
    hits = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}" for p in _pages()
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if MACHINE_PATH.search(line)]
    assert not hits, "\n".join(hits)
    assert MACHINE_PATH.search("--workdir /tmp/x") and not MACHINE_PATH.search("--workdir runs/x")


def test_docs_links_lead_to_files_that_exist():
    broken = []
    for p in _pages():
        for target in LINK.findall(p.read_text(encoding="utf-8")):
            if "://" in target or target.startswith(("#", "mailto:")):
                continue
            path = target.split("#", 1)[0]
            if path and not (p.parent / path).exists():
                broken.append(f"{p.relative_to(ROOT)}: {target}")
    assert not broken, "\n".join(broken)
