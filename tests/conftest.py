import numpy as np
import pytest

from datamask.core.backend import gpu_available


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (cupy with a working device)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def clustered_20k():
    """20k rows, d=384, planted topics and near-duplicate groups (shared across tests)."""
    from datamask.core.synthetic import make_corpus

    return make_corpus(n_rows=20_000, dim=384, seed=0)


@pytest.fixture
def unit_rows():
    def make(n, d, seed=0):
        X = np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)
        return X / np.linalg.norm(X, axis=1, keepdims=True)

    return make


@pytest.fixture
def fake_cp(monkeypatch):
    """A numpy-backed stand-in for cupy, installed as ``cupy`` for this test (see fake_cupy.py)."""
    import fake_cupy

    return fake_cupy.install(monkeypatch)
