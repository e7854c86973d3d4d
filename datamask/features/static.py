"""A static embedding model distilled from a sentence-transformers model (``--model static``).

`model2vec <https://github.com/MinishLab/model2vec>`_ runs the source model once over every
token of its vocabulary, reduces the token vectors with PCA (256 dimensions, or the source's
own width when smaller) and weights them by token frequency rank; a text's embedding is then
the mean of its tokens' vectors: no transformer runs at embedding time. The distilled model
is built offline on first use from the local source folder (the default MiniLM for
``--model static``, ``PATH`` for ``--model static:PATH``) and cached
(:mod:`.model_cache`, kind ``static-pca256``).

It is a different trade-off, not a faster copy of the source model: its neighbourhoods
agree only loosely with the source's. The measured speed, agreement and what a selection
made on it loses: ``benchmarks/results/features.md``.

Texts are cut with the same word cut as the transformer backends (:func:`~datamask.features.
batching.word_cut`) at the window of the source model (256 tokens for MiniLM), so both see the
same part of a long document; ``chunk=True`` embeds the whole text.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from .backends import FAST_EXTRA
from .batching import word_cut
from .model_cache import artifact_dir, build_atomically, build_failure

__all__ = ["STATIC", "PCA_DIMS", "parse_static", "static_folder", "StaticEncoder"]

STATIC = "static"
PCA_DIMS = 256


def parse_static(model: str | None) -> tuple[bool, str | None]:
    """``(is_static, source)`` for a ``--model`` value: ``static`` -> ``(True, None)`` (the
    default model), ``static:PATH`` -> ``(True, PATH)``, anything else ``(False, model)``."""
    if model is None:
        return False, None
    m = str(model)
    if m == STATIC:
        return True, None
    if m.startswith(STATIC + ":"):
        return True, m[len(STATIC) + 1 :] or None
    return False, model


def _model2vec(distiller: bool = False):
    """model2vec's ``distill`` function (``distiller=True``: imports torch and transformers) or
    its ``StaticModel`` class (numpy only)."""
    try:
        if distiller:
            from model2vec.distill import distill

            return distill
        from model2vec import StaticModel

        return StaticModel
    except ImportError:
        raise ValueError(f"--model static needs the model2vec package, which is not installed: {FAST_EXTRA}") from None


def static_folder(source: str, cache_dir: str | None, log=None) -> Path:
    """The cached static model distilled from the folder ``source``; built on first use.
    ``log(str)`` hears one line before a build starts."""
    folder = artifact_dir(source, f"static-pca{PCA_DIMS}", cache_dir)
    if (folder / "config.json").is_file():
        return folder
    distill = _model2vec(distiller=True)
    with build_atomically(folder) as tmp:
        t0 = time.perf_counter()
        if log is not None:
            log(f"datamask: distilling a static model from {source} (once; cached in {folder})")
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        try:
            import transformers

            transformers.logging.set_verbosity_error()
            import torch

            quiet = log is None and "TQDM_DISABLE" not in os.environ
            if quiet:  # model2vec's own progress bar
                os.environ["TQDM_DISABLE"] = "1"
            try:
                with torch.inference_mode():
                    model = distill(model_name=source, pca_dims=_pca_dims(source))
            finally:
                if quiet:
                    del os.environ["TQDM_DISABLE"]
            model.save_pretrained(str(tmp))
            if log is not None:  # (its own bar is off when stderr is a file: datamask.core.progress)
                log(f"datamask: distilled the static model in {time.perf_counter() - t0:.0f} s")
        except Exception as e:  # noqa: BLE001 - any distillation failure is one clear line
            raise ValueError(
                f"could not distill a static model from {source!r} ({build_failure(e)}); "
                "pass a local sentence-transformers folder as --model static:PATH"
            ) from None
    return folder


def _pca_dims(source: str) -> int:
    """PCA_DIMS, or the source's hidden size when that is smaller (PCA cannot add dimensions)."""
    import json

    try:
        cfg = json.loads((Path(source) / "config.json").read_text())
        return int(min(PCA_DIMS, int(cfg.get("hidden_size", PCA_DIMS))))
    except (OSError, ValueError, TypeError):
        return PCA_DIMS


class StaticEncoder:
    """A loaded static model plus the window it cuts texts at.

    Parameters
    ----------
    folder : Path
        A model2vec model folder (from :func:`static_folder`).
    window : int or None
        Token window of the source model; ``None``: no cut.
    """

    def __init__(self, folder: Path, window: int | None):
        self.model = _model2vec().from_pretrained(str(folder))
        self.window = window
        self.dim = int(self.model.dim)

    def encode(self, texts: list[str], max_length: int | None, chunk: bool) -> np.ndarray:
        """Float32 vectors (not normalised), one row per text, in order."""
        window = None if chunk else (max_length or self.window)
        cut = [word_cut(t, window) for t in texts] if window else list(texts)
        v = self.model.encode(cut, max_length=window, normalize=False, use_multiprocessing=False)
        return np.asarray(v, dtype=np.float32)
