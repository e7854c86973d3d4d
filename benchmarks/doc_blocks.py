"""The docs' rendered blocks: one function each, from the results files it names.

``@block(NAME, FILE, ...)`` registers a function that takes the loaded FILEs (under
benchmarks/results/, JSON or CSV) and returns the text between ``<!-- render: NAME -->`` and
``<!-- /render -->`` in README.md, docs/*.md or CHANGELOG.md's latest entry. Every number goes
through ``num(value, spec)``; a number typed into the text (outside a code span) fails
tests/test_docs_render.py. Run ``python benchmarks/render_docs.py`` after a benchmark writes
its results. How to add a block: docs/design.md, "From a benchmark to the docs".
"""

from __future__ import annotations

from render_docs import block, count, num, txt

DIVERSITY = {"pairwise": "pairwise", "facility": "facility", "disf": "DiSF"}


def span(values, spec: str, dash: str = "-") -> str:
    """``lo-hi`` of sourced values (one value when they are equal)."""
    lo, hi = min(values), max(values)
    return num(lo, spec) if format(lo, spec) == format(hi, spec) else f"{num(lo, spec)}{dash}{num(hi, spec)}"


def listed(values, spec: str) -> str:
    """``a, b and c`` of sourced values."""
    parts = [num(v, spec) for v in values]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def recipe_words(r: dict) -> str:
    """A DATAMASK recipe as the docs write it: ``lam`` 0.37, facility, ``prune`` 0.70."""
    words = [f"`lam` {num(r['lam'], '.2f')}", DIVERSITY[r["diversity"]]]
    if "prune" in r:
        words.append(f"`prune` {num(r['prune'], '.2f')}")
    return ", ".join(words)


# ---------------------------------------------------------------------- search_real.json
def beyond(d: dict) -> bool:
    """A paired difference beyond noise: its mean above two standard errors (datamask.analysis.search)."""
    return abs(d["mean"]) > 2 * d["sd"] / d["seeds"] ** 0.5


def current_runs(sr: dict) -> list:
    """The recorded runs of the latest round's own code."""
    at = sr["latest"]["round"]
    return [r for r in sr["runs"] if r["round"] == at and r["code_of"] == at]


def baseline(sr: dict) -> dict | None:
    """Round 5's code on the latest run's host: what the time target halves."""
    host = sr["latest"]["host"]
    return next((r for r in sr["runs"] if r["code_of"] == 5 and r["host"] == host), None)


def versus(sr: dict, ref: str) -> str:
    """How the chosen recipe verified against ``ref``, with its noise."""
    d, v = sr["latest"]["differences"][ref], sr["latest"]["verified"]
    word = "below" if d["mean"] < 0 else "above"
    if beyond(d):
        noise = f"beyond the paired noise: sd {num(d['sd'], '.4f')} over {num(d['seeds'])} seeds"
    else:
        noise = f"within noise: two standard errors {num(2 * d['sd'] / d['seeds'] ** 0.5, '.4f')}"
    name = {"default": "the default's", "topk": "top-k's", "random": "random's"}[ref]
    return f"{num(abs(d['mean']), '.4f')} {word} {name} {num(v[ref]['mean'], '.4f')} ({noise})"


@block("search_figures", "search_real.json")
def search_figures(sr):
    s = sr["latest"]
    runs = current_runs(sr)
    rand = s["differences"]["random"]
    verdict = (
        "random is worse beyond noise" if beyond(rand) and rand["mean"] < 0 else "random is not worse beyond noise"
    )
    return (
        f"Measured on this repository's machine ({num(s['cores'])} cores), with the commands, in "
        '[benchmarks.md](benchmarks.md) ("Recipe search") and benchmarks/results/search_real.md (.json). '
        f"With the defaults ({num(s['trials'])} trials, {num(s['proxy']['tokens'], ',')} tokens, "
        f"{num(s['verified']['chosen']['seeds'])} verification seeds) on {num(s['rows'], ',')} documents of Python "
        f"documentation, a search trains {num(s['models'])} proxy models: **{num(s['wall_minutes'], '.1f')} minutes** "
        f"in the latest run ({num(s['cpu_minutes'], '.1f')} CPU-minutes, {num(100 * s['cpu_share'], '.0f')}% of the "
        f"cores; {span([r['wall_minutes'] for r in runs], '.1f')} minutes over round {num(s['round'])}'s "
        f"{num(count(runs))} runs). Its regressor ({s['regressor']}) ranked the trials with a cross-validated "
        f"Spearman of {num(s['cv_spearman'], '.3f')}. The chosen recipe ({recipe_words(s['chosen'])}) verified at "
        f"{num(s['verified']['chosen']['mean'], '.4f')} nats/token: {versus(sr, 'default')}, {versus(sr, 'topk')} "
        f"and {versus(sr, 'random')}. That is what a small proxy on this corpus can tell: {verdict}, and a "
        "difference of a few hundredths of a nat between recipes needs more seeds than the verification's to be "
        "sure of."
    )


