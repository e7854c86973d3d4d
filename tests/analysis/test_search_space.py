"""The recipe space of ``datamask search``: parsing, one-line errors, the seeded space-filling
design, decoding, averaging the best candidates (no Dask, no torch)."""

from __future__ import annotations

import numpy as np
import pytest

from datamask.analysis.search import DEFAULT_SPACE, SearchConfig, Space, parse_space
from datamask.errors import ConfigError


def _space(text, method="datamask", domains=(), components=()):
    cfg = SearchConfig(eval=["x"], method=method)
    return Space.build(parse_space(text, method, cfg._check_value), method, domains, components)


@pytest.mark.parametrize(
    "text, needle",
    [
        ("lam=0:1.5", "space 'lam=0:1.5': lam must be a number from 0 to 1"),
        ("lam=0.8:0.2", "is empty"),
        ("lam=0.5:0.5", "is empty"),
        ("temperature=0:1", "unknown name 'temperature' for method datamask; known: lam, diversity, prune, ratio"),
        ("diversity=pairwise|cosine", "diversity must be one of"),
        ("diversity=pairwise|", "an empty option"),
        ("lam=0:1,lam=0.2:0.4", "lam is given twice"),
        ("ratio=0:0.5", "ratio must be"),
        ("lam=0|1", "give a range LO:HI or one value"),
        ("lam=a:b", "is not a number"),
        ("lam=0:1:sqrt", "LO:HI:log"),
        ("lam=0:1:log", "a log range needs LO > 0"),
        ("lam=0.3", "fixes every value"),
        ("omega[domain]=0:1", "unknown name 'omega' for method datamask"),
        ("", "space is empty"),
    ],
)
def test_bad_space_is_one_line(text, needle):
    with pytest.raises(ConfigError) as e:
        SearchConfig(eval=["x"], space=text).validated()
    assert needle in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize(
    "text, needle",
    [
        ("omega=0:1.5", "omega (cut-off percentile) must be in [0, 1]"),
        ("eta[domain]=-1:2", "must be >= 0"),
        ("diversity=pairwise", "unknown name 'diversity' for method quadmix"),
        ("weights=quality_a", "two or more distinct quality columns"),
        ("ratio[domain]=0.1:0.5", "take [domain]"),
    ],
)
def test_bad_quadmix_space_is_one_line(text, needle):
    with pytest.raises(ConfigError) as e:
        SearchConfig(eval=["x"], method="quadmix", space=text).validated()
    assert needle in str(e.value)


def test_relaxed_refuses_facility_as_select_does():
    with pytest.raises(ConfigError, match="facility"):
        SearchConfig(eval=["x"], method="relaxed", space="lam=0:1,diversity=pairwise|facility").validated()


def test_method_without_a_space_is_refused():
    with pytest.raises(ConfigError, match="search takes --method"):
        SearchConfig(eval=["x"], method="semdedup").validated()


def test_a_holdout_is_refused_with_the_way_to_make_one():
    """Trials select every row, so recipe.yaml holding rows out would select otherwise."""
    with pytest.raises(ConfigError, match="--holdout 0.05, and pass --eval SEL/holdout"):
        SearchConfig(eval=["x"], holdout=0.05).validated()


def test_every_default_space_parses():
    for method, text in DEFAULT_SPACE.items():
        # relaxed has no facility relaxation (the default diversity since 0.3): its base recipe names one it has
        base = {"diversity": "pairwise"} if method == "relaxed" else {}
        items = parse_space(text, method, SearchConfig(eval=["x"], method=method, **base)._check_value)
        assert items


def test_design_is_seeded_space_filling_and_a_prefix():
    sp = _space("lam=0:1,diversity=pairwise|facility|disf,ratio=0.05:0.5")
    a, b = sp.design(16, seed=3), sp.design(16, seed=3)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, sp.design(16, seed=4))
    assert np.array_equal(sp.design(8, seed=3), a[:8])  # more trials later extend the same sequence
    for j in range(a.shape[1]):  # 16 Sobol points: one in each sixteenth of every coordinate
        assert sorted(np.floor(a[:, j] * 16).astype(int)) == list(range(16))
    recipes = [sp.recipe(u) for u in a]
    assert {r["diversity"] for r in recipes} == {"pairwise", "facility", "disf"}
    assert all(0 <= r["lam"] <= 1 and 0.05 <= r["ratio"] <= 0.5 for r in recipes)


