"""The choice: predict the loss of many sampled recipes and average the best, as RegMix and QuaDMix do.

:func:`choose` draws ``candidates`` points of the space (scrambled Sobol, another seed than
the trials'), predicts each one's loss with the fitted regressor and averages the ``top``
best into one recipe (:meth:`~.space.Space.average`: the most frequent combination of choices
among them, then each number at its mean). Averaging many good points rather than taking the
single best one keeps the choice away from a lucky corner of the regressor. :func:`curves`
is what the report draws: the predicted loss along each parameter with the others held at
the chosen recipe.
"""

from __future__ import annotations

import numpy as np

from .space import Choice, Range

__all__ = ["choose", "curves"]

_CHUNK = 20_000


def _predict(model, X) -> np.ndarray:
    return np.concatenate([model.predict(X[i : i + _CHUNK]) for i in range(0, X.shape[0], _CHUNK)])


def choose(space, model, candidates: int, top: int, seed: int) -> dict:
    """``{"recipe", "predicted", "predicted_best", "candidates", "top"}`` of the fitted ``model``."""
    U = space.design(int(candidates), int(seed) + 1)
    pred = _predict(model, space.features(U))
    best = np.argsort(pred, kind="stable")[: int(top)]
    recipe = space.average(U[best])
    at = float(model.predict(space.recipe_features(recipe)[None, :])[0])
    return {
        "recipe": recipe,
        "predicted": at,
        "predicted_best": [float(pred[i]) for i in best],
        "candidates": int(candidates),
        "top": int(top),
    }


def curves(space, model, recipe: dict, points: int = 41) -> dict:
    """``{name: (x values, predicted loss)}`` along each searched range and choice, the other
    parameters at ``recipe`` (a range taken per domain moves every domain's value together)."""
    base = space.recipe_features(recipe)
    out, i = {}, 0
    for p in space.params:
        w = len(p.features_of(recipe[p.name])) if p.width else 0
        if isinstance(p, Range) and p.width:
            grid = np.linspace(0.0, 1.0, points)
            X = np.repeat(base[None, :], points, axis=0)
            X[:, i : i + w] = grid[:, None]
            out[p.name] = (p.values(grid[:, None])[:, 0], model.predict(X))
        elif isinstance(p, Choice) and p.width:
            X = np.repeat(base[None, :], len(p.options), axis=0)
            X[:, i : i + w] = np.eye(len(p.options))
            out[p.name] = (list(p.options), model.predict(X))
        i += w
    return out
