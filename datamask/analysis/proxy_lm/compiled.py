"""The proxy's training loss compiled with ``torch.compile`` (the ``compile`` setting).

The model's forward and the cross-entropy over the vocabulary are compiled together (inductor,
static shapes: every training batch is ``batch_size x seq_len``). For the ``tiny`` preset on one
CPU thread this took 0.80 of the eager step's CPU time, with the same losses to 1e-6, after a
compile of about a minute per process and model shape with an empty inductor cache (seconds with
a warm one); a later model of the same shape in the same process reuses the compiled code (benchmarks/results/search_cost.md, "Compiled and inference
paths (round 7)"). The evaluation stays eager.

When no C++ compiler is found, on a device other than the CPU (not measured there), or when the
compile fails, the loss is computed eagerly, with one warning per process.
"""

from __future__ import annotations

import os
import shutil

from ...core.cuda_graph import warn_once

__all__ = ["compile_unavailable", "training_loss"]


def compile_unavailable() -> str | None:
    """Why ``torch.compile`` cannot run here (None when it can): no ``torch.compile``, or no C++
    compiler (inductor's: ``$CXX``, else ``g++``) on the PATH."""
    import torch

    if not hasattr(torch, "compile"):
        return f"torch {torch.__version__} has no torch.compile"
    cxx = os.environ.get("CXX") or "g++"
    if shutil.which(cxx) is None:
        return f"no C++ compiler ({cxx}) on the PATH"
    return None


class _CompiledLoss:
    """``forward_loss(model, x, y)``, compiled; eager from the first failure on (one warning)."""

    def __init__(self, model, forward_loss, fallback=None):
        import functools

        import torch
        import torch._inductor.config as inductor

        if "TORCHINDUCTOR_COMPILE_THREADS" not in os.environ:
            inductor.compile_threads = 1  # no pool of compile processes beside the workers (as measured)
        self.eager = fallback or functools.partial(forward_loss, model)
        self.fn = torch.compile(functools.partial(forward_loss, model), dynamic=False)

    def __call__(self, x, y):
        if self.fn is not None:
            try:
                return self.fn(x, y)
            except Exception as e:  # a compiler error of any kind: train eagerly instead
                why = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
                warn_once("proxy-compile-failed", f"proxy-lm compile: torch.compile failed ({why}); training eagerly")
                self.fn = None
        return self.eager(x, y)


def training_loss(model, forward_loss, cfg, device: str, fallback=None):
    """The loss function of the training steps, ``f(x, y)``: ``forward_loss`` of ``model``
    compiled when ``cfg.compile`` is on and it can be; otherwise ``fallback`` (None: the eager
    ``forward_loss``), which a failed compile also falls back to."""
    if not getattr(cfg, "compile", False):
        return fallback
    why = compile_unavailable() if device == "cpu" else f"device {device} (measured on the CPU only)"
    if why:
        warn_once("proxy-compile-off", f"proxy-lm compile is off: {why}; training eagerly")
        return fallback
    return _CompiledLoss(model, forward_loss, fallback)
