"""No import circles: every module of ppviz (and of bench/) imports only modules that do not import
it back, directly or through others. Imports inside functions count too: a circle hidden in a
function still ties the two modules together."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _module_of(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path, top: str) -> dict[str, Path]:
    """Every module under ``root / top`` by dotted name (``top`` itself when it is a package)."""
    base = root / top
    if (base / "__init__.py").exists():
        return {_module_of(p, root): p for p in sorted(base.rglob("*.py"))}
    return {p.stem: p for p in sorted(base.glob("*.py"))}


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The known modules ``name`` imports anywhere in its file (``from a import b`` names the
    submodule a.b when there is one, else the module a)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if package else []
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in known else source for a in node.names]
        else:
            continue
        out.update(t for t in targets if t in known and t != name)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle through each strongly connected set of more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.remove(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def graph_of(root: Path, top: str) -> dict[str, set[str]]:
    known = modules(root, top)
    return {name: imports_of(name, path, known) for name, path in known.items()}


def test_the_finder_sees_a_circle_through_a_function_level_import(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from .a import x\n    return x\n")
    (pkg / "c.py").write_text("from pkg import a\n")
    assert cycles(graph_of(tmp_path, "pkg")) == [["pkg.a", "pkg.b"]]


def test_ppviz_has_no_import_circle():
    assert cycles(graph_of(ROOT, "ppviz")) == []


def test_bench_has_no_import_circle():
    assert cycles(graph_of(ROOT, "bench")) == []
