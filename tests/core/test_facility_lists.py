"""The numpy facility scorer's pass (datamask.core.facility_lists): the candidates read from
the split's own float16 array (HostRows), and the bfloat16 screen, against the float32 pass
and float64 products.

Tolerances: a float32 cosine of two unit rows of d entries is off its float64 value by at
most about d float32 units (2**-24 each), whatever order the sums run in.
"""

import numpy as np
import pytest

from datamask import DataMask, evaluate
from datamask.core import facility_lists, stochastic
from datamask.core.facility import FacilityGroups
from datamask.core.facility_lists import HostRows, screen_margin, threshold_lists
from datamask.core.synthetic import make_corpus
from datamask.core.validate import unit_rows

bf16 = pytest.mark.skipif(not facility_lists._bf16_usable(), reason="no bfloat16 dot products on this CPU/torch")
int8 = pytest.mark.skipif(not facility_lists._int8_usable(), reason="no int8 dot products on this CPU/torch")
SCREENS = [pytest.param("bfloat16", marks=bf16), pytest.param("int8", marks=int8)]


def use_screen(monkeypatch, kernel):
    """Every pass screens with ``kernel`` ("float32": none)."""
    monkeypatch.setattr(facility_lists, "BF16_MIN_PAIRS", 1 << 62 if kernel == "float32" else 0)
    if kernel == "bfloat16":
        monkeypatch.setattr(facility_lists, "_int8_usable", lambda: False)


def unit(n, d, seed):
    X = np.random.default_rng(seed).normal(size=(n, d))
    return (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)


def pairs(L):
    cand = np.repeat(np.arange(L.start.shape[0] - 1), np.diff(L.start))
    return dict(zip(zip(cand.tolist(), L.ref.tolist()), L.sim.tolist()))


