"""The pg step on the device path: no host round trips, same masks, graph capture logic.

The GPU branches run here on ``fake_cupy`` (numpy arrays that behave like cupy's: device
scalars, host read-backs counted and refusable). What only a GPU can show (real stream
capture, the fused kernel, timings) is in the ``gpu``-marked tests and the benchmark.
"""

import contextlib
import functools
import warnings

import numpy as np
import pytest

from datamask.core import cuda_graph, groupsum, pg
from datamask.core.synthetic import make_corpus
from tests.helpers import fake_cupy
from tests.helpers.pairwise import PairwiseMask

CASES = [
    dict(diversity="pairwise"),
    dict(diversity="pairwise", batch_ratio=None, lr_schedule="cosine"),
    dict(diversity="disf", steps=12),
    dict(diversity="facility", reference_size=256, batch_ratio=0.25),
]


@pytest.fixture(scope="module")
def corpus():
    c = make_corpus(3000, dim=24, seed=8)
    return c["embedding"], c["quality"]


def _fit(E, q, **kw):
    params = dict(steps=40, eval_every=20, patience=None, seed=5)
    params.update(kw)
    return PairwiseMask(**params).fit(E, q)


@pytest.fixture
def strict_between_evaluations(monkeypatch):
    """From the first evaluation point on, any host read-back outside one raises."""
    inner = pg._BestMask.evaluate

    def evaluate(self, *a, **k):
        fake_cupy._STRICT[0] = False
        try:
            return inner(self, *a, **k)
        finally:
            fake_cupy._STRICT[0] = True

    advance = pg.PolicyGradient.advance  # the steps run here, between evaluation points

    def guarded(self, *a, **k):
        try:
            return advance(self, *a, **k)
        finally:
            fake_cupy._STRICT[0] = False

    monkeypatch.setattr(pg._BestMask, "evaluate", evaluate)
    monkeypatch.setattr(pg.PolicyGradient, "advance", guarded)


@pytest.mark.parametrize("kw", CASES)
def test_steps_read_nothing_back_between_evaluation_points(corpus, fake_cp, strict_between_evaluations, kw):
    E, q = corpus
    fake_cupy.SYNCS.clear()
    m = _fit(fake_cp.asarray(E), fake_cp.asarray(q), **kw)
    assert isinstance(m.mask_, fake_cupy.ndarray)
    assert m.n_steps_ == kw.get("steps", 40)
    assert fake_cupy.SYNCS  # the evaluation points did read values back: the guard is live


def test_the_guard_catches_a_read_back_in_a_step(corpus, fake_cp, strict_between_evaluations, monkeypatch):
    # The same harness fails a step that reads its advantages' spread back, as the
    # step before this change did (`sd = float(f.std())`).
    inner = pg.Step.advantages
    monkeypatch.setattr(pg.Step, "advantages", lambda self, f: (float(f.std()), inner(self, f))[1])
    E, q = corpus
    with pytest.raises(fake_cupy.SyncError, match="float"):
        _fit(fake_cp.asarray(E), fake_cp.asarray(q))


@pytest.mark.parametrize("kw", CASES)
def test_device_path_learns_the_same_logits_as_numpy(corpus, fake_cp, monkeypatch, kw):
    # One kernel for the row sums on both sides: the int8 one is numpy-only.
    monkeypatch.setattr(groupsum, "kernel", lambda: "float32")
    # And one facility scorer: by default the device path scores from a dense (n, r) cosine
    # block and numpy from per-reference neighbour lists, GEMMs of different shapes for which
    # the BLAS kernel picks different float32 summation orders (the scorers agree to float32
    # rounding: test_objectives). With the same operations on both sides, any difference left
    # is the step's own (float64) arithmetic.
    monkeypatch.setattr(pg, "FacilityGroups", functools.partial(pg.FacilityGroups, method="dense"))
    E, q = corpus
    a = _fit(E, q, **kw)
    b = _fit(fake_cp.asarray(E), fake_cp.asarray(q), **kw)
    La, Lb = a.logits_, np.asarray(b.logits_)
    live = np.isfinite(La)
    assert np.array_equal(live, np.isfinite(Lb))
    assert np.allclose(La[live], Lb[live], rtol=0, atol=1e-9), np.abs(La[live] - Lb[live]).max()
    assert np.array_equal(a.mask_, np.asarray(b.mask_))


class FakeCapture:
    """A capturer for StepRunner: a 'graph' is a replay of the step function."""

    def __init__(self, fail=False):
        self.fail, self.calls = fail, []

    def scope(self):
        return contextlib.nullcontext()

    def eager(self, fn):
        self.calls.append("eager")
        fn()

    def capture(self, fn):
        self.calls.append("capture")
        if self.fail:
            raise RuntimeError("operation not permitted when stream is capturing")

        def launch():
            self.calls.append("launch")
            with fake_cupy.strict():  # a graph cannot read values back either
                fn()

        return launch


def test_runner_warms_up_captures_once_then_replays():
    ran = []
    cap = FakeCapture()
    run = cuda_graph.StepRunner(lambda: ran.append(1), cap)
    for _ in range(4):
        run()
    assert len(ran) == 4 and run.calls == 4  # one step per call, capture included
    assert cap.calls == ["eager", "capture", "launch", "launch", "launch"]
    assert run.mode == "graph"


