"""What a trial loses by scoring the first documents of the evaluation set -> benchmarks/results/trial_eval.md

Since round 11 a search's trials score each proxy on the first documents of every evaluation set
(its seeded order) up to ``trial_eval_tokens`` (default: half the proxy's ``eval_tokens``, 50,000
for ``tiny``); the verification still scores all of it. This measures what that costs and what
it changes, on ``search_corpus.py``'s real text and its 300-document evaluation set (90,816
scored tokens): ``tiny`` models trained in bfloat16 as a search's worker trains them on three
selections (proxy_precision.py's) x ``--seeds`` seeds (:func:`trained_models`), each scored once per
document.

Reported, for each cap: the seconds of an evaluation (median over models, the capped and the
whole set timed in turn); each model's loss on the capped set against the whole; for every pair
of models, how far the capped set moves their difference from the whole set's (the subset a
search uses, and the spread over random document subsets of the same size); and, for scale,
the seed-to-seed sd of a model's loss and the paired one (the selections' differences across
seeds) on the whole set.

    MALLOC_TRIM_THRESHOLD_=65536 python benchmarks/trial_eval.py --work /work/cache/search

Writes trial_eval.md and trial_eval.json (the same numbers; the docs render from the JSON:
``python benchmarks/render_docs.py`` afterwards). ``--suite 1`` (default) also counts the scored tokens of the recipe suite's evaluation sets
(``suite_corpora.py``'s texts, no embedding), so one can see which of them the cap touches.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULT = ROOT / "benchmarks" / "results" / "trial_eval.md"


def trained_models(work: Path, seeds: int, tokens: int):
    """(name, seed, model) of ``tiny`` models trained in bfloat16 as a search's worker trains them."""
    from benchmarks.proxy_precision import corpus_setup, selections
    from datamask.analysis.proxy_lm import train as T
    from datamask.analysis.proxy_lm.config import ProxyLMConfig
    from datamask.analysis.proxy_lm.head_loss import fused_forward_loss
    from datamask.analysis.proxy_lm.model import TokenStream, build_model
    from datamask.core.heap import large_blocks

    raw, base, tok, ev, ids = corpus_setup(work, tokens)

    class Quiet:
        def update(self, n):
            pass

        def set_postfix(self, **kw):
            pass

    models = []
    for seed in range(seeds):
        cfg = ProxyLMConfig(preset="tiny", tokens=tokens, curve_points=0, threads=1, seed=seed).resolved()
        init = T.initial_state(cfg, tok.vocab_size)
        for name, sel in selections(raw["kind"], int(0.3 * len(raw))).items():
            with T.deterministic(1), large_blocks():
                model = build_model(cfg, tok.vocab_size)
                model.load_state_dict(init)
                opt = T._optimizer(model, cfg)
                stream = TokenStream([ids[i] for i in sel], tok.eos_id, cfg.seed)
                loss = functools.partial(fused_forward_loss, model, precision="bfloat16")
                T._train_loop(
                    model, opt, stream, cfg.steps_for(stream.n_tokens), cfg, [], "cpu", "bfloat16", Quiet(), loss
                )
            models.append((name, seed, model))
            print("trained", name, seed, flush=True)
    return models, ev, 2 * int(base.batch_size)


def doc_nll(model, ev) -> np.ndarray:
    """Each document's summed NLL (nats), as ``evaluate`` sums them (bfloat16 copy, 256-row head)."""
    import torch

    from datamask.analysis.proxy_lm import train as T

    lens = (ev.windows >= 0).sum(axis=1)
    order = np.argsort(-lens, kind="stable")
    out = np.zeros(len(ev.doc_tokens))
    scorer, _ = T._scoring_model(model, "cpu", "bfloat16")
    with torch.no_grad():
        for s in range(0, len(order), 32):
            idx = order[s : s + 32]
            w = torch.from_numpy(ev.windows[idx, : int(lens[idx].max())])
            y = w[:, 1:].clone()
            y[y < 0] = -100
            nll = T.token_nll(scorer, w[:, :-1].clamp(min=0), y, T.EVAL_HEAD_ROWS).reshape(len(idx), -1)
            np.add.at(out, ev.doc[idx], nll.sum(dim=1).double().numpy())
    return out


def timed(models, ev, caps: list, repeats: int) -> dict:
    """Median seconds of ``evaluate`` on each cap's subset (None: the whole set)."""
    from datamask.analysis.proxy_lm import train as T
    from datamask.core.heap import large_blocks

    sets = {c: ev if c is None or ev.tokens <= c else T.subset(ev, c) for c in caps}
    secs = {c: [] for c in caps}
    for _ in range(repeats):
        for _, _, m in models:
            for c, e in sets.items():
                with T.deterministic(1), large_blocks():
                    t0 = time.perf_counter()
                    T.evaluate(m, e, "cpu", "bfloat16", 32)
                    secs[c].append(time.perf_counter() - t0)
    return {c: (float(np.median(v)), sets[c].tokens, len(sets[c].doc_tokens)) for c, v in secs.items()}


