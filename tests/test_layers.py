"""The package's layers: dependencies point downwards, and no import circle.

The command line (mpiboost/cli/) sits on top: nothing below it imports it. No import circle
exists anywhere in the package, counting the imports inside functions too (that is how a circle
hides: a module that imports its caller when called). Imports under ``if TYPE_CHECKING:`` are
annotations only and do not count.
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


def _is_type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _walk(tree: ast.AST, top_level_only: bool) -> list:
    """The statements of ``tree`` (its body alone, or every node), without ``if TYPE_CHECKING:`` blocks."""
    if top_level_only:
        return [m for n in tree.body for m in (n.orelse if _is_type_checking(n) else [n])]
    out, todo = [], [tree]
    while todo:
        node = todo.pop()
        if _is_type_checking(node):
            todo.extend(node.orelse)
            continue
        out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return out


def _imports(modules: dict, top_level_only: bool) -> dict:
    """module -> the package modules it imports (``from x import y``: x.y where y is a module, else x)."""
    graph = {}
    for name, f in modules.items():
        tree = ast.parse(f.read_text(encoding="utf-8"))
        nodes = _walk(tree, top_level_only)
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


def test_no_import_circle_counting_imports_inside_functions():
    circle = _cycle(_imports(_modules(), top_level_only=False))
    assert circle is None, " -> ".join(circle)


def test_nothing_below_the_command_line_imports_it():
    graph = _imports(_modules(), top_level_only=False)
    users = sorted(m for m, deps in graph.items() if not m.startswith("mpiboost.cli") and m != "mpiboost.__main__"
                   and any(d == "mpiboost.cli" or d.startswith("mpiboost.cli.") for d in deps))
    assert users == []
    cli = {m: {d for d in deps if d.startswith("mpiboost.cli")} for m, deps in graph.items()
           if m.startswith("mpiboost.cli")}
    cli = {m: deps - {"mpiboost.cli"} if m != "mpiboost.cli" else deps for m, deps in cli.items()}
    assert _cycle(cli) is None, cli


def test_the_walk_sees_function_imports_and_skips_annotations():
    tree = ast.parse("import os\nif TYPE_CHECKING:\n    import a\nelse:\n    import b\n"
                     "def f():\n    import c\n")
    names = {a.name for n in _walk(tree, top_level_only=False) if isinstance(n, ast.Import) for a in n.names}
    assert names == {"os", "b", "c"}
    names = {a.name for n in _walk(tree, top_level_only=True) if isinstance(n, ast.Import) for a in n.names}
    assert names == {"os", "b"}


def test_the_check_sees_a_circle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_mpi4py_is_imported_by_the_communicator_alone():
    """mpiboost.comm is the one door to MPI: any other module that imports mpi4py (or reaches for the
    communicator's private ``_mpi``) bypasses its byte counts, its error handling and its thread level."""
    users = []
    for name, f in _modules().items():
        if name == "mpiboost.comm":
            continue
        for node in _walk(ast.parse(f.read_text(encoding="utf-8")), top_level_only=False):
            if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "mpi4py" for a in node.names):
                users.append(name)
            elif isinstance(node, ast.ImportFrom) and (
                    (node.module or "").split(".")[0] == "mpi4py"
                    or any(a.name == "_mpi" for a in node.names)):
                users.append(name)
    assert users == []


def test_no_argparse_namespace_below_the_command_line():
    """Below cli/ nothing takes parsed options: a module may only declare its options for the command line
    (``add_arguments(parser: argparse.ArgumentParser)``, as the generators do); the options travel down as
    values and objects (``RunConfig``, ``CsvOptions``), never as a Namespace."""
    found = []
    for name, f in _modules().items():
        if name.startswith("mpiboost.cli"):
            continue
        tree = ast.parse(f.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "argparse" \
                    and node.attr != "ArgumentParser":
                found.append(f"{name}: argparse.{node.attr}")
            elif isinstance(node, ast.ImportFrom) and node.module == "argparse":
                found.append(f"{name}: from argparse import ...")
    assert found == []


def test_every_public_function_of_the_seams_documents_its_parameters():
    """A public function that takes the communicator (a collective, or one every rank calls) has a numpydoc
    Parameters section: the seams between the layers say what they take."""
    missing = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                names = [a.arg for a in node.args.args + node.args.kwonlyargs]
                if "comm" in names and "Parameters\n" not in (ast.get_docstring(node) or ""):
                    missing.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} {node.name}")
    assert not missing, missing
