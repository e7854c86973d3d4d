"""A DCLM-style fastText quality classifier: train one from two sets of documents, score with it.

As in DCLM, a document is put on one line (newlines become spaces) and its score is the
probability of the positive label, ``P(positive | text)`` in [0, 1]. Models trained here use
the labels ``__label__pos`` / ``__label__neg``; DCLM's released classifier uses
``__label__hq`` / ``__label__cc``; both are recognised, any other pair needs
``positive_label=``.

Loaded models live in a process-wide cache keyed by path (fastText models cannot be pickled,
so a :class:`FastTextScorer` carries only the path and each Dask worker process loads the
file once).

Needs the ``fasttext`` module: ``pip install fasttext-numpy2`` (the original ``fasttext``
wheels crash in ``predict`` under numpy 2).
"""

from __future__ import annotations

import gzip
import json
import os
import struct
import tempfile
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .text import get_texts, like_input, to_pandas

__all__ = [
    "train_quality",
    "FastTextScorer",
    "score_fasttext_frame",
    "iter_texts",
    "check_fasttext_model",
    "one_line",
]

POSITIVE_LABELS = ("__label__pos", "__label__hq")
_MAGIC = 793712314  # fastText's FASTTEXT_FILEFORMAT_MAGIC_INT32
_MODELS: dict[str, object] = {}
_LOCK = threading.Lock()


def _import_fasttext():
    try:
        import fasttext
    except ImportError:
        raise ValueError("the fasttext module is not installed: pip install fasttext-numpy2") from None
    return fasttext


def one_line(text: str) -> str:
    """The text as fastText sees it: whitespace runs (newlines included) become one space."""
    return " ".join(text.split())


def iter_texts(source, text_column: str = "text") -> Iterator[str]:
    """Texts from a list of strings or from files.

    Parameters
    ----------
    source : iterable of str, or path
        Strings are taken as documents. A path may be a ``.txt`` file (one document per
        line), ``.jsonl`` / ``.jsonl.gz`` / ``.json`` (one object per line, ``text_column``
        read), ``.parquet``, or a directory of such files (read in sorted order).
    text_column : str
        Field holding the text in JSONL/Parquet files.
    """
    if isinstance(source, (str, os.PathLike)) and not (isinstance(source, str) and "\n" in source):
        p = Path(source)
        if not p.exists():
            raise ValueError(f"document source {str(p)!r} does not exist")
        files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
        for f in files:
            yield from _file_texts(f, text_column)
        return
    for t in source:
        if isinstance(t, str) and t.strip():
            yield t


def _file_texts(f: Path, text_column: str) -> Iterator[str]:
    name = f.name.lower()
    if name.endswith(".parquet"):
        import pyarrow.parquet as pq

        table = pq.read_table(f, columns=[text_column])
        yield from (t for t in table.column(text_column).to_pylist() if t and t.strip())
    elif name.endswith((".jsonl", ".jsonl.gz", ".json", ".json.gz")):
        opener = gzip.open if name.endswith(".gz") else open
        with opener(f, "rt", encoding="utf-8") as fh:
            for i, line in enumerate(fh):
                if not line.strip():
                    continue
                row = json.loads(line)
                if text_column not in row:
                    raise ValueError(f"{f}: line {i + 1} has no {text_column!r} field")
                t = row[text_column]
                if t and t.strip():
                    yield t
    elif name.endswith(".txt"):
        with open(f, encoding="utf-8") as fh:
            yield from (ln.rstrip("\n") for ln in fh if ln.strip())


def train_quality(
    positive,
    negative,
    output,
    *,
    text_column: str = "text",
    epoch: int = 10,
    lr: float = 0.5,
    word_ngrams: int = 2,
    dim: int = 32,
    bucket: int = 100_000,
    min_count: int = 1,
    threads: int = 10,
    seed: int = 0,
) -> dict:
    """Train a fastText classifier of positive (high-quality) vs negative documents.

    Parameters
    ----------
    positive, negative : iterable of str or path
        The two document sets (see :func:`iter_texts`).
    output : path
        Where the ``.bin`` model is written (parent folders are created).
    epoch, lr, word_ngrams, dim, min_count : fastText hyper-parameters
        DCLM used word bigrams; ``lr`` 0.5 and 10 epochs suit small training sets.
    bucket : int
        Hash buckets for n-grams; fastText's default (2M) makes a 250 MB file with bigrams,
        100k at ``dim=32`` gives about 13 MB.
    threads : int
        Training threads, raised to at least 10: fastText initialises its input matrix in 10
        blocks, one per thread, so with fewer threads most rows start uninitialised and
        training hits "Encountered NaN" at random (seen in 3 of 6 runs with fasttext-numpy2
        0.10.4 and 1 thread; 0 of 8 with 10). As a consequence training is not bit-exact
        between runs (Hogwild updates); scores agree closely.
    seed : int
        Shuffles the training lines and seeds fastText's initialisation.

    Returns
    -------
    dict
        ``{"path", "n_positive", "n_negative", "labels"}``.

    Raises
    ------
    ValueError
        When a set is empty or a source is missing.
    """
    ft = _import_fasttext()
    lines = [f"__label__pos {one_line(t)}" for t in iter_texts(positive, text_column)]
    n_pos = len(lines)
    lines += [f"__label__neg {one_line(t)}" for t in iter_texts(negative, text_column)]
    n_neg = len(lines) - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError(f"train-quality needs documents in both sets; got {n_pos} positive and {n_neg} negative")
    np.random.default_rng(seed).shuffle(lines)
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    params = dict(epoch=epoch, lr=lr, wordNgrams=word_ngrams, dim=dim, bucket=bucket, minCount=min_count)
    with tempfile.TemporaryDirectory() as tmp:
        train_file = Path(tmp) / "train.txt"
        train_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
        model = _train(ft, train_file, params, threads, seed)
        partial = out.with_name(out.name + ".partial")
        model.save_model(str(partial))
        os.replace(partial, out)
    with _LOCK:
        _MODELS.pop(str(out.resolve()), None)
    return {"path": str(out), "n_positive": n_pos, "n_negative": n_neg, "labels": list(model.labels)}