@block("search_cv", "search_real.json")
def search_cv(sr):
    from datamask.analysis.search.summary import WEAK_SPEARMAN

    s = sr["latest"]
    cv = s["cv"]
    above = [k for k in cv if cv[k]["spearman"] >= WEAK_SPEARMAN]
    where = (
        f"all {num(count(cv))} were above it"
        if len(above) == len(cv)
        else ("none was above it" if not above else f"{num(count(above))} of {num(count(cv))} were above it")
    )
    label = {"lightgbm": "LightGBM", "gp": "the Gaussian process", "quadratic": "the quadratic"}
    return (
        f"On the real-text run (benchmarks/results/search_real.md, {num(s['trials'])} trials) {where}: "
        + ", ".join(f"{label[k]} {num(v['spearman'], '.3f')}" for k, v in cv.items())
        + "."
    )


@block("bench_search_real", "search_real.json")
def bench_search_real(sr):
    s, t = sr["latest"], sr["targets"]
    runs, base = current_runs(sr), baseline(sr)
    shares = [r["train_share"] for r in runs]
    met = "met" if min(shares) >= t["train_share"] else "not met"
    text = (
        f"{num(s['rows'], ',')} documents of Python documentation, {num(s['trials'])} trials x {num(s['seeds'])} "
        f"seed + {num(s['verification_models'])} verification runs of the "
        f"{num(s['proxy']['params'] / 1e6, '.1f')}M-parameter `{s['proxy']['preset']}` proxy on "
        f"{num(s['proxy']['tokens'], ',')} tokens each. Round {num(s['round'])}'s {num(count(runs))} runs, on the "
        f"{txt(s['host'])}: **{span([r['wall_minutes'] for r in runs], '.1f')} min** wall, training share "
        f"**{span(shares, '.3f')}** (issue {num(t['issue'])}'s target {num(t['train_share'], '.1f')}: {met}), "
        f"{span([r['tokens_per_worker_second'] for r in runs], ',.0f')} trained tokens per worker-second"
    )
    if base is not None:
        frac = [r["wall_minutes"] / base["wall_minutes"] for r in runs]
        ok = "met" if max(frac) <= t["wall_fraction_of_round5_code"] else "not met"
        text += (
            f"; round {num(base['code_of'])}'s code took {num(base['wall_minutes'], '.1f')} min on the same host, so "
            f"{span(frac, '.2f')} of it (the target: {num(t['wall_fraction_of_round5_code'], '.1f')} of it, {ok})"
        )
    v = s["verified"]
    return text + (
        f". The latest run: {num(s['cpu_minutes'], '.1f')} CPU-minutes ({num(100 * s['cpu_share'], '.0f')}% of the "
        f"{num(s['cores'])} cores); regressor {s['regressor']}, cross-validated Spearman {num(s['cv_spearman'], '.3f')}; "
        f"chosen {recipe_words(s['chosen'])}, verified on {num(v['chosen']['seeds'])} fresh seeds at "
        f"{num(v['chosen']['mean'], '.4f')} nats/token, default {num(v['default']['mean'], '.4f')}, top-k "
        f"{num(v['topk']['mean'], '.4f')}, random {num(v['random']['mean'], '.4f')}. Every run, its load and "
        "code: search_real.md's table."
    )


