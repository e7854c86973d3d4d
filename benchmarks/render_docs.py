"""Write the docs' benchmark figures from the results files: python benchmarks/render_docs.py [--check]

A figure the docs quote from a benchmark sits in a marked block of README.md, docs/*.md or the
latest entry of CHANGELOG.md::

    <!-- render: NAME -->text the renderer writes<!-- /render -->

(on one line, inside a sentence, or with the markers on lines of their own around whole
paragraphs or tables). The text is what the function registered as NAME in
``benchmarks/doc_blocks.py`` returns from the results files it names (JSON or CSV under
``benchmarks/results/``). This script rewrites every block; ``--check`` writes nothing and
exits 1 naming each block whose text differs from what it would write.

Every number a block function prints goes through :func:`num`, which refuses a number that
did not come from a results file: the loaders give :class:`Num` and :class:`Int` values, and
arithmetic on them keeps them so (a difference of two results is a result, ``num(14.8)`` is
an error); a string from a results file (a host, a label) goes through :func:`txt`. ``tests/test_docs_render.py`` renders every block with :func:`trace` on and fails
when a digit of a block's text lies outside what :func:`num` wrote (code spans in backticks,
commands and flags, are exempt), or when a block differs from the files. How to add one:
docs/design.md, "From a benchmark to the docs".
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
# a marker quoted in a code span (`<!-- render: ...`) is text, not a block
MARK = re.compile(r"(?<!`)<!-- render: ([a-z0-9_]+) -->(.*?)<!-- /render -->", re.S)
# what num() wrote, when tracing: the test strips these spans and looks for digits left over
TRACE_OPEN, TRACE_CLOSE = "\x02", "\x03"
WIDTH = 100  # the docs' line width, for a block's paragraphs
_tracing = False


# ---------------------------------------------------------------------- sourced numbers
class UnsourcedNumber(TypeError):
    """A block tried to print a number that came from no results file."""


def _sourced(value):
    if isinstance(value, bool) or value is NotImplemented:
        return value
    if isinstance(value, int):
        return Int(value)
    if isinstance(value, float):
        return Num(value)
    return value


def _op(base, name):
    method = getattr(base, name)

    def op(self, *args):
        out = method(self, *args)
        if out is NotImplemented and base is int:  # an Int with a float: as floats
            out = getattr(float, name)(float(self), *(float(a) if isinstance(a, int) else a for a in args))
        return _sourced(out)

    op.__name__ = name
    return op


_OPS = [
    "__add__",
    "__radd__",
    "__sub__",
    "__rsub__",
    "__mul__",
    "__rmul__",
    "__truediv__",
    "__rtruediv__",
    "__floordiv__",
    "__rfloordiv__",
    "__mod__",
    "__rmod__",
    "__pow__",
    "__rpow__",
    "__neg__",
    "__pos__",
    "__abs__",
    "__round__",
]


class Num(float):
    """A float read from a results file (or computed from such floats)."""


class Int(int):
    """An int read from a results file (or computed from such ints)."""


for _name in _OPS:
    setattr(Num, _name, _op(float, _name))
    setattr(Int, _name, _op(int, _name))


class Text(str):
    """A string read from a results file (a label, a host): :func:`txt` writes it."""


def _texts(value):
    if isinstance(value, str):
        return Text(value)
    if isinstance(value, list):
        return [_texts(v) for v in value]
    if isinstance(value, dict):
        return {k: _texts(v) for k, v in value.items()}
    return value


def count(items) -> Int:
    """How many ``items`` a results file holds, as a sourced number."""
    return Int(len(items))


def num(value, spec: str = "") -> str:
    """``format(value, spec)`` for a number read from the results (:class:`Num`, :class:`Int`);
    any other number raises :class:`UnsourcedNumber`."""
    if isinstance(value, bool) or not isinstance(value, (Num, Int)):
        raise UnsourcedNumber(f"num({value!r}): not read from a results file")
    text = format(value, spec)
    return f"{TRACE_OPEN}{text}{TRACE_CLOSE}" if _tracing else text


def txt(value) -> str:
    """A string read from the results (:class:`Text`), as it is; digits in it count as sourced."""
    if not isinstance(value, Text):
        raise UnsourcedNumber(f"txt({value!r}): not read from a results file")
    return f"{TRACE_OPEN}{value}{TRACE_CLOSE}" if _tracing else str(value)


@contextlib.contextmanager
def trace():
    """While on, :func:`num` marks what it writes (for the test's check of a block's digits)."""
    global _tracing
    _tracing, before = True, _tracing
    try:
        yield
    finally:
        _tracing = before


def untraced_digits(text: str) -> list:
    """The runs of text holding a digit that :func:`num` did not write (code spans exempt)."""
    rest = re.sub(f"{TRACE_OPEN}[^{TRACE_CLOSE}]*{TRACE_CLOSE}", "", text)
    rest = re.sub(r"`[^`]*`", "", rest)
    return re.findall(r"\S*\d\S*", rest)


# ---------------------------------------------------------------------- results files
def _cell(text: str):
    for kind in (Int, Num):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def load(name: str):
    """A results file under benchmarks/results/: JSON (numbers as :class:`Num` / :class:`Int`) or
    CSV (a list of rows, each a dict of its cells, numbers as above)."""
    path = RESULTS / name
    if name.endswith(".json"):
        return _texts(json.loads(path.read_text(), parse_float=Num, parse_int=Int))
    if name.endswith(".csv"):
        with open(path, newline="") as fh:
            return [{k: _texts(_cell(v)) for k, v in row.items()} for row in csv.DictReader(fh)]
    raise ValueError(f"{name}: a block reads JSON or CSV results, not {Path(name).suffix}")


# ---------------------------------------------------------------------- blocks
@dataclass(frozen=True)
class Block:
    name: str
    fn: object
    sources: tuple

    def render(self) -> str:
        return self.fn(*(load(s) for s in self.sources))


BLOCKS: dict = {}


def block(name: str, *sources: str):
    """Register ``fn(*loaded sources) -> text`` as the block NAME (a decorator)."""

    def register(fn):
        if name in BLOCKS:
            raise ValueError(f"block {name!r} registered twice")
        BLOCKS[name] = Block(name, fn, sources)
        return fn

    return register


def registry() -> dict:
    """Every block: ``benchmarks/doc_blocks.py`` registers them when imported."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import doc_blocks  # noqa: F401

    return BLOCKS


