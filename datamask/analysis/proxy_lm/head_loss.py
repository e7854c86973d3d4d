"""The proxy's training loss with the LM head fused into it, a chunk of positions at a time.

Eagerly, a training step of the ``tiny`` proxy materialises the logits of every position
(2,048 x 4,096 floats, 32 MB), takes their log-softmax, and keeps both for the backward pass:
the log-softmax's forward and backward were 13% of the step and its buffers miss the cache.
:func:`fused_forward_loss` never builds them. For each chunk of :data:`HEAD_ROWS` positions it
computes the logits (4 MB), the loss, and — since the loss is the graph's last node, the
gradient with respect to those logits is known at once (softmax minus the one-hot target) — the
chunk's gradients with respect to the hidden states and the head's weight; the backward pass
only scales them. The matrix products are the same three as eager's (logits, hidden-state
gradient, weight gradient): nothing is recomputed.

Measured on one CPU thread: 0.75 of the eager step's CPU time in a plain process and 0.72 in a
Dask worker (the retired heap benchmark: CHANGELOG.md, 0.3.0, Removed, 2026-12-02; a one-off script interleaving
the two step by step gave 0.79-0.82), with the same training loss after 25 steps to 4e-6
(float32 rounding of a different summation order; search_cost.md, round 8). Used for the
eager training steps on the CPU in float32 and in bfloat16 (``precision: bfloat16``, which
``auto`` picks on CPUs with bfloat16 dot products): there the three products take bfloat16
operands and the softmax and loss stay float32 (benchmarks/results/proxy_precision.md: 0.82 of
float32's optimiser steps, losses within 0.006 nats of float32's, the same ranking). Elsewhere
(a GPU, the ``compile`` setting, which compiles the eager loss) the eager cross-entropy runs.
"""

from __future__ import annotations

__all__ = ["HEAD_ROWS", "fused_forward_loss", "head_loss", "uses_fused_loss"]

#: positions per chunk: a chunk's logits (rows x vocabulary floats) stay in cache through the
#: softmax (the evaluation's ``EVAL_HEAD_ROWS`` for the same reason); 128 and 512 measured alike
HEAD_ROWS = 256


def _head_loss_function():
    import torch

    class _HeadLoss(torch.autograd.Function):
        """Mean cross-entropy of ``targets`` (-100 ignored) given ``hidden @ weight.T``."""

        @staticmethod
        def forward(ctx, hidden, weight, targets, rows, products):
            valid = targets != -100
            count = valid.sum().clamp_min(1)  # a tensor: no host sync in the training loop
            grad_h = torch.empty_like(hidden)
            grad_w = torch.zeros_like(weight)
            total = hidden.new_zeros(())
            low = products != hidden.dtype  # the three products in bfloat16, the rest in float32
            w = weight.to(products) if low else weight
            for i in range(0, hidden.shape[0], rows):
                h = hidden[i : i + rows].to(products) if low else hidden[i : i + rows]
                t = targets[i : i + rows].clamp_min(0)[:, None]
                v = valid[i : i + rows].to(hidden.dtype)[:, None]
                z = (h @ w.t()).to(hidden.dtype)
                target_logit = z.gather(1, t)
                top = z.amax(1, keepdim=True)
                z.sub_(top).exp_()
                norm = z.sum(1, keepdim=True)
                total += ((top + norm.log() - target_logit) * v).sum()
                z.mul_(v / norm)  # softmax (zero on ignored positions) ...
                z.scatter_add_(1, t, -v)  # ... minus the one-hot target: d(sum of losses)/d(logits)
                if low:
                    g = z.to(products)
                    grad_h[i : i + rows] = g @ w
                    grad_w += g.t() @ h  # a chunk's sum rounded to bfloat16, the chunks summed in float32
                else:
                    grad_h[i : i + rows] = z @ w
                    grad_w.addmm_(z.t(), h)
            ctx.save_for_backward(grad_h, grad_w, count)
            return total / count

        @staticmethod
        def backward(ctx, grad_out):
            grad_h, grad_w, count = ctx.saved_tensors
            scale = grad_out / count
            return grad_h * scale, grad_w * scale, None, None, None

    return _HeadLoss


_FUNCTION = None


def head_loss(hidden, weight, targets, rows: int = HEAD_ROWS, products: str = "float32"):
    """Mean cross-entropy (nats) of ``targets`` (N, -100 ignored) under the logits
    ``hidden @ weight.T`` (hidden: N x d float32, weight: V x d float32), differentiable in
    ``hidden`` and ``weight``, computed ``rows`` positions at a time without the N x V logits.

    ``products="bfloat16"`` takes the three matrix products (logits, hidden-state gradient,
    weight gradient) with bfloat16 operands (float32 accumulation inside the kernel; the logits
    and a chunk's weight gradient rounded to bfloat16 once); the softmax, the loss and the sums
    over chunks stay in float32.
    """
    import torch

    global _FUNCTION
    if _FUNCTION is None:
        _FUNCTION = _head_loss_function()
    dtype = {"float32": hidden.dtype, "bfloat16": torch.bfloat16}[products]
    return _FUNCTION.apply(hidden, weight, targets, int(rows), dtype)


def fused_forward_loss(model, x, y, precision: str = "float32"):
    """``forward_loss(model, x, y)`` (mean) with the LM head inside the loss: a causal LM whose
    head is a bias-free linear map (``model.model`` the decoder, ``model.lm_head`` the head).
    Under ``precision="bfloat16"`` the head's products take bfloat16 operands (:func:`head_loss`);
    the decoder runs as the caller's autocast has it."""
    hidden = model.model(input_ids=x).last_hidden_state
    hidden = hidden.reshape(-1, hidden.shape[-1]).float()
    return head_loss(hidden, model.lm_head.weight, y.reshape(-1), products=precision)


def uses_fused_loss(model, device: str, precision: str) -> bool:
    """Whether the training steps take :func:`fused_forward_loss`: the CPU (in float32 or
    bfloat16, where it was measured) and a model with a bias-free head."""
    head = getattr(model, "lm_head", None)
    return (
        device == "cpu"
        and precision in ("float32", "bfloat16")
        and head is not None
        and getattr(head, "bias", None) is None
        and hasattr(model, "model")
    )
