"""How much of a proxy's loss is the seed: the spread across seeds, raw and under common random numbers.

Every trial of a search trains its proxy models from the same seeds (initial weights and data
order), and is scored on the same evaluation windows with the same tokenizer. A seed that
happens to train well lowers every recipe's loss alike, so two recipes trained on the same
seed differ by less noise than two independent runs: that is what common random numbers buy.
For a table of losses ``L[recipe, seed]`` this module reports, per evaluation set:

``sd``         the seed-to-seed spread of one recipe's loss (pooled over the recipes, ddof 1);
``sd_paired``  the spread left once the seed's shared effect is removed (the residual of
               ``L = recipe + seed + e``): the noise in a difference between two recipes on one
               seed is about ``sqrt(2) * sd_paired``;
``recipes``, ``seeds``  how many of each the figures come from.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["spread", "noise_table", "paired_difference"]


def spread(L: np.ndarray) -> dict:
    """``{"sd", "sd_paired", "recipes", "seeds"}`` of a (recipes, seeds) matrix without gaps."""
    L = np.asarray(L, dtype=np.float64)
    R, K = L.shape
    if K < 2 or R < 1:
        return {"sd": None, "sd_paired": None, "recipes": int(R), "seeds": int(K)}
    sd = float(np.sqrt(L.var(axis=1, ddof=1).mean()))
    if R < 2:
        return {"sd": sd, "sd_paired": None, "recipes": int(R), "seeds": int(K)}
    res = L - L.mean(axis=1, keepdims=True) - L.mean(axis=0, keepdims=True) + L.mean()
    paired = float(np.sqrt((res**2).sum() / ((R - 1) * (K - 1))))
    return {"sd": sd, "sd_paired": paired, "recipes": int(R), "seeds": int(K)}


def noise_table(records: pd.DataFrame, by: str = "name") -> dict:
    """Per evaluation set, the spread of ``loss`` and ``bits_per_byte`` (columns ``loss.SET``,
    ``bits_per_byte.SET`` of ``records``, one row per (``by``, ``seed``)); recipes that lack a
    seed others have are left out. ``{}`` when no recipe has two seeds."""
    out = {}
    sets = [c[len("loss.") :] for c in records.columns if c.startswith("loss.")]
    for s in sets:
        entry = {}
        for metric in ("loss", "bits_per_byte"):
            wide = records.pivot_table(index=by, columns="seed", values=f"{metric}.{s}", aggfunc="first")
            wide = wide.dropna(axis=0, how="any")
            if wide.shape[1] < 2 or wide.shape[0] < 1:
                return {}
            sp = spread(wide.to_numpy())
            entry[f"{metric}_sd"], entry[f"{metric}_sd_paired"] = sp["sd"], sp["sd_paired"]
            entry["recipes"], entry["seeds"] = sp["recipes"], sp["seeds"]
        out[s] = entry
    return out


def paired_difference(a, b) -> dict:
    """``a - b`` paired by seed: mean, sd (ddof 1), standard error and how many seeds."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    k = d.shape[0]
    sd = float(d.std(ddof=1)) if k > 1 else None
    return {"mean": float(d.mean()), "sd": sd, "se": sd / np.sqrt(k) if sd is not None else None, "seeds": int(k)}
