"""``search``: ``datamask search`` from Python, on the user's Dask client.

Unlike the other functions of :mod:`datamask.dask` it is not lazy: a search trains
``trials x seeds`` proxy models (and the verification's) as Dask tasks, so the call runs them,
writes OUTPUT like the command and returns its manifest (``search.json``'s keys, ``totals``).
"""

from __future__ import annotations

from ..analysis.search import SearchConfig
from .params import takes_config

__all__ = ["search"]


@takes_config(SearchConfig, exclude=("eval",))
def search(path, output, eval, client=None, split_size=1_000_000, overwrite=False, quiet=True, cfg=None) -> dict:
    """Choose a recipe for the corpus at ``path`` with proxy LMs judged on ``eval`` (docs/search.md).

    ``path`` is what :func:`datamask.dask.read` takes (its splits are the CLI's), ``eval`` one
    evaluation set or a list, ``output`` the directory the command would write. ``client``:
    the cluster that trains the proxies (default: the current default client, else a local
    cluster of its own). Returns the manifest; the chosen recipe is ``["chosen"]``.
    """
    from ..stages.corpus.search import run_search

    if client is None:
        try:
            from distributed import default_client

            client = default_client()
        except ValueError:  # no client yet: the stage starts a local cluster of its own
            client = None
    evals = [eval] if isinstance(eval, str) or not hasattr(eval, "__iter__") else list(eval)
    changes = dict(input=str(path), output=str(output), eval=[str(e) for e in evals])
    changes.update(split_size=int(split_size), overwrite=bool(overwrite), quiet=bool(quiet))
    return run_search(cfg.replace(**changes), client=client)