def split16(n, d, seed):
    """A float16 split whose rows are not unit (norms 0.5-2), its norms, and a candidate subset."""
    rng = np.random.default_rng(seed)
    E16 = (unit(n, d, seed) * rng.uniform(0.5, 2.0, size=(n, 1))).astype(np.float16)
    norms = np.linalg.norm(E16.astype(np.float32), axis=1).astype(np.float32)
    cand = np.sort(rng.choice(n, n * 3 // 4, replace=False))
    return E16, norms, cand


def test_screen_margin_bounds_the_rounding_of_coherent_and_random_rows():
    import torch

    d = 384
    flat = np.full((1, d), 1 / np.sqrt(d), dtype=np.float32)  # every entry rounds the same way
    for A in (flat, unit(300, d, 0), np.abs(unit(300, d, 1))):
        A32 = torch.from_numpy(A)
        Ab = A32.to(torch.bfloat16)
        da = facility_lists._rounding(A32, Ab)
        want = A.astype(np.float64) @ A.T.astype(np.float64)
        got = Ab.double().numpy() @ Ab.double().numpy().T  # the inputs' rounding, exact sums
        err = np.abs(got - want)
        assert np.all(err <= screen_margin(d, da[:, None], da[None, :]))
        if A is flat:  # the bound is tight there: all of its rounding part is the error
            assert err[0, 0] >= 0.99 * (2 * da[0] + da[0] ** 2) > 0


def test_int8_keys_bound_the_rounding_of_coherent_and_random_rows():
    from datamask.core.facility_scan import quantize_rows

    d = 384
    flat = np.full((2, d), 1 / np.sqrt(d), dtype=np.float32)  # every entry rounds the same way
    for A in (flat, unit(300, d, 0), np.abs(unit(300, d, 1))):
        sr = facility_lists._int8_scales(A)
        Q = np.empty(A.shape, dtype=np.int8)
        dr = np.array([quantize_rows(A[i : i + 1], sr[i], Q[i : i + 1]) for i in range(A.shape[0])])
        assert np.all(dr <= np.sqrt(d) * sr / 2 * (1 + 1e-6))  # half a step an entry at most
        sa = float(np.abs(A).max()) / 127
        q = np.empty(A.shape, dtype=np.int8)
        da = quantize_rows(A, sa, q)
        want = A.astype(np.float64) @ A.T.astype(np.float64)
        got = (q.astype(np.int64) @ Q.T.astype(np.int64)) * sa * sr[None, :]
        assert np.all(np.abs(got - want) <= screen_margin(d, da, dr[None, :]))
        # the keys: a pair at its threshold has a product at or above its key
        theta = want[0].astype(np.float32)  # row 0 against each column: on the threshold
        key = facility_lists.int8_keys(theta, sa, sr, d, da, dr)
        assert np.all(q[0].astype(np.int64) @ Q.T.astype(np.int64) >= key)


@pytest.mark.parametrize("kernel", SCREENS)
@pytest.mark.parametrize("low", [False, True], ids=["thresholds above the margin", "some at or below zero"])
def test_screens_list_the_float32_pass_pairs(monkeypatch, low, kernel):
    # bfloat16, thresholds above the margin: the screen counts runs on the bits themselves; a
    # threshold at or below zero (a negative key) takes the general order keys for the block.
    # int8: keys on each pair's int32 product
    n, r, d, T = 4000, 300, 384, 80
    E, R = unit(n, d, 2), unit(r, d, 3)
    if low:
        raw = facility_lists.list_thresholds

        def lowered(E, R, T):
            theta = raw(E, R, T)
            theta[::7] = np.float32(-0.02)  # about half the candidates reach these rows
            theta[3] = np.float32(0.0)
            return theta

        monkeypatch.setattr(facility_lists, "list_thresholds", lowered)
    use_screen(monkeypatch, "float32")
    f32 = threshold_lists(E, R, T)
    use_screen(monkeypatch, kernel)
    assert facility_lists.screen_kernel(n * r) == kernel
    b16 = threshold_lists(E, R, T)
    np.testing.assert_array_equal(b16.theta, f32.theta)
    np.testing.assert_allclose(b16.cover, f32.cover, rtol=1e-12)
    a, b = pairs(f32), pairs(b16)
    C = E.astype(np.float64) @ R.T.astype(np.float64)
    # the same pairs, but for one whose float32 cosine is within the sums' rounding of its
    # threshold (each row's threshold is its 80th cosine here: that pair is on the edge)
    for i, x in set(a) ^ set(b):
        assert abs(C[i, x] - f32.theta[x]) <= 2 * d * 2.0**-24
    assert len(set(a) & set(b)) >= 0.99 * len(a)
    same = list(set(a) & set(b))
    np.testing.assert_allclose([b[p] for p in same], [a[p] for p in same], rtol=0, atol=2 * d * 2.0**-24)
    # the screen had work to do: listed pairs whose screened cosine is below their threshold
    import torch

    if kernel == "bfloat16":
        Cb = (torch.from_numpy(E).to(torch.bfloat16) @ torch.from_numpy(R).to(torch.bfloat16).T).float().numpy()
    else:
        sa, sr = float(np.abs(E).max()) / 127, facility_lists._int8_scales(R)
        Cb = (np.rint(E / sa) @ np.rint(R / sr[:, None]).T) * sa * sr[None, :]
    cand = np.repeat(np.arange(n), np.diff(b16.start))
    assert (Cb[cand, b16.ref.astype(np.int64)] < b16.theta[b16.ref]).sum() > 0


@pytest.mark.parametrize("kernel", SCREENS)
def test_screens_take_a_last_block_of_one_row_and_an_odd_width(monkeypatch, kernel):
    # 1,025 candidates in blocks of 512: a last block of one row; 50 entries a row, 37 reference rows
    n, r, d, T = 1025, 37, 50, 40
    E, R = unit(n, d, 8), unit(r, d, 9)
    use_screen(monkeypatch, "float32")
    f32 = threshold_lists(E, R, T)
    use_screen(monkeypatch, kernel)
    got = threshold_lists(E, R, T)
    a, b = pairs(f32), pairs(got)
    C = E.astype(np.float64) @ R.T.astype(np.float64)
    for i, x in set(a) ^ set(b):  # only pairs on their threshold's edge may differ
        assert abs(C[i, x] - f32.theta[x]) <= 2 * d * 2.0**-24
    assert any(i == n - 1 for i, _ in b)  # the one-row block listed its pairs


def test_host_rows_read_the_float16_split_as_its_unit_rows():
    E16, norms, cand = split16(3000, 48, 4)
    H = HostRows(E16, cand, norms)
    want = unit_rows(E16, cand, norms)
    np.testing.assert_array_equal(H.take(), want)
    np.testing.assert_array_equal(np.concatenate([b for _, _, b in H.blocks(size=700)]), want)
    idx = np.array([5, 0, 2249, 17])
    np.testing.assert_array_equal(H.take(idx), want[idx])
    # the compiled picks read the float16 rows themselves (through the table, rescaled): the
    # same picks, gains bounds and objective as on the float32 copy
    q = np.random.default_rng(5).random(cand.shape[0])
    R = want[::15]
    value_h, value_c = [], []
    a, ub_a = stochastic.stochastic_greedy_facility(FacilityGroups(H, R), q, 150, 0.5, seed=3, value=value_h)
    b, ub_b = stochastic.stochastic_greedy_facility(FacilityGroups(want, R), q, 150, 0.5, seed=3, value=value_c)
    assert np.array_equal(a, b)
    np.testing.assert_array_equal(ub_a, ub_b)
    assert value_h == value_c


@pytest.mark.parametrize("screen", ["float32", *SCREENS])
def test_fit_on_the_float16_split_selects_as_on_its_float32_copy(monkeypatch, screen):
    # before: the scorer copied the candidates to float32 unit rows and took float32
    # products; now it reads the float16 split (and may screen in bfloat16). Same selection,
    # same objective, and a coverage above top-k's and random's on the seeded corpus
    c = make_corpus(6000, dim=64, seed=6)
    rng = np.random.default_rng(7)
    E16 = (c["embedding"] * rng.uniform(0.5, 2.0, size=(6000, 1))).astype(np.float16)
    q = c["quality"]
    copy = unit_rows(E16, None, np.linalg.norm(E16.astype(np.float32), axis=1).astype(np.float32))
    use_screen(monkeypatch, screen)
    kw = dict(diversity="facility", solver_params={"reference_size": 1000}, seed=1)
    now = DataMask(**kw).fit(E16, q)
    use_screen(monkeypatch, "float32")
    before = DataMask(**kw).fit(copy, q)
    assert now.init_ == before.init_ == "stochastic_greedy"
    assert np.mean(now.mask_ == before.mask_) >= 0.995
    assert now.objective_["objective"] == pytest.approx(before.objective_["objective"], rel=0, abs=1e-6)
    assert now.objective_["diversity"] == pytest.approx(before.objective_["diversity"], rel=0, abs=1e-6)
    S = int(now.mask_.sum())
    ev = dict(lam=0.5, diversity="facility", reference_size=1000, seed=1)
    topk = evaluate(copy, q, np.argsort(-q)[:S], **ev)
    rand = evaluate(copy, q, np.random.default_rng(0).permutation(6000)[:S], **ev)
    assert now.objective_["diversity"] > max(topk["diversity"], rand["diversity"])
    assert now.objective_["objective"] > max(topk["objective"], rand["objective"])


@pytest.mark.parametrize("kernel", ["float32", *SCREENS])
def test_a_stage_bounds_every_candidates_gain_over_its_picks(monkeypatch, kernel):
    # stochastic greedy's first picks, then the pass: each candidate's gain over those picks is
    # at most its bound, whichever product the pass reads; and the bound is not loose
    n, r, d, T = 3000, 200, 384, 60
    E, R = unit(n, d, 11), unit(r, d, 12)
    C = E.astype(np.float64) @ R.T.astype(np.float64)
    picks = np.random.default_rng(0).choice(n, 16, replace=False)
    stage = (E[picks] @ R.T).max(axis=0).astype(np.float32)  # float32 cosines, as the picks compute them
    use_screen(monkeypatch, kernel)
    assert facility_lists.screen_kernel(n * r) == kernel
    L = threshold_lists(E, R, T, stage=stage)
    gain = np.maximum(C - stage.astype(np.float64), 0).sum(axis=1)
    assert L.bound.shape == (n,) and np.all(L.bound >= gain)
    margin = {"float32": 4 * d * 2.0**-24 + 2**-19, "bfloat16": 2**-6, "int8": 0.05}[kernel]
    assert np.all(L.bound <= gain + r * margin)  # no more than the rounding bound on every pair
    assert threshold_lists(E, R, T).bound is None  # no stage: no bound


def test_a_staged_start_picks_what_the_unstaged_one_picks(monkeypatch):
    # the first STAGE_PICKS picks by products, then the lists' pass with their stage bounds:
    # only which rows are scored changes, not the picks
    c = make_corpus(20_000, dim=64, seed=5)
    E, q = c["embedding"], c["quality"] / c["quality"].max()
    R = unit_rows(E, np.random.default_rng(0).choice(20_000, 256, replace=False))
    runs = {}
    for head in (0, 16):
        monkeypatch.setattr(stochastic, "STAGE_PICKS", head)
        fac = FacilityGroups(HostRows(E, np.arange(20_000)), R)
        assert fac.pending
        value = []
        order, ub = stochastic.stochastic_greedy_facility(fac, q, 1000, 0.7, seed=2, value=value)
        assert (fac.lists.bound is not None) == bool(head)
        runs[head] = order, value[0]
    assert np.array_equal(runs[0][0], runs[16][0])
    assert runs[0][1] == runs[16][1]


@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.int32])
@pytest.mark.parametrize("r", [37, 64, 1])
def test_the_scans_pairs_are_every_entry_at_its_key_row_by_row(dtype, r):
    # the pairs are read eight comparisons at a time: a width that is not a multiple of
    # eight, dense and empty rows, and hits in the first and last places
    from datamask.core.facility_scan import _pairs, workspace

    rng = np.random.default_rng(11)
    c = 50
    C = (rng.standard_normal((c, r)) * 1000).astype(dtype)
    key = np.quantile(C, 0.9, axis=0).astype(dtype)
    C[3] = key  # every entry on its key
    C[4] = key - 1 if dtype != np.float32 else key - np.float32(0.5)  # none
    C[7, 0], C[7, r - 1] = key[0], key[r - 1]
    pi, px, _, _, _, flags = workspace(c, r)
    n = _pairs(C, key, pi, px, flags)
    want_i, want_x = np.nonzero(C >= key[None, :])
    np.testing.assert_array_equal(pi[:n], want_i)
    np.testing.assert_array_equal(px[:n], want_x)
    assert n > r  # row 3 alone lists r
