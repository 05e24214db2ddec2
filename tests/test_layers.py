"""The package's layers: dependencies point downwards, and no import circle.

The command line (mpiboost/cli/) sits on top: nothing below it imports it, not even inside a
function (that is how a circle cli -> train -> driver -> cli hides). At module level no import
circle exists anywhere in the package.
"""
from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent / "mpiboost"


def _modules() -> dict:
    out = {}
    for f in ROOT.rglob("*.py"):
        parts = ["mpiboost", *f.relative_to(ROOT).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


def _imports(modules: dict, top_level_only: bool) -> dict:
    """module -> the package modules it imports (``from x import y``: x.y where y is a module, else x)."""
    graph = {}
    for name, f in modules.items():
        tree = ast.parse(f.read_text(encoding="utf-8"))
        nodes = tree.body if top_level_only else list(ast.walk(tree))
        here = name.split(".") if f.name == "__init__.py" else name.split(".")[:-1]
        deps = set()
        for node in nodes:
            if isinstance(node, ast.ImportFrom):
                base = here[: len(here) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    deps.add(sub if sub in modules else target)
            elif isinstance(node, ast.Import):
                deps.update(alias.name for alias in node.names)
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def _cycle(graph: dict):
    """One import circle of ``graph`` as a list of modules, or None."""
    state: dict = {}
    stack: list = []

    def visit(v):
        state[v] = 1
        stack.append(v)
        for w in sorted(graph[v]):
            if state.get(w) == 1:
                return stack[stack.index(w):] + [w]
            if w not in state:
                found = visit(w)
                if found:
                    return found
        state[v] = 2
        stack.pop()
        return None

    for v in sorted(graph):
        if v not in state:
            found = visit(v)
            if found:
                return found
    return None


def test_no_import_circle_at_module_level():
    assert _cycle(_imports(_modules(), top_level_only=True)) is None


def test_nothing_below_the_command_line_imports_it():
    graph = _imports(_modules(), top_level_only=False)
    users = sorted(m for m, deps in graph.items() if not m.startswith("mpiboost.cli") and m != "mpiboost.__main__"
                   and any(d == "mpiboost.cli" or d.startswith("mpiboost.cli.") for d in deps))
    assert users == []
    cli = {m: {d for d in deps if d.startswith("mpiboost.cli")} for m, deps in graph.items()
           if m.startswith("mpiboost.cli")}
    cli = {m: deps - {"mpiboost.cli"} if m != "mpiboost.cli" else deps for m, deps in cli.items()}
    assert _cycle(cli) is None, cli


def test_the_check_sees_a_circle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
