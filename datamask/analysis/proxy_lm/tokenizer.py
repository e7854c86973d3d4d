"""The proxy-LM's tokenizer: a local ``tokenizer.json``, or a byte-level BPE trained here.

Nothing is downloaded. :func:`load_tokenizer` reads a file saved by the ``tokenizers``
library (or a folder holding ``tokenizer.json``) and turns anything else into a one-line
:class:`~datamask.errors.ConfigError` naming the file. :func:`train_bpe` trains a byte-level
BPE on a seeded sample of the training text (every selection contributes the same number of
characters, so no selection gets a tokenizer fitted to itself more than the others); the
caller saves it beside the results so a rerun reuses the same vocabulary.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import ConfigError

__all__ = ["ProxyTokenizer", "load_tokenizer", "tokenizer_from_json", "train_bpe", "sample_for_tokenizer"]

EOS = "<|endoftext|>"
_EOS_CANDIDATES = (EOS, "</s>", "<eos>", "<|end_of_text|>", "[SEP]", "<sep>")


@dataclass
class ProxyTokenizer:
    """A ``tokenizers.Tokenizer`` with the id that separates documents.

    ``eos_id`` is the tokenizer's own end-of-text token when it has one, else one id past
    its vocabulary (``vocab_size`` counts it).
    """

    tok: object
    eos_id: int
    vocab_size: int
    source: str  # "trained" or the path it was loaded from

    def encode(self, texts) -> list[np.ndarray]:
        """Token ids of each text (no special tokens, no truncation), as int32 arrays."""
        enc = self.tok.encode_batch(list(texts), add_special_tokens=False)
        return [np.asarray(e.ids, dtype=np.int32) for e in enc]

    def to_json(self) -> str:
        return self.tok.to_str()

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:16]

    def save(self, path) -> None:
        """Write ``tokenizer.json`` atomically (temp name, then rename)."""
        path = Path(path)
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        tmp.write_text(self.to_json(), encoding="utf-8")
        os.replace(tmp, path)


def _wrap(tok, source: str) -> ProxyTokenizer:
    tok.no_truncation()
    tok.no_padding()
    n = tok.get_vocab_size(with_added_tokens=True)
    for cand in _EOS_CANDIDATES:
        i = tok.token_to_id(cand)
        if i is not None:
            return ProxyTokenizer(tok, int(i), n, source)
    return ProxyTokenizer(tok, n, n + 1, source)


def load_tokenizer(path) -> ProxyTokenizer:
    """A local tokenizer: a ``tokenizer.json`` file or a folder holding one.

    Raises
    ------
    ConfigError
        When the path is missing or the file is not a tokenizer (one line, naming it).
    """
    from tokenizers import Tokenizer

    p = Path(path)
    f = p / "tokenizer.json" if p.is_dir() else p
    if not f.is_file():
        raise ConfigError(f"tokenizer {str(path)!r} not found: pass a tokenizer.json file or a folder holding one")
    try:
        tok = Tokenizer.from_file(str(f))
    except Exception as e:  # tokenizers raises a bare Exception on a malformed file
        why = str(e).strip().splitlines()[0][:120] if str(e).strip() else type(e).__name__
        raise ConfigError(
            f"tokenizer {str(f)!r} is not a tokenizers tokenizer.json ({why}); pass a file saved by "
            f"the tokenizers library, or omit --tokenizer to train a byte-level BPE"
        ) from None
    if tok.get_vocab_size(with_added_tokens=True) < 2:
        raise ConfigError(f"tokenizer {str(f)!r} has an empty vocabulary; pass a trained tokenizer.json")
    return _wrap(tok, str(f))


def tokenizer_from_json(text: str, source: str = "saved") -> ProxyTokenizer:
    """A tokenizer from the JSON text :meth:`ProxyTokenizer.to_json` wrote (no file needed)."""
    from tokenizers import Tokenizer

    return _wrap(Tokenizer.from_str(text), source)


def sample_for_tokenizer(collections, chars: int, seed: int) -> list[str]:
    """A seeded sample of texts with about ``chars`` characters, the same share per collection.

    Parameters
    ----------
    collections : list of list of str
        The training texts of each selection (evaluation rows already removed).
    chars : int
        Characters to sample in all.
    seed : int
    """
    rng = np.random.default_rng([int(seed), 7])
    per = max(1, int(chars) // max(1, len(collections)))
    out: list[str] = []
    for texts in collections:
        got = 0
        for i in rng.permutation(len(texts)):
            if got >= per:
                break
            t = texts[i]
            out.append(t)
            got += len(t)
    return out


def train_bpe(texts, vocab_size: int) -> ProxyTokenizer:
    """A byte-level BPE of at most ``vocab_size`` tokens (``<|endoftext|>`` included).

    The vocabulary is smaller when the texts hold fewer distinct merges. Training is
    deterministic for the same texts in the same order.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=int(vocab_size),
        min_frequency=2,
        special_tokens=[EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(texts), trainer=trainer)
    return _wrap(tok, "trained")
