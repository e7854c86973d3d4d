"""Row sums for a group of masks: the float32 GEMM and the exact int8 kernel agree."""

import numpy as np
import pytest

from datamask.core import groupsum
from datamask.core.groupsum import SCALE_BITS, GroupSums, to_planes
from datamask.core.synthetic import make_corpus
from tests.helpers.pairwise import PairwiseMask


def test_planes_recombine_to_the_rounded_rows_exactly():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-1, 1, size=(50, 16)), np.array([[1.0] * 8 + [-1.0] * 8])])
    x = x.astype(np.float32)
    p = to_planes(x).astype(np.int64)
    d = x.shape[1]
    assert p[:, d:].min() >= 0 and p[:, d:].max() <= 127 and np.abs(p[:, :d]).max() <= 64
    back = (p[:, :d] << 14) + (p[:, d : 2 * d] << 7) + p[:, 2 * d :]
    assert np.array_equal(back, np.rint(x.astype(np.float64) * 2**SCALE_BITS).astype(np.int64))


def _sums_case():
    rng = np.random.default_rng(1)
    E = rng.standard_normal((3000, 48)).astype(np.float16)  # float16 storage, not unit
    norms = np.linalg.norm(E.astype(np.float32), axis=1)
    cand = np.sort(rng.permutation(3000)[:2000])
    batch = np.sort(rng.permutation(2000)[:700])
    idx = np.argsort(rng.random((40, 700)), axis=1)[:, :150]
    unit = E[cand][batch].astype(np.float64) / norms[cand][batch][:, None]
    exact = np.stack([unit[i].sum(axis=0) for i in idx])
    return E, norms, cand, batch, idx, exact


def test_float32_kernel_sums_match_brute_force():
    E, norms, cand, batch, idx, exact = _sums_case()
    gs = GroupSums(E, cand, norms, use="float32")
    assert gs.data.dtype == np.float32 and gs.data.shape == (2000, 48)
    assert np.abs(gs.sums(gs.take(batch), idx) - exact).max() < 1e-5


@pytest.mark.skipif(groupsum.kernel() != "int8", reason="no int8 matrix instructions or no torch here")
def test_int8_kernel_sums_match_brute_force_to_the_grid():
    E, norms, cand, batch, idx, exact = _sums_case()
    gs = GroupSums(E, cand, norms, use="int8")
    assert gs.data.dtype == np.int8 and gs.data.shape == (2000, 3 * 48)
    got = gs.sums(gs.take(batch), idx)
    # each of the 150 rows moves by at most half a grid step per entry
    assert np.abs(got - exact).max() <= 150 * 2.0 ** -(SCALE_BITS + 1) + 1e-9
    # and the kernel is exact on the rounded rows: integer sums, no float error
    grid = np.rint(
        E[cand][batch].astype(np.float32) / norms[cand][batch][:, None].astype(np.float32) * np.float32(2**SCALE_BITS)
    ).astype(np.int64)
    want = np.stack([grid[i].sum(axis=0) for i in idx]) * 2.0**-SCALE_BITS
    assert np.array_equal(got, want)


def test_environment_variable_forces_the_portable_kernel(monkeypatch):
    groupsum.kernel.cache_clear()
    monkeypatch.setenv("DATAMASK_GROUPSUM", "float32")
    try:
        assert groupsum.kernel() == "float32"
        c = make_corpus(1000, dim=16, seed=2)
        assert GroupSums(c["embedding"], np.arange(1000)).kernel == "float32"
    finally:
        groupsum.kernel.cache_clear()


@pytest.fixture
def kernels_used(monkeypatch):
    """The kernel of every GroupSums the pg solver builds, in order."""
    from datamask.core import pg

    used = []

    class Spy(GroupSums):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            used.append(self.kernel)

    monkeypatch.setattr(pg, "GroupSums", Spy)
    return used


def test_pg_reaches_the_same_objective_with_either_kernel(monkeypatch, kernels_used):
    c = make_corpus(4000, dim=32, seed=3)
    E, q = c["embedding"], c["quality"]
    start = PairwiseMask(solver_params=dict(steps=0, init="quality")).fit(E, q).objective_["objective"]
    out = {}
    for name in ["float32"] + (["int8"] if groupsum.kernel() == "int8" else []):
        monkeypatch.setattr(groupsum, "kernel", lambda name=name: name)
        # 1,000-row batches: large enough for the int8 kernel to be chosen
        m = PairwiseMask(seed=0, solver_params=dict(steps=400, patience=None, batch_ratio=0.5, init="quality")).fit(
            E, q
        )
        assert kernels_used[-1] == name
        out[name] = m.objective_["objective"]
    assert out["float32"] > start
    if "int8" in out:
        assert abs(out["int8"] - out["float32"]) < 0.02 * (out["float32"] - start)


def test_small_batches_stay_on_float32(monkeypatch, kernels_used):
    from datamask.core import pg

    monkeypatch.setattr(groupsum, "kernel", lambda: "int8")
    c = make_corpus(2000, dim=16, seed=4)
    # a fixed start: the "auto" pilot would add two fits (and their kernels) to the record
    PairwiseMask(
        solver_params=dict(steps=5, batch_max=pg.INT8_MIN_ROWS - 1, batch_ratio=None, logit_range=(0.0, 16.0))
    ).fit(c["embedding"], c["quality"])
    assert kernels_used == ["float32"]