def doc_files() -> list:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "CHANGELOG.md"]


def marked(path: Path) -> list:
    """``(name, text between the markers, match)`` of each block in ``path``; in CHANGELOG.md,
    blocks outside its latest entry are refused (an older entry's figures are history)."""
    text = path.read_text()
    found = list(MARK.finditer(text))
    if path.name == "CHANGELOG.md":
        heads = [m.start() for m in re.finditer(r"(?m)^## \[", text)]
        end = heads[1] if len(heads) > 1 else len(text)
        old = [m.group(1) for m in found if m.start() > end]
        if old:
            raise ValueError(f"CHANGELOG.md: block(s) {', '.join(old)} outside the latest entry")
    return [(m.group(1), m.group(2), m) for m in found]


def fill(body: str, old: str) -> str:
    """The new text between the markers: on lines of their own when the old text was, its
    paragraphs wrapped at :data:`WIDTH` (not tables, lists or headings); else inline as it is."""
    if not old.startswith("\n"):
        return body
    paras = [
        p if re.match(r"[|#\-*>` ]|\d+\. ", p) or "\n" in p else textwrap.fill(p, WIDTH, break_on_hyphens=False)
        for p in body.strip("\n").split("\n\n")
    ]
    return "\n" + "\n\n".join(paras) + "\n"


def rendered(path: Path, blocks: dict) -> str:
    """``path``'s text with every block written anew."""
    text = path.read_text()

    def sub(m):
        name = m.group(1)
        if name not in blocks:
            raise KeyError(f"{path.name}: no block function named {name!r} in benchmarks/doc_blocks.py")
        return f"<!-- render: {name} -->{fill(blocks[name].render(), m.group(2))}<!-- /render -->"

    return MARK.sub(sub, text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 if a block is stale")
    args = ap.parse_args(argv)
    blocks = registry()
    stale = []
    for path in doc_files():
        for name, old, _ in marked(path):
            if name in blocks and fill(blocks[name].render(), old) != old:
                stale.append(f"{path.relative_to(ROOT)}: {name}")
        new = rendered(path, blocks)
        if not args.check and new != path.read_text():
            path.write_text(new)
    for s in stale:
        print(f"{'stale' if args.check else 'rewrote'}: {s}")
    return 1 if stale and args.check else 0


if __name__ == "__main__":  # as the module doc_blocks imports (one Num, one BLOCKS)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import render_docs

    sys.exit(render_docs.main())
