"""The compiled float16 -> float32 cast (core/halfcast) against numpy's cast, bit for bit."""

import sys

import numpy as np
import pytest

from datamask.core import halfcast
from datamask.core.validate import check_inputs, unit_rows


def _bits(x):
    return np.asarray(x, dtype=np.float32).view(np.uint32)


def test_every_float16_pattern_casts_as_numpy_does():
    every = np.arange(1 << 16, dtype=np.uint16).view(np.float16).reshape(1024, 64)  # 65,536 values
    out = np.empty(every.shape, dtype=np.float32)
    halfcast._kernel()(every.view(np.uint16), np.zeros(0, dtype=np.int64), 0, out, out.view(np.uint32))
    want = every.astype(np.float32)
    nan = np.isnan(want)
    assert nan.sum() == 2 * 1023  # both signs, every non-zero fraction
    assert np.array_equal(_bits(out)[~nan], _bits(want)[~nan])  # zeros' signs, subnormals, infs
    assert np.isnan(out[nan]).all()


@pytest.mark.parametrize("gather", [False, True])
def test_large_blocks_take_the_compiled_cast_with_the_same_values(gather, monkeypatch):
    rng = np.random.default_rng(0)
    E = (rng.standard_normal((3000, 96)) * np.logspace(-7, 2, 96)).astype(np.float16)  # subnormal to large
    rows = rng.choice(3000, 1500, replace=False) if gather else None
    called = []
    kernel = halfcast._kernel()
    monkeypatch.setattr(halfcast, "_kernel", lambda: lambda *a: called.append(1) or kernel(*a))
    monkeypatch.setattr(halfcast, "MIN_ELEMENTS", 1000)
    out = np.empty((1500, 96), dtype=np.float32)
    halfcast.rows_into(E, rows, out, first=700)
    want = (E[rows] if gather else E[700:2200]).astype(np.float32)
    assert called and np.array_equal(_bits(out), _bits(want))
    # a process that has not loaded numba keeps numpy's cast (loading it costs more than it saves)
    monkeypatch.delitem(sys.modules, "numba")
    called.clear()
    out[:] = 0
    halfcast.rows_into(E, rows, out, first=700)
    assert not called and np.array_equal(_bits(out), _bits(want))


def test_small_blocks_take_the_compiled_cast_once_it_has_run(monkeypatch):
    rng = np.random.default_rng(5)
    E = rng.standard_normal((400, 64)).astype(np.float16)
    rows = rng.choice(400, 100, replace=False)
    kernel = halfcast._kernel()
    called = []
    monkeypatch.setattr(halfcast, "_kernel", lambda: lambda *a: called.append(a[3].shape) or kernel(*a))
    monkeypatch.setattr(halfcast, "MIN_ELEMENTS", 5000)
    monkeypatch.setattr(halfcast, "_ran", False)
    small = np.empty((50, 64), dtype=np.float32)  # 3,200 elements: under MIN_ELEMENTS
    halfcast.rows_into(E, rows[:50], small)
    assert not called  # not yet run in this process: numpy's cast
    big = np.empty((100, 64), dtype=np.float32)
    halfcast.rows_into(E, rows, big)
    halfcast.rows_into(E, rows[:50], small)
    assert called == [(100, 64), (50, 64)]  # once it has run, small blocks take it too
    assert np.array_equal(_bits(small), _bits(E[rows[:50]].astype(np.float32)))
    assert np.array_equal(_bits(big), _bits(E[rows].astype(np.float32)))


def test_rows_outside_the_array_raise_numpys_error():
    E = np.ones((10, 4), dtype=np.float16)
    with pytest.raises(IndexError):
        halfcast.rows_into(E, np.array([3, 10]), np.empty((2, 4), dtype=np.float32))


def test_unit_rows_and_the_norms_check_are_unchanged_on_float16(monkeypatch):
    rng = np.random.default_rng(1)
    E = rng.standard_normal((5000, 32)).astype(np.float16)
    q = rng.random(5000)
    rows = rng.choice(5000, 2000, replace=False)
    monkeypatch.setattr(halfcast, "MIN_ELEMENTS", 1 << 40)  # numpy's cast everywhere
    monkeypatch.setattr(halfcast, "_ran", False)
    norms_np = check_inputs(E, q)
    rows_np = unit_rows(E, rows, norms_np)
    monkeypatch.setattr(halfcast, "MIN_ELEMENTS", 256)  # the compiled cast (numba loaded)
    halfcast._kernel()
    norms = check_inputs(E, q)
    assert np.array_equal(norms, norms_np)
    assert np.array_equal(_bits(unit_rows(E, rows, norms)), _bits(rows_np))


