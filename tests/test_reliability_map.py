"""docs/reliability.md maps every promise to its tests: every test it names exists, and its counts are true."""
from __future__ import annotations

import ast
import re
import subprocess
import sys

from mpi_util import ROOT

DOC = ROOT / "docs" / "reliability.md"


def _section() -> str:
    text = DOC.read_text(encoding="utf-8")
    return text[text.index("## How it is tested"):]


def _tests_in(path) -> set:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}


def test_every_test_the_map_names_exists():
    rows = [line for line in _section().splitlines()
            if line.startswith("| ") and "`" in line and not line.startswith("| Promise |")]
    assert len(rows) > 40
    named = 0
    for row in rows:
        tests = row.split(" | ")[-1]
        current = None
        for ref in re.findall(r"`([\w./]*::\w+|[\w/]+\.py)(?:\[[^\]]*\])?`", tests):
            file, _, name = ref.partition("::")
            if file:
                current = ROOT / "tests" / file
                assert current.is_file(), (row, file)
            if name:
                assert current is not None, row
                assert name in _tests_in(current), (row, current.name, name)
                named += 1
        assert current is not None, f"a promise without a test: {row}"
    assert named > 60


def test_the_counts_are_the_collected_tests():
    section = _section()
    counts = dict(re.findall(r"`tests/(test_\w+\.py)`\s*\((\d+)\)", section.split("\n\n")[1]))
    assert len(counts) == 7, counts
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only",
                           *[f"tests/{f}" for f in counts]], cwd=ROOT, capture_output=True, text=True, timeout=300)
    collected = {}
    for line in proc.stdout.splitlines():
        if "::" in line:
            f = line.split("::")[0].rsplit("/", 1)[-1]
            collected[f] = collected.get(f, 0) + 1
    assert {f: int(n) for f, n in counts.items()} == collected, proc.stdout[-2000:]
    total = int(re.search(r"That is (\d+)\s+tests\s+in", section).group(1))
    assert total == sum(collected.values()) + 1  # and the one of test_train.py
