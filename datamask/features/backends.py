"""The same sentence-transformers model run by ONNX Runtime or OpenVINO instead of torch (CPU).

The model's forward pass (transformer, pooling and any Dense/Normalize modules) is exported
once, offline, from the local model folder to ONNX with torch's exporter, and cached (see
:mod:`.model_cache`). Tokenization stays with the torch ``SentenceTransformer`` loaded from
the same folder, so a text gives the same token ids on every backend, the word cut of
:mod:`.batching` included; only the forward pass changes. :class:`ExportedModel` looks like
that ``SentenceTransformer`` to :func:`~datamask.features.batching.encode_ahead`.

Backends
--------
``onnx``
    ONNX Runtime, CPU execution provider, float32.
``openvino``
    OpenVINO reading the same ONNX file. Its ``compute`` precision follows the torch rules:
    ``auto`` lets OpenVINO choose (bfloat16 on CPUs with AMX, float32 elsewhere),
    ``float32`` forces float32, ``bfloat16``/``float16`` ask for that precision.

Measured speed and agreement with torch: ``benchmarks/results/features.md``.
GPU workers keep torch on CUDA (:meth:`~datamask.features.embed.Embedder.resolved_backend`).
"""

from __future__ import annotations

import importlib
import warnings
from pathlib import Path

import numpy as np

from .model_cache import artifact_dir, build_atomically, build_failure

__all__ = ["BACKENDS", "FAST_EXTRA", "require", "check_backend", "onnx_file", "ExportedModel"]

BACKENDS = ("torch", "onnx", "openvino")
FAST_EXTRA = "pip install 'datamask[fast-embed]' (with torch==2.13.0 pinned on CPU)"
OPSET = 17
# the runtime, then the exporter's (torch.onnx writes the file with the onnx package)
_PACKAGES = {"onnx": ("onnxruntime", "onnx"), "openvino": ("openvino", "onnx")}
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def require(backend: str):
    """The runtime module of ``backend`` (the exporter's package checked too); ValueError naming
    the install command when one is missing."""
    mods = []
    for name in _PACKAGES[backend]:
        try:
            mods.append(importlib.import_module(name))
        except ImportError:
            raise ValueError(
                f"--backend {backend} needs the {name} package, which is not installed: {FAST_EXTRA}, "
                "or use --backend torch"
            ) from None
    return mods[0]


def check_backend(backend: str, compute: str) -> None:
    """ValueError for an unknown backend or a precision it cannot run."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend == "onnx" and compute in ("float16", "bfloat16"):
        raise ValueError(f"--backend onnx runs in float32 on CPU; drop --compute {compute} or use --backend openvino")


def onnx_file(model, model_path: str, cache_dir: str | None, log=None) -> Path:
    """The cached ONNX export of ``model`` (a float32 ``SentenceTransformer`` loaded from
    ``model_path``), exported on first use; ``log(str)`` hears one line before an export."""
    folder = artifact_dir(model_path, f"onnx-opset{OPSET}", cache_dir)
    path = folder / "model.onnx"
    if path.is_file():
        return path
    with build_atomically(folder) as tmp:
        if log is not None:
            log(f"datamask: exporting {model_path} to ONNX (once; cached in {folder})")
        try:
            _export(model, tmp / "model.onnx")
        except Exception as e:  # noqa: BLE001 - any exporter failure is one clear line
            raise ValueError(
                f"could not export embedding model {model_path!r} to ONNX ({build_failure(e)}); "
                "use --backend torch for this model"
            ) from None
    return path


def _input_names(model) -> list[str]:
    feats = model.preprocess(["an example text"])
    return [k for k in _INPUTS if k in feats]


def _export(model, dest: Path) -> None:
    import torch

    names = _input_names(model)

    class Forward(torch.nn.Module):
        def __init__(self, st):
            super().__init__()
            self.st = st

        def forward(self, *tensors):
            return self.st(dict(zip(names, tensors)))["sentence_embedding"]

    feats = model.preprocess(["an example text to trace", "a second one"])
    args = tuple(feats[k] for k in names)
    axes = {k: {0: "batch", 1: "tokens"} for k in names}
    with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer notes about Python bools in the pooling code
        torch.onnx.export(
            Forward(model).eval(),
            args,
            str(dest),
            input_names=names,
            output_names=["sentence_embedding"],
            dynamic_axes=axes | {"sentence_embedding": {0: "batch"}},
            opset_version=OPSET,
            dynamo=False,
        )


class ExportedModel:
    """A ``SentenceTransformer`` whose forward pass runs in ONNX Runtime or OpenVINO.

    Tokenization, ``max_seq_length`` and the model config come from ``st`` (the torch model of
    the same folder); calling it on tokenized features returns ``{"sentence_embedding": tensor}``
    as the torch model does.

    Parameters
    ----------
    st : SentenceTransformer
        The float32 torch model (kept for its tokenizer and config).
    backend : {"onnx", "openvino"}
    path : Path
        The exported ONNX file.
    threads : int or None
        Threads of the runtime (``None``: its default, every core).
    compute : str
        Precision (OpenVINO only; see the module docstring).
    """

    def __init__(self, st, backend: str, path: Path, threads: int | None, compute: str = "auto"):
        self.st = st
        self.backend = backend
        self.names = _input_names(st)
        if backend == "onnx":
            ort = require("onnx")
            so = ort.SessionOptions()
            if threads:
                so.intra_op_num_threads = int(threads)
                so.inter_op_num_threads = 1
            so.log_severity_level = 3
            sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
            self._run = lambda feeds: sess.run(None, feeds)[0]
        else:
            ov = require("openvino")
            cfg = {"PERFORMANCE_HINT": "LATENCY"}
            if threads:
                cfg["INFERENCE_NUM_THREADS"] = str(int(threads))
            hint = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}.get(compute)
            if hint:
                cfg["INFERENCE_PRECISION_HINT"] = hint
            core = ov.Core()
            compiled = core.compile_model(core.read_model(str(path)), "CPU", cfg)
            self._run = lambda feeds: compiled(feeds)[0]

    # --- what encode_ahead and Embedder read from a SentenceTransformer
    @property
    def device(self):
        import torch

        return torch.device("cpu")

    @property
    def max_seq_length(self):
        return self.st.max_seq_length

    @max_seq_length.setter
    def max_seq_length(self, value):
        self.st.max_seq_length = value

    @property
    def tokenizer(self):
        return self.st.tokenizer

    def preprocess(self, texts):
        return self.st.preprocess(texts)

    def __getitem__(self, i):
        return self.st[i]

    def get_embedding_dimension(self):
        return self.st.get_embedding_dimension()

    def __call__(self, feats: dict) -> dict:
        import torch

        feeds = {k: np.ascontiguousarray(feats[k].numpy(), dtype=np.int64) for k in self.names}
        return {"sentence_embedding": torch.from_numpy(np.asarray(self._run(feeds), dtype=np.float32))}
