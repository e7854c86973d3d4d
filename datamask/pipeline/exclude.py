"""Rows kept out of every selection: the evaluation and held-out sets (``--exclude SET``).

A set is a Parquet / JSONL directory, file or glob: a search's evaluation set, or the held-out
rows ``select`` / ``compare --holdout F`` wrote to ``OUTPUT/holdout/``. A row of the input is
excluded when its exact text is the text of a row of a set (:func:`text_key`, the hash the proxy
LM and the search recognise a held-out text by) or, for a datamask holdout (whose rows are rows
of the same corpus by construction), when its id is the id of one of the set's rows. Another
set is matched by text only: its ids name rows of another corpus.

:func:`load_excluded` reads the sets once, on the client; the :class:`Excluded` it returns
(two sorted arrays) travels with every split's task, and :meth:`Excluded.split` drops the
rows of one split and counts them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from ..errors import DataError
from .holdout import HOLDOUT_DIR

__all__ = [
    "EXCLUDED_COUNTS",
    "Excluded",
    "load_excluded",
    "text_key",
    "text_keys",
    "holdout_id_column",
    "excluded_line",
]


#: the record and totals fields of the excluded rows
EXCLUDED_COUNTS = ("excluded_rows", "excluded_by_id", "excluded_by_text")


def text_key(text: str) -> bytes:
    """The identity a held-out row is recognised by: a hash of its exact text."""
    return hashlib.blake2b(text.encode("utf-8", errors="surrogatepass"), digest_size=16).digest()


def text_keys(values) -> np.ndarray:
    """``(n,) S16``: the :func:`text_key` of each text (zeros for a null or empty one, matched by nothing)."""
    none = b"\0" * 16
    return np.array([text_key(v) if isinstance(v, str) and v else none for v in values], dtype="S16")


def holdout_id_column(path) -> str | None:
    """The id column of a datamask holdout (``OUTPUT/holdout/`` of a select or compare run,
    from the run's config record), or None for any other set."""
    from ..runtime.storage import location

    p = location(str(path).rstrip("/"))
    if p.name != HOLDOUT_DIR:
        return None
    cfg = p.parent / "_datamask" / "config.json"
    try:
        return json.loads(cfg.read_text()).get("config", {}).get("id_column", "id") if cfg.exists() else None
    except (OSError, ValueError):
        return None


@dataclass
class Excluded:
    """The rows of the evaluation and held-out sets: their text keys (sorted, unique) and, for
    datamask holdouts, their ids (unique)."""

    sources: list
    keys: np.ndarray  # S16 text keys
    ids: np.ndarray | None = None  # ids of the holdout sets' rows (None: no holdout among the sets)
    rows: int = 0  # rows read from the sets
    by_source: dict = field(default_factory=dict)  # source -> "id and text" | "text"

    def match(self, ids, texts) -> tuple[np.ndarray, int, int]:
        """``(mask, by id, by text)`` of rows with these ``ids`` (array) and ``texts`` (a list, or
        None when the input has no text column)."""
        n = len(ids) if ids is not None else len(texts)
        by_id = np.zeros(n, dtype=bool)
        by_text = np.zeros(n, dtype=bool)
        if self.ids is not None and ids is not None and len(self.ids):
            import pandas as pd

            by_id = np.asarray(pd.Index(np.asarray(ids, dtype=object)).isin(self.ids), dtype=bool)
        if texts is not None and len(self.keys):
            by_text = np.isin(text_keys(texts), self.keys)
        return by_id | by_text, int(by_id.sum()), int(by_text.sum())

    def split(self, table: pa.Table, id_column: str, text_column: str) -> tuple[pa.Table, dict]:
        """One split without its excluded rows, and the counts (``excluded_rows``,
        ``excluded_by_id``, ``excluded_by_text``) for its record."""
        names = table.schema.names
        ids = table.column(id_column).to_numpy(zero_copy_only=False) if id_column in names else None
        texts = table.column(text_column).to_pylist() if text_column in names else None
        mask, n_id, n_text = self.match(ids, texts)
        rec = {"excluded_rows": int(mask.sum()), "excluded_by_id": n_id, "excluded_by_text": n_text}
        return (table.filter(pa.array(~mask)) if mask.any() else table), rec


def _set_rows(spec: str, id_column: str | None, text_column: str) -> tuple[list, list, int]:
    """``(ids, texts, rows)`` of every file of one set (``ids`` empty when ``id_column`` is None)."""
    import pyarrow.json as pajson

    from ..runtime.files import read_parquet_table
    from ..runtime.storage import open_file
    from .io import discover

    try:
        files = discover(spec)
    except DataError as e:
        raise DataError(f"exclude set {spec}: {e}") from None
    ids, texts, rows = [], [], 0
    for f in files:
        where = f"exclude set {spec}: {f.rel}"
        try:
            if f.fmt == "parquet":
                table = read_parquet_table(f.path)
            else:
                with open_file(f.path, "rb") as fh:
                    comp = "gzip" if f.path.lower().endswith(".gz") else None
                    table = pajson.read_json(pa.input_stream(fh, compression=comp))
        except (pa.ArrowInvalid, OSError) as e:
            msg = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
            raise DataError(f"{where}: cannot read ({msg}); replace or remove the file") from None
        names = table.schema.names
        if text_column not in names and (id_column is None or id_column not in names):
            raise DataError(
                f"{where}: no text column {text_column!r} (columns: {', '.join(names)}); pass --set text_column=NAME"
            )
        rows += table.num_rows
        if text_column in names:
            texts += table.column(text_column).to_pylist()
        if id_column is not None and id_column in names:
            ids += table.column(id_column).to_pylist()
    return ids, texts, rows


def load_excluded(paths, text_column: str = "text") -> Excluded | None:
    """The rows of the sets at ``paths`` (resolved paths or URLs; see the module doc), or None
    when no set is given. A set that cannot be read, or holds neither the text column nor (a
    datamask holdout) its id column, is a one-line :class:`~datamask.errors.DataError`."""
    if not paths:
        return None
    keys, ids, rows, how, any_holdout = [], [], 0, {}, False
    for spec in paths:
        id_col = holdout_id_column(spec)
        s_ids, s_texts, n = _set_rows(str(spec), id_col, text_column)
        keys.append(text_keys(s_texts))
        ids += [i for i in s_ids if i is not None]
        any_holdout |= id_col is not None
        rows += n
        how[str(spec)] = "id and text" if id_col is not None else "text"
    k = np.unique(np.concatenate(keys)) if keys else np.zeros(0, dtype="S16")
    k = k[k != b""]  # the key of a null or empty text matches nothing
    id_arr = None
    if any_holdout:
        import pandas as pd

        id_arr = pd.unique(np.asarray(ids, dtype=object)) if ids else np.zeros(0, dtype=object)
    return Excluded([str(p) for p in paths], k, id_arr, rows, how)


def excluded_line(totals: dict, sources) -> str | None:
    """``datamask: removed N rows of the evaluation and held-out sets (...)`` for a summary, or None."""
    if not sources:
        return None
    n = int(totals.get("excluded_rows", 0))
    return (
        f"datamask: excluded {n:,} row{'' if n == 1 else 's'} found in the evaluation and held-out sets "
        f"({int(totals.get('excluded_by_id', 0)):,} by id, {int(totals.get('excluded_by_text', 0)):,} by text; "
        f"{', '.join(map(str, sources))}) before selecting"
    )
