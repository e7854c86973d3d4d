"""What every trial of a search shares (common random numbers), made once by one Dask task.

:func:`prepare` reads the corpus's text (the splits, in order) and the evaluation sets, and
writes under ``OUTPUT/_search/prep/``:

``tokenizer.json``  the tokenizer every proxy model uses: ``--tokenizer`` when given (the one the
                    token budget counts in), else a byte-level BPE trained on a seeded sample of
                    the input's text (evaluation texts excluded), so no trial's selection shapes it
``eval.npz``        every evaluation set cut into the scored windows (the same documents and
                    windows judge every trial)
``rows.npz``        per input row: its near-duplicate group (exact and MinHash fuzzy dedup of the
                    whole input, :class:`datamask.dedup.Deduplicator`), whether it is a row of
                    an evaluation set (a leak, kept out of every selection: its exact text is in
                    one, or its id in a datamask holdout, :mod:`datamask.pipeline.exclude`), whether it
                    holds text to train on, and its token ids (every row tokenised once here:
                    the trials take their documents' ids from it, none tokenises again)
``prep.json``       the summary the client reads (written last): domains, quality components and
                    their min/max, leaks, tokenizer hash, evaluation sets

The initial weights and the data order are the proxy's seed's, the same in every trial.
:func:`load_prep` reads them back once per worker process and keeps them with the tokenizer
and each seed's initial weights (built once per process) until the preparation changes.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import uuid

import numpy as np

from ...runtime.files import write_json_atomic
from ...runtime.storage import Remote, location

__all__ = [
    "PREP_DIR",
    "prepare",
    "load_prep",
    "read_prep",
    "write_bytes_atomic",
    "quality_components",
    "Prep",
    "split_of",
]

PREP_DIR = "_search/prep"
#: what ``prep.json`` of this version holds (an older preparation is made again)
PREP_VERSION = 4
_CACHE: dict = {}


def write_bytes_atomic(data: bytes, path) -> None:
    """``path`` holds ``data`` whole or not at all (a rename locally; one object remotely)."""
    path = location(path)
    if isinstance(path, Remote):
        path.write_bytes(data)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex[:12]}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def quality_components(names, quality_column: str = "quality") -> list:
    """The input's quality component columns: ``quality_<name>``, in column order."""
    return [c for c in names if c.startswith(f"{quality_column}_")]


def _texts(df, column: str, where: str) -> list:
    from ...errors import DataError

    if column not in df.columns:
        raise DataError(
            f"{where}: no text column {column!r} (columns: {', '.join(map(str, df.columns))}); pass --set text_column=NAME"
        )
    return ["" if v is None or (isinstance(v, float) and v != v) else str(v) for v in df[column].tolist()]


def split_of(df, i: int) -> tuple:
    """(identity, where, first row) of the ``i``-th split, from the attrs its reader set."""
    from ...pipeline.frames import SPLIT_ATTR

    info = getattr(df, "attrs", {}).get(SPLIT_ATTR) or {}
    return info.get("identity", f"partition-{i}"), info.get("where", f"partition {i}"), int(info.get("start", 0))


def _corpus(parts, cfg):
    """Texts, ids, quality components' min/max and domains of the whole input (the splits in order)."""
    texts, ids, offsets, comps, lo, hi, doms = [], [], [0], None, {}, {}, set()
    for i, df in enumerate(parts):
        where = split_of(df, i)[1]
        texts += _texts(df, cfg.text_column, where)
        ids += df[cfg.id_column].tolist()
        offsets.append(len(texts))
        names = [str(c) for c in df.columns]
        comps = quality_components(names, cfg.quality_column) if comps is None else comps
        for c in comps:
            v = df[c].to_numpy(dtype=np.float64, na_value=np.nan)
            lo[c] = float(np.nanmin(v) if i == 0 else min(lo[c], np.nanmin(v)))
            hi[c] = float(np.nanmax(v) if i == 0 else max(hi[c], np.nanmax(v)))
        if cfg.domain_column in names:
            doms.update(str(v) for v in df[cfg.domain_column].tolist())
    stats = {c: [lo[c], hi[c]] for c in comps or []}
    return texts, ids, offsets, stats, sorted(doms, key=_domain_key)


def _domain_key(d: str):
    try:
        return (0, float(d), d)
    except ValueError:
        return (1, 0.0, d)


def _eval_npz(data) -> bytes:
    arrs = {}
    for i, ev in enumerate(data):
        arrs.update(
            {
                f"windows_{i}": ev.windows,
                f"doc_{i}": ev.doc,
                f"domain_{i}": np.asarray(ev.doc_domain, dtype=str),
                f"tokens_{i}": ev.doc_tokens,
                f"bytes_{i}": ev.doc_bytes,
            }
        )
    buf = io.BytesIO()
    np.savez(buf, **arrs)
    return buf.getvalue()


