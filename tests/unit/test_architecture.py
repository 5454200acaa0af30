"""The layers of docs/architecture.md, enforced on every import -- including imports inside
functions -- with no cycle between modules, and the boundaries: only ui/ imports gradio, only
core/client talks chat through openai, only server/http speaks HTTP, only lab/ray_readers talks
to Ray."""

from __future__ import annotations

import ast
from pathlib import Path

from playground.settings import PACKAGE_DIR

# Lowest first: a module may import its own room and the rooms below it, never above.
ROOMS = ["base", "specs", "server", "core", "outputs", "lab", "claims", "ui", "cli"]
ONLY = {"gradio": "playground.ui", "openai": "playground.core.client",
        "httpx": "playground.server.http", "httpx2": "playground.server.http",
        "urllib.request": "playground.server.http", "aiohttp": "playground.core.wire",
        "langchain_openai": "playground.core.langchain_client", "langchain_core": "-",
        "requests": "-", "ray": "playground.lab.ray_readers"}
MAX_LINES = 300


def modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE_DIR.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def room(module: str) -> str:
    if module == "playground.__main__":  # `python -m playground`: the CLI's entry point
        return "cli"
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in ROOMS) else "base"


def imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, f"{path}:{node.lineno}: relative import"
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, path in mods.items():
        for _, name in imports(path):
            if name in mods and name != m:
                edges[m].add(name)
    return edges


def test_every_import_points_down_the_layers() -> None:
    mods = modules()
    wrong = []
    for m, path in mods.items():
        for line, name in imports(path):
            if name in mods and ROOMS.index(room(name)) > ROOMS.index(room(m)):
                wrong.append(f"{path.name}:{line} ({room(m)}) imports {name} ({room(name)})")
    assert not wrong, "upward imports:\n" + "\n".join(wrong)


def test_boundaries_gradio_openai_and_http_each_have_one_home() -> None:
    wrong = []
    for m, path in modules().items():
        for line, name in imports(path):
            for lib, home in ONLY.items():
                if (name == lib or name.startswith(lib + ".")) and not (
                        m == home or m.startswith(home + ".")):
                    wrong.append(f"{m}:{line} imports {name} (only {home} may)")
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles() -> None:
    edges = graph()
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for n in sorted(edges[m]):
            if state.get(n) == 1:
                cycles.append([*stack[stack.index(n):], n])
            elif n not in state:
                visit(n, [*stack, n])
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m, [m])
    assert not cycles, "cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_checker_sees_imports_inside_functions(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text("def f():\n    from playground.ui import app\n", "utf-8")
    assert (2, "playground.ui") in imports(src)


def test_modules_stay_small() -> None:
    big = {m: n for m, p in modules().items()
           if (n := len(p.read_text("utf-8").splitlines())) > MAX_LINES}
    assert not big, f"modules over {MAX_LINES} lines: {big}"
