"""The embedding backends and the static model side by side, on real text (part of
``benchmarks/features.py``; run alone with ``benchmarks/features.py --part backends``).

Texts: paragraphs of the plain-text files under ``/usr/share/doc`` (READMEs, changelogs,
copyright notices, Debian notes; gzip'd ones read too), as short texts (40-200 characters)
and as ~2,000-character documents (consecutive paragraphs of one file joined). Every variant
embeds the same texts in one process with one thread (what each of two workers gets on two
cores), in interleaved rounds: round r runs every variant once, so a burst of load from the
other users of the host hits all variants alike. A variant's speed is reported as the median
over rounds of its time relative to torch float32 in the same round.

Agreement: per row, the cosine of a variant's vector to torch float32's; min and median.

The static model's selection loss, on a corpus of real paragraphs with the built-in
heuristic quality:

* DATAMASK (pairwise, lam 0.5, ratio 0.1) run on static vectors and on MiniLM's; both
  selections scored with the pairwise objective **under MiniLM's vectors**; the static one's
  gain over a random selection as a share of MiniLM's gain over the same random selection;
* ``dedup --kind semantic`` (eps 0.05) with each model on the corpus plus planted
  near-duplicates (a copy of a document with ~5% of its words dropped): the share of planted
  pairs found, and the other rows removed.
"""

from __future__ import annotations

import gzip
import os
import random
import re
import time

import numpy as np

DOC_ROOT = "/usr/share/doc"


def doc_files(root: str = DOC_ROOT) -> list[str]:
    out = []
    for d, _, files in os.walk(root):
        for f in sorted(files):
            p = os.path.join(d, f)
            base = f[:-3] if f.endswith(".gz") else f
            if os.path.islink(p) or not ("." not in base or base.endswith((".txt", ".md", ".rst", ".Debian"))):
                continue
            out.append(p)
    return sorted(out)


def paragraphs(path: str) -> list[str]:
    try:
        with gzip.open(path) if path.endswith(".gz") else open(path, "rb") as fh:
            raw = fh.read(200_000)
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError, EOFError):
        return []
    if "\x00" in text:
        return []
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip()]


def real_texts(n_short: int, n_long: int, n_corpus: int, seed: int = 0):
    """Short texts, ~2,000-character documents and a corpus of 100-1,500-character paragraphs."""
    rng = random.Random(seed)
    files = doc_files()
    rng.shuffle(files)
    seen: set = set()
    short, long, corpus = [], [], []
    for f in files:
        paras = [p for p in paragraphs(f) if p not in seen]
        seen.update(paras)
        cur = ""
        for p in paras:
            if 40 <= len(p) <= 200 and len(short) < n_short and rng.random() < 0.3:
                short.append(p)
            elif 100 <= len(p) <= 1500 and len(corpus) < n_corpus and rng.random() < 0.5:
                corpus.append(p)
            elif len(long) < n_long:
                cur = (cur + " " + p).strip()
                if len(cur) >= 2000:
                    long.append(cur[:2200])
                    cur = ""
        if len(short) >= n_short and len(long) >= n_long and len(corpus) >= n_corpus:
            break
    return short, long, corpus


def variants(cache_dir: str):
    """name -> Embedder; torch float32 first (the reference)."""
    from datamask.features.embed import Embedder

    v = {
        "torch float32": Embedder(device="cpu", compute="float32", num_threads=1),
        "torch auto": Embedder(device="cpu", num_threads=1),
        "onnx float32": Embedder(device="cpu", backend="onnx", num_threads=1, cache_dir=cache_dir),
        "openvino auto": Embedder(device="cpu", backend="openvino", num_threads=1, cache_dir=cache_dir),
        "openvino float32": Embedder(
            device="cpu", backend="openvino", compute="float32", num_threads=1, cache_dir=cache_dir
        ),
        "static": Embedder(model="static", cache_dir=cache_dir),
    }
    return v


class Int8Onnx:
    """ONNX Runtime on a dynamically quantised copy (int8 weights per channel, int8
    activations) of the cached export: measured as the candidate for ``--quantize int8``."""

    def __init__(self, cache_dir: str):
        from onnxruntime.quantization import QuantType, quantize_dynamic

        from datamask.features.backends import ExportedModel
        from datamask.features.embed import Embedder

        exported = Embedder(device="cpu", backend="onnx", num_threads=1, cache_dir=cache_dir).load()
        src = _onnx_paths(cache_dir)[0]
        dst = src.with_name("model-int8.onnx")
        if not dst.exists():
            quantize_dynamic(str(src), str(dst), per_channel=True, weight_type=QuantType.QInt8)
        self.model = ExportedModel(exported.st, "onnx", dst, 1)

    def encode(self, texts):
        from datamask.features.batching import encode_ahead

        v = encode_ahead(self.model, list(texts), 32, 1)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def _onnx_paths(cache_dir: str):
    from pathlib import Path

    return sorted(Path(cache_dir).rglob("onnx-opset*/model.onnx"))


def speed_and_agreement(embedders: dict, sets: dict, rounds: int):
    """``{set: {variant: (rows/s, ratio to torch float32, cos min, cos median)}}``."""
    out = {}
    for set_name, texts in sets.items():
        for e in embedders.values():
            e.encode(texts[:8])  # load, build, first batch
        times = {k: [] for k in embedders}
        vecs = {}
        for _ in range(rounds):
            for k, e in embedders.items():
                t = time.perf_counter()
                vecs[k] = e.encode(texts)
                times[k].append(time.perf_counter() - t)
        ref = vecs["torch float32"]
        res = {}
        for k in embedders:
            ratio = float(np.median(np.array(times["torch float32"]) / np.array(times[k])))
            cos = (vecs[k] * ref).sum(axis=1) if vecs[k].shape == ref.shape else None
            res[k] = (
                len(texts) / float(np.median(times[k])),
                ratio,
                None if cos is None else float(cos.min()),
                None if cos is None else float(np.median(cos)),
            )
        out[set_name] = res
    return out