@block("search_share_runs", "search_real.json")
def search_share_runs(sr):
    t, runs, base = sr["targets"], current_runs(sr), baseline(sr)
    shares = [r["train_share"] for r in runs]
    share_met = min(shares) >= t["train_share"]
    time_met = (
        base is not None
        and max(r["wall_minutes"] for r in runs) <= t["wall_fraction_of_round5_code"] * (base["wall_minutes"])
    )
    said = {
        (True, True): "are both met",
        (True, False): "the first is met, the second is not",
        (False, True): "the second is met, the first is not",
        (False, False): "are both missed",
    }[(share_met, time_met)]
    return (
        f"On search_real: **{listed(shares, '.3f')} in {num(count(runs))} runs, "
        f"{span([r['wall_minutes'] for r in runs], '.1f')} minutes** — the project's share target (issue "
        f"{num(t['issue'])}: {num(t['train_share'], '.1f')}) and its time target (on this machine, "
        + (
            f"{num(t['wall_fraction_of_round5_code'], '.1f')} of round {num(base['code_of'])}'s code's "
            f"{num(base['wall_minutes'], '.1f')} minutes"
            if base
            else "unmeasured"
        )
        + f") {said}"
    )


@block("search_real_evidence", "search_real.json")
def search_real_evidence(sr):
    s = sr["latest"]
    v, d = s["verified"], s["differences"]
    p = s["proxy"]

    def vs(ref, word):
        x = d[ref]
        lower = "lower" if x["mean"] < 0 else "higher"
        if not beyond(x):
            two_se = num(2 * x["sd"] / x["seeds"] ** 0.5, ".4f")
            return f"was level with {word} ({num(abs(x['mean']), '.4f')} {lower}; two standard errors {two_se})"
        side = "beat" if x["mean"] < 0 else "lost to"
        return f"{side} {word} by {num(abs(x['mean']), '.4f')} (paired sd {num(x['sd'], '.4f')}: beyond noise)"

    return (
        f"On `search_real` (benchmarks/results/search_real.md; {num(s['rows'], ',')} Python-documentation "
        f"paragraphs, {num(p['passes_min'], '.2f')}-{num(p['passes_max'], '.2f')} passes, round {num(s['round'])}, "
        f"{num(v['chosen']['seeds'])} paired seeds) the chosen recipe ({recipe_words(s['chosen'])}) "
        f"{vs('default', 'the default')}, {vs('topk', 'top-k')} and {vs('random', 'random')}. The default's mean "
        f"loss was {num(v['default']['mean'] - v['topk']['mean'], '+.4f')} nats/token against top-k's and "
        f"{num(v['default']['mean'] - v['random']['mean'], '+.4f')} against random's on the same seeds (the search "
        "records no paired spread between two references)."
    )


# ---------------------------------------------------------------------- trial_eval.json
def paired_sd(sr: dict):
    """The verification's paired seed-to-seed sd of a loss on search_real's (first) evaluation set."""
    return next(iter(sr["latest"]["noise"].values()))["loss_sd_paired"]


def _cap(te: dict, cap: int = 50000) -> dict:
    return next(c for c in te["caps"] if c["cap"] == cap)


@block("trial_eval_cap", "trial_eval.json", "search_real.json")
def trial_eval_cap(te, sr):
    c = _cap(te)
    paired = paired_sd(sr)
    side = "more than" if c["largest_change"] > paired else "less than"
    return (
        f"On search_real's set the first {num(c['tokens'], ',')} of {num(te['eval']['scored_tokens'], ',')} tokens "
        f"moved a difference between two of the benchmark's {num(te['models'])} models by up to "
        f"{num(c['largest_change'], '.4f')} nats/token ({num(c['random_subset_sd'], '.4f')}, the sd over random "
        f"subsets of as many documents, understates it), {side} the paired sd of a search's verification there "
        f"({num(paired, '.4f')}), for {num(c['of_whole'], '.2f')} of the evaluation time."
    )


@block("suite_eval_tokens", "trial_eval.json")
def suite_eval_tokens(te):
    toks = [r["scored_tokens"] for r in te["suite"]]
    whole = max(toks) <= te["suite_cap"]
    return f"The recipe suite's evaluation sets hold {span(toks, ',', '-')} tokens (trial_eval.md), so its trials " + (
        "score them whole and its evidence below is unchanged." if whole else "score the larger ones in part."
    )


@block("changelog_trial_eval", "trial_eval.json", "search_real.json")
def changelog_trial_eval(te, sr):
    c = _cap(te)
    paired = paired_sd(sr)
    toks = [r["scored_tokens"] for r in te["suite"]]
    return (
        f"the recipe suite's {num(count(toks))} sets hold {span(toks, ',')} tokens). On search_real's set: "
        f"{num(c['of_whole'], '.2f')} of the evaluation time, and the search's own subset moved a difference "
        f"between two models by up to {num(c['largest_change'], '.4f')} nats/token, "
        f"{'above' if c['largest_change'] > paired else 'below'} the paired sd of the search's verification there "
        f"({num(paired, '.4f')}; random subsets of as many documents: an sd of {num(c['random_subset_sd'], '.4f')})"
    )


