"""``datamask proxy-lm``: train one proxy LM per selection on equal tokens, report held-out loss.

:func:`run_proxy_lm` reads and checks every input first (selections, evaluation sets, the
tokenizer), so bad input stops with one line and nothing written. Then, in ``OUTPUT``:

``config.json``        the resolved config (written first; a rerun with another config is refused)
``tokenizer.json``     the byte-level BPE trained on the selections (reused by reruns), unless
                       ``--tokenizer`` was given
``runs/NAME.json``     one selection's result; a rerun reuses it when its fingerprint (config,
                       tokenizer, evaluation data, the selection's text) matches
``proxy.csv``          selection, eval_set, domain, loss (nats/token), perplexity, bits_per_byte,
                       eval_tokens, unigram_loss (a smoothed unigram model of the selection's trained
                       tokens, on the same scored tokens), unigram_margin (unigram_loss - loss), tokens
                       (trained), passes (over the selection), steps (optimiser steps), params, seconds;
                       the untrained model's rows are labelled ``untrained`` (its unigram: uniform)
``loss_curve.png``, ``final_loss.png``
``manifest.json``      config, versions, device, inputs and totals (written last)

Every file is written under a temporary name and renamed when complete.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ...core.heap import large_blocks
from ...errors import ConfigError, OutputError
from ...pipeline.io import write_json_atomic
from .baseline import learned_warning, unigram_losses
from .config import ProxyLMConfig, passes_of
from .data import exclude_texts, load_eval_sets, load_selections
from .figures import final_loss_figure, loss_curve_figure, save_atomic
from .model import build_model, count_params
from .tokenizer import load_tokenizer, sample_for_tokenizer, train_bpe
from .train import deterministic, evaluate, initial_state, prepare_eval, subset, train_selection

__all__ = [
    "run_proxy_lm",
    "CSV_COLUMNS",
    "UNTRAINED",
    "proxy_device",
    "auto_precision",
    "proxy_threads",
    "eval_windows",
    "versions",
    "regime",
]

CSV_COLUMNS = (
    "selection",
    "eval_set",
    "domain",
    "loss",
    "perplexity",
    "bits_per_byte",
    "eval_tokens",
    "unigram_loss",
    "unigram_margin",
    "tokens",
    "passes",
    "steps",
    "params",
    "seconds",
)
UNTRAINED = "untrained"
_OURS = ("config.json", "tokenizer.json", "runs", "proxy.csv", "loss_curve.png", "final_loss.png", "manifest.json")


def versions() -> dict:
    import tokenizers
    import torch
    import transformers

    from ... import __version__

    return {
        "datamask": __version__,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "python": platform.python_version(),
    }


def regime(tokens) -> str:
    """In words, what every model trains on: ``"100,352 tokens"`` or ``"4 passes over its selection"``."""
    p = passes_of(tokens)
    return f"{int(tokens):,} tokens" if p is None else f"{p:g} pass{'' if p == 1 else 'es'} over its selection"


def proxy_device(cfg) -> tuple[str, str]:
    import torch

    dev = cfg.device
    if dev == "auto":
        dev = "cuda" if torch.cuda.is_available() else "cpu"
    if dev == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device cuda was asked for but torch sees no CUDA device; use --device cpu or auto")
    prec = cfg.precision
    if prec == "auto":
        prec = auto_precision(dev)
    return dev, prec


def auto_precision(device: str, cpu_bf16: bool | None = None) -> str:
    """What ``precision: auto`` runs on ``device``: bfloat16 (autocast) on CUDA; on the CPU
    bfloat16 where the CPU has bfloat16 dot products (``cpu_bf16``, default: its flags say
    ``avx512_bf16`` or ``amx_bf16``; measured on an avx512_bf16 CPU at 0.82 of float32's
    optimiser steps and 0.63 of its evaluation, held-out losses within 0.006 nats of float32's
    (a search's paired noise: 0.009-0.018) and the same ranking of selections:
    benchmarks/results/proxy_precision.md; AMX CPUs not measured), float32 elsewhere (bfloat16
    products are emulated there, slower than float32)."""
    if device == "cuda":
        return "bfloat16"
    if cpu_bf16 is None:
        from ...features.model_files import cpu_has_bf16

        cpu_bf16 = cpu_has_bf16()
    return "bfloat16" if cpu_bf16 else "float32"


def proxy_threads(cfg) -> int:
    if cfg.threads is not None:
        return int(cfg.threads)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _hash_texts(texts) -> str:
    h = hashlib.blake2b(digest_size=12)
    for t in texts:
        b = t.encode("utf-8", errors="surrogatepass")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def _prepare_output(cfg) -> Path:
    """Create or reopen ``cfg.output``; refuse a foreign directory or another config."""
    out = Path(cfg.output)
    if out.exists() and not out.is_dir():
        raise OutputError(f"output {out} is a file; pass a directory")
    if out.exists() and any(out.iterdir()):
        marker = out / "config.json"
        if not marker.exists():
            raise ConfigError(
                f"output directory {out} is not empty and was not written by proxy-lm (no "
                f"config.json); choose a new or empty OUTPUT"
            )
        old = json.loads(marker.read_text()).get("result", {})
        new = json.loads(json.dumps(cfg.result_dict(), default=str))
        if old != new and not cfg.overwrite:
            k = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))[0]
            raise ConfigError(
                f"output directory {out} was written with another config ({k}: {old.get(k)!r} -> "
                f"{new.get(k)!r}); pass --overwrite to start over or choose a new OUTPUT"
            )
        if cfg.overwrite:
            for name in _OURS:
                p = out / name
                shutil.rmtree(p) if p.is_dir() else p.unlink(missing_ok=True)
    try:
        (out / "runs").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"cannot create {out} ({e.strerror}); check the path and permissions") from None
    for p in list(out.glob(".*.tmp-*")) + list((out / "runs").glob(".*.tmp-*")):  # an interrupted write
        p.unlink(missing_ok=True)
    write_json_atomic(
        {"kind": "proxy-lm", "result": cfg.result_dict(), "config": cfg.resolved().to_dict()}, out / "config.json"
    )
    return out


def _rows(name, r, unigram, params, tokens, passes, steps, seconds):
    rows = []
    for s, by_dom in r.items():
        for dom, (nats, ntok, nbytes) in by_dom.items():
            loss = nats / ntok
            u = unigram[s][dom][0] / max(unigram[s][dom][1], 1)
            rows.append(
                {
                    "selection": name,
                    "eval_set": s,
                    "domain": dom,
                    "loss": loss,
                    "perplexity": float(np.exp(loss)),
                    "bits_per_byte": nats / np.log(2) / max(nbytes, 1),
                    "eval_tokens": ntok,
                    "unigram_loss": u,
                    "unigram_margin": u - loss,
                    "tokens": tokens,
                    "passes": passes,
                    "steps": steps,
                    "params": params,
                    "seconds": seconds,
                }
            )
    return rows


def _refuse_urls(cfg):
    """proxy-lm trains in this process on local files: a URL is refused in one line."""
    from ...runtime.storage import is_url

    def many(v):
        return [v] if isinstance(v, str) else list(v or [])

    for what, v in (
        ("selection", cfg.selections),
        ("evaluation set", cfg.eval),
        ("output", cfg.output),
        ("tokenizer", cfg.tokenizer),
    ):
        url = next((x for x in many(v) if is_url(x)), None)
        if url:
            raise ConfigError(
                f"proxy-lm reads and writes local paths only, not the {what} {url}; copy it to a "
                "local folder first (e.g. `aws s3 sync`; docs/storage.md)"
            )


def _inputs(cfg):
    """Every input read and checked before anything is written: (evaluation sets, selections,
    the given tokenizer or None)."""
    if not cfg.selections or not cfg.eval or not cfg.output:
        raise ConfigError(
            "proxy-lm needs selections, eval and output (datamask proxy-lm SELECTION... --eval EVAL_DIR OUTPUT_DIR)"
        )
    _refuse_urls(cfg)
    evals = load_eval_sets(cfg.eval, cfg.text_column, cfg.domain_column)
    sels = load_selections(cfg.selections, cfg.text_column)
    exclude_texts(sels, evals)
    given = load_tokenizer(cfg.tokenizer) if cfg.tokenizer else None
    return evals, sels, given


def _tokenizer(given, out: Path, sels, r):
    """The given tokenizer, the one an earlier run trained (reused), or one trained now on the selections."""
    if given is not None:
        return given
    if (out / "tokenizer.json").exists():
        tok = load_tokenizer(out / "tokenizer.json")
        tok.source = "trained (reused)"
        return tok
    tok = train_bpe(
        sample_for_tokenizer([s.texts for s in sels], r.tokenizer_sample_chars, r.sample_seed), r.vocab_size
    )
    tok.save(out / "tokenizer.json")
    return tok


def eval_windows(evals, tok, r):
    """(full, curve) windows of every evaluation set, and their fingerprint."""
    data = []
    for e in evals:
        full = prepare_eval(e.name, e.texts, e.domains, tok, r.seq_len, r.eval_tokens, r.sample_seed)
        data.append((full, subset(full, r.curve_tokens)))
    fp = hashlib.blake2b(
        b"".join(
            f.name.encode() + f.windows.tobytes() + "|".join(f.doc_domain).encode() + c.windows.tobytes()
            for f, c in data
        ),
        digest_size=12,
    ).hexdigest()
    return data, fp


def _untrained(r, tok, data, device, precision):
    """The initial weights, their size, and the untrained model's losses (table and curve start)."""
    init = initial_state(r, tok.vocab_size)
    m0 = build_model(r, tok.vocab_size)
    m0.load_state_dict(init)
    m0.to(device)
    params = count_params(m0)
    untrained = {f.name: evaluate(m0, f, device, precision, 2 * r.batch_size) for f, _ in data}
    uniform = {f.name: unigram_losses(np.zeros(tok.vocab_size), f) for f, _ in data}  # nothing counted
    curve = {}
    for f, c in data:
        nats, ntok, _ = evaluate(m0, c, device, precision, 2 * r.batch_size)["all"]
        curve[f.name] = nats / ntok
    return init, params, (untrained, uniform), curve


def _selection_run(s, cfg, r, tok, init, data, env, out: Path) -> dict:
    """One selection's result: reused when its fingerprint matches a finished run, else trained now."""
    device, precision, threads, eval_fp = env
    fp = hashlib.sha256(
        json.dumps([cfg.fingerprint(), tok.sha256, eval_fp, _hash_texts(s.texts), device, precision]).encode()
    ).hexdigest()[:16]
    path = out / "runs" / f"{s.name}.json"
    res = json.loads(path.read_text()) if path.exists() else None
    if res is not None and res.get("fingerprint") == fp and "unigram" in res:  # (older runs: no baseline)
        res["resumed"] = True
        return res
    res = train_selection(s.name, tok.encode(s.texts), tok, r, init, data, device, precision, quiet=cfg.quiet)
    res.update(
        name=s.name,
        source=s.source,
        fingerprint=fp,
        excluded_eval_rows=s.excluded,
        skipped_texts=s.skipped,
        device=device,
        precision=precision,
        threads=threads,
    )
    write_json_atomic(res, path)
    res = json.loads(path.read_text())  # the same types whether computed now or resumed
    res["resumed"] = False
    return res


def _write_results(out: Path, runs: dict, rows: list, untrained_curve: dict) -> pd.DataFrame:
    table = pd.DataFrame(rows, columns=list(CSV_COLUMNS))
    tmp = out / f".proxy.csv.tmp-{os.getpid()}"
    table.to_csv(tmp, index=False)
    os.replace(tmp, out / "proxy.csv")
    save_atomic(loss_curve_figure(runs, untrained_curve), out / "loss_curve.png")
    save_atomic(final_loss_figure(table), out / "final_loss.png")
    return table


def _selection_entry(s, run: dict) -> dict:
    keys = ("tokens", "selection_tokens", "passes", "steps", "resumed", "seconds", "tokens_per_second")
    return {
        "name": s.name,
        "source": s.source,
        "docs": len(s.texts),
        "skipped_texts": s.skipped,
        "excluded_eval_rows": s.excluded,
        **{k: run[k] for k in keys},
        "unigram_margin": {e: _margin(run, e) for e in run["evals"]},
    }


def _margin(run: dict, name: str) -> float:
    """A run's unigram margin on evaluation set ``name`` (all its scored tokens)."""
    nats, ntok, _ = run["evals"][name]["all"]
    u_nats, u_tok = run["unigram"][name]["all"]
    return u_nats / max(u_tok, 1) - nats / ntok


def _manifest(cfg, r, env, params, tok, evals, data, sels, runs, t0) -> dict:
    device, precision, threads, _ = env
    return {
        "kind": "proxy-lm",
        "status": "complete",
        "config": r.to_dict(),
        "fingerprint": cfg.fingerprint(),
        "versions": versions(),
        "device": device,
        "precision": precision,
        "threads": threads,
        "params": params,
        "train_tokens": cfg.train_tokens,
        "steps": cfg.steps,
        "lr": float(r.lr),
        "weight_decay": float(r.weight_decay),
        "regime": regime(r.tokens),
        "tokenizer": {"source": tok.source, "sha256": tok.sha256, "vocab_size": tok.vocab_size, "eos_id": tok.eos_id},
        "eval_sets": [
            {
                "name": e.name,
                "source": e.source,
                "docs": len(e.texts),
                "skipped_texts": e.skipped,
                "scored_docs": int(len(f.doc_tokens)),
                "scored_tokens": f.tokens,
                "domain_column": e.info.get("domain_column"),
            }
            for e, (f, _) in zip(evals, data)
        ],
        "selections": [_selection_entry(s, runs[s.name]) for s in sels],
        "warnings": _warnings(runs, evals, "selections' models", r.tokens),
        "totals": {
            "selections": len(sels),
            "computed_this_run": sum(not v["resumed"] for v in runs.values()),
            "resumed": sum(v["resumed"] for v in runs.values()),
        },
        "wall_seconds": round(time.perf_counter() - t0, 3),
    }


def _warnings(runs: dict, evals, what: str, tokens) -> list:
    """:func:`~.baseline.learned_warning` over the runs (first), and under a multiple (``4x``) that
    the steps follow each selection's size; empty when every model learned at equal steps."""
    steps = [r["steps"] for r in runs.values()]
    w = learned_warning(steps, {e.name: [_margin(r, e.name) for r in runs.values()] for e in evals}, what)
    out = [w] if w else []
    if passes_of(tokens) is not None:
        out.append(
            f"--tokens {tokens} trains each selection for passes over its own tokens, so its optimiser steps follow "
            f"its size ({min(steps):,}-{max(steps):,} steps)"
        )
    return out


def run_proxy_lm(cfg: ProxyLMConfig, finish=None) -> dict:
    """Run the proxy-LM evaluation of ``cfg``; returns the manifest (with ``table``, a DataFrame).
    ``finish(manifest)`` (the command line's report) runs before ``manifest.json`` is written."""
    t0 = time.perf_counter()
    cfg = cfg.validated()
    evals, sels, given = _inputs(cfg)
    r = cfg.resolved()
    device, precision = proxy_device(cfg)
    threads = proxy_threads(cfg)
    out = _prepare_output(cfg)
    tok = _tokenizer(given, out, sels, r)
    data, eval_fp = eval_windows(evals, tok, r)
    env = (device, precision, threads, eval_fp)
    runs, rows = {}, []
    with deterministic(threads), large_blocks():  # a Dask worker's heap: core/heap.py
        init, params, (untrained, uniform), untrained_curve = _untrained(r, tok, data, device, precision)
        rows += _rows(UNTRAINED, untrained, uniform, params, 0, 0.0, 0, 0.0)
        for s in sels:
            runs[s.name] = res = _selection_run(s, cfg, r, tok, init, data, env, out)
            rows += _rows(
                s.name,
                res["evals"],
                res["unigram"],
                res["params"],
                res["tokens"],
                res["passes"],
                res["steps"],
                res["seconds"],
            )
    table = _write_results(out, runs, rows, untrained_curve)
    manifest = _manifest(cfg, r, env, params, tok, evals, data, sels, runs, t0)
    if finish is not None:
        manifest = finish(manifest)
    write_json_atomic(manifest, out / "manifest.json")  # last: the run is complete
    manifest["table"] = table
    manifest["output"] = str(out)
    return manifest