def test_log_range_and_per_domain_values():
    sp = _space("omega[domain]=0.05:1,lam=1:50:log", "quadmix", domains=["0", "1", "2"])
    assert sp.width == 4 and sp.columns == ["omega[0]", "omega[1]", "omega[2]", "lam"]
    U = sp.design(64, 0)
    lam = sp.frame(U)["lam"].to_numpy()
    assert lam.min() >= 1 and lam.max() <= 50
    assert (np.log(lam) < np.log(50) / 2).mean() == pytest.approx(0.5, abs=0.1)  # log-uniform: half below sqrt(50)
    r = sp.recipe(U[0])
    assert set(r["omega"]) == {"0", "1", "2"}
    assert np.allclose(sp.recipe_features(r), sp.features(U[:1])[0])


def test_merge_weights_are_on_the_simplex():
    sp = _space("omega=0.1:1,weights=auto", "quadmix", components=["quality_a", "quality_b", "quality_c"])
    W = sp.frame(sp.design(128, 0))[["weights.quality_a", "weights.quality_b", "weights.quality_c"]].to_numpy()
    assert np.allclose(W.sum(axis=1), 1.0) and (W >= 0).all()
    assert np.allclose(W.mean(axis=0), 1 / 3, atol=0.06)  # uniform on the simplex: every component alike
    with pytest.raises(ConfigError, match="present: quality_a"):
        _space("weights=auto", "quadmix", components=["quality_a"])
    with pytest.raises(ConfigError, match="no domain column"):
        _space("omega[domain]=0.1:1", "quadmix")


def test_average_takes_the_most_frequent_choice_then_the_mean():
    sp = _space("lam=0:1,diversity=pairwise|facility")
    # coordinates: lam, diversity (below 0.5: pairwise)
    best = np.array([[0.9, 0.7], [0.2, 0.1], [0.4, 0.2], [0.3, 0.3]])
    r = sp.average(best)
    assert r["diversity"] == "pairwise"
    assert r["lam"] == pytest.approx(0.3)  # the mean over the three pairwise candidates only
    assert sp.average(best[:2]) == {"lam": pytest.approx(0.9), "diversity": "facility"}  # a tie: the best's


def test_default_space_prunes_and_searches_the_ratio_only_when_no_budget_is_given():
    free = SearchConfig(eval=["x"]).validated()
    assert free.ratio is None and free.select_config().ratio == pytest.approx(0.1)
    assert free.default_space() == "lam=0:1,diversity=pairwise|facility|disf,prune=0:0.9,ratio=0.05:0.5"
    fixed = SearchConfig(eval=["x"], ratio=0.3).validated()
    assert fixed.default_space() == "lam=0:1,diversity=pairwise|facility|disf,prune=0:0.7"  # prune <= 1 - ratio
    assert SearchConfig(eval=["x"], ratio=0.05).validated().default_space().endswith("prune=0:0.9")
    rows = SearchConfig(eval=["x"], budget=50, budget_unit="rows").validated()
    assert "prune" not in rows.default_space()  # its cap is per split
    with pytest.raises(ConfigError, match="--budget 50 counts rows"):  # a row count at the default unit, tokens
        SearchConfig(eval=["x"], budget=50).validated()
    assert "prune" not in SearchConfig(eval=["x"], tokens=10_000).validated().default_space()
    assert "prune" not in SearchConfig(eval=["x"], method="quadmix").validated().default_space()
    assert [it.name for it in SearchConfig(eval=["x"], space="lam=0:1,prune=0.2").validated().items()] == [
        "lam",
        "prune",
    ]