# ---------------------------------------------------------------------- recipe_suite_verdicts.json
TARGET_WORDS = {"eval": "the representative held-out set", "quality": "the quality target"}


def _cells(names) -> str:
    """``man:1x`` names in words: ``man 1x, pydoc 4x``."""
    return ", ".join(txt(n).replace(":", " ") for n in names) or "none"


def _verdict(v: dict, regime: str, target: str, pair: str) -> dict | None:
    return next((r for r in v["verdicts"] if (r["regime"], r["target"], r["pair"]) == (regime, target, pair)), None)


def _count_ci(r: dict) -> str:
    """As :func:`_count`, each cell beyond noise with its interval (the first arm's loss minus the other's)."""
    parts = []
    for o in ("better", "level", "worse"):
        ci = r.get("intervals", {})
        named = ", ".join(
            f"{txt(c)} {num(ci[c][0], '+.3f')} [{num(ci[c][1], '+.3f')}, {num(ci[c][2], '+.3f')}]"
            if c in ci
            else txt(c)
            for c in r[o]
        )
        parts.append(f"{num(count(r[o]))} {o}" + (f" ({named})" if r[o] and o != "level" else ""))
    return ", ".join(parts)


def _count(r: dict) -> str:
    """``1 better, 0 level, 1 worse`` with the cells named where beyond noise."""
    parts = []
    for o in ("better", "level", "worse"):
        named = f" ({', '.join(txt(c) for c in r[o])})" if r[o] and o != "level" else ""
        parts.append(f"{num(count(r[o]))} {o}{named}")
    return ", ".join(parts)


@block("suite_table", "recipe_suite_verdicts.json")
def suite_table(v):
    lines = [
        "| regime | target | comparison | cells: first arm better / level / worse, beyond noise (paired t-interval) |",
        "| --- | --- | --- | --- |",
    ]
    for r in v["verdicts"]:
        lines.append(f"| {txt(r['regime'])} | {txt(r['target'])} | {txt(r['pair'])} | {_count(r)} |")
    return "\n".join(lines)


@block("suite_findings", "recipe_suite_verdicts.json")
def suite_findings(v):
    ln = v["learned"]
    out = [
        f"- **Cells run**: {_cells(v['ran'])} ({num(count(v['ran']))} of "
        f"{num(count(v['ran']) + count(v['not_run']))})"
        + (f"; **not run yet**: {_cells(v['not_run'])}" if count(v["not_run"]) else "")
        + ". "
        f"Each: {num(v['trials'])} trials, {num(v['seeds'])} paired verification seeds, every model "
        f"{num(v['proxy_tokens'], ',')} training tokens. Below, each cell beyond noise with the default's loss "
        "minus the other arm's (nats/token; negative: the default better) and its paired t-interval at "
        f"{num(100 * v['level'], '.0f')}%.",
        f"- **Did the proxies learn?** {num(ln['models'])} models, fewest optimiser steps {num(ln['min_steps'])}, "
        f"least margin over a unigram model of their own training tokens {num(ln['min_margin'], '.2f')} nats/token; "
        f"{num(ln['short'])} fell short of the bar"
        + (
            ": "
            + ", ".join(
                f"{txt(w['arm'])} on {txt(w['corpus'])} {txt(w['regime'])} ({num(w['models'])})"
                for w in ln.get("short_where", [])
            )
            if ln.get("short_where")
            else ""
        )
        + ".",
        "- **Cost at the search's defaults** (each cell held both CPU slots, but short test runs went beside "
        "some: the load at each cell's start and end is in recipe_suite.md): "
        + "; ".join(
            f"{_cells([c['cell']])}: {num(c['minutes'], '.0f')} minutes for {num(c['models'])} models on "
            f"{num(c['documents'], ',')} documents"
            for c in v["cost"]
        )
        + ". The verified models saw "
        + "; ".join(
            f"{num(c['passes'][0], '.2f')}-{num(c['passes'][1], '.2f')} passes ({_cells([c['cell']])})"
            for c in v["cost"]
        )
        + " of their selections: the budget is counted in the tokenizer the proxies train in (`--tokenizer`), "
        "and a pass also reads one end-of-text id per document, so the passes fall slightly under one (or four).",
    ]
    for regime in dict.fromkeys(r["regime"] for r in v["verdicts"]):
        for target in dict.fromkeys(r["target"] for r in v["verdicts"]):
            said = []
            for pair, words in (("default vs topk", "top-k"), ("default vs random", "random"),
                                ("default vs paper", "the paper's recipe")):  # fmt: skip
                r = _verdict(v, regime, target, pair)
                if r is not None:
                    said.append(f"against {words}: {_count_ci(r)}")
            out.append(
                f"- **{txt(regime)}, {TARGET_WORDS.get(str(target), txt(target))}**: the default, "
                + "; ".join(said)
                + "."
            )
    return "\n".join(out)


