"""Training one proxy model on one selection, and scoring it on the evaluation sets.

Every selection starts from the same initial weights (a state dict built once from the
seed), sees its own documents through a :class:`~.model.TokenStream` seeded alike, and takes
exactly ``cfg.steps_for(its tokens)`` AdamW steps of ``batch_size x seq_len`` target tokens (the
same for every selection, or its passes' worth with ``tokens`` written ``4x``): the trained
tokens are counted in the loop, not assumed. Held-out loss is the token-weighted mean
negative log-likelihood (nats/token) of each evaluation document, every document scored from
its start (after an end-of-text id, as in training) in windows of ``seq_len`` tokens.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from dataclasses import dataclass

import numpy as np

from .baseline import unigram_losses
from .compiled import training_loss
from .head_loss import fused_forward_loss, uses_fused_loss
from .model import TokenStream, build_model, count_params, lr_at

__all__ = [
    "EvalData",
    "prepare_eval",
    "deterministic",
    "forward_loss",
    "token_nll",
    "evaluate",
    "train_selection",
    "initial_state",
]


@dataclass
class EvalData:
    """One evaluation set as padded windows: ``windows`` (W, seq_len+1) int64, -1 = padding."""

    name: str
    windows: np.ndarray
    doc: np.ndarray  # (W,) document of each window
    doc_domain: np.ndarray  # (D,) domain of each document ("all" when the set has none)
    doc_tokens: np.ndarray  # (D,) scored tokens of each document
    doc_bytes: np.ndarray  # (D,) UTF-8 bytes of each document

    @property
    def tokens(self) -> int:
        return int(self.doc_tokens.sum())


def prepare_eval(name, texts, domains, tok, seq_len: int, max_tokens: int, seed: int) -> EvalData:
    """A seeded sample of the documents, up to ``max_tokens`` scored tokens, cut into windows."""
    order = np.random.default_rng([int(seed), 11]).permutation(len(texts))
    ids = tok.encode([texts[i] for i in order])
    T = int(seq_len)
    wins, doc, dtok, dbytes, ddom, total = [], [], [], [], [], 0
    for i, a in zip(order, ids):
        if total >= max_tokens:
            break
        seq = np.concatenate([[tok.eos_id], a, [tok.eos_id]]).astype(np.int64)  # predict the end as well
        k = len(dtok)
        for s in range(0, len(seq) - 1, T):
            w = np.full(T + 1, -1, dtype=np.int64)
            piece = seq[s : s + T + 1]
            w[: len(piece)] = piece
            wins.append(w)
            doc.append(k)
        dtok.append(len(seq) - 1)
        dbytes.append(len(texts[i].encode("utf-8", errors="surrogatepass")))
        ddom.append("all" if domains is None else str(domains[i]))
        total += len(seq) - 1
    return EvalData(
        name,
        np.stack(wins),
        np.asarray(doc, dtype=np.int64),
        np.asarray(ddom, dtype=object),
        np.asarray(dtok, dtype=np.int64),
        np.asarray(dbytes, dtype=np.int64),
    )


def subset(ev: EvalData, max_tokens: int) -> EvalData:
    """The first documents of ``ev`` up to ``max_tokens`` (the loss-curve evaluations)."""
    n = int(np.searchsorted(np.cumsum(ev.doc_tokens), max_tokens) + 1)
    n = min(n, len(ev.doc_tokens))
    keep = ev.doc < n
    return EvalData(ev.name, ev.windows[keep], ev.doc[keep], ev.doc_domain[:n], ev.doc_tokens[:n], ev.doc_bytes[:n])


@contextlib.contextmanager
def deterministic(threads: int):
    """Deterministic kernels (where torch has them) and a fixed CPU thread count, restored after."""
    import torch

    prev = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        torch.get_num_threads(),
        torch.backends.cudnn.benchmark,
    )
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.set_num_threads(int(threads))
    torch.backends.cudnn.benchmark = False
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(prev[0], warn_only=prev[1])
        torch.set_num_threads(prev[2])
        torch.backends.cudnn.benchmark = prev[3]


def _autocast(device: str, precision: str):
    import torch

    if precision == "bfloat16":
        return torch.autocast(device_type=device, dtype=torch.bfloat16)
    return contextlib.nullcontext()


#: positions whose logits a CPU evaluation computes at once: a chunk's logits (rows x vocabulary)
#: stay in cache through the log-softmax instead of the whole batch's (tiny: 67 MB at batch 32);
#: the same per-token losses, a quarter less CPU time (benchmarks/results/search_cost.md)
EVAL_HEAD_ROWS = 256


def forward_loss(model, x, y, reduction="mean"):
    """Cross-entropy (nats) of targets ``y`` (-100 ignored) given inputs ``x``; how training
    calls the model (evaluation: :func:`token_nll`)."""
    import torch.nn.functional as F

    logits = model(input_ids=x).logits
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]).float(), y.reshape(-1), ignore_index=-100, reduction=reduction
    )


def token_nll(model, x, y, rows: int | None = None):
    """Per-position cross-entropy (nats; 0 where ``y`` is -100) of targets ``y`` given inputs ``x``,
    flattened: :func:`forward_loss`'s ``reduction="none"``, with the LM head and the loss applied
    ``rows`` positions at a time (None: all at once) after the decoder has run on the batch."""
    import torch
    import torch.nn.functional as F

    h = model.get_decoder()(input_ids=x).last_hidden_state
    h, t = h.reshape(-1, h.shape[-1]), y.reshape(-1)
    head, rows = model.get_output_embeddings(), int(rows or h.shape[0])
    return torch.cat(
        [
            F.cross_entropy(head(h[i : i + rows]).float(), t[i : i + rows], ignore_index=-100, reduction="none")
            for i in range(0, h.shape[0], rows)
        ]
    )


def _scoring_model(model, device: str, precision: str):
    """(the model the evaluation runs, its autocast): on the CPU in bfloat16 a bfloat16 copy of
    the model with no autocast — the weights cast once, not the activations at every product
    (0.95 of autocast's evaluation time, losses within 2e-4 nats of it on four search_real
    models: benchmarks/results/proxy_precision.md, round 10); else the model under
    :func:`_autocast`."""
    import copy

    import torch

    if device == "cpu" and precision == "bfloat16":
        return copy.deepcopy(model).to(torch.bfloat16), contextlib.nullcontext()
    return model, _autocast(device, precision)


def evaluate(model, ev: EvalData, device: str, precision: str, batch_size: int) -> dict:
    """``{domain: (nats, tokens, bytes)}`` summed over the documents, plus ``"all"``.

    .. versionchanged:: 0.3
       On the CPU in bfloat16 the model is scored as a bfloat16 copy, not under autocast.
    """
    import torch

    was = model.training
    model.eval()
    lens = (ev.windows >= 0).sum(axis=1)
    order = np.argsort(-lens, kind="stable")
    doc_nll = np.zeros(len(ev.doc_tokens), dtype=np.float64)
    scorer, cast = _scoring_model(model, device, precision)
    with torch.no_grad(), cast:
        for s in range(0, len(order), batch_size):
            idx = order[s : s + batch_size]
            L = int(lens[idx].max())
            w = torch.from_numpy(ev.windows[idx, :L])
            x = w[:, :-1].clamp(min=0).to(device)
            y = w[:, 1:].clone()
            y[y < 0] = -100
            rows = EVAL_HEAD_ROWS if device == "cpu" else None
            nll = token_nll(scorer, x, y.to(device), rows).reshape(len(idx), L - 1)
            np.add.at(doc_nll, ev.doc[idx], nll.sum(dim=1).double().cpu().numpy())
    model.train(was)
    out = {}
    for dom in ["all", *sorted(set(ev.doc_domain) - {"all"})]:
        m = np.ones(len(doc_nll), dtype=bool) if dom == "all" else ev.doc_domain == dom
        out[dom] = (float(doc_nll[m].sum()), int(ev.doc_tokens[m].sum()), int(ev.doc_bytes[m].sum()))
    return out


def initial_state(cfg, vocab_size: int) -> dict:
    """The seeded initial weights every selection starts from (a CPU state dict)."""
    model = build_model(cfg, vocab_size)
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _optimizer(model, cfg):
    import torch

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    other = [p for n, p in model.named_parameters() if p.dim() < 2]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": float(cfg.weight_decay)}, {"params": other, "weight_decay": 0.0}],
        lr=float(cfg.lr),
        betas=(0.9, 0.95),
        eps=1e-8,
        foreach=False,
    )


def _step(model, opt, chunk, step: int, steps: int, cfg, device: str, precision: str, loss_fn=None):
    """One AdamW step on ``chunk`` (B*T+1 tokens): the schedule's rate, the loss (``loss_fn(x, y)``
    when given: the compiled one, see ``compiled``), the clip."""
    import torch

    B, T = int(cfg.batch_size), int(cfg.seq_len)
    x = torch.from_numpy(chunk[:-1].reshape(B, T)).to(device)
    y = torch.from_numpy(chunk[1:].reshape(B, T).copy()).to(device)
    for g in opt.param_groups:
        g["lr"] = lr_at(step, steps, float(cfg.lr), float(cfg.warmup), float(cfg.min_lr_ratio))
    with _autocast(device, precision):
        loss = loss_fn(x, y) if loss_fn is not None else forward_loss(model, x, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if cfg.grad_clip:
        torch.nn.utils.clip_grad_norm_(model.parameters(), float(cfg.grad_clip))
    opt.step()
    return loss.detach(), int(y.numel())


def _curve_steps(cfg, steps: int) -> set:
    k = int(cfg.curve_points)
    return {int(round(i * steps / k)) for i in range(1, k + 1)} if k else set()


def _train_loop(model, opt, stream, steps, cfg, evals, device, precision, bar, loss_fn=None):
    """``steps`` steps; the held-out loss at the curve points. Returns (trained tokens,
    losses, curve, seconds of optimiser steps, how often each token id was a training target)."""
    import torch

    B, T = int(cfg.batch_size), int(cfg.seq_len)
    carry, curve_at = stream.take(1), _curve_steps(cfg, steps)
    trained, losses, curve, eval_s = 0, [], [], 0.0
    counts = np.zeros(int(model.get_output_embeddings().weight.shape[0]), dtype=np.int64)
    t_loop = time.perf_counter()
    for step in range(steps):
        chunk = np.concatenate([carry, stream.take(B * T)])
        carry = chunk[-1:]
        loss, n = _step(model, opt, chunk, step, steps, cfg, device, precision, loss_fn)
        trained += n
        counts += np.bincount(chunk[1:], minlength=counts.shape[0])[: counts.shape[0]]
        losses.append(loss)  # read back in bulk: no device sync per step
        bar.update(B * T)
        if step % 20 == 0 or step + 1 == steps:
            bar.set_postfix(loss=f"{float(losses[-1]):.3f}", refresh=False)
        if step + 1 in curve_at:
            te = time.perf_counter()
            point = {"tokens": trained, "losses": {}}
            for full, cur in evals:
                r = evaluate(model, cur, device, precision, max(1, B * 2))["all"]
                point["losses"][full.name] = r[0] / r[1]
            curve.append(point)
            eval_s += time.perf_counter() - te
    if device == "cuda":
        torch.cuda.synchronize()
    return trained, losses, curve, time.perf_counter() - t_loop - eval_s, counts


def _train_curve(losses, steps: int, tokens_per_step: int) -> list:
    """[[tokens, mean training loss]] at about 200 points."""
    every = max(1, steps // 200)
    return [
        [(i + 1) * tokens_per_step, float(np.mean(losses[max(0, i + 1 - every) : i + 1]))]
        for i in range(every - 1, steps, every)
    ]


def train_selection(name, docs, tok, cfg, init, evals, device: str, precision: str, quiet=False) -> dict:
    """Train from ``init`` on ``docs`` (token arrays) for ``cfg.steps_for(their tokens)`` steps;
    score on ``evals``.

    Parameters
    ----------
    evals : list of (EvalData full, EvalData curve)
    cfg : resolved ProxyLMConfig

    Returns
    -------
    dict with ``tokens`` (target tokens trained, counted), ``passes`` (over the selection), ``steps``
    (optimiser steps), ``params``, ``train_curve`` [[tokens, loss]], ``curve`` [{tokens, losses}],
    ``evals`` {set: {domain: (nats, tokens, bytes)}}, ``unigram`` {set: {domain: (nats, tokens)}}
    (:func:`unigram_losses` of the tokens it trained on, on the same scored tokens), ``lr`` and
    ``weight_decay``, ``train_seconds`` (the optimiser steps), ``eval_seconds`` (the final
    evaluation), ``seconds``.
    """
    import torch

    from ...core.progress import bar as progress_bar

    t0 = time.perf_counter()
    model = build_model(cfg, tok.vocab_size)
    model.load_state_dict(init)
    model.to(device)
    model.train()
    opt = _optimizer(model, cfg)
    # the head inside the loss where measured (head_loss.py: 0.72-0.75 of the eager step), else eager
    fused = uses_fused_loss(model, device, precision)
    eager = functools.partial(fused_forward_loss, model, precision=precision) if fused else None
    loss_fn = training_loss(model, forward_loss, cfg, device, fallback=eager)
    stream = TokenStream(docs, tok.eos_id, cfg.seed)
    BT = int(cfg.batch_size) * int(cfg.seq_len)
    steps = cfg.steps_for(stream.n_tokens)
    bar = progress_bar(
        steps * BT, unit="tok", desc=f"proxy-lm {name}", disable=quiet, leave=False, unit_scale=True, mininterval=1.0
    )
    try:
        trained, losses, curve, train_s, counts = _train_loop(
            model, opt, stream, steps, cfg, evals, device, precision, bar, loss_fn
        )
    finally:
        bar.close()
    te = time.perf_counter()
    final = {full.name: evaluate(model, full, device, precision, max(1, 2 * int(cfg.batch_size))) for full, _ in evals}
    eval_s = time.perf_counter() - te
    losses = torch.stack(losses).float().cpu().numpy()
    return {
        "tokens": trained,
        "passes": trained / stream.n_tokens,
        "steps": int(steps),
        "lr": float(cfg.lr),
        "weight_decay": float(cfg.weight_decay),
        "selection_tokens": stream.n_tokens,
        "docs": len(docs),
        "params": count_params(model),
        "train_curve": _train_curve(losses, steps, BT),
        "curve": curve,
        "evals": final,
        "unigram": {full.name: unigram_losses(counts, full) for full, _ in evals},
        "train_seconds": train_s,
        "eval_seconds": eval_s,
        "tokens_per_second": trained / max(train_s, 1e-9),
        "seconds": time.perf_counter() - t0,
    }