def test_a_prune_that_leaves_fewer_rows_than_the_ratio_is_refused():
    with pytest.raises(ConfigError, match=r"prune=0.95.*keep prune \+ ratio <= 1 \(e.g. prune=0:0.9\)"):
        SearchConfig(eval=["x"], space="lam=0:1,prune=0.95").validated()
    with pytest.raises(ConfigError, match="keep prune"):
        SearchConfig(eval=["x"], space="lam=0:1,prune=0.6,ratio=0.05:0.5").validated()


def test_prune_is_capped_at_one_minus_the_ratio_and_its_features_match_the_point():
    sp = _space("lam=0:1,prune=0:0.9,ratio=0.05:0.5")
    U = sp.design(256, 0)
    f = sp.frame(U)
    assert (f["prune"] <= 1 - f["ratio"] + 1e-12).all() and f["prune"].min() < 0.05
    at_cap = np.isclose(f["prune"], 1 - f["ratio"])
    assert 0.05 < at_cap.mean() < 0.3  # where the draw was above the cap: the top rows by quality at that ratio
    for u in U[:32]:
        r = sp.recipe(u)
        assert r["prune"] + r["ratio"] <= 1 + 1e-12
        assert np.allclose(sp.recipe_features(r), sp.features(u[None, :])[0])
    best = sp.average(U[at_cap][:10])
    assert best["prune"] + best["ratio"] <= 1 + 1e-12
    base = Space.build(parse_space("lam=0:1,prune=0:0.9", "datamask"), "datamask", ratio=0.3)
    assert base.frame(base.design(64, 0))["prune"].max() == pytest.approx(0.7)


def test_a_trials_prune_reaches_select_and_recipe_yaml():
    from datamask.analysis.search.outputs import recipe_workflow
    from datamask.analysis.search.trials import recipe_select_config

    recipe = {"lam": 0.2, "diversity": "facility", "prune": 0.8, "ratio": 0.15}
    for unit, key in (("rows", "ratio"), ("tokens", "token_ratio")):  # the default: a share of the tokens
        cfg = SearchConfig(eval=["x"], input="in", budget_unit=unit).validated()
        scfg = recipe_select_config(cfg, recipe)
        assert (scfg.prune, scfg.lam, scfg.diversity, getattr(scfg, key)) == (0.8, 0.2, "facility", 0.15)
        assert scfg.budget_in_tokens == (unit == "tokens") and recipe_select_config(cfg, {"lam": 0.2}).prune == 0.0
        wf = recipe_workflow(cfg, recipe, "sel")  # the base recipe's prune where the trial has none
        assert (wf["method"], wf["prune"], wf[key], wf["lam"]) == ("datamask", 0.8, 0.15, 0.2)
        top = recipe_workflow(cfg, {"method": "topk", "ratio": 0.15}, "sel")
        assert (
            top["method"] == "topk"
            and top[key] == 0.15
            and "lam" not in top
            and len({"ratio", "token_ratio"} & set(top)) == 1
        )
        assert recipe_workflow(cfg, {"method": "random"}, "sel")[key] == pytest.approx(0.1)  # the base ratio


def _splits(*shares, prunes=(0.9,)):
    """Splits of 1000 tokens whose pruning at p leaves 1000 * (1 - p) of them, with these shares."""
    from datamask.analysis.search.budget import PRUNE_GRID

    left = {p: int(round(1000 * (1 - p))) for p in (*PRUNE_GRID, *prunes)}
    return [{"where": f"in/c.parquet rows {i}", "tokens": 1000, "share": s, "left": left} for i, s in enumerate(shares)]


