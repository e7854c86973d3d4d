"""A seeded held-out slice of every split, set aside before any selection method sees it.

``select --holdout F`` and ``compare --holdout F`` remove ``round(F x rows)`` rows of each
split (chosen by a generator seeded from the split's own seed, so the slice does not depend
on the number of workers or on the method) and write them to ``OUTPUT/holdout/`` as Parquet,
one file per split: an evaluation set no method trained on (``datamask proxy-lm --eval
OUTPUT/holdout``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["HOLDOUT_DIR", "holdout_mask", "split_off_holdout"]

HOLDOUT_DIR = "holdout"
_SALT = 0x4D0_1D  # keeps the slice independent of the methods' own draws from the split seed


def holdout_mask(n_rows: int, fraction: float, seed: int) -> np.ndarray:
    """``(n_rows,)`` bool, True on ``round(fraction x n_rows)`` rows drawn with ``seed``."""
    mask = np.zeros(int(n_rows), dtype=bool)
    k = int(round(float(fraction) * int(n_rows)))
    if k > 0:
        rng = np.random.default_rng([int(seed) % 2**63, _SALT])
        mask[rng.choice(int(n_rows), size=k, replace=False)] = True
    return mask


def split_off_holdout(table: pa.Table, fraction: float, seed: int) -> tuple[pa.Table, pa.Table]:
    """``(kept rows, held-out rows)`` of one split's table, in their original order."""
    m = holdout_mask(table.num_rows, fraction, seed)
    return table.filter(pa.array(~m)), table.filter(pa.array(m))
