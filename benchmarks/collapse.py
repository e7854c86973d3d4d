"""Reproduce the H200 pg collapse on CPU: the cupy branch of pg, run on numpy arrays.

Run:  python benchmarks/collapse.py [--zeros keep|redraw] [--device fake-cupy|numpy] [--steps 6400]

``--device fake-cupy`` runs every cupy branch of the datamask on ``PYTHONPATH`` on numpy
arrays through ``tests/helpers/fake_cupy.py``, whose ``random.default_rng`` draws float32 uniforms
with cupy's law (exactly 0.0 once in 2^25 draws); ``--zeros redraw`` replaces those zeros,
all else equal. The H200 run's settings: ``make_corpus(1M, d=384, seed 0)``, ratio 0.1,
lam 0.5, pairwise, ``batch_max=None`` (25,000-row batches), lr 3, seed 0. Every
``--eval`` steps it prints the top-S objective in % of relaxed's gain over random, the
logits' range and the largest logit change of one step since the last point (lr times the
largest gradient entry). To run the code before issue 10's fix, put a checkout of commit
aac3afb first on ``PYTHONPATH`` (its modules are ``datamask.pg``; today's are
``datamask.core.pg``). Results: ``benchmarks/results/collapse.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

sys.path.append(os.path.join(os.path.dirname(__file__), ".."))  # last: a checkout on PYTHONPATH wins

from tests.helpers import fake_cupy  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--steps", type=int, default=6400)
    ap.add_argument("--eval", type=int, default=200)
    ap.add_argument("--device", choices=["fake-cupy", "numpy"], default="fake-cupy")
    ap.add_argument("--zeros", choices=["keep", "redraw"], default="keep")
    ap.add_argument("--log", default=None, help="also write the points as JSON lines here")
    args = ap.parse_args()
    fc = fake_cupy.module()
    if args.device == "fake-cupy":
        sys.modules["cupy"] = fc
    if args.zeros == "redraw":
        inner = fake_cupy._Generator.random

        def random(self, size=None, dtype=np.float64, out=None):
            u = inner(self, size, dtype)
            a = np.asarray(u)
            while (a == 0).any():
                z = a == 0
                a[z] = np.asarray(inner(self, int(z.sum()), dtype))
            return u

        fake_cupy._Generator.random = random
    import datamask
    from datamask import DataMask, evaluate

    if os.path.isdir(os.path.join(os.path.dirname(datamask.__file__), "core")):
        import datamask.core.pg as pg
        from datamask.core.synthetic import make_corpus
    else:  # the layout before the fix
        import datamask.pg as pg
        from datamask.core.synthetic import make_corpus

    c = make_corpus(n_rows=args.n, dim=384, seed=0)
    E, q = c["embedding"], c["quality"]
    rows = np.random.default_rng(0).permutation(args.n)[: round(0.1 * args.n)]
    if args.device == "fake-cupy":
        E, q, rows = fc.asarray(E), fc.asarray(q), fc.asarray(rows)
    rand = evaluate(E, q, rows)["objective"]
    gain = DataMask(method="relaxed").fit(E, q).objective_["objective"] - rand
    jumps, held = [], {}
    gradient = pg.policy_gradient

    def spy(*a, **k):
        g = gradient(*a, **k)
        jumps.append(3.0 * float(abs(np.asarray(g)).max()))  # lr 3
        return g

    pg.policy_gradient = spy
    evaluate_point = pg._BestMask.evaluate

    def keep_logits(self, step, L, bar):
        held["L"] = L
        return evaluate_point(self, step, L, bar)

    pg._BestMask.evaluate = keep_logits
    out = open(args.log, "w") if args.log else None  # noqa: SIM115 (written through the run)

    def callback(est, rec):
        L = np.asarray(held["L"])
        point = dict(
            step=rec["step"],
            pct=round(100 * (rec["objective"] - rand) / gain, 3),
            logit_min=round(float(L.min()), 2),
            logit_max=round(float(L.max()), 2),
            largest_step_change=round(max(jumps), 3) if jumps else 0.0,
        )
        jumps.clear()
        print(point, flush=True)
        if out:
            out.write(json.dumps(point) + "\n")
            out.flush()

    DataMask(
        steps=args.steps,
        eval_every=args.eval,
        patience=None,
        batch_max=None,
        seed=0,
        init="quality",
        logit_range=(0.0, 2.0),
        callback=callback,
    ).fit(E, q)


if __name__ == "__main__":
    main()
