"""paper_check's verdicts are functions of the measured numbers (benchmarks/paper_check_report.py).

Each verdict is fed numbers on both sides of its threshold; and paper_check.py, given made-up
results that contradict the paper (``--from-json``), says so: "does not hold here"."""

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import paper_check_report as P  # noqa: E402

HOLDS, PART, NOT = P.HOLDS, P.PART, P.NOT


def test_word_counts_the_runs_that_agree():
    assert P.word([True, True]) == HOLDS
    assert P.word([True, False]) == PART
    assert P.word([False, False]) == P.word([]) == NOT


def _fig3(q_div, q_joint, pct_u, pct_q, k95_u, k95_q):
    rows = []
    for init, pct, k95 in (("uniform", pct_u, k95_u), ("quality", pct_q, k95_q)):
        rows.append(dict(corpus="c", what="diversity only", init=init, q=q_div, pct=90.0, k95=None))
        rows.append(dict(corpus="c", what="joint", init=init, q=q_joint, pct=pct, k95=k95))
    return P.verdict_fig3(rows)


def test_fig3_verdicts_turn_at_their_thresholds():
    edge = P.CLOSE_POINTS
    v = _fig3(0.60, 0.80, 99.0, 99.0 - edge + 0.01, 40, 20)
    assert (v["lower"][0], v["close"][0], v["faster"][0]) == (HOLDS, HOLDS, HOLDS)
    v = _fig3(0.81, 0.80, 99.0, 99.0 - edge - 0.01, 20, 40)
    assert (v["lower"][0], v["close"][0], v["faster"][0]) == (NOT, NOT, NOT)
    assert _fig3(0.60, 0.80, 99.0, 99.0, None, 20)["faster"][0] == HOLDS  # uniform never reached 95%
    assert _fig3(0.60, 0.80, 99.0, 99.0, 20, None)["faster"][0] == NOT


def _fig4(pg_over_naive):
    """Three sizes; naive greedy ran at all; pg's time a multiple of naive's (None: not reached)."""
    return [
        dict(N=n, naive=t, greedy=t / 10, pg_t=None if k is None else k * t)
        for n, t, k in zip((500, 1000, 2000), (1.0, 4.0, 16.0), pg_over_naive)
    ]


def test_fig4_verdict_needs_the_papers_saving_at_every_size():
    share = 1 - P.PAPER_SAVING  # 98.9% less time: at most 0.011 of the baseline's
    assert P.verdict_fig4(_fig4([share * 0.99] * 3), "naive")[0] == HOLDS
    w, sooner, saving, ran = P.verdict_fig4(_fig4([share * 0.99, share * 1.01, share * 0.99]), "naive")
    assert (w, sooner, saving, ran) == (PART, [500, 1000, 2000], [500, 2000], 3)
    assert P.verdict_fig4(_fig4([None, 0.5, None]), "naive")[0] == PART  # sooner once, never at the saving
    assert P.verdict_fig4(_fig4([None, 1.01, None]), "naive")[0] == NOT  # the measured case: reached, slower
    assert P.verdict_fig4(_fig4([None] * 3), "naive")[0] == NOT
    # against lazy greedy (a tenth of naive's time here) the same pg times fall short
    assert P.verdict_fig4(_fig4([share * 0.99] * 3), "greedy")[0] == PART
    rows = _fig4([share * 0.99] * 3)
    rows[2]["naive"] = None  # naive greedy not run at the largest size: judged where it ran
    assert P.verdict_fig4(rows, "naive")[:2] == (HOLDS, [500, 1000])


def _fig7(best_slow, end_big, fall_big, best_mid):
    rows = [dict(value=v, best=best_slow, end=best_slow, fall=0.0) for v in (0.01, 0.1)]
    rows += [dict(value=v, best=best_mid, end=99.8, fall=0.0) for v in (1.0, 10.0)]
    rows += [dict(value=v, best=end_big, end=end_big, fall=fall_big) for v in (100.0, 1000.0)]
    return P.verdict_fig7(rows)


def test_fig7_verdicts_turn_at_their_thresholds():
    fall = P.FALL_POINTS
    v = _fig7(best_slow=99.0, end_big=99.8 - fall - 0.01, fall_big=0.0, best_mid=100.2)
    assert (v["slow"][0], v["big"][0], v["beat"][0]) == (HOLDS, HOLDS, HOLDS)
    v = _fig7(best_slow=100.3, end_big=99.8 - fall + 0.01, fall_big=fall, best_mid=100.0)
    assert (v["slow"][0], v["big"][0], v["beat"][0]) == (NOT, NOT, NOT)
    assert _fig7(99.0, 99.8, fall + 0.01, 100.0)["big"][0] == HOLDS  # diverged: a fall over the threshold


def _fig8(*falls):
    return P.verdict_fig8([dict(value=g, fall=x) for g, x in zip((8, 32, 128, 256), falls)])


