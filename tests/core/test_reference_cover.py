"""The side-by-side's objective read from a facility fit's threshold lists (``ReferenceCover``)
against the same numbers from products with every reference row."""

import numpy as np
import pytest

from datamask import DataMask
from datamask.core import scorecard as sc
from datamask.core.synthetic import make_clusters, make_corpus

REF = 512  # reference rows


@pytest.fixture(autouse=True)
def short_lists(monkeypatch):
    """Lists of 128 candidates a reference row (the default's 2^23 entries list every row of a
    small split), so some reference rows list no row of a subset."""
    from datamask.core import facility_lists

    monkeypatch.setattr(facility_lists, "LIST_ENTRIES", 128 * REF)


def _fit(E, q, **kw):
    return DataMask(ratio=0.1, seed=3, solver_params={"reference_size": REF}, **kw).fit(E, q)


def _masks(est, q, rng):
    S = int(est.mask_.sum())
    top = np.zeros(q.shape[0], bool)
    top[np.argsort(-q, kind="stable")[:S]] = True
    rnd = np.zeros(q.shape[0], bool)
    rnd[rng.choice(q.shape[0], S, replace=False)] = True
    return {"selection": est.mask_, "topk": top, "random": rnd}


def _cards(E, q, cover):
    kw = dict(lam=0.7, diversity="facility", reference_size=REF, seed=3, sample=128, norms="own")
    return sc.Scorecard(E, q, **kw), sc.Scorecard(E, q, reference_cover=cover, **kw)


def _same(a, b):
    for name in a:
        for k, v in a[name].items():
            if isinstance(v, float) and np.isnan(v):
                assert np.isnan(b[name][k])
            else:  # float32 cosines summed in another order: within float32 rounding of a mean of cosines
                assert b[name][k] == pytest.approx(v, abs=2e-6), (name, k)


def _counted(monkeypatch):
    """The rows of every product the scorecard takes (region_maxima's P)."""
    seen = []
    raw = sc.region_maxima
    monkeypatch.setattr(sc, "region_maxima", lambda P, *a, **k: seen.append(P.shape[0]) or raw(P, *a, **k))
    return seen


def test_the_lists_give_every_number_the_products_give_without_the_reference_rows_products(monkeypatch):
    c = make_corpus(n_rows=6000, dim=64, seed=0)
    E, q = c["embedding"].astype(np.float32), c["quality"]
    est = _fit(E, q)
    cover = est.reference_cover_
    assert cover is not None and cover.reference.shape == (REF,)
    masks = _masks(est, q, np.random.default_rng(0))
    plain, listed = _cards(E, q, cover)
    seen = _counted(monkeypatch)
    want = plain.score_many(masks)
    rows_plain = sum(seen)
    seen.clear()
    got = listed.score_many(masks)
    assert sum(seen) < rows_plain - REF // 4  # the reference rows are not multiplied (most of them)
    _same(want, got)
    assert got["selection"]["objective"] == pytest.approx(est.objective_["objective"], abs=2e-6)


def test_reference_rows_no_listed_row_reaches_are_multiplied(monkeypatch):
    c = make_clusters(n_rows=6000, dim=64, n_clusters=20, seed=1)
    E, q = c["embedding"].astype(np.float32), c["quality"]
    est = _fit(E, q)
    labels = np.asarray(c["topic"])
    one = labels == labels[0]  # a subset of one cluster: the other clusters' reference rows list none of it
    masks = {"selection": est.mask_, "one cluster": one}
    got_lists = est.reference_cover_.maxima(np.flatnonzero(one))
    assert np.isinf(got_lists).sum() > REF // 4
    plain, listed = _cards(E, q, est.reference_cover_)
    _same(plain.score_many(masks), listed.score_many(masks))


def test_a_mask_of_rows_the_fit_did_not_score_takes_the_products():
    c = make_corpus(n_rows=6000, dim=64, seed=2)
    E, q = c["embedding"].astype(np.float32), c["quality"]
    est = _fit(E, q, prune=0.5)  # half the rows are no candidates
    cover = est.reference_cover_
    assert not cover.covers(np.arange(6000)) and cover.covers(np.flatnonzero(est.mask_))
    masks = _masks(est, q, np.random.default_rng(1))
    plain, listed = _cards(E, q, cover)
    assert listed._listed(cover.reference, [np.flatnonzero(m) for m in masks.values()]) is None
    _same(plain.score_many(masks), listed.score_many(masks))


def test_the_lists_maxima_are_the_largest_cosines_above_each_threshold():
    c = make_corpus(n_rows=3000, dim=32, seed=4)
    E, q = c["embedding"].astype(np.float32), c["quality"]
    est = _fit(E, q)
    cover = est.reference_cover_
    rows = np.random.default_rng(5).choice(3000, 20, replace=False)  # lists of 128 of 3,000: some reach none
    U = E / np.linalg.norm(E, axis=1, keepdims=True)
    G = U[cover.reference].astype(np.float64) @ U[rows].T.astype(np.float64)
    got = cover.maxima(rows)
    listed = np.isfinite(got)
    assert listed.any() and not listed.all()
    best = G.max(axis=1)
    assert np.allclose(got[listed], best[listed], atol=2e-6)  # the largest cosine, when listed
    assert (got[listed] >= cover.theta[listed] - 1e-6).all()
    assert (best[~listed] < cover.theta[~listed] + 1e-6).all()  # unlisted: no row of the subset reaches theta


def test_only_a_facility_fit_on_numpy_keeps_its_lists():
    c = make_corpus(n_rows=3000, dim=32, seed=6)
    E, q = c["embedding"].astype(np.float32), c["quality"]
    assert DataMask(ratio=0.1, diversity="pairwise").fit(E, q).reference_cover_ is None
    assert DataMask(ratio=0.1).fit(E, q).reference_cover_ is not None


def test_a_facility_split_scores_its_side_by_side_from_the_fits_lists_and_drops_them(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    from datamask.cli.demo import write_corpus
    from datamask.pipeline.config import SelectConfig
    from datamask.pipeline.select_split import select_split

    # 8,000 rows: 800 selected, so the side-by-side samples fewer rows than the reference set
    # (score_sample) and scores the run's objective on the reference rows apart
    write_corpus(tmp_path / "c", n_rows=8000, n_files=1, dim=32, row_group_size=8000)
    table = pq.read_table(tmp_path / "c" / "shard-0000.parquet")
    cfg = SelectConfig(input=str(tmp_path / "c"), output=str(tmp_path / "o"), split_size=8000, ratio=0.1,
                       solver_params={"reference_size": REF}, quiet=True, device="cpu")  # fmt: skip
    used = []
    raw = sc.Scorecard._listed
    monkeypatch.setattr(sc.Scorecard, "_listed", lambda self, *a: used.append(raw(self, *a)) or used[-1])
    sel, rec = select_split(table, cfg, 0, "split 0", d=32, why=False)
    assert used and used[0] is not None  # the three subsets' objective came from the lists
    assert sel.reference_cover is None  # and the lists stay in the worker, not in what it returns
    side = rec.fields["side_by_side"]
    assert side["selection"]["objective"] == pytest.approx(rec.fields["after"]["objective"], abs=2e-6)