def pair_errors(D: np.ndarray, tok: np.ndarray, n_docs: int, draws: int, rng) -> tuple:
    """(error of every pairwise difference on the first ``n_docs`` documents against all of them,
    sd of that error over ``draws`` random subsets of ``n_docs`` documents)."""
    full = D.sum(1) / tok.sum()
    pairs = list(itertools.combinations(range(len(D)), 2))

    def err(idx):
        sub = D[:, idx].sum(1) / tok[idx].sum()
        return np.array([(sub[i] - sub[j]) - (full[i] - full[j]) for i, j in pairs])

    first = err(np.arange(n_docs))
    spread = np.array([err(rng.choice(len(tok), n_docs, replace=False)) for _ in range(draws)]).std(axis=0)
    return first, spread


def measure(models, ev, D, timing, caps, args, load0, load1) -> dict:
    """Everything trial_eval.json holds (and trial_eval.md shows): spreads, each cap's cost and
    error, every model's losses."""
    import torch
    from scipy.stats import spearmanr

    tok = ev.doc_tokens.astype(float)
    full = D.sum(1) / tok.sum()
    frame = pd.DataFrame({"selection": [n for n, _, _ in models], "seed": [s for _, s, _ in models], "loss": full})
    piv = frame.pivot(index="seed", columns="selection", values="loss")
    paired = np.mean([(piv[a] - piv[b]).std() for a, b in itertools.combinations(piv.columns, 2)])
    t_full = timing[None][0]
    rng = np.random.default_rng(0)
    rows = []
    for c in caps:
        sec, ntok, ndoc = timing[c]
        row = {"cap": c, "docs": int(ndoc), "tokens": int(ntok), "seconds": float(sec), "of_whole": sec / t_full}
        if c is None:
            row.update(spearman=1, largest_change=0, random_subset_sd=0)
        else:
            sub = D[:, :ndoc].sum(1) / tok[:ndoc].sum()
            first, spread = pair_errors(D, tok, ndoc, args.draws, rng)
            row.update(
                spearman=float(spearmanr(sub, full).statistic),
                largest_change=float(np.abs(first).max()),
                random_subset_sd=float(spread.mean()),
            )
        rows.append(row)
    losses = []
    for k, (n, sd, _) in enumerate(models):
        cut = {f"first_{c}": float(D[k, : timing[c][2]].sum() / tok[: timing[c][2]].sum()) for c in caps if c}
        losses.append({"model": f"{n} s{sd}", "whole": float(full[k]), **cut})
    return {
        "about": "What a trial loses by scoring the first documents of the evaluation set "
        "(benchmarks/trial_eval.py). Losses in nats/token.",
        "command": f"python benchmarks/trial_eval.py --seeds {args.seeds} --repeats {args.repeats}",
        "host": {
            "machine": platform.machine(),
            "cores": os.cpu_count(),
            "torch": torch.__version__,
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        },
        "load": [load0, load1],
        "models": len(models),
        "selections": int(frame["selection"].nunique()),
        "seeds": args.seeds,
        "tokens": args.tokens,
        "precision": "bfloat16",
        "eval": {"docs": len(tok), "scored_tokens": int(tok.sum())},
        "seed_sd": float(frame.groupby("selection")["loss"].std().mean()),
        "paired_sd": float(paired),
        "caps": rows,
        "losses": losses,
    }


