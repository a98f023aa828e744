"""The package's structure: no module imports one that (through others) imports it back,
lazy imports inside functions included (``if TYPE_CHECKING:`` blocks are not imports)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "memfuse_lite"


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _runtime_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement but those under ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module → the package's modules it imports (a name imported from a package that is
    a module of its own counts as that module; a module's own packages do not count)."""
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = package.split(".")[: len(package.split(".")) - node.level + 1] \
                    if node.level else []
                module = ".".join([*base, node.module] if node.module else base) \
                    if node.level else (node.module or "")
                # a name that is a module of its own is that module, else the package's
                targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in modules
                           else module for a in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                # a module's own packages are imported before it anyway
                if target and target != name and not name.startswith(target + "."):
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_itself_back() -> None:
    graph = import_graph()
    assert len(graph) > 100 and graph["memfuse_lite.memory"], "the walk found the package"
    assert "memfuse_lite.retrieve.registry" in graph["memfuse_lite.memory"]
    assert cycles(graph) == []


LAYERS = (
    # base: words, times, records and the settings every layer reads
    {"errors", "timeutil", "config", "once", "heap", "prompts", "checksums", "text",
     "sources", "records", "event", "clock"},
    # the models, beside the stack: they know nothing of memories
    {"embed", "llm", "prepare"},
    {"index", "store"},
    {"fusion", "views"},
    # the assembly of store, indexes, models and fusion, and the operations on it
    {"engine", "derived", "ops"},
    {"ingest", "retrieve", "answer"},
    # the face: the API, the commands, the servers, the importers, sync
    {"__init__", "__main__", "memory", "cli", "mcp_server", "ui", "demo", "jsonl", "sync",
     "sync_keys", "importers"},
)
"""The package's layers, lowest first: a module imports from its own layer or lower ones."""


def _layer(module: str) -> int:
    part = module.split(".")[1] if module.count(".") else "__init__"
    return next(n for n, names in enumerate(LAYERS) if part in names)


def layer_breaches(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                  if _layer(b) > _layer(a))


def test_each_layer_imports_only_layers_below_it() -> None:
    graph = import_graph()
    assert layer_breaches(graph) == []
    # the check can fail: an index reaching up into the operations is a breach
    assert layer_breaches({"memfuse_lite.index.dense": {"memfuse_lite.ops.rebuild"}}) == [
        "memfuse_lite.index.dense -> memfuse_lite.ops.rebuild"]