@pytest.mark.parametrize("layout", ["read-only", "fortran", "strided"])
def test_the_compiled_cast_reads_any_layout_numpy_reads(layout, monkeypatch):
    monkeypatch.setattr(halfcast, "MIN_ELEMENTS", 1000)
    halfcast._kernel()  # numba loaded: the compiled cast runs
    rng = np.random.default_rng(3)
    E = rng.standard_normal((500, 64 if layout != "strided" else 128)).astype(np.float16)
    if layout == "read-only":
        E.setflags(write=False)
    elif layout == "fortran":
        E = np.asfortranarray(E)
    else:
        E = E[:, ::2]  # every other column: a row is not contiguous
    rows = rng.choice(500, 300, replace=False)
    for idx, first in ((rows, 0), (None, 50)):
        out = np.empty((300, 64), dtype=np.float32)
        halfcast.rows_into(E, idx, out, first=first)
        want = (E[idx] if idx is not None else E[50:350]).astype(np.float32)
        assert np.array_equal(_bits(out), _bits(want))


def test_the_why_pass_and_the_vector_check_cast_float16_as_numpy_does(monkeypatch):
    from datamask.errors import DataError
    from datamask.pipeline import why
    from datamask.pipeline.schema import check_vectors

    rng = np.random.default_rng(4)
    E = rng.standard_normal((3000, 48)).astype(np.float16)
    mask = rng.random(3000) < 0.2
    rows = [5, 17, 2999]
    monkeypatch.setattr(halfcast, "MIN_ELEMENTS", 1 << 40)  # numpy's cast everywhere
    monkeypatch.setattr(halfcast, "_ran", False)
    want = why.nearest_rows(E, rows, mask, block=700)
    monkeypatch.setattr(halfcast, "MIN_ELEMENTS", 256)  # the compiled cast (numba loaded)
    halfcast._kernel()
    called = []
    kernel = halfcast._kernel()
    monkeypatch.setattr(halfcast, "_kernel", lambda: lambda *a: called.append(1) or kernel(*a))
    got = why.nearest_rows(E, rows, mask, block=700)
    assert called  # the pass over the split's blocks took the compiled cast
    for g, w in zip(got, want):
        assert np.array_equal(g, w)
    F = E.astype(np.float32)
    why.nearest_rows(F, rows, mask, block=700)  # float32 rows: why's unit rows are a copy (F unchanged)
    assert np.array_equal(F, E.astype(np.float32))
    E[1234, 7] = np.nan  # the vector check still finds a NaN through the compiled cast
    called.clear()
    with pytest.raises(DataError, match="row 1234"):
        check_vectors(E, "split 0", "embedding")
    assert called


def test_a_facility_fit_checks_its_input_with_the_compiled_cast_and_a_pairwise_fit_does_not():
    # a fresh process: numba is loaded before a facility fit's input check (its kernels need it
    # anyway), never by a pairwise fit (loading it costs more than the cast saves)
    import subprocess

    code = """
import sys
import numpy as np
from datamask import DataMask
from datamask.estimator import estimator
seen, check = [], estimator.check_inputs
estimator.check_inputs = lambda E, q: (seen.append("numba" in sys.modules), check(E, q))[1]
rng = np.random.default_rng(0)
E, q = rng.normal(size=(3000, 16)).astype(np.float16), rng.random(3000)
DataMask(diversity="pairwise", ratio=0.1).fit(E, q)
seen.append("numba" in sys.modules)
DataMask(diversity="facility", ratio=0.1).fit(E, q)
print(seen)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[False, False, True]"


def test_a_facility_split_checks_its_vectors_with_the_compiled_cast_and_a_top_k_split_never_loads_it(tmp_path):
    # a split's vector check runs before the fit: for the default method on numpy (which loads
    # the kernels anyway) it casts with the compiled loop; top-k never loads numba at all
    import subprocess

    code = """
import sys
import numpy as np
import pyarrow as pa
from datamask.pipeline import select_split as ss
from datamask.pipeline.config import SelectConfig
seen, check = [], ss.check_vectors
ss.check_vectors = lambda *a, **k: (seen.append("numba" in sys.modules), check(*a, **k))[1]
rng = np.random.default_rng(0)
E = rng.normal(size=(3000, 16)).astype(np.float16)
table = pa.table({"id": np.arange(3000), "quality": rng.random(3000),
                  "embedding": pa.FixedSizeListArray.from_arrays(pa.array(E.reshape(-1)), 16)})
for method in ("topk", "datamask"):
    cfg = SelectConfig(input=".", output="out", method=method, ratio=0.1, quiet=True, device="cpu")
    ss.select_split(table, cfg, 0, "split 0")
    seen.append("numba" in sys.modules)
print(seen)
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[False, False, True, True]"
