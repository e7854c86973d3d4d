"""Regressors from a recipe's features to its proxy loss, and their cross-validated Spearman.

Three models, each a scikit-learn estimator:

``lightgbm``   gradient-boosted trees (LightGBM), what QuaDMix and RegMix fit; small leaves and
               a slow rate, because a search has tens of trials, not thousands;
``gp``         a Gaussian process (Matérn 5/2 with one length scale per feature, plus a white
               noise term for the seed's share of the loss): smooth, and reliable with few trials;
``quadratic``  ridge regression on every feature, square and product (the ridge strength
               chosen by generalised cross-validation).

:func:`cross_validated` scores one on the trials: repeated K-fold (5 folds or leave-one-out
when fewer trials, 3 repeats, seeded), Spearman between the held-out predictions and the
observed losses, which is what the choice needs (a ranking of recipes). ``auto`` keeps the
model with the highest score; every score is reported.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["MODELS", "available", "make_model", "cross_validated", "fit_best"]

MODELS = ("lightgbm", "gp", "quadratic")


def available() -> list:
    """The models that can run here (LightGBM needs the ``search`` extra)."""
    try:
        import lightgbm  # noqa: F401
    except ImportError:
        return [m for m in MODELS if m != "lightgbm"]
    return list(MODELS)


def make_model(name: str, n: int, d: int, seed: int = 0):
    """A fresh, unfitted model ``name`` for ``n`` trials of ``d`` features."""
    if name == "lightgbm":
        from lightgbm import LGBMRegressor

        return LGBMRegressor(
            n_estimators=300,
            learning_rate=0.05,
            num_leaves=8,
            min_child_samples=max(2, n // 10),
            subsample=0.8,
            subsample_freq=1,
            colsample_bytree=0.8,
            reg_lambda=1.0,
            random_state=int(seed),
            n_jobs=1,
            deterministic=True,
            force_col_wise=True,
            verbose=-1,
        )
    if name == "gp":
        from sklearn.gaussian_process import GaussianProcessRegressor
        from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

        kernel = ConstantKernel(1.0, (1e-3, 1e3)) * Matern(np.ones(max(d, 1)), (1e-2, 1e2), nu=2.5) + WhiteKernel(
            0.1, (1e-6, 1e1)
        )
        return GaussianProcessRegressor(kernel, normalize_y=True, n_restarts_optimizer=1, random_state=int(seed))
    if name == "quadratic":
        from sklearn.linear_model import RidgeCV
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import PolynomialFeatures, StandardScaler

        return make_pipeline(
            PolynomialFeatures(2, include_bias=False), StandardScaler(), RidgeCV(alphas=np.logspace(-3, 3, 13))
        )
    raise ValueError(f"unknown regressor {name!r}; choose from {', '.join(MODELS)}")


def _fit(model, X, y):
    with warnings.catch_warnings():  # a GP at a length-scale bound, LightGBM on tiny data: expected here
        warnings.simplefilter("ignore")
        return model.fit(X, y)


def _spearman(a, b) -> float:
    from scipy.stats import spearmanr

    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0
    return float(spearmanr(a, b).statistic)


def cross_validated(name: str, X, y, seed: int = 0, repeats: int = 3) -> dict:
    """``{"spearman", "spearman_sd", "folds", "repeats"}``: repeated K-fold Spearman of ``name``."""
    from sklearn.model_selection import KFold

    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    n = X.shape[0]
    folds = min(5, n)
    scores = []
    for r in range(repeats):
        pred = np.empty(n)
        for tr, te in KFold(folds, shuffle=True, random_state=int(seed) + r).split(X):
            m = _fit(make_model(name, len(tr), X.shape[1], seed), X[tr], y[tr])
            pred[te] = m.predict(X[te])
        scores.append(_spearman(pred, y))
    return {
        "spearman": float(np.mean(scores)),
        "spearman_sd": float(np.std(scores)),
        "folds": folds,
        "repeats": repeats,
    }


def fit_best(kind: str, X, y, seed: int = 0, repeats: int = 3) -> tuple:
    """``(name, fitted model, {name: cross-validation})``: ``kind``, or for ``auto`` the model
    of the highest cross-validated Spearman among those :func:`available` here."""
    from ...errors import ConfigError

    have = available()
    if kind != "auto" and kind not in have:
        raise ConfigError(
            f"regressor {kind} is not installed here; pip install 'datamask[search]' or use --regressor gp"
        )
    names = have if kind == "auto" else [kind]
    cv = {m: cross_validated(m, X, y, seed, repeats) for m in names}
    best = max(names, key=lambda m: (cv[m]["spearman"], -MODELS.index(m)))
    model = _fit(make_model(best, len(y), np.asarray(X).shape[1], seed), np.asarray(X, float), np.asarray(y, float))
    return best, model, cv