def test_fig8_verdict_turns_at_a_fall_of_one_point():
    a = P.FALL_POINTS
    assert _fig8(a + 0.1, a + 0.1, a, 0.0) == (HOLDS, [8, 32], [])
    assert _fig8(17.5, 1.9, 3.6, 0.0) == (PART, [8, 32], [128])  # the measured case
    assert _fig8(a + 0.1, a, a, a)[0] == PART
    assert _fig8(a, a, a, 0.0)[0] == NOT  # no small group fell
    assert _fig8(a + 0.1, a, a + 0.1, a + 0.1)[0] == NOT  # the large ones fell as often


def _fig10(ms_small, best_small, by_full_steps):
    rows = []
    for rg in ([0.0, 2.0], [0.0, 16.0]):
        rows.append(dict(logit_range=rg, value=1.0, ms=100.0, best=99.0, steps=300, points=[[300, 99.0]]))
        for b in (0.05, 0.1):
            pts = [[300, by_full_steps], [800, best_small]]
            rows.append(dict(logit_range=rg, value=b, ms=ms_small, best=best_small, steps=800, points=pts))
    return P.verdict_fig10(rows)


def test_fig10_verdicts_turn_at_their_thresholds():
    edge = 99.0 - P.AS_GOOD_POINTS
    v = _fig10(ms_small=99.0, best_small=edge, by_full_steps=edge)
    assert (v["faster"][0], v["as_good"][0], v["same"][0]) == (HOLDS, HOLDS, HOLDS)
    v = _fig10(ms_small=100.0, best_small=edge - 0.01, by_full_steps=edge - 0.01)
    assert (v["faster"][0], v["as_good"][0], v["same"][0]) == (NOT, NOT, NOT)
    assert len(v["notes"]) == 2


def test_table1_verdict_follows_the_order_of_the_times():
    def t(*times):
        return P.verdict_table1([dict(t95=x) for x in times])

    assert t(2.6, 2.6, 0.01) == HOLDS
    assert t(2.6, 2.76, 0.01) == PART  # the measured case
    assert t(None, 2.0, 0.01) == PART  # the random start never reached 95%
    assert t(2.6, 2.0, 2.6) == NOT  # the full recipe no sooner than the random start
    assert t(2.6, 2.0, None) == NOT


def _section(text, title):
    return text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


@pytest.fixture(scope="module")
def measured():
    return json.loads((ROOT / "benchmarks" / "results" / "paper_check.json").read_text())


