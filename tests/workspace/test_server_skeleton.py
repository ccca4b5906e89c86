"""Every server follows the one skeleton written down in shared/README.md ("Server skeleton").

Read from the source, without importing a server: the files every server has, logic modules free of
FastMCP and the MCP SDK, no server importing another, no module over 500 lines, no import cycle within a
server. A gap a server's owner has yet to close is marked xfail (not strict) with what is wrong, in
``KNOWN_GAPS``: remove the entry with the fix.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVERS = ("sqlite", "git", "tasks", "name-origin")
MAX_LINES = 500
MCP_PACKAGES = ("fastmcp", "mcp")

# The protocol layer (the only modules that may import fastmcp or mcp), as module paths inside a server's
# package: server.py, __main__.py, toolsets/, and the MCP surfaces some servers have beside their tools.
PROTOCOL = ("server", "__main__", "toolsets", "resources", "prompts", "subscriptions")
PROTOCOL_EXTRA = {
    "git": ("roots",),  # MCP roots: a middleware asking the client for its roots in either protocol era
    # actors: who a call acts as (FastMCP's bearer-token verification over HTTP); write_limits: the middleware
    # that spends a write from the actor's shared budget (the bucket itself is store/budget.py); board_view: the
    # board's MCP Apps resource and its /board routes (the board's models and read are board.py, store/board.py)
    "tasks": ("actors", "write_limits", "board_view"),
}

# (check, server) -> what is wrong today; the owner removes the entry with the fix.
KNOWN_GAPS: dict[tuple[str, str], str] = {}


@dataclass
class Module:
    name: str  # dotted, inside the package: "toolsets.predict", "__init__", "store"
    path: Path
    tree: ast.Module
    lines: int
    # What it imports at run time: (absolute module, names taken from it); () for a plain ``import``.
    statements: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)

    @property
    def imports(self) -> set[str]:
        """Every name it imports, as absolute dotted names (a ``from`` import's names included)."""
        found = set()
        for target, names in self.statements:
            found.add(target)
            found.update(f"{target}.{name}" for name in names)
        return found


@cache
def package_dir(server: str) -> Path:
    (package,) = (ROOT / "servers" / server / "src").glob("dockyard_*")
    return package


@cache
def modules(server: str) -> dict[str, Module]:
    package = package_dir(server)
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).with_suffix("").parts
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        name = ".".join(parts)
        text = path.read_text(encoding="utf-8")
        module = Module(name, path, ast.parse(text), len(text.splitlines()))
        module.statements = _imports(module, package.name, is_package=path.name == "__init__.py")
        found[name] = module
    return found


def _type_checking_only(tree: ast.Module) -> set[int]:
    """ids of the import nodes under ``if TYPE_CHECKING:`` (they never run, so they make no cycle)."""
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                for inner in ast.walk(child):
                    skipped.add(id(inner))
    return skipped