def test_a_prune_that_leaves_fewer_tokens_than_a_splits_share_is_refused_with_the_largest_that_fits():
    from datamask.analysis.search.budget import check_prune_tokens, prune_checks

    items = SearchConfig(eval=["x"], tokens=500, space="lam=0:1,prune=0.2:0.9").validated().items()
    assert [(it and it.name, p) for it, p in prune_checks(items, 0.5, verify=0)] == [("prune", 0.9)]
    checks = prune_checks(items, 0.5, verify=1)  # the default recipe, verified, takes the base --prune
    assert [(it and it.name, p) for it, p in checks] == [("prune", 0.9), (None, 0.5)]
    budget = "--token-ratio 0.3 (600 tokens)"
    msg = (
        r"^space 'prune=0.2:0.9': pruning 0.9 of the rows of in/c.parquet rows 1 leaves 100 tokens, not more than its "
        r"300-token share of --token-ratio 0.3 \(600 tokens\); keep prune <= 0.69 \(e.g. prune=0.2:0.69\) or lower "
        r"the token budget$"
    )
    with pytest.raises(ConfigError, match=msg):  # the worst split named, the fix fits every split
        check_prune_tokens(checks, _splits(250, 300), budget)
    base = r"^--prune 0.5 \(the default recipe's, verified beside the chosen one\): pruning 0.5 of the rows of "
    with pytest.raises(ConfigError, match=base + r".* 500 tokens, not more than its 500-token share of --tokens 1000; "
                       r"lower --prune to 0.49 or the token budget$"):  # fmt: skip
        check_prune_tokens([(checks[0][0], 0.4), checks[1]], _splits(500, 0, prunes=(0.4,)), "--tokens 1000")
    with pytest.raises(ConfigError, match=r"^space 'prune=0.2:0.9': .* keep prune <= 0 \(e.g. prune=0\)"):
        check_prune_tokens(checks, _splits(999), budget)
    # a share of no token, one that covers its split, or a split of unusable quality prunes nothing
    unusable = dict(_splits(900)[0], left=None)
    check_prune_tokens(checks, [*_splits(0, 1000), unusable], budget)


@pytest.mark.parametrize("budget, flag", [({"budget": 50, "budget_unit": "rows"}, "--budget"), ({"tokens": 900}, "--tokens"),
                                          ({"token_ratio": 0.2}, "--token-ratio")])  # fmt: skip
def test_a_searched_ratio_beside_a_budget_names_the_budget_given(budget, flag):
    with pytest.raises(ConfigError, match=rf"ratio is searched only with a row budget by ratio \(drop {flag}\)$"):
        SearchConfig(eval=["x"], space="lam=0:1,ratio=0.1:0.3", **budget).validated()


def test_a_token_ratio_caps_prune_where_select_accepts_it():
    """``TokenCounts.room`` (the cap of a trial's prune under a ratio counted in tokens) is the
    largest prune of the grid at which ``select``'s own check (``prune_shortfall``, on the shares
    ``apportion`` gives) lets every split keep its share, at any token ratio; the space caps each
    trial's prune there."""
    from datamask.pipeline.config import SelectConfig
    from datamask.pipeline.split_job import TokenCounts
    from datamask.pipeline.tokens import PRUNE_GRID, prune_shortfall

    rng = np.random.default_rng(3)
    grid = tuple(PRUNE_GRID)
    tokens = [int(t) for t in rng.integers(5_000, 50_000, 4)]
    # tokens left after pruning: falling with the prune, faster in some splits (short high-quality rows)
    left = [[int(t * (1 - g) ** rng.uniform(0.5, 3.0)) for g in grid] for t in tokens]
    counts = TokenCounts(tokens, "column token_count", [f"split {i}" for i in range(4)], left, grid)
    ratios = np.concatenate([rng.uniform(0.01, 0.99, 60), [1.0]])
    got = counts.room(ratios)
    for r, cap in zip(ratios, got):
        scfg = SelectConfig(token_ratio=float(r), ratio=None).validated()
        hit = prune_shortfall(counts.splits_left(scfg), grid[-1], "budget")
        assert cap == (grid[-1] if hit is None else hit[1]), r
    inner = np.argsort(ratios)[:-1]  # (a ratio of 1 keeps every split whole: nothing to prune)
    assert got[-1] == grid[-1] and np.all(np.diff(got[inner]) <= 0)  # more tokens, less room
    cfg = SearchConfig(eval=["x"])
    items = parse_space("lam=0:1,prune=0:0.9,ratio=0.05:0.5", "datamask", cfg._check_value)
    sp = Space.build(items, "datamask", prune_cap=counts.room)
    f = sp.frame(sp.design(64, 0))
    assert (f["prune"] <= counts.room(f["ratio"]) + 1e-12).all() and (f["prune"] < 0.9).any()
