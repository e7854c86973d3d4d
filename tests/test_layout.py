"""The package's layering: one package per layer, imports only downward, no cycle, small
modules, and ``import datamask`` without Dask or torch."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "datamask"
# lowest first; a module may import its own layer and the layers before it
LAYERS = (
    "errors",
    "core",
    "estimator",
    "methods",
    "features",
    "dedup",
    "runtime",
    "pipeline",
    "analysis",
    "stages",
    "dask",
    "cli",
)
MAX_LINES = 450  # the limit the codebase keeps (docs/design.md, "Layout and layering")
# A module that is one concern may be longer rather than cut in two to fit MAX_LINES; each is
# named here with its concern, and stays under MAX_ONE_CONCERN_LINES.
ONE_CONCERN = {
    "datamask.pipeline.config": "every stage's config dataclass on one base (select, embed, score, dedup): "
    "one place a flag or a YAML key is named, defaulted and checked",
}
MAX_ONE_CONCERN_LINES = 800
MAX_FUNCTION_LINES = 80  # a function longer than this is split by concern


def _modules() -> dict:
    mods = {}
    for p in PKG.rglob("*.py"):
        parts = p.relative_to(PKG.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = p
    return mods


def _imports(mods: dict) -> dict:
    """``{module: {imported datamask modules}}``, every import statement (lazy ones too)."""
    graph = {m: set() for m in mods}
    for m, p in mods.items():
        pkg = m if p.name == "__init__.py" else m.rpartition(".")[0]
        for n in ast.walk(ast.parse(p.read_text())):
            if isinstance(n, ast.ImportFrom):
                if n.level:
                    base = pkg.split(".")[: len(pkg.split(".")) - (n.level - 1)]
                    target = ".".join(base + ([n.module] if n.module else []))
                else:
                    target = n.module or ""
                cands = [target] + [f"{target}.{a.name}" for a in n.names]
            elif isinstance(n, ast.Import):
                cands = [a.name for a in n.names]
            else:
                continue
            for c in cands:
                if c in mods and c != m and not m.startswith(c + "."):
                    graph[m].add(c)
    return graph


# ``datamask.<package>`` inside a string the code uses: a "module:Class" registry, an
# import_module() or mock.patch() argument. Docstrings (a string standing alone as a
# statement) are documentation: they may say who calls a function, and are not read here.
_NAMED = re.compile(r"(?<![\w.])datamask\.(\w+)")


def _named_by_string(source: str) -> set:
    """The layer packages (``datamask.<package>``) that the code strings of ``source`` name."""
    tree = ast.parse(source)
    docs = {
        id(n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
    }
    return {
        f"datamask.{pkg}"
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
        for pkg in _NAMED.findall(n.value)
    }


def _layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else None


def _cycle(graph):
    """One import cycle as a list of modules, or None."""
    state, stack = {}, []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for c in sorted(graph[m]):
            if state.get(c) == 1:
                return stack[stack.index(c) :] + [c]
            if c not in state:
                found = visit(c)
                if found:
                    return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_no_import_cycle():
    graph = _imports(_modules())
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def test_the_cycle_check_finds_a_planted_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_every_module_belongs_to_a_layer():
    loose = [m for m in _modules() if m != "datamask" and _layer(m) is None]
    assert not loose, f"modules outside the layer packages {LAYERS}: {loose}"


def test_imports_only_go_down():
    upward = [
        f"{m} -> {c}"
        for m, cs in _imports(_modules()).items()
        for c in cs
        if _layer(m) is not None and _layer(c) is not None and _layer(c) > _layer(m)
    ]
    assert not upward, "imports from a higher layer: " + "; ".join(sorted(upward))


def test_strings_name_no_higher_layer():
    """A module path in a string is an import made later (``importlib.import_module``, a
    "module:Class" registry, a patch target): it may not name a layer above the module's own
    either, or the import test above could not see the dependency."""
    upward = [
        f"{m} -> {c}"
        for m, p in _modules().items()
        for c in _named_by_string(p.read_text())
        if _layer(m) is not None and _layer(c) is not None and _layer(c) > _layer(m)
    ]
    assert not upward, "strings that name a higher layer: " + "; ".join(sorted(upward))


def test_the_string_check_finds_a_planted_reference():
    source = 'REGISTRY = {"x": "datamask.cli.x:X"}\nf(importlib.import_module(f"datamask.dask.{name}"))\n'
    assert _named_by_string(source) == {"datamask.cli", "datamask.dask"}
    assert _named_by_string('"""Called by datamask.cli.main."""\nx = "mydatamask.cli, datamask_cli"\n') == set()


def test_modules_stay_small():
    """At most MAX_LINES lines a module, except the one-concern modules named in ONE_CONCERN (each
    under MAX_ONE_CONCERN_LINES); a name there that is no module, or no longer needs to be there,
    fails too, so the list stays short and true."""
    sizes = {m: len(p.read_text().splitlines()) for m, p in _modules().items()}
    big = {m: n for m, n in sizes.items() if n > (MAX_ONE_CONCERN_LINES if m in ONE_CONCERN else MAX_LINES)}
    assert not big, (
        f"modules over {MAX_LINES} lines (one concern, listed in ONE_CONCERN: {MAX_ONE_CONCERN_LINES}): {big}"
    )
    stale = sorted(m for m in ONE_CONCERN if sizes.get(m, 0) <= MAX_LINES)
    assert not stale, f"ONE_CONCERN lists modules that are missing or within {MAX_LINES} lines: {stale}"


def test_functions_stay_short():
    long = {
        f"{m}.{n.name}": size
        for m, p in _modules().items()
        for n in ast.walk(ast.parse(p.read_text()))
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        and (size := n.end_lineno - n.lineno + 1) > MAX_FUNCTION_LINES
    }
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


@pytest.mark.parametrize("heavy", ["dask", "distributed", "torch", "sentence_transformers", "cupy"])
def test_import_datamask_is_light(heavy):
    code = (
        "import sys, datamask; from datamask import DataMask, evaluate; "
        f"print(any(m == {heavy!r} or m.startswith({heavy!r} + '.') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", f"import datamask imports {heavy}"


def test_no_compatibility_shim():
    """0.3.0 keeps no old name alive: no import hook, no module ``__getattr__`` beyond the lazy
    imports of the package's own names, no hidden flag (the 0.2 names' removal is
    tests/cli/test_removed_names.py)."""
    lazy = {"datamask", "datamask.analysis.proxy_lm"}  # __getattr__ imports a public name on first use
    found = []
    for name, path in _modules().items():
        src = path.read_text()
        tree = ast.parse(src)
        top = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        defs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        if "__getattr__" in top | defs and name not in lazy:
            found.append(f"{name}: module __getattr__")
        for needle in ("meta_path", "argparse.SUPPRESS"):
            if needle in src:
                found.append(f"{name}: {needle}")
    assert not found, found