def test_failed_capture_falls_back_and_warns_once(monkeypatch):
    monkeypatch.setattr(cuda_graph, "_WARNED", set())
    ran = []
    with pytest.warns(RuntimeWarning, match="could not be captured"):
        run = cuda_graph.StepRunner(lambda: ran.append(1), FakeCapture(fail=True))
        for _ in range(3):
            run()
    assert len(ran) == 3 and run.mode == "plain"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second failing runner stays quiet
        again = cuda_graph.StepRunner(lambda: ran.append(1), FakeCapture(fail=True))
        again()
        again()
    assert len(ran) == 5


@pytest.mark.parametrize("fail", [False, True])
def test_capture_on_or_off_draws_the_same_masks(corpus, fake_cp, monkeypatch, fail):
    monkeypatch.setattr(cuda_graph, "_WARNED", set())
    made = []
    monkeypatch.setattr(pg, "_is_real_cupy", lambda xp: True)
    monkeypatch.setattr(pg, "CupyGraphs", lambda: made.append(FakeCapture(fail)) or made[-1])
    E, q = corpus
    kw = dict(diversity="pairwise", final="sample", logit_range=(0.0, 16.0))  # fixed: no pilot runs
    ctx = pytest.warns(RuntimeWarning) if fail else contextlib.nullcontext()
    with ctx:
        a = _fit(fake_cp.asarray(E), fake_cp.asarray(q), **kw)
    assert made and made[0].calls[:2] == ["eager", "capture"]
    assert made[0].calls.count("launch") == (0 if fail else 39)
    monkeypatch.setenv("DATAMASK_CUDA_GRAPH", "0")
    b = _fit(fake_cp.asarray(E), fake_cp.asarray(q), **kw)
    assert len(made) == 1  # capture disabled: no capturer built
    assert np.array_equal(np.asarray(a.logits_), np.asarray(b.logits_))
    assert np.array_equal(np.asarray(a.mask_), np.asarray(b.mask_))


def test_zero_spread_group_leaves_logits_unchanged():
    # lam = 1 and constant quality: every mask scores the same, so no step moves anything.
    c = make_corpus(1000, dim=8, seed=1)
    q = np.ones(1000)
    m = PairwiseMask(lam=1.0, prune=0.0, solver_params=dict(steps=30, patience=None, init="uniform")).fit(
        c["embedding"], q
    )
    assert np.all(m.logits_ == 0.0)


@pytest.mark.gpu
def test_cupy_step_reads_nothing_back_and_is_captured(monkeypatch):
    import cupy as cp
    import cupyx

    c = make_corpus(5000, dim=64, seed=0)
    E, q = cp.asarray(c["embedding"]), cp.asarray(c["quality"])
    runners = []

    class Spy(cuda_graph.StepRunner):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            runners.append(self)

    monkeypatch.setattr(pg, "StepRunner", Spy)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # neither the capture nor the fused kernel may fall back
        a = PairwiseMask(seed=1, solver_params=dict(steps=200, patience=None)).fit(E, q)
    assert runners[-1].mode == "graph"
    monkeypatch.setenv("DATAMASK_CUDA_GRAPH", "0")
    inner = pg.Step.__call__

    def no_sync(self):
        with cupyx.allow_synchronize(False):  # raises on any device-to-host wait
            inner(self)

    monkeypatch.setattr(pg.Step, "__call__", no_sync)
    b = PairwiseMask(seed=1, solver_params=dict(steps=200, patience=None)).fit(E, q)
    assert runners[-1].mode == "plain"
    # the same draws with the graph or without (atomic adds may reorder float64 sums)
    assert cp.allclose(a.logits_, b.logits_, rtol=0, atol=1e-8)
    # and a numpy run of the same seed draws the same masks up to float32 rounding
    n = PairwiseMask(seed=1, solver_params=dict(steps=200, patience=None)).fit(c["embedding"], c["quality"])
    live = np.isfinite(n.logits_)
    assert np.corrcoef(cp.asnumpy(a.logits_)[live], n.logits_[live])[0, 1] > 0.99


def test_a_broken_capture_reports_the_step_error_not_the_invalidation():
    """When the step fails inside a capture, ending the capture raises its own error (CUDA's
    "capture invalidated"); the step's error is the one that reaches the fallback warning."""
    import types

    events = []

    class Stream:
        def begin_capture(self):
            events.append("begin")

        def end_capture(self):
            events.append("end")
            raise RuntimeError("cudaErrorStreamCaptureInvalidated")

    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(using_allocator=lambda malloc: contextlib.nullcontext()))
    cap = object.__new__(cuda_graph.CupyGraphs)
    cap.cupy, cap.stream, cap.pool = fake, Stream(), types.SimpleNamespace(malloc=None)

    def step():
        raise TypeError("an operation that cannot be captured")

    with pytest.raises(TypeError, match="cannot be captured"):
        cap.capture(step)
    assert events == ["begin", "end"]  # the capture was still ended
