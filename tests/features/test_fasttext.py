"""fastText quality classifier: trained by train_quality, it must separate held-out docs."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

pytest.importorskip("fasttext")

from datamask.features.fasttext_quality import (  # noqa: E402
    FastTextScorer,
    check_fasttext_model,
    one_line,
    score_fasttext_frame,
    train_quality,
)

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus.jsonl"
HELD_OUT_TOPICS = {"music", "rivers", "sleep"}  # prose topics never seen in training


@pytest.fixture(scope="module")
def split():
    df = pd.read_json(CORPUS, lines=True)
    test = (df["id"] % 3 == 0) | df["domain"].isin(HELD_OUT_TOPICS)
    train = df[~test]
    held = df[test & ((df["good"] == 0) | df["domain"].isin(HELD_OUT_TOPICS))]
    return train, held


@pytest.fixture(scope="module")
def model_path(split, tmp_path_factory):
    train, _ = split
    out = tmp_path_factory.mktemp("ft") / "quality.bin"
    info = train_quality(
        train.loc[train.good == 1, "text"], train.loc[train.good == 0, "text"], out, dim=16, bucket=20_000
    )
    assert info["n_positive"] == int((train.good == 1).sum())
    assert set(info["labels"]) == {"__label__pos", "__label__neg"}
    return out


def test_separates_held_out_documents_on_unseen_topics(split, model_path):
    _, held = split
    assert held["good"].sum() > 20 and (held["good"] == 0).sum() > 40
    out = score_fasttext_frame(held, FastTextScorer(str(model_path)))
    s = out["quality_fasttext"].to_numpy()
    assert s.dtype == np.float32 and s.min() >= 0 and s.max() <= 1
    assert roc_auc_score(held["good"], s) > 0.9
    assert s[held["good"].to_numpy() == 1].mean() > 0.7 > s[held["good"].to_numpy() == 0].mean()


def test_small_bucket_gives_a_small_model_file(model_path):
    assert model_path.stat().st_size < 3_000_000


def test_null_and_empty_texts_score_zero(model_path):
    df = pd.DataFrame({"text": ["Seeds saved from open-pollinated plants grow true to type.", None, ""]})
    s = score_fasttext_frame(df, FastTextScorer(str(model_path)))["quality_fasttext"].tolist()
    assert s[0] > 0 and s[1:] == [0.0, 0.0]


def test_train_from_jsonl_files_and_text_files(tmp_path, split):
    train, _ = split
    pos, neg = tmp_path / "pos.jsonl", tmp_path / "neg.txt"
    pos.write_text("".join(json.dumps({"text": t}) + "\n" for t in train.loc[train.good == 1, "text"]))
    neg.write_text("".join(one_line(t) + "\n" for t in train.loc[train.good == 0, "text"]))
    info = train_quality(pos, neg, tmp_path / "m" / "q.bin", dim=8, bucket=5_000, epoch=3)
    assert Path(info["path"]).is_file() and info["n_negative"] == int((train.good == 0).sum())


def test_non_model_file_is_one_clear_error(tmp_path):
    junk = tmp_path / "model.bin"
    junk.write_bytes(b"this is not a fastText model" * 10)
    with pytest.raises(ValueError, match="is not a fastText model") as exc:
        FastTextScorer(str(junk))
    assert "\n" not in str(exc.value)
    with pytest.raises(ValueError, match="does not exist"):
        check_fasttext_model(tmp_path / "absent.bin")


def test_empty_training_set_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="both sets"):
        train_quality(["a good document"], ["", "   "], tmp_path / "x.bin")


def test_unknown_positive_label_is_an_error(model_path):
    with pytest.raises(ValueError, match="not in fastText model"):
        FastTextScorer(str(model_path), positive_label="__label__good").score(["x"])