def report(r: dict) -> str:
    """trial_eval.md from :func:`measure`'s results."""
    h, caps = r["host"], [c["cap"] for c in r["caps"]]
    out = [
        "# What a trial loses by scoring the first documents of the evaluation set",
        "",
        f"Host: {h['machine']}, {h['cores']} cores, torch {h['torch']}, CPU capability {h['cpu_capability']}; "
        f"load average {r['load'][0]:.2f} at start, {r['load'][1]:.2f} at the end. Command: `{r['command']}`.",
        "",
        f"{r['models']} `tiny` models trained in bfloat16 on {r['tokens']:,} tokens ({r['selections']} selections x "
        f"{r['seeds']} seeds) of search_corpus's real text, scored on its evaluation set: {r['eval']['docs']} "
        f"documents, {r['eval']['scored_tokens']:,} scored tokens. On the whole set, the seed-to-seed sd of a "
        f"model's loss is **{r['seed_sd']:.4f}** nats/token (mean over the selections) and the paired sd of a "
        f"difference between two selections over the seeds **{r['paired_sd']:.4f}**.",
        "",
        "| evaluation scored | documents | tokens | seconds per evaluation (median) | / whole set | "
        "Spearman of the models' losses with the whole set's | largest change of a pairwise difference, "
        "the search's subset | its sd over random subsets of as many documents |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for c in r["caps"]:
        if c["cap"] is None:
            out.append(f"| whole set | {c['docs']} | {c['tokens']:,} | {c['seconds']:.3f} | 1.000 | 1 | 0 | 0 |")
            continue
        out.append(
            f"| first documents up to {c['cap']:,} tokens | {c['docs']} | {c['tokens']:,} | {c['seconds']:.3f} | "
            f"{c['of_whole']:.3f} | {c['spearman']:.3f} | {c['largest_change']:.4f} | {c['random_subset_sd']:.4f} |"
        )
    out += ["", "| model | loss, whole set | " + " | ".join(f"loss, first {c:,}" for c in caps if c) + " |"]
    out.append("| --- | --- |" + " --- |" * sum(1 for c in caps if c))
    for m in r["losses"]:
        out.append(
            f"| {m['model']} | {m['whole']:.4f} | " + " | ".join(f"{m[f'first_{c}']:.4f}" for c in caps if c) + " |"
        )
    out += [
        "",
        "- A trial's loss on the capped set sits on another scale than the whole set's (other documents): the "
        "regressor only ranks the trials, and every trial is scored on the same documents.",
        "- The change a cap makes to a difference between two models is eval-sampling noise; set it beside the "
        "paired sd above (and a single-seed trial's seed-to-seed sd) before trusting a cap.",
        "",
    ]
    return "\n".join(out)


def suite_eval_tokens(seed: int = 0) -> list:
    """(corpus, evaluation documents, their scored tokens under a search's ``tiny`` proxy) of every
    corpus of ``suite_corpora.py``: the texts as it builds them (no embedding), a tokenizer trained
    as a search's preparation trains it on the input, the set cut as the preparation cuts it."""
    from benchmarks.suite_corpora import BUILDERS, CORPORA, _split, planted_docs
    from datamask.analysis.proxy_lm.config import ProxyLMConfig
    from datamask.analysis.proxy_lm.tokenizer import sample_for_tokenizer, train_bpe
    from datamask.analysis.proxy_lm.train import prepare_eval

    r = ProxyLMConfig(preset="tiny", curve_points=0, threads=1).resolved()
    out = []
    for name in CORPORA:
        inp, ev = planted_docs(seed)[:2] if name == "planted" else _split(BUILDERS[name](seed), seed)
        tok = train_bpe(sample_for_tokenizer([[t for _, t in inp]], r.tokenizer_sample_chars, seed), r.vocab_size)
        d = prepare_eval(name, [t for _, t in ev], None, tok, r.seq_len, r.eval_tokens, seed)
        out.append((name, len(d.doc_tokens), d.tokens))
    return out


SUITE_CAP = 50_000  # a search's default --trial-eval-tokens for the tiny proxy


def suite_lines(rows: list) -> list:
    cap = SUITE_CAP
    return [
        "",
        "## The recipe suite's evaluation sets",
        "",
        f"Scored tokens of each suite corpus's evaluation set under the `tiny` proxy (`--suite`): a set of at most "
        f"{cap:,} tokens is scored whole by the trials too.",
        "",
        "| corpus | evaluation documents | scored tokens | the trials score |",
        "| --- | --- | --- | --- |",
        *[f"| {n} | {d} | {t:,} | {'all of it' if t <= cap else 'the first ~50,000 tokens'} |" for n, d, t in rows],
        "",
    ]


def main(argv=None):
    from benchmarks.proxy_precision import proxy_bench_args

    args, load0 = proxy_bench_args(argv, __doc__, RESULT, seeds=3, repeats=2, draws=2000, suite=1)
    models, ev, _ = trained_models(Path(args.work), args.seeds, args.tokens)
    from datamask.analysis.proxy_lm import train as T

    with T.deterministic(1):
        D = np.stack([doc_nll(m, ev) for _, _, m in models])
    caps = [None, 50_000, 25_000]
    timing = timed(models, ev, caps, args.repeats)
    results = measure(models, ev, D, timing, caps, args, load0, os.getloadavg()[0])
    text = report(results)
    if args.suite:  # the recipe suite's sets, built from this machine's text (suite_corpora.py)
        rows = suite_eval_tokens()
        text += "\n".join(suite_lines(rows))
        results["suite_cap"] = SUITE_CAP
        results["suite"] = [{"corpus": n, "docs": d, "scored_tokens": t} for n, d, t in rows]
    Path(args.out).write_text(text)
    # the docs render from the JSON (benchmarks/render_docs.py)
    Path(args.out).with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n")
    print(text)


if __name__ == "__main__":
    main()