def _report(tmp_path, res):
    src, out = tmp_path / "res.json", tmp_path / "paper_check.md"
    src.write_text(json.dumps(res))
    cmd = [sys.executable, str(ROOT / "benchmarks" / "paper_check.py"), "--from-json", str(src), "--out", str(out)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return out.read_text()


def test_made_up_numbers_against_the_paper_read_does_not_hold(tmp_path, measured):
    res = copy.deepcopy(measured)
    for r in res["fig3"]:  # diversity alone now keeps quality higher than the joint objective
        r["q"] = 0.9 if r["what"] == "diversity only" else 0.5
    for r in res["fig10"]:  # small batches slower per step than the full batch
        r["ms"] = 1.0 if r["value"] == 1.0 else 50.0
    for r, t in zip(res["table1"], (1.0, 2.0, 3.0)):  # each of the paper's steps slower
        r["t95"] = t
    text = _report(tmp_path, res)
    assert "Diversity only lowers quality: **does not hold here** (0 of 6 runs" in _section(text, "Fig. 3")
    assert "faster per step: **does not hold here** (0 of 4 runs)" in _section(text, "Fig. 10")
    assert "start): **does not hold here**: random" in _section(text, "Table 1")
    # the measured numbers: pg never reached greedy's score sooner than naive greedy
    assert "the paper's baseline: **does not hold here**" in _section(_report(tmp_path, measured), "Fig. 4")


def test_made_up_numbers_for_the_paper_read_holds(tmp_path, measured):
    res = copy.deepcopy(measured)
    for r in res["fig4"]:  # pg at greedy's score in 0.5% of naive (and lazy) greedy's time
        r["pg_t"] = 0.005 * min(x for x in (r["naive"], r["greedy"]) if x is not None)
    for r in res["fig8"]:  # only the small groups fell
        r["fall"] = 5.0 if r["value"] < P.STABLE_G else 0.0
    text = _report(tmp_path, res)
    fig4 = _section(text, "Fig. 4")
    assert "the paper's baseline: **holds** (of the 3 sizes it ran" in fig4
    assert "against our lazy greedy: **holds**" in fig4
    assert "the claim holds when every G below 128 fell and none at or above it did): **holds**" in text


def test_paper_check_md_is_what_its_json_writes(measured):
    # the report's verdicts come from paper_check.json, not from an edit of the .md
    md = (ROOT / "benchmarks" / "results" / "paper_check.md").read_text()
    assert P.report(measured) == md, (
        "run: python benchmarks/paper_check.py --from-json benchmarks/results/paper_check.json"
    )


def _div_cell(**cands):
    """One diversity-suite cell: candidate -> (quality_norm, coverage, near_dup, cluster_js, mean_dist)."""
    keys = ("quality_norm", "coverage", "near_dup", "cluster_js", "mean_dist")
    return [dict(case="c", ratio=0.1, candidate=k, **dict(zip(keys, v))) for k, v in cands.items()]


def test_diversity_criteria_turn_at_their_thresholds():
    import diversity_report as D
    import pandas as pd

    base = dict(topk=(1.0, 0.70, 0.30, 0.30, 0.40), random=(0.0, 0.75, 0.10, 0.05, 0.02))
    ok = D.criteria(pd.DataFrame(_div_cell(**base, a=(0.6, 0.80, 0.11, 0.1, 0.1))))
    assert ok.loc["a", "all"] and not ok.loc["topk", "all"] and not ok.loc["random", "all"]
    # each check fails alone, just past its threshold
    cov_random = 0.75 - D.COVERAGE_SLACK - 0.001
    dup = 0.10 + D.NEAR_DUP_SLACK + 0.001
    c = D.criteria(pd.DataFrame(_div_cell(**base, a=(0.6, 0.69, 0.1, 0.1, 0.1), b=(0.6, cov_random, 0.1, 0.1, 0.1),
                                          d=(0.6, 0.80, dup, 0.1, 0.1), e=(0.49, 0.79, 0.1, 0.1, 0.1))))  # fmt: skip
    assert not c.loc["a", "coverage_vs_topk"] and c.loc["b", "coverage_vs_topk"]
    assert not c.loc["b", "coverage_vs_random"] and not c.loc["d", "near_dup_vs_random"]
    assert not c.loc["e", "quality_midpoint"] and c.loc["d", "quality_midpoint"]
    assert not c.loc["e", "front"]  # d has more quality and more coverage


def test_fig2_12_section_is_computed_from_the_diversity_results(tmp_path):
    import diversity_report as D

    recs = []
    for i, js in enumerate((0.1, 0.1, 0.5)):  # pairwise lies between in 2 of 3 cells
        cell = _div_cell(topk=(1, 0.7, 0.3, 0.3, 0.4), random=(0, 0.7, 0.1, 0.05, 0.02),
                         pairwise=(0.8, 0.7, 0.2, js, 0.1), disf=(0.8, 0.7, 0.2, 0.6, 0.5))  # fmt: skip
        recs += [dict(r, case=f"c{i}") for r in cell]
    path = tmp_path / "diversity.json"
    path.write_text(json.dumps({"meta": {}, "records": recs}))
    text = "\n".join(D.paper_section(path))
    assert "| pairwise | 2/3 | 67% | holds in part |" in text
    assert "| disf | 0/3 | 0% | does not hold here |" in text
    assert "Not measured" in "\n".join(D.paper_section(tmp_path / "absent.json"))


def test_the_recheck_counts_passes_before_and_after_from_the_records(tmp_path):
    import diversity_report as D

    base = dict(topk=(1.0, 0.70, 0.30, 0.30, 0.40), random=(0.0, 0.75, 0.10, 0.05, 0.02))
    after, before, recorded = [], [], []
    # cell 0: passes before and after; cell 1: after's near-dup share is over random's + slack
    for i, (a, b) in enumerate([((0.6, 0.80, 0.10), (0.61, 0.80, 0.10)), ((0.6, 0.80, 0.13), (0.6, 0.80, 0.10))]):
        after += [dict(r, case=f"c{i}", seconds=1.0) for r in _div_cell(**base, f=(*a, 0.1, 0.1))]
        before += [dict(r, case=f"c{i}", seconds=2.0) for r in _div_cell(f=(*b, 0.1, 0.1))]
        recorded += [dict(r, case=f"c{i}", seconds=3.0) for r in _div_cell(**base, f=(*b, 0.1, 0.1))]
    meta = dict(machine="m", load=[1.0, 1.0], rows=20, after="new", before="old", filtered=["f"])
    path, rec = tmp_path / "diversity_recheck.json", tmp_path / "diversity.json"
    path.write_text(json.dumps({"meta": meta, "records": after, "before": before}))
    rec.write_text(json.dumps({"meta": {}, "records": recorded}))
    D.render_recheck(path, rec, tmp_path, "f")
    s = json.loads((tmp_path / "diversity_recheck_summary.json").read_text())["candidates"]["f"]
    assert (s["cells"], s["passed_after"], s["passed_before"], s["passed_recorded"]) == (2, 1, 2, 2)
    assert s["max_delta_near_dup"] == pytest.approx(0.03) and s["max_delta_quality_norm"] == pytest.approx(0.01)
    assert s["seconds_after"] == 2.0 and s["seconds_before"] == 4.0
    assert (
        "| c1 | 0.1 | 0.6000 | 0.6000 | 0.8000 | 0.8000 | 0.1000 | 0.1300 | yes | no |"
        in (tmp_path / "diversity_recheck.md").read_text()
    )


def test_the_docs_quote_the_current_defaults_own_cells():
    """diversity_summary.json names the candidate whose settings are DataMask's defaults now: a
    changed default without a rerun of benchmarks/diversity.py fails here."""
    import diversity

    summary = json.loads((ROOT / "benchmarks" / "results" / "diversity_summary.json").read_text())
    assert summary["default"] == diversity.default_candidate()
    assert summary["candidates"][summary["default"]]["cells"] == summary["cases"] * len(summary["ratios"])
