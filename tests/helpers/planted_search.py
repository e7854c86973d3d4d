"""Stand-ins for the search's two task functions (``select_recipe``, ``train_recipe``) for its
scheduling tests: no selection, no model; each training task marks when it starts and ends
(``OUTPUT/marks/started-NAME-sSEED``), holds ``HOLD`` seconds and returns a record of the
search's shape whose loss is a function of the recipe. A file ``OUTPUT/fail-trial`` makes every
trial's task fail after its hold (the first to end raises while the others wait their turn). Importable by Dask workers."""

from __future__ import annotations

import time
from pathlib import Path

HOLD = 0.3  # seconds a planted model trains


def select(*parts, recipe: dict, cfg, out: str, counts=None) -> dict:
    lam = float(recipe.get("lam", 0.5))
    stats = {"rows": 10, "quality": lam, "diversity": -lam, "coverage": 1 - lam, "near_duplicate_share": 0.0}
    return {"rows": [], "stats": dict(stats, leaks_removed=0, selected_tokens=1000), "recipe": recipe, "seconds": 0.0}


def train(sel: dict, *, name: str, seed: int, cfg, out: str, extra: dict) -> dict:
    marks = Path(out) / "marks"
    marks.mkdir(parents=True, exist_ok=True)
    (marks / f"started-{name}-s{seed}").touch()
    time.sleep(HOLD)
    if (Path(out) / f"fail-{name.split('-')[0]}").exists():
        raise ValueError(f"planted failure in {name}")
    r = sel["recipe"]
    loss = 5.0 + (float(r.get("lam", 0.5)) - 0.3) ** 2 + 0.01 * int(seed) + 0.1 * (r.get("method") == "random")
    (marks / f"finished-{name}-s{seed}").touch()
    return {
        "name": name,
        "seed": int(seed),
        **extra,
        "recipe": r,
        "stats": sel["stats"],
        "evals": {
            "eval": {
                "loss": loss,
                "bits_per_byte": loss / 3,
                "eval_tokens": 100,
                "unigram_loss": 6.0,
                "unigram_margin": 6.0 - loss,
            }
        },
        "tokens": 1000,
        "passes": 1.0,
        "steps": 250,
        "lr": 3e-3,
        "weight_decay": 0.1,
        "selection_tokens": 1000,
        "docs": 10,
        "params": 1,
        "select_seconds": 0.0,
        "train_seconds": HOLD,
        "seconds": HOLD,
        "device": "cpu",
    }


def marked(out, what: str) -> set:
    """``{(name, seed)}`` of the models marked ``what`` (started, finished)."""
    got = set()
    for p in (Path(out) / "marks").glob(f"{what}-*"):
        name, seed = p.name[len(what) + 1 :].rsplit("-s", 1)
        got.add((name, int(seed)))
    return got