def _imports(module: Module, package: str, *, is_package: bool) -> list[tuple[str, tuple[str, ...]]]:
    """Every import ``module`` makes at run time, at its top or inside a function, made absolute."""
    own = module.name.split(".") if module.name != "__init__" else []
    here = [package, *own] if is_package else [package, *own[:-1]]  # the package a relative import starts in
    skipped = _type_checking_only(module.tree)
    statements: list[tuple[str, tuple[str, ...]]] = []
    for node in ast.walk(module.tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            statements.extend((alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            statements.append((target, tuple(alias.name for alias in node.names)))
    return statements


def internal_graph(server: str) -> dict[str, set[str]]:
    """Module → the modules of the same server it imports (names that are not modules are dropped)."""
    package = package_dir(server).name
    found = modules(server)
    by_absolute = {package if name == "__init__" else f"{package}.{name}": name for name in found}
    graph: dict[str, set[str]] = {}
    for name, module in found.items():
        edges = set()
        for target, names in module.statements:
            submodules = {by_absolute[f"{target}.{n}"] for n in names if f"{target}.{n}" in by_absolute}
            edges |= submodules
            # ``from . import engine`` needs the submodule only; ``from .store import X`` needs the package.
            if target in by_absolute and (not names or len(submodules) < len(names)):
                edges.add(by_absolute[target])
        graph[name] = edges - {name}
    return graph


def is_protocol(server: str, name: str) -> bool:
    head = name.split(".")[0]
    return head in PROTOCOL or head in PROTOCOL_EXTRA.get(server, ())


def check(name: str) -> list:
    """One pytest param per server, xfail where KNOWN_GAPS says the server does not follow it yet."""
    params = []
    for server in SERVERS:
        reason = KNOWN_GAPS.get((name, server))
        marks = [pytest.mark.xfail(reason=reason, strict=False)] if reason else []
        params.append(pytest.param(server, id=server, marks=marks))
    return params


def test_the_servers_are_the_four_the_skeleton_covers():
    assert sorted(p.name for p in (ROOT / "servers").iterdir() if (p / "pyproject.toml").exists()) == sorted(
        SERVERS
    )


@pytest.mark.parametrize("server", check("files"))
def test_each_server_has_settings_server_toolsets_and_models(server):
    package = package_dir(server)
    missing = [
        name
        for name in ("settings.py", "server.py", "models.py", "__main__.py", "toolsets/__init__.py")
        if not (package / name).is_file()
    ]
    assert missing == [], f"{server} lacks {missing}"
    tree = modules(server)["server"].tree
    functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert "create_server" in functions, f"{server}'s server.py has no top-level create_server"


@pytest.mark.parametrize("server", check("flags"))
def test_flags_are_declared_in_settings_only(server):
    declaring = sorted(
        module.name
        for module in modules(server).values()
        if any(
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("add_argument", "add_argument_group", "add_mutually_exclusive_group")
            for node in ast.walk(module.tree)
        )
    )
    assert declaring in ([], ["settings"]), f"{server} declares flags in {declaring}"


@pytest.mark.parametrize("server", check("logic"))
def test_logic_modules_import_neither_fastmcp_nor_mcp(server):
    offenders = {
        module.name: sorted(target for target in module.imports if target.split(".")[0] in MCP_PACKAGES)
        for module in modules(server).values()
        if not is_protocol(server, module.name)
    }
    offenders = {name: found for name, found in offenders.items() if found}
    assert offenders == {}, f"{server}: logic modules importing the MCP layer: {offenders}"


@pytest.mark.parametrize("server", check("isolation"))
def test_no_server_imports_another(server):
    others = {package_dir(other).name for other in SERVERS if other != server}
    found = {
        module.name: sorted(target for target in module.imports if target.split(".")[0] in others)
        for module in modules(server).values()
    }
    found = {name: targets for name, targets in found.items() if targets}
    assert found == {}, f"{server} imports another server: {found}"


@pytest.mark.parametrize("server", check("size"))
def test_no_module_is_over_500_lines(server):
    long = {module.name: module.lines for module in modules(server).values() if module.lines > MAX_LINES}
    assert long == {}, f"{server}: modules over {MAX_LINES} lines: {long}"


@pytest.mark.parametrize("server", check("cycles"))
def test_no_import_cycle_within_a_server(server):
    graph = internal_graph(server)
    cycles = _cycles(graph)
    assert cycles == [], f"{server}: import cycles (function-local imports included): {cycles}"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_checks_see_what_they_check():
    """The readers find what is there: an import inside a function, a cycle, a relative import's target."""
    name_origin = modules("name-origin")
    assert "dockyard_name_origin.server" in name_origin["__main__"].imports  # imported inside build()
    assert "fastmcp" in name_origin["server"].imports
    assert "dockyard_name_origin.toolsets.predict" in name_origin["server"].imports
    assert "dockyard_name_origin.predict" in name_origin["toolsets.predict"].imports
    assert internal_graph("name-origin")["__main__"] >= {"server", "settings"}
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    assert is_protocol("git", "roots") and not is_protocol("sqlite", "roots")
    assert "store.engine" in internal_graph("tasks")["store"]  # a relative import inside a package