def prepare(*parts, out: str, cfg, fingerprint: str) -> dict:
    """(a Dask task) Build and write what every trial shares; returns the summary (``prep.json``)."""
    from ...dedup import Deduplicator
    from ...pipeline.exclude import load_excluded
    from ..proxy_lm.data import load_eval_sets
    from ..proxy_lm.tokenizer import load_tokenizer, sample_for_tokenizer, train_bpe
    from ..proxy_lm.train import prepare_eval

    root = location(out) / PREP_DIR
    r = cfg.proxy_config().resolved()
    texts, ids, offsets, stats, domains = _corpus(parts, cfg)
    evals = load_eval_sets(cfg.eval, cfg.text_column, None)
    excluded = load_excluded(cfg.excluded_sets(), cfg.text_column)
    leak = excluded.match(np.asarray(ids), texts)[0]
    dd = Deduplicator(kind="exact,fuzzy").fit(np.asarray(texts, dtype=object))
    groups = np.where(dd.duplicate_of_ >= 0, dd.duplicate_of_, np.arange(len(texts)))
    train_texts = [t for t, k in zip(texts, leak) if t.strip() and not k]
    if cfg.tokenizer:  # the tokens the budget counts are the tokens the proxies train in
        tok = load_tokenizer(cfg.tokenizer)
    else:
        tok = train_bpe(sample_for_tokenizer([train_texts], r.tokenizer_sample_chars, r.sample_seed), r.vocab_size)
    data = [prepare_eval(e.name, e.texts, e.domains, tok, r.seq_len, r.eval_tokens, r.sample_seed) for e in evals]
    usable = np.fromiter((bool(t.strip()) for t in texts), dtype=bool, count=len(texts))
    ids = tok.encode(texts)
    starts = np.zeros(len(ids) + 1, dtype=np.int64)
    np.cumsum([len(a) for a in ids], out=starts[1:])
    buf = io.BytesIO()
    np.savez(
        buf,
        groups=groups.astype(np.int64),
        leak=leak,
        offsets=np.asarray(offsets, dtype=np.int64),
        usable=usable,
        ids=np.concatenate(ids).astype(np.int32) if ids else np.zeros(0, np.int32),
        id_starts=starts,
    )
    write_bytes_atomic(buf.getvalue(), root / "rows.npz")
    write_bytes_atomic(tok.to_json().encode(), root / "tokenizer.json")
    write_bytes_atomic(_eval_npz(data), root / "eval.npz")
    summary = {
        "fingerprint": fingerprint,
        "version": PREP_VERSION,
        "rows": len(texts),
        "leaks": int(leak.sum()),
        "near_duplicate_rows": int((dd.duplicate_of_ >= 0).sum()),
        "domains": domains,
        "components": list(stats),
        "component_range": stats,
        "tokenizer": {"sha256": tok.sha256, "vocab_size": tok.vocab_size, "eos_id": tok.eos_id},
        "eval_sets": [
            {
                "name": e.name,
                "source": e.source,
                "docs": len(e.texts),
                "scored_docs": int(len(d.doc_tokens)),
                "scored_tokens": d.tokens,
            }
            for e, d in zip(evals, data)
        ],
    }
    summary["eval_fingerprint"] = hashlib.blake2b(_eval_npz(data), digest_size=12).hexdigest()
    write_json_atomic(summary, root / "prep.json")
    return summary


def read_prep(out, fingerprint: str) -> dict | None:
    """The summary of a finished preparation of this config, or None."""
    p = location(out) / PREP_DIR / "prep.json"
    if not p.exists():
        return None
    s = json.loads(p.read_text())
    return s if s.get("fingerprint") == fingerprint and s.get("version") == PREP_VERSION else None


class Prep:
    """The shared pieces, loaded: tokenizer, evaluation windows, row groups and leaks."""

    def __init__(self, out):
        from ..proxy_lm.tokenizer import tokenizer_from_json
        from ..proxy_lm.train import EvalData

        root = location(out) / PREP_DIR
        self.summary = json.loads((root / "prep.json").read_text())

        self.tok = tokenizer_from_json((root / "tokenizer.json").read_text(), "search")
        z = np.load(io.BytesIO((root / "eval.npz").read_bytes()), allow_pickle=False)
        self.evals = [
            EvalData(
                s["name"],
                z[f"windows_{i}"],
                z[f"doc_{i}"],
                z[f"domain_{i}"].astype(object),
                z[f"tokens_{i}"],
                z[f"bytes_{i}"],
            )
            for i, s in enumerate(self.summary["eval_sets"])
        ]
        rows = np.load(io.BytesIO((root / "rows.npz").read_bytes()), allow_pickle=False)
        self.groups, self.leak, self.offsets = rows["groups"], rows["leak"], rows["offsets"]
        self.usable, self.ids, self.id_starts = rows["usable"], rows["ids"], rows["id_starts"]
        self._init: dict = {}
        self._trial_evals: dict = {}

    def docs(self, rows) -> list:
        """The token ids of the input rows at corpus positions ``rows`` (views, no copies)."""
        s = self.id_starts
        return [self.ids[s[i] : s[i + 1]] for i in np.asarray(rows, dtype=np.int64)]

    def trial_evals(self, cap: int) -> list:
        """The evaluation sets a trial's model scores: each set's first documents (their seeded
        order) up to ``cap`` tokens, the one that crosses it included; a set of at most ``cap``
        tokens whole."""
        from ..proxy_lm.train import subset

        if cap not in self._trial_evals:
            self._trial_evals[cap] = [e if e.tokens <= cap else subset(e, cap) for e in self.evals]
        return self._trial_evals[cap]

    def initial_state(self, r) -> dict:
        """The initial weights of the resolved proxy config ``r`` (its seed), built once per process."""
        from ..proxy_lm.train import initial_state

        key = r.fingerprint()
        if key not in self._init:
            self._init[key] = initial_state(r, self.tok.vocab_size)
        return self._init[key]


def load_prep(out) -> Prep:
    """:class:`Prep` of ``out``, loaded once per process and kept while ``prep.json`` (its
    fingerprint, tokenizer and evaluation windows' hashes) stays the same."""
    key = str(out)
    summary = json.loads((location(out) / PREP_DIR / "prep.json").read_text())
    if _CACHE.get(key) is None or _CACHE[key].summary != summary:
        _CACHE[key] = Prep(out)
    return _CACHE[key]