def _train(ft, train_file, params, threads, seed):
    """fastText's supervised training on ``train_file``, retried on its NaN (see ``threads``)."""
    for attempt in range(3):  # belt and braces against fastText's NaN
        try:
            return ft.train_supervised(
                input=str(train_file),
                **params,
                thread=max(int(threads), 10),
                verbose=0,
                loss="softmax",
                seed=seed + attempt,
            )
        except RuntimeError as e:
            if "NaN" not in str(e) or attempt == 2:
                raise ValueError(f"fastText training failed: {e} (try a lower lr)") from None


def check_fasttext_model(path) -> str:
    """Resolve ``path`` and check it is a fastText model file; return the resolved path.

    Raises
    ------
    ValueError
        One line naming the path, when it is missing or not a fastText ``.bin`` model.
    """
    p = Path(path).expanduser()
    if not p.is_file():
        raise ValueError(
            f"fastText model {str(p)!r} does not exist; train one with "
            "`datamask train-quality` or pass the path of a .bin model"
        )
    with open(p, "rb") as fh:
        head = fh.read(4)
    if len(head) < 4 or struct.unpack("<i", head)[0] != _MAGIC:
        raise ValueError(
            f"{str(p)!r} is not a fastText model (bad magic number); pass a .bin file "
            "written by fastText or `datamask train-quality` (.vec/.ftz text files are not supported)"
        )
    return str(p.resolve())


@dataclass(frozen=True)
class FastTextScorer:
    """Score texts with a fastText classifier: ``P(positive label)``.

    Parameters
    ----------
    model : path
        A fastText ``.bin`` model; checked at construction.
    positive_label : str or None
        Label whose probability is the score; ``None`` picks ``__label__pos`` or
        ``__label__hq``, whichever the model has.
    """

    model: str
    positive_label: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "model", check_fasttext_model(self.model))

    def load(self):
        """The fastText model, loaded once per process."""
        with _LOCK:
            m = _MODELS.get(self.model)
            if m is None:
                ft = _import_fasttext()
                try:
                    m = ft.load_model(self.model)
                except ValueError as e:
                    raise ValueError(f"{self.model!r} is not a usable fastText model ({e})") from None
                _MODELS[self.model] = m
        return m

    def label(self) -> str:
        """The positive label used for scoring."""
        labels = list(self.load().labels)
        if self.positive_label is not None:
            if self.positive_label not in labels:
                raise ValueError(
                    f"label {self.positive_label!r} is not in fastText model {self.model!r} (labels: {labels})"
                )
            return self.positive_label
        for lab in POSITIVE_LABELS:
            if lab in labels:
                return lab
        raise ValueError(
            f"fastText model {self.model!r} has labels {labels}; say which is "
            "positive with positive_label= (--fasttext-label)"
        )

    def score(self, texts: Iterable[str]) -> np.ndarray:
        """``P(positive)`` per text as float32; empty texts score 0."""
        texts = [one_line(t) if t else "" for t in texts]
        out = np.zeros(len(texts), dtype=np.float32)
        idx = [i for i, t in enumerate(texts) if t]
        if not idx:
            return out
        model, lab = self.load(), self.label()
        labels, probs = model.predict([texts[i] for i in idx], k=-1, threshold=0.0)
        for j, (ls, ps) in zip(idx, zip(labels, probs)):
            for lb, p in zip(ls, ps):
                if lb == lab:
                    out[j] = min(max(float(p), 0.0), 1.0)
                    break
        return out


def score_fasttext_frame(
    df, scorer: FastTextScorer, text_column: str = "text", *, column: str = "quality_fasttext", errors: str = "strict"
):
    """Add ``column`` (float32, P(positive)) to one partition; null/empty texts score 0."""
    pdf = to_pandas(df)
    texts, usable = get_texts(pdf, text_column, errors=errors)
    out = pdf.copy()
    out[column] = scorer.score([t if u else "" for t, u in zip(texts, usable)])
    return like_input(out, df)
