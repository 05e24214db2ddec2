"""Every script under scripts/ imports, and every one with a command line answers ``--help``.

The benchmarks and experiments run for hours on data CI does not hold, so nothing else runs them on every
change; this is what keeps a rename in the package from breaking one unnoticed. They use the public API
(:func:`mpiboost.train`, the command line, :mod:`mpiboost.comm`), never the communicator's private handle;
only the kernel benchmarks import the compiled kernels.
"""
from __future__ import annotations

import ast
import pathlib
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

SCRIPTS = pathlib.Path(__file__).resolve().parent.parent / "scripts"
ALL = sorted(SCRIPTS.rglob("*.py"))


def _has_command_line(path: pathlib.Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(n, ast.If) and "__main__" in ast.unparse(n.test) for n in tree.body)


def _run(args: list, cwd: pathlib.Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_there_are_scripts():
    assert len(ALL) > 30 and sum(map(_has_command_line, ALL)) > 30


def test_every_script_answers_help_and_every_library_imports():
    """One process per script (a script may set up its path or threads on import), two at a time."""
    # parsed here, not in the threads: CPython 3.11's ast.parse is not safe in two threads at once
    # ("AST constructor recursion depth mismatch")
    commands = {path: _has_command_line(path) for path in ALL}

    def check(path: pathlib.Path):
        if commands[path]:
            proc = _run([str(path), "--help"], path.parent)
            ok = proc.returncode == 0 and "usage:" in proc.stdout
        else:
            proc = _run(["-c", f"import {path.stem}"], path.parent)
            ok = proc.returncode == 0
        return path, ok, proc.stdout[-1500:] + proc.stderr[-1500:]

    with ThreadPoolExecutor(2) as pool:
        failed = [(str(p.relative_to(SCRIPTS)), out) for p, ok, out in pool.map(check, ALL) if not ok]
    assert failed == [], "\n\n".join(f"{p}:\n{out}" for p, out in failed)


@pytest.mark.parametrize("private", ["_mpi", "driver.batch", "driver.selection"])
def test_scripts_use_the_public_api(private):
    """No script reaches into the communicator's private handle or the training driver's modules."""
    users = [str(p.relative_to(SCRIPTS)) for p in ALL
             for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
             if isinstance(node, ast.ImportFrom) and (
                 (node.module or "").endswith(private) or any(a.name == private for a in node.names))]
    assert users == []


def test_experiments_do_not_import_the_kernels():
    """The experiments run mpiboost as a user does; only the kernel benchmarks (scripts/bench/) time the
    compiled kernels themselves, against their numpy twins."""
    users = [str(p.relative_to(SCRIPTS)) for p in ALL if p.parent.name != "bench"
             for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
             if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                 "_ext" in (getattr(node, "module", None) or "").split(".") + a.name.split(".") for a in node.names)]
    assert users == []
