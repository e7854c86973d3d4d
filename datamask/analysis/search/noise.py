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

:func:`paired_t` is the one rule every comparison of the search, the recipe suite and the
report states: a paired difference is *beyond noise* when its two-sided t-interval (the t
quantile at n - 1 degrees of freedom, 95% by default) excludes zero, which is ``scipy.stats.
ttest_rel`` at p < 0.05 (tests/analysis/test_search_model.py pins the two together).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["spread", "noise_table", "paired_difference", "paired_t", "LEVEL"]

#: the confidence level of every beyond-noise statement (a paired two-sided t-interval)
LEVEL = 0.95


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
    """``a - b`` paired by seed: :func:`paired_t` at :data:`LEVEL`."""
    return paired_t(a, b)


def paired_t(a, b, level: float = LEVEL) -> dict:
    """The paired t-test of ``a - b`` (one value per seed, in the same order).

    Returns ``{"mean", "sd", "se", "seeds", "df", "t", "p", "level", "lo", "hi", "half_width",
    "beyond"}``: the mean difference, its sd (ddof 1) and standard error, the pairs ``n``
    (``seeds``) and ``df = n - 1``, the t statistic and its two-sided p-value, the ``level``
    t-interval ``mean -/+ t_{(1+level)/2, n-1} x se`` (``lo``, ``hi``) and ``beyond``: the
    interval excludes zero. As ``scipy.stats.ttest_rel(a, b)`` and its ``confidence_interval``.
    One pair has no spread: ``sd``, ``t``, ``p``, the interval are None and ``beyond`` False.
    Equal differences on every seed (sd 0): a zero mean is ``t`` 0 and ``p`` 1, any other an
    infinite ``t`` and ``p`` 0 (scipy: nan and 0), the interval the mean itself."""
    from scipy import stats

    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    k = int(d.shape[0])
    m = float(d.mean()) if k else float("nan")
    out = {"mean": m, "sd": None, "se": None, "seeds": k, "df": max(k - 1, 0), "t": None, "p": None}
    out.update(level=float(level), lo=None, hi=None, half_width=None, beyond=False)
    if k < 2:
        return out
    sd = float(d.std(ddof=1))
    se = sd / np.sqrt(k)
    q = float(stats.t.ppf(0.5 + float(level) / 2, k - 1))
    if se > 0:
        t = m / se
        p = float(2 * stats.t.sf(abs(t), k - 1))
    else:
        t, p = (0.0, 1.0) if m == 0 else (float(np.copysign(np.inf, m)), 0.0)
    lo, hi = m - q * se, m + q * se
    out.update(sd=sd, se=float(se), t=float(t), p=p, lo=float(lo), hi=float(hi), half_width=float(q * se))
    out["beyond"] = bool(lo > 0 or hi < 0)
    return out
