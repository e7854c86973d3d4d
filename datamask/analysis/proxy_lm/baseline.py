"""What a proxy learned beyond token frequencies: a smoothed unigram baseline of its own training
tokens, and the warning a run gives when its proxies did not get past it.

A proxy trained for a few dozen optimiser steps scores about what counting tokens scores: a
unigram model of the tokens it trained on (add-1/2 smoothing, nothing learned), measured on the
same scored tokens of the same evaluation set under the same tokenizer. Its **unigram margin**,
the unigram model's loss minus the proxy's (nats/token), is what the proxy learned beyond token
frequencies; a ranking of selections by proxies whose margin is small ranks their token
frequencies, not their content. Measured on Debian package descriptions (issue 48): at 49 steps
the tiny proxy's margin was 0.16 nats/token, at 250 steps 0.93.
"""

from __future__ import annotations

import numpy as np

__all__ = ["unigram_losses", "UNIGRAM_PRIOR", "MIN_STEPS", "MIN_MARGIN", "learned_warning"]

#: the add-k smoothing of the unigram baseline (add-1/2: Jeffreys' prior on each token's share)
UNIGRAM_PRIOR = 0.5
#: below these a run says its proxies measured token frequencies, not content
MIN_STEPS = 250
MIN_MARGIN = 0.3


def unigram_losses(counts, ev, prior: float = UNIGRAM_PRIOR) -> dict:
    """``{domain: (nats, tokens)}`` (and ``"all"``) of a smoothed unigram model on the scored
    tokens of ``ev``: each token's probability ``(count + prior) / (N + prior x V)`` from
    ``counts`` (the tokens a model trained on, a length-``V`` array, ``N`` their sum; ``ev``: an
    :class:`~.train.EvalData`), nothing
    learned but their frequencies. A model's loss minus this is what it learned beyond token
    frequencies (its unigram margin, in nats/token)."""
    counts = np.asarray(counts, dtype=np.float64)
    logp = np.log((counts + prior) / (counts.sum() + prior * counts.shape[0]))
    y = ev.windows[:, 1:]
    scored = y >= 0
    per_doc = np.zeros(len(ev.doc_tokens), dtype=np.float64)
    rows = np.broadcast_to(ev.doc[:, None], y.shape)
    np.add.at(per_doc, rows[scored], -logp[y[scored]])
    out = {}
    for dom in ["all", *sorted(set(ev.doc_domain) - {"all"})]:
        m = np.ones(len(per_doc), dtype=bool) if dom == "all" else ev.doc_domain == dom
        out[dom] = (float(per_doc[m].sum()), int(ev.doc_tokens[m].sum()))
    return out


def learned_warning(steps, margins: dict, what: str = "models") -> str | None:
    """The warning when some model trained fewer than :data:`MIN_STEPS` optimiser steps or beat its
    unigram baseline by less than :data:`MIN_MARGIN` nats/token on some evaluation set; None when
    none did. ``steps``: every model's; ``margins``: ``{set: every model's margin}``."""
    steps = np.asarray(list(steps), dtype=np.int64)
    parts = []
    few = int((steps < MIN_STEPS).sum())
    if few:
        parts.append(
            f"{few} of {len(steps)} {what} trained fewer than {MIN_STEPS} optimiser steps (fewest {steps.min()})"
        )
    for name, m in margins.items():
        m = np.asarray([x for x in m if x is not None and np.isfinite(x)], dtype=np.float64)
        low = int((m < MIN_MARGIN).sum())
        if low:
            parts.append(
                f"on {name} {low} of {len(m)} beat a unigram model of their own training tokens by less than "
                f"{MIN_MARGIN} nats/token (least {m.min():+.3f})"
            )
    if not parts:
        return None
    return (
        "these proxies measured token frequencies, not content: "
        + "; ".join(parts)
        + f"; train each longer (at least {MIN_STEPS} steps: --proxy-tokens) before reading their ranking"
    )
