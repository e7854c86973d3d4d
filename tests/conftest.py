import signal

import numpy as np
import pytest

from datamask.core.backend import gpu_available
from tests.helpers import fake_cupy
from tests.helpers.pipeline_data import local_cluster, write_files

_CTRL_C: list = []  # set by a Ctrl-C during the session (see pytest_sessionstart)


def pytest_sessionstart(session):
    """Ctrl-C stops the session at once, with its summary. Many tests run ``datamask``'s ``main()``
    in-process, which turns a KeyboardInterrupt into its one line and exit 130, as a command
    should: the test then fails, and the session would go on with a Dask cluster whose workers
    the same Ctrl-C stopped (each later test failing or waiting). The handler notes the Ctrl-C
    and raises as Python's does; the test that took it is the last to run."""
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return  # a run that ignores SIGINT (started in the background) or handles it itself

    def ctrl_c(signum, frame):
        _CTRL_C.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, ctrl_c)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    if _CTRL_C:
        pytest.exit("interrupted (Ctrl-C): the summary is of the tests run so far", returncode=2)


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
    """A numpy-backed stand-in for cupy, installed as ``cupy`` for this test (see helpers/fake_cupy.py)."""
    return fake_cupy.install(monkeypatch)


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    """Three Parquet files of the pipeline tests' corpus (``helpers.pipeline_data.FILE_ROWS`` rows)."""
    d = tmp_path_factory.mktemp("corpus")
    write_files(d)
    return d


@pytest.fixture(scope="session")
def cluster():
    """The suite's shared Dask cluster (tests that kill workers start their own)."""
    with local_cluster() as c:
        yield c


@pytest.fixture(scope="session")
def address(cluster):
    """The shared Dask cluster's scheduler address."""
    return cluster.scheduler_address
