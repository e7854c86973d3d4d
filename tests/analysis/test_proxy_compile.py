"""The proxy's ``compile`` setting: the compiled training loss gives the eager losses (to float32
rounding), and falls back to eager training, with one warning, when it cannot run."""

import warnings

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from datamask.analysis.proxy_lm import compiled as compiled_mod  # noqa: E402
from datamask.analysis.proxy_lm.config import ProxyLMConfig  # noqa: E402
from datamask.analysis.proxy_lm.train import EvalData, deterministic, initial_state, train_selection  # noqa: E402

# 3 steps of a 1-layer model 32 wide: the compile is the test's cost, not the training (a second
# layer is the same code traced again: 24 C++ kernels to build instead of 20, for nothing new).
SMALL = dict(vocab_size=300, d_model=32, n_layers=1, n_heads=2, d_ff=64, seq_len=32, batch_size=4, lr=1e-2)


class _Tok:
    vocab_size, eos_id = 300, 299


def _run(compile: bool):
    cfg = ProxyLMConfig(**SMALL, tokens=3 * 4 * 32, curve_points=0, threads=1, compile=compile).resolved()
    rng = np.random.default_rng(0)
    docs = [rng.integers(0, 299, size=int(n)) for n in rng.integers(20, 120, size=40)]
    w = np.concatenate([[299], rng.integers(0, 299, size=32)]).reshape(1, 33)
    ev = EvalData("ev", w, np.zeros(1, np.int64), np.array(["all"], object), np.array([32]), np.array([100]))
    with deterministic(1):
        res = train_selection("s", docs, _Tok(), cfg, initial_state(cfg, 300), [(ev, ev)], "cpu", "float32", quiet=True)
    assert res["tokens"] == 3 * 4 * 32
    return [loss for _, loss in res["train_curve"]], res["evals"]["ev"]["all"][0]


@pytest.mark.slow  # the compile: about a minute on 2 busy cores with an empty inductor cache, 12 s with a warm one
def test_compiled_training_gives_the_eager_losses():
    why = compiled_mod.compile_unavailable()
    if why:
        pytest.skip(f"torch.compile cannot run here: {why}")
    eager, ev_eager = _run(False)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        comp, ev_comp = _run(True)
    assert not [w for w in seen if "proxy-lm compile" in str(w.message)]  # it did compile, no fallback
    np.testing.assert_allclose(comp, eager, rtol=1e-5)  # 3 steps: float32 rounding, not noise
    assert ev_comp == pytest.approx(ev_eager, rel=1e-5)


def _fresh_warnings(monkeypatch):
    import datamask.core.cuda_graph as cg

    monkeypatch.setattr(cg, "_WARNED", set())


def test_no_compiler_trains_eagerly_with_one_warning(monkeypatch):
    _fresh_warnings(monkeypatch)
    monkeypatch.setenv("CXX", "no-such-c++-compiler")
    eager = _run(False)
    with pytest.warns(RuntimeWarning, match=r"compile is off: no C\+\+ compiler \(no-such-c\+\+-compiler\)"):
        assert _run(True) == eager  # eager, bit for bit
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        _run(True)  # once per process


def test_a_failing_compile_falls_back_to_eager(monkeypatch):
    import torch

    _fresh_warnings(monkeypatch)

    def broken(fn, **kw):
        def call(*a):
            raise RuntimeError("C++ compile error: the test's")

        return call

    monkeypatch.setattr(torch, "compile", broken)
    monkeypatch.setattr(compiled_mod, "compile_unavailable", lambda: None)
    eager = _run(False)
    with pytest.warns(RuntimeWarning, match=r"torch.compile failed \(C\+\+ compile error: the test's\); training eag"):
        assert _run(True) == eager