def _near_copy(text: str, rng: random.Random) -> str:
    words = text.split()
    keep = [w for w in words if rng.random() > 0.05] or words
    return " ".join(keep)


def selection_loss(corpus: list[str], minilm, static, seed: int = 0) -> dict:
    """The static model's share of MiniLM's selection gain and semantic-dedup recall."""
    from datamask import DataMask
    from datamask.dedup import Deduplicator
    from datamask.estimator.evaluate import evaluate
    from datamask.features.heuristics import heuristic_scores

    q = heuristic_scores(corpus)["heuristics"].to_numpy(dtype=np.float64)
    em = minilm.encode(corpus)
    t = time.perf_counter()
    es = static.encode(corpus)
    static_rps = len(corpus) / (time.perf_counter() - t)
    objective = {}
    for name, E in (("minilm", em), ("static", es)):
        mask = DataMask(ratio=0.1, lam=0.5, diversity="pairwise", seed=seed).fit(E, q).mask_
        objective[name] = evaluate(em, q, np.asarray(mask))["objective"]
    rs = np.random.default_rng(seed)
    rand = [evaluate(em, q, rs.permutation(len(corpus)) < round(0.1 * len(corpus)))["objective"] for _ in range(20)]
    base = float(np.mean(rand))
    share = (objective["static"] - base) / (objective["minilm"] - base)

    rng = random.Random(seed)
    picks = rng.sample(range(len(corpus)), len(corpus) // 5)
    dup_texts = corpus + [_near_copy(corpus[i], rng) for i in picks]
    pairs = [(i, len(corpus) + j) for j, i in enumerate(picks)]
    qd = np.concatenate([q, heuristic_scores(dup_texts[len(corpus) :])["heuristics"].to_numpy(dtype=np.float64)])
    dedup = {}
    for name, enc in (("minilm", minilm), ("static", static)):
        E = np.concatenate([em if name == "minilm" else es, enc.encode(dup_texts[len(corpus) :])])
        d = Deduplicator(kind="semantic", eps=0.05, seed=seed).fit(embeddings=E, quality=qd)
        gone = d.duplicate_of_ >= 0
        found = sum(1 for a, b in pairs if gone[a] or gone[b])
        planted_rows = {x for p in pairs for x in p}
        other = int(sum(1 for i in np.flatnonzero(gone) if i not in planted_rows))
        dedup[name] = (found / len(pairs), other)
    return {
        "objective": objective,
        "random": base,
        "share": share,
        "static_rows_per_s": static_rps,
        "dedup": dedup,
        "n": len(corpus),
        "n_pairs": len(pairs),
    }


def _f(x, fmt="{:.5f}"):
    return "-" if x is None else fmt.format(x)


def render(speed: dict, loss: dict, meta: dict) -> str:
    """The markdown section for benchmarks/results/features.md."""
    lines = [
        SECTION,
        "",
        f"Generated by `{meta['command']}` on {meta['date']}; load average at start "
        f"{meta['load'][0]:.2f} / {meta['load'][1]:.2f} / {meta['load'][2]:.2f} on {meta['cores']} cores "
        f"(shared with other jobs), {meta['rounds']} interleaved rounds, whole part {meta['wall']:.0f} s. "
        f"Real text from /usr/share/doc: {meta['n_short']} short texts (40-200 characters), "
        f"{meta['n_long']} ~2,000-character documents (truncated at 256 tokens, word cut first). "
        "One process, one thread per variant (a worker's share of a core); batch 32. "
        "`x torch fp32` is the median over rounds of torch float32's time divided by the variant's "
        "in the same round; cosine is per row, to torch float32's vector of the same text.",
        "",
        "| texts | backend | rows/s per worker | x torch fp32 | cosine min | cosine median |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for set_name, res in speed.items():
        for k, (rps, ratio, cmin, cmed) in res.items():
            lines.append(f"| {set_name} | {k} | {rps:,.1f} | {ratio:.2f} | {_f(cmin)} | {_f(cmed)} |")
    o = loss["objective"]
    dm, ds = loss["dedup"]["minilm"], loss["dedup"]["static"]
    lines += [
        "",
        f"Static model (model2vec, PCA 256, from the default MiniLM; {loss['static_rows_per_s']:,.0f} rows/s on the "
        f"{loss['n']:,} corpus paragraphs below), what a selection made on it loses, on {loss['n']:,} real "
        "paragraphs (100-1,500 characters) with the built-in heuristic quality:",
        "",
        "| measure | on MiniLM vectors | on static vectors | static as a share of MiniLM |",
        "| --- | ---: | ---: | ---: |",
        f"| DATAMASK pairwise objective under MiniLM (ratio 0.1, lam 0.5; random selection: {loss['random']:.4f}) "
        f"| {o['minilm']:.4f} | {o['static']:.4f} | {loss['share']:.2f} of the gain over random |",
        f"| `dedup --kind semantic` (eps 0.05): planted near-duplicate pairs found, of {loss['n_pairs']} "
        f"| {dm[0]:.2f} | {ds[0]:.2f} | {ds[0] / dm[0] if dm[0] else float('nan'):.2f} |",
        f"| ... other rows removed (not planted) | {dm[1]} | {ds[1]} | |",
    ]
    return "\n".join(lines) + "\n"


SECTION = "## CPU backends and the static model"
