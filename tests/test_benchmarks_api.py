"""Every script in ``benchmarks/`` speaks today's API (issue 51: a script whose results file the
docs cite must run again).

Read from each script's syntax tree and checked against the real code, not a list of removed
names: an import of a ``datamask`` module or name that does not exist; a call of a ``datamask``
function or class with a keyword its signature does not take (also the keys of a ``dict(...)`` or
``{...}`` the call spreads with ``**name``, and of a dataclass's ``from_dict({...})``); a key of a
literal ``solver_params`` mapping that is not one of ``SOLVER_PARAMS``; and a flag in a
``datamask`` command line (a list or call whose first word is a command's name) that
:func:`datamask.cli.build_parser` does not give that command or ``datamask`` itself.
An import inside ``try: ... except ImportError`` (a fallback for an older checkout) is skipped."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted((ROOT / "benchmarks").glob("*.py"))


def _fallback_imports(tree) -> set:
    """Import nodes inside a ``try`` whose handler catches ImportError (an older checkout's name)."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            names = {ast.unparse(h.type) for h in node.handlers if h.type is not None}
            if names & {"ImportError", "ModuleNotFoundError"}:
                skip |= {id(n) for stmt in node.handlers for n in ast.walk(stmt)}
    return skip


def _imports(tree) -> tuple[dict, list]:
    """``{local name: (module, attribute or None)}`` of the script's datamask imports, and problems."""
    bound, bad, skip = {}, [], _fallback_imports(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "datamask":
            for a in node.names:
                bound[a.asname or a.name] = (node.module, a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "datamask" and a.asname:
                    bound[a.asname] = (a.name, None)
    for module, attr in sorted(set(bound.values()), key=str):
        try:
            mod = importlib.import_module(module)
        except ImportError as e:
            bad.append(f"import {module}: {e}")
            continue
        if attr is not None and not hasattr(mod, attr):
            try:
                importlib.import_module(f"{module}.{attr}")
            except ImportError:
                bad.append(f"from {module} import {attr}: no such name")
    return bound, bad


def _resolve(func, bound):
    """The real object a call's ``func`` names (``DataMask``, ``T.initial_state``,
    ``SelectConfig.from_dict``), or None."""
    parts = []
    while isinstance(func, ast.Attribute):
        parts.insert(0, func.attr)
        func = func.value
    if not isinstance(func, ast.Name) or func.id not in bound:
        return None
    module, attr = bound[func.id]
    try:
        obj = importlib.import_module(module)
        for p in ([attr] if attr else []) + parts:
            obj = getattr(obj, p) if hasattr(obj, p) else importlib.import_module(f"{obj.__name__}.{p}")
    except (ImportError, AttributeError):
        return None
    return obj


def _dict_keys(node, assigned) -> set:
    """Constant keys of a ``{...}`` or ``dict(...)`` literal, following ``dict(NAME, ...)`` and
    ``{**NAME}`` through ``assigned`` (a scope's ``NAME = dict(...)``)."""
    keys = set()
    if isinstance(node, ast.Dict):
        for k, v in zip(node.keys, node.values):
            if isinstance(k, ast.Constant) and isinstance(k.value, str):
                keys.add(k.value)
            elif k is None:
                keys |= _dict_keys(v, assigned)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        keys |= {k.arg for k in node.keywords if k.arg}
        for a in list(node.args) + [k.value for k in node.keywords if k.arg is None]:
            keys |= _dict_keys(a, assigned)
    elif isinstance(node, ast.Name):
        for value in assigned.get(node.id, ()):
            keys |= _dict_keys(value, assigned)
    return keys


def _assignments(body) -> dict:
    """``{name: [values]}`` of the plain ``NAME = ...`` statements in ``body`` (nested blocks too,
    not nested functions)."""
    out, todo = {}, list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out.setdefault(t.id, []).append(node.value)
        todo += [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt)]
    return out


def _scopes(tree):
    """The module and each function, with ``{name: [assigned values]}`` as seen from it (its own
    and its enclosing scopes'), each node walked once, in its innermost scope."""
    outer = {id(tree): _assignments(tree.body)}
    funcs = [tree]
    for fn in funcs:
        for node in ast.walk(fn):
            if node is not fn and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and id(node) not in outer:
                seen = {k: list(v) for k, v in outer[id(fn)].items()}
                for k, v in _assignments(node.body).items():
                    seen.setdefault(k, []).extend(v)
                outer[id(node)] = seen
                funcs.append(node)
    for fn in funcs:
        nodes, todo = [], list(ast.iter_child_nodes(fn))
        while todo:
            node = todo.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                nodes += node.args.defaults + node.args.kw_defaults + node.decorator_list
                continue
            nodes.append(node)
            todo += list(ast.iter_child_nodes(node))
        yield fn, [n for n in nodes if n is not None], outer[id(fn)]


def _accepts(obj):
    """The keyword names ``obj`` takes, or None when it takes any (``**kwargs``) or has no signature."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return None
    return {n for n, p in sig.parameters.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _forwarding(tree, bound) -> dict:
    """``{local function: (its name, the keywords it takes)}`` for the script's functions that pass
    their ``**kw`` on to a checked call (``def pg(E, q, **kw): DataMask(**kw)``), each taking its own
    parameters and what that call takes."""
    forwards, changed = {}, True
    while changed:
        changed = False
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef) or fn.args.kwarg is None or fn.name in forwards:
                continue
            own = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
            for call in ast.walk(fn):
                spread = [k for k in getattr(call, "keywords", ()) if k.arg is None]
                if not isinstance(call, ast.Call) or not any(
                    isinstance(k.value, ast.Name) and k.value.id == fn.args.kwarg.arg for k in spread
                ):
                    continue
                takes = _takes(call.func, bound, forwards)
                if takes is not None:
                    forwards[fn.name] = (own | takes[1]) if takes[1] is not None else None
                    changed = True
                    break
    return {k: v for k, v in forwards.items() if v is not None}


def _takes(func, bound, forwards):
    """(the real object, the keywords it takes or None for any) of a call's ``func``, or None."""
    if isinstance(func, ast.Name) and func.id in forwards:
        return func.id, forwards[func.id]
    obj = _resolve(func, bound)
    return None if obj is None else (obj, _accepts(obj))


def _binding(obj, node, name, takes) -> list:
    """A call with neither ``*args`` nor ``**kw`` that the signature cannot bind (too many positional
    arguments, a required one missing); an unknown keyword is the keyword check's to name."""
    spread = any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords)
    if spread or isinstance(obj, str):
        return []
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return []
    try:
        sig.bind(*([None] * len(node.args)), **{k.arg: None for k in node.keywords if takes is None or k.arg in takes})
    except TypeError as e:
        return [f"line {node.lineno}: {name}(): {e}"]
    return []


def _call_problems(tree, bound) -> list:
    from datamask.estimator.params import SOLVER_PARAMS

    bad, forwards = [], _forwarding(tree, bound)
    for _, nodes, assigned in _scopes(tree):
        for node in nodes:
            if not isinstance(node, ast.Call):
                continue
            for k in node.keywords:
                if k.arg == "solver_params":
                    extra = _dict_keys(k.value, assigned) - set(SOLVER_PARAMS)
                    bad += [f"line {node.lineno}: solver_params key {x!r} is not in SOLVER_PARAMS" for x in extra]
            found = _takes(node.func, bound, forwards)
            if found is None:
                continue
            (obj, takes), name = found, ast.unparse(node.func)
            if inspect.ismethod(obj) and obj.__name__ == "from_dict" and dataclasses.is_dataclass(obj.__self__):
                fields = {f.name for f in dataclasses.fields(obj.__self__)}
                keys = _dict_keys(node.args[0], assigned) if node.args else set()
                bad += [f"line {node.lineno}: {name}() key {x!r} is not a field" for x in sorted(keys - fields)]
                continue
            bad += _binding(obj, node, name, takes)
            if takes is None:
                continue
            given = {k.arg for k in node.keywords if k.arg}
            for k in node.keywords:
                if k.arg is None:
                    given |= _dict_keys(k.value, assigned)
            bad += [f"line {node.lineno}: {name}() takes no keyword {x!r}" for x in sorted(given - takes)]
    return sorted(set(bad), key=lambda b: (int(b.split()[1].rstrip(":")), b) if b.startswith("line") else (0, b))


def _parser_flags() -> dict:
    """``{command: (the flags it takes, the keys its --set takes or None for any)}``,
    ``datamask``'s own flags added to each."""
    from datamask.cli import _set_keys, build_parser

    parser = build_parser()
    own = set(parser._option_string_actions)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out = {}
    for name, p in sub.choices.items():
        listed = "--set" in p._option_string_actions and ":" in (p._option_string_actions["--set"].help or "")
        out[name] = (own | set(p._option_string_actions), _set_keys(p) if listed else None)  # run: any key
    return out


def _words(elts, assigned) -> list:
    """A command line's words: ``*q`` (``q`` a literal of the scope) and ``*([...] if c else [])`` opened."""
    out = []
    for w in elts:
        if not isinstance(w, ast.Starred):
            out.append(w)
        elif isinstance(w.value, ast.Name):
            for v in assigned.get(w.value.id, ()):
                out += _words(v.elts, assigned) if isinstance(v, (ast.List, ast.Tuple)) else []
        else:
            for v in ast.walk(w.value):
                out += _words(v.elts, assigned) if isinstance(v, (ast.List, ast.Tuple)) else []
    return out


def _text(w) -> str | None:
    """A word's text (an f-string's up to its first field), or None."""
    if isinstance(w, ast.Constant) and isinstance(w.value, str):
        return w.value
    if isinstance(w, ast.JoinedStr) and w.values and isinstance(w.values[0], ast.Constant):
        return w.values[0].value
    return None


def _command_lines(nodes, assigned, commands) -> list:
    """``[(command, [(line, word)])]``: each list, tuple or call whose first word is a datamask
    command's name (or ``datamask``/``-m``/``-c`` before it), with what extends it (``NAME += [...]``)."""
    found = []
    for node in nodes:
        elts = node.elts if isinstance(node, (ast.List, ast.Tuple)) else node.args if isinstance(node, ast.Call) else []
        consts = [w.value for w in elts if isinstance(w, ast.Constant) and isinstance(w.value, str)]
        command = next((c for c in consts if c in commands), None)
        if command is None or consts[0] not in (command, "datamask", "datamask.cli", "-m", "-c"):
            continue
        words = [(node.lineno, w) for w in _words(elts, assigned)]
        names = [
            t.id
            for p in nodes
            if isinstance(p, ast.Assign) and p.value is node
            for t in p.targets
            if isinstance(t, ast.Name)
        ]
        for aug in nodes:
            if isinstance(aug, ast.AugAssign) and getattr(aug.target, "id", None) in names:
                words += [(aug.lineno, w) for w in _words([ast.Starred(aug.value)], assigned)]
        found.append((command, words))
    return found


def _argv_problems(tree, flags) -> list:
    """Flags, and ``--set`` keys, of the datamask command lines in ``tree`` that the command does not take."""
    from datamask.estimator.params import SOLVER_PARAMS

    bad = []
    for _, nodes, assigned in _scopes(tree):
        for command, words in _command_lines(nodes, assigned, flags):
            takes, keys = flags[command]
            for i, (lineno, w) in enumerate(words):
                text = _text(w)
                if text is None or not text.startswith("--"):
                    continue
                if text.split("=", 1)[0] not in takes:
                    bad.append(f"line {lineno}: datamask {command} takes no {text.split('=', 1)[0]}")
                nxt = _text(words[i + 1][1]) if text == "--set" and i + 1 < len(words) else None
                if nxt is not None and "=" in nxt and keys is not None:
                    key = nxt.split("=", 1)[0]
                    sub = key.split(".", 1)[1] if key.startswith("solver_params.") else None
                    if (key not in keys and sub is None) or (sub is not None and sub not in SOLVER_PARAMS):
                        bad.append(f"line {lineno}: datamask {command} --set takes no key {key}")
    return sorted(set(bad))


@pytest.fixture(scope="module")
def flags():
    return _parser_flags()


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_a_benchmark_uses_only_what_the_package_has(script, flags):
    tree = ast.parse(script.read_text(), filename=str(script))
    bound, bad = _imports(tree)
    bad += _call_problems(tree, bound) + _argv_problems(tree, flags)
    assert bad == [], f"benchmarks/{script.name}:\n  " + "\n  ".join(bad)


def test_the_checker_finds_what_it_checks(flags):
    """Each check fails on a line written as 0.2 wrote it (so a pass above means something)."""
    src = (
        "from datamask import DataMask\n"
        "from datamask.pipeline.config import SelectConfig\n"
        "from datamask.pipeline.runner import plan_run\n"
        "PG = dict(method='datamask', init='quality')\n"
        "def f(E, q):\n"
        "    DataMask(**PG, lam=0.5).fit(E, q)\n"
        "    DataMask(solver_params={'steps': 5, 'stpes': 5})\n"
        "    SelectConfig.from_dict({'ratio': 0.1, 'n_threads': 1})\n"
        "    DataMask(0.1, 0.5)\n"
        "    cmd = ['select', 'in', 'out', '--ratio', '0.1']\n"
        "    cmd += ['--steps', '30', '--n-workers', '1', *(['--set', 'stpes=3'] if q else [])]\n"
        "    cmd += ['--set', f'solver_params.stpes={E}', '--set', 'solver_params.steps=3']\n"
    )
    tree = ast.parse(src)
    bound, bad = _imports(tree)
    bad += _call_problems(tree, bound) + _argv_problems(tree, flags)
    assert bad == [
        "from datamask.pipeline.runner import plan_run: no such name",
        "line 6: DataMask() takes no keyword 'init'",
        "line 7: solver_params key 'stpes' is not in SOLVER_PARAMS",
        "line 8: SelectConfig.from_dict() key 'n_threads' is not a field",
        "line 9: DataMask(): too many positional arguments",
        "line 11: datamask select --set takes no key stpes",
        "line 11: datamask select takes no --steps",
        "line 12: datamask select --set takes no key solver_params.stpes",
    ], bad