@block("readme_suite", "recipe_suite_verdicts.json")
def readme_suite(v):
    """The README's table: per regime and target, the default against top-k and random."""
    lines = [
        f"Cells run: {_cells(v['ran'])} ({num(count(v['ran']))} of "
        f"{num(count(v['ran']) + count(v['not_run']))}); {num(v['seeds'])} paired seeds; every arm at equal tokens.",
        "",
        "| passes | target | the default against top-k | the default against random |",
        "| --- | --- | --- | --- |",
    ]
    for regime in dict.fromkeys(r["regime"] for r in v["verdicts"]):
        for t in dict.fromkeys(r["target"] for r in v["verdicts"] if r["regime"] == regime):
            cols = [_verdict(v, regime, t, f"default vs {o}") for o in ("topk", "random")]
            lines.append(
                f"| {txt(regime)} | {TARGET_WORDS.get(t, t)} | "
                + " | ".join(_count(c) if c else "—" for c in cols)
                + " |"
            )
    return "\n".join(lines)


# ---------------------------------------------------------------------- fidelity.json
@block("fidelity_findings", "fidelity.json")
def fidelity_findings(f):
    return _fidelity(f)


@block("fidelity_large_findings", "fidelity_large.json")
def fidelity_large_findings(f):
    return _fidelity(f)


@block("fidelity_cost", "fidelity_cost.json")
def fidelity_cost(c):
    m, by = c["meta"], {}
    for x in c["models"]:
        by.setdefault(x["options"], []).append(x)
    sec = {o: sum(x["seconds"] for x in xs) / len(xs) for o, xs in by.items()}
    big = m["proxy_options"]
    return (
        f"A model of `{txt(big)}` ({num(by[big][0]['params'], ',')} parameters) took {num(sec[big], '.0f')} s "
        f"for {num(m['tokens'], ',')} tokens against {num(sec[''], '.0f')} s for the small proxies' "
        f"({num(by[''][0]['params'], ',')}), {num(m['jobs'])} at a time on {txt(m['machine'])}: "
        f"{num(sec[big] / sec[''], '.1f')}x the time per token"
    )


def _fidelity(f):
    from fidelity_report import verdict

    m = f["meta"]
    said = []
    for c in f["cells"]:
        for t, r in c["fidelity"].items():
            said.append(
                f"{txt(c['corpus'])} {txt(c['regime'])}, {TARGET_WORDS.get(t, t)}: Spearman "
                f"{num(r['spearman'], '+.2f')} [{num(r['spearman_ci'][0], '+.2f')}, {num(r['spearman_ci'][1], '+.2f')}], "
                f"decision accuracy {num(r['accuracy'], '.2f')} [{num(r['accuracy_ci'][0], '.2f')}, "
                f"{num(r['accuracy_ci'][1], '.2f')}] over {num(r['arms'])} arms ({verdict(r)})"
            )
    return (
        f"The stronger proxy trained {num(m['tokens'] / m['small_tokens'], 'g')}x the small proxies' tokens "
        f"({num(m['tokens'], ',')}) with "
        + (f"`{txt(m['proxy_options'])}`" if m["proxy_options"] else "the same model (`tiny`)")
        + ": "
        + "; ".join(said)
        + "."
    )


# ---------------------------------------------------------------------- defaults_fit_*.json, facility_seeds.json
def now_default(fit: dict) -> dict:
    """The worst-case row of the candidate that is the default fit now."""
    return next(w for w in fit["worst"] if w["candidate"] == fit["now_default"])


