"""One implementation of split planning and budget sharing, and no private name imported
across packages (docs/design.md, "Layout and layering"; issue 51): AST checks over the package,
as ``tests/test_layout.py`` checks the layering."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "datamask"

# The primitives of a selection's plan: cutting files into splits, counting a corpus's tokens,
# sharing a token budget out by split. Only the split job calls them; every selection (select,
# compare, the dataframe API, the search) goes through it (datamask/pipeline/split_job.py).
JOB = "datamask.pipeline.split_job"
PRIMITIVES = {
    "make_splits": "datamask.pipeline.io",
    "count_corpus_tokens": "datamask.pipeline.tokens",
    "apportion": "datamask.pipeline.tokens",
}


def _modules() -> dict:
    mods = {}
    for p in PKG.rglob("*.py"):
        parts = p.relative_to(PKG.parent).with_suffix("").parts
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return mods


def _package(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _target(n: ast.ImportFrom, pkg: str) -> str:
    """The absolute module an ``ImportFrom`` names."""
    if not n.level:
        return n.module or ""
    base = pkg.split(".")[: len(pkg.split(".")) - (n.level - 1)]
    return ".".join(base + ([n.module] if n.module else []))


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(mods: dict) -> list:
    """``module: name from other`` for every private name (a leading underscore) a module takes
    from a module of another package: ``from ..x import _f``, or ``x._f`` on a module it imported."""
    found = []
    for m, p in sorted(mods.items()):
        pkg = _package(m, p)
        tree = ast.parse(p.read_text())
        aliases = {}  # local name -> datamask module of another package
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom):
                target = _target(n, pkg)
                for a in n.names:
                    sub = f"{target}.{a.name}"
                    if sub in mods:  # a module: its private attributes are checked below
                        if _package(sub, mods[sub]) != pkg:
                            aliases[a.asname or a.name] = sub
                    elif target in mods and _package(target, mods[target]) != pkg and _private(a.name):
                        found.append(f"{m}: {a.name} from {target}")
            elif isinstance(n, ast.Import):
                for a in n.names:
                    if a.name in mods and a.asname and _package(a.name, mods[a.name]) != pkg:
                        aliases[a.asname] = a.name
        for n in ast.walk(tree):
            named = isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and _private(n.attr)
            if named and n.value.id in aliases:
                found.append(f"{m}: {n.attr} from {aliases[n.value.id]}")
    return found


def primitive_calls(mods: dict) -> list:
    """``module calls name`` for every call of a planning or sharing primitive outside the split job
    (and the primitive's own module)."""
    found = []
    for m, p in sorted(mods.items()):
        if m == JOB:
            continue
        for n in ast.walk(ast.parse(p.read_text())):
            if not isinstance(n, ast.Call):
                continue
            f = n.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name in PRIMITIVES and PRIMITIVES[name] != m:
                found.append(f"{m} calls {name}")
    return found


def test_no_private_name_crosses_a_package():
    bad = private_imports(_modules())
    assert not bad, "private names imported across packages (make them public or move them):\n" + "\n".join(bad)


def test_one_split_plan_and_budget_sharing():
    bad = primitive_calls(_modules())
    assert not bad, (
        f"a second split planning or budget sharing: only {JOB} may call these (plan through SplitJob, "
        "plan_splits, file_splits or cut; share through TokenCounts):\n" + "\n".join(bad)
    )


def test_the_checks_see_what_they_forbid(tmp_path):
    """Each check finds the thing it forbids in a package that has it (so a pass is not vacuous)."""
    pkg = tmp_path / "datamask"
    for d in ("analysis", "pipeline"):
        (pkg / d).mkdir(parents=True)
        (pkg / d / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "pipeline" / "tokens.py").write_text("def _count_split(): ...\ndef apportion(): ...\n")
    (pkg / "analysis" / "a.py").write_text(
        "from ..pipeline.tokens import _count_split, apportion\n\ndef f():\n    return apportion(_count_split())\n"
    )
    (pkg / "analysis" / "b.py").write_text(
        "from ..pipeline import tokens\n\ndef g():\n    return tokens._count_split(), tokens.apportion()\n"
    )
    mods = {}
    for p in pkg.rglob("*.py"):
        parts = p.relative_to(tmp_path).with_suffix("").parts
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    assert private_imports(mods) == [
        "datamask.analysis.a: _count_split from datamask.pipeline.tokens",
        "datamask.analysis.b: _count_split from datamask.pipeline.tokens",
    ]
    assert primitive_calls(mods) == ["datamask.analysis.a calls apportion", "datamask.analysis.b calls apportion"]