@block(
    "readme_default_fit",
    "defaults_fit_pairwise.json",
    "defaults_fit_facility.json",
    "defaults_fit_disf.json",
    "facility_seeds.json",
)
def readme_default_fit(pairwise, facility, disf, seeds):
    from datamask.core.stochastic import SAMPLE_FACTOR

    sampled = next(w for w in seeds["worst"] if w["factor"] == SAMPLE_FACTOR)  # the factor the library uses
    k = num(pairwise["large_from"] // 1000, "d")
    lines = [
        f"| objective (default fit) | lowest % of greedy's gain | whole fit / greedy's, N < {k}k | "
        f"whole fit / greedy's, N ≥ {k}k |",
        "| --- | --- | --- | --- |",
    ]
    for fit in (pairwise, facility, disf):
        w = now_default(fit)
        low = num(w["lowest_pct"], ".3f")
        if fit["diversity"] == "facility":
            low += f" ({num(sampled['lowest_pct'], '.3f')} over {num(sampled['seeds'])} seeds)"
        lines.append(
            f"| `{fit['diversity']}` | {low} | {num(w['largest_20k'], '.2f')} | {num(w['largest_50k'], '.2f')} |"
        )
    return "\n".join(lines)


@block("readme_default_cases", "defaults_fit_pairwise.json", "defaults_fit_facility.json", "defaults_fit_disf.json")
def readme_default_cases(*fits):
    return f"{span([now_default(f)['scored'] for f in fits], 'd')} cases an objective"


# ---------------------------------------------------------------------- diversity_summary.json
def _checks(c: dict) -> str:
    return f"{num(c['passed'])} of {num(c['cells'])} cells"


@block("diversity_default", "diversity_summary.json")
def diversity_default(ds):
    """The default's and the paper recipe's record on the diversity suite (docs/diversity.md, README)."""
    d = ds["candidates"][ds["default"]]
    paper = ds["candidates"]["pairwise, paper preset"]
    return (
        f"On the diversity suite ({num(ds['cases'])} cases x {num(count(ds['ratios']))} ratios) the default "
        f"(`{txt(ds['default'])}`) passes every check in **{_checks(d)}**: worst coverage over top-k's "
        f"{num(d['worst_coverage_vs_topk'], '+.3f')}, worst near-duplicate margin against random's "
        f"{num(d['worst_near_dup_vs_random'], '+.3f')}, worst quality over the random/top-k midpoint "
        f"{num(d['worst_quality_midpoint'], '+.3f')}; the paper's recipe (`--preset paper`) in {_checks(paper)} "
        f"(below random's coverage in {num(paper['coverage_vs_random_fails'])}, over its near-duplicates in "
        f"{num(paper['near_dup_vs_random_fails'])})"
    )


@block("diversity_recheck", "diversity_recheck_summary.json")
def diversity_recheck(rc):
    """The generated cases re-run with the filter over the picks, beside the commit before (docs/diversity.md)."""
    d = rc["candidates"][rc["default"]]
    real = (
        " and the " + ", ".join(txt(r) for r in rc["real"]) + " corpus rebuilt here (both embeddings)"
        if rc["real"]
        else ""
    )
    return (
        f"Re-run with the filter over the picks ({txt(rc['after'])}) beside the filter over every candidate "
        f"({txt(rc['before'])}), in one run, on the suite's seven generated shapes{real} ({num(d['cells'])} cells): "
        f"the default passes {num(d['passed_after'])} of them (before: {num(d['passed_before'])}); of the "
        f"{num(d['cells_recorded'])} generated cells, {num(d['passed_after_recorded_cells'])} (the recorded run: "
        f"{num(d['passed_recorded'])}); per cell its normalised quality moved by at most "
        f"{num(d['max_delta_quality_norm'], '.4f')}, its coverage by at most {num(d['max_delta_coverage'], '.4f')} and "
        f"its near-duplicate share by at most {num(d['max_delta_near_dup'], '.4f')} "
        "([diversity_recheck.md](../benchmarks/results/diversity_recheck.md)). The other real corpora were not "
        "rebuilt for it: their cells above are the recorded run's"
    )


# ---------------------------------------------------------------------- facility_scale.json
@block("facility_speed", "facility_scale.json")
def facility_speed(fs):
    """The default's select command at the largest split measured, against top-k's and the 0.2
    default's, in each repetition of the run (a verdict holds only when every repetition meets it)."""
    after = [c for c in fs["commands"] if c["code"] == "after"]
    rows = max(c["rows"] for c in after)
    wall = {(c.get("rep", 0), c["method"]): c["wall"] for c in after if c["rows"] == rows}
    reps = sorted({rep for rep, _ in wall})
    shares = [wall[(r, "topk")] / wall[(r, "datamask")] for r in reps]
    times = [wall[(r, "datamask")] / wall[(r, "pairwise")] for r in reps]

    def verdict(ok):
        met = count([o for o in ok if o])
        if met == len(ok):
            return "met"
        return "not met" if met == 0 else f"met in {num(met)} of {num(count(ok))} repetitions: not met"

    over = f" over {num(count(reps))} repetitions" if len(reps) > 1 else ""
    return (
        f"at {num(rows, ',')} rows the default's whole `select` command took "
        f"{span([wall[(r, 'datamask')] for r in reps], '.0f')} s{over}: "
        f"{span([100 * x for x in shares], '.0f')}% of top-k's rows/s (the issue's target is half: "
        f"{verdict([x >= 0.5 for x in shares])}) and "
        f"{span(times, '.2f')}x the previous default's (the paper's pairwise objective "
        f"with its pruning) wall time (the target is at most twice it: {verdict([x <= 2 for x in times])}), one "
        f"thread, "
        f"load {num(min(fs['load']), '.1f')}-{num(max(fs['load']), '.1f')}"
    )


# ---------------------------------------------------------------------- reference_size_summary.json
@block("reference_size_choice", "reference_size_summary.json")
def reference_size_choice(rs):
    """defaults.md's reference_size row: each size's cells passed and time, against the default's."""
    m, s = rs["meta"], rs["sizes"]
    d = s[str(m["default_size"])]
    parts = []
    for z in m["sizes"]:
        if z == m["default_size"]:
            continue
        v = s[str(z)]
        diff = v["passed"] - d["passed"]
        word = "cell" if abs(diff) == 1 else "cells"
        cells = f"{num(abs(diff))} {'more' if diff > 0 else 'fewer'} {word}" if diff else "as many cells"
        parts.append(f"{num(z, ',')} passes {cells} at {num(v['seconds'] / d['seconds'], '.2f')}x the time")
    return (
        f"`benchmarks/reference_size.py`: the default's settings on the {num(d['cells'])} cells of the diversity "
        f"suite's recheck, {' / '.join(num(z, ',') for z in m['sizes'])} reference rows: "
        f"{' / '.join(num(s[str(z)]['passed']) for z in m['sizes'])} cells passed "
        f"({num(m['default_size'], ',')}: {num(d['passed'])}); {'; '.join(parts)}"
    )


# ---------------------------------------------------------------------- gpu.json
def _gpu_against(g: dict, key: str, spec: str, unit: str = "") -> str:
    """A GPU figure, its target and whether the run met it (``not measured`` when its step did not finish)."""
    v, t = g["figures"][key], g["targets"][key]
    if v is None:
        return "not measured (its step did not finish)"
    met = v >= t["bound"] if t["op"] == ">=" else v <= t["bound"]
    return f"{num(v, spec)}{unit} (target {t['op'].replace('>=', '≥').replace('<=', '≤')} {num(t['bound'], ',')}{unit}: {'met' if met else 'missed'})"


GPU_STEPS = {  # gpu_check.sh's steps as the docs name them
    "gpu-tests": "the `gpu`-marked tests",
    "optimizer": "the optimizer benchmark",
    "select-relaxed": "`select --method relaxed`",
    "select-datamask": "the default `select` (facility) at a million rows",
    "embed": "`embed`",
    "cluster": "`cluster`",
    "optimizer-width": "the optimizer's width sweep",
    "proxy-lm": "the proxy-LM end-to-end runs (after their throughput lines)",
    "dask-cuda": "the dask-cuda smoke run",
}


@block("gpu_ran", "gpu.json")
def gpu_ran(g):
    f, ts, lv = g["figures"], g["figures"]["tests"], g["figures"]["gpu"]
    graph = (
        "captured"
        if f["cuda_graph_captured"]
        else "not captured (cupy refuses cuBLAS inside stream capture) and the step fell back to plain launches"
    )
    if f["fit_1m"] is not None:
        fit = f"reached 99% of relaxed's gain in {_gpu_against(g, 'fit_1m', '.1f', ' s')}"
    else:
        fit = (
            f"ended its budget at {num(f['pg_1m_end_percent'], '.2f')}% of relaxed's gain "
            f"(target {txt(g['targets']['fit_1m']['text'])}: missed)"
        )
    late = [GPU_STEPS[k] for k, v in f["steps"].items() if v == "timed out" and k in GPU_STEPS]
    never = [GPU_STEPS[k] for k, v in f["steps"].items() if v.startswith("skipped") and k in GPU_STEPS]
    never = [x for x in never if x not in late]
    tests = (
        f" ({num(ts['tests'])} ran before the limit: {num(ts['passed'])} passed, {num(ts['failed'])} failed, "
        "which ones the log does not say)"
        if ts.get("tests")
        else ""
    )
    late = [x + tests if x == GPU_STEPS["gpu-tests"] else x for x in late]
    ran = [ln.split("\t")[0] for ln in g["files"]["steps.tsv"].splitlines()]
    again = ", and a second call for steps it did not reach" if len(ran) > len(set(ran)) else ""
    return (
        f"One run of `benchmarks/gpu_check.sh` on an {txt(f['device'])} at commit `{txt(g['commit'])}`{again} "
        f"([gpu.md](../benchmarks/results/gpu.md)): the level probe chose `{txt(lv['level'])}` ({txt(lv['arrays'])} "
        f"arrays, `{txt(lv['kmeans'])}` k-means, workers `{txt(lv['cluster'])}` on {num(count(lv['gpus']))} GPU). "
        f"`select --method relaxed` ran end to end on a GPU worker at "
        f"{_gpu_against(g, 'select_relaxed', ',.0f', ' rows/s')}, peak GPU memory "
        f"{_gpu_against(g, 'gpu_memory_ratio', '.2f', 'x')} the split's embedding bytes; the pg step on cupy at a "
        f"million rows took {_gpu_against(g, 'pg_step_1m', '.3f', ' ms')} and {fit}; its CUDA graph was {graph}; "
        f"`cluster --n-clusters 1000` on a million rows took {_gpu_against(g, 'cluster', '.1f', ' s')}; the `small` "
        f"proxy LM trained {num(f['small_tokens_per_s'], ',.0f')} tokens/s in {txt(f['small_precision'])}, "
        f"{_gpu_against(g, 'small_vs_tiny', '.1f', 'x')} `tiny`'s {num(f['tiny_cpu_tokens_per_s'], ',.0f')} on "
        f"the CPU. Stopped at their steps' time limits: {'; '.join(late) or 'none'}. Not reached: "
        f"{'; '.join(never) or 'none'}"
    )


GPU_TARGET_WORDS = {
    "select_relaxed": "relaxed `select`'s rows/s",
    "select_datamask": "the default `select`'s rows/s",
    "gpu_memory_ratio": "peak GPU memory",
    "embed_short": "`embed` on short texts",
    "embed_long": "`embed` on long texts",
    "cosine": "`embed`'s cosine to the CPU",
    "cluster": "`cluster`'s time",
    "pg_step_1m": "the pg step's time",
    "fit_1m": "pg's time to 99% of relaxed's gain",
    "small_vs_tiny": "the `small` proxy's training speed",
}


@block("readme_gpu", "gpu.json")
def readme_gpu(g):
    f = g["figures"]
    met = [
        k
        for k, t in g["targets"].items()
        if f.get(k) is not None and (f[k] >= t["bound"] if t["op"] == ">=" else f[k] <= t["bound"])
    ]
    # pg that never reached 99% of relaxed's gain in its budget has no time to 99%: measured, and missed
    measured = [
        k for k in g["targets"] if f.get(k) is not None or (k == "fit_1m" and f["pg_1m_end_percent"] is not None)
    ]
    return (
        f"This code has run on a GPU once ({txt(f['device'])}, one session): {num(count(met))} of the "
        f"{num(count(measured))} targets it measured met ({', '.join(GPU_TARGET_WORDS[k] for k in met) or 'none'}); `select --method "
        f"relaxed` ran end to end at {num(f['select_relaxed'], ',.0f')} rows/s per GPU, the pg step took "
        f"{num(f['pg_step_1m'], '.2f')} ms at a million rows, and the default `select`, `embed` and the `gpu`-marked "
        f"tests did not finish inside their steps' limits"
    )
