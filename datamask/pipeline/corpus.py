"""The output contract of a whole-corpus stage (cluster, compare), the same as a per-split
stage's, from one place.

:func:`run_corpus_stage` runs a :class:`~datamask.stages.base.CorpusStage`:

1. client, before anything is written: the config checked and its paths resolved
   (:func:`~datamask.pipeline.runner.resolve_io`), the GPU level chosen, the input listed
   (a bad INPUT or device leaves no OUTPUT behind);
2. the output: a directory holding foreign files is refused; one holding a run of another
   config (or another stage) is refused in one line naming ``--overwrite``; ``--overwrite``
   replaces it; the same config of a finished output returns its manifest (nothing runs);
   otherwise what the stage writes is removed (but :attr:`~datamask.stages.base.CorpusStage.keeps`,
   resumable outputs of their own, such as compare's ``dedup/``) and the config record is
   written;
3. the stage's :meth:`~datamask.stages.base.CorpusStage.compute` on the client (a local Dask cluster
   of its own when none is given), then :meth:`~datamask.stages.base.CorpusStage.finish` after that
   cluster is closed;
4. ``manifest.json``, last: config, fingerprint, versions, device, the stage's own keys and
   totals. ``datamask status`` and the next stage read it.

A run that fails in a directory it created, with nothing resumable in it, removes it.
"""

from __future__ import annotations

import json
import time

from ..errors import DataError
from ..runtime.storage import rmtree
from .io import discover, write_json_atomic
from .manifest import public_config, versions
from .output import MANIFEST, Output, n_splits
from .runner import resolve_io, share_storage_options, stage_level

__all__ = ["run_corpus_stage", "finished_manifest"]


def finished_manifest(out: Output, stage, cfg, fingerprint) -> dict | None:
    """The manifest of a finished run of ``cfg`` in ``out`` (None when there is none to reuse);
    refuses a directory that holds something else (see the module doc)."""
    if not out.check_owner(stage.name) or cfg.overwrite:
        return None
    out.check_config(cfg, fingerprint, stage=stage.name)
    if not (out.root / MANIFEST).exists():
        return None  # a run that stopped: computed again
    manifest = json.loads((out.root / MANIFEST).read_text())
    manifest["totals"].update(computed_this_run=0, resumed=n_splits(manifest["totals"]))
    return manifest


def run_corpus_stage(stage, cfg, client=None) -> dict:
    """Run the whole-corpus ``stage`` on ``cfg``; returns its manifest (see the module doc)."""
    from ..runtime.client import close_client, get_client

    t0 = time.perf_counter()
    cfg = resolve_io(cfg, stage.name)
    level = stage_level(cfg, stage.needs)  # before the output exists: a device error leaves nothing behind
    discover(cfg.input)  # so does a bad INPUT
    fingerprint = cfg.fingerprint(level.device)
    out = Output(cfg.output, own=stage.writes)
    out.check_writable()
    done = finished_manifest(out, stage, cfg, fingerprint)
    if done is not None:
        return done
    keep = () if cfg.overwrite else stage.keeps
    out.prepare(
        cfg, fingerprint, level.device, stage=stage.name, remove=[n for n in out.own if n not in keep], dirs=[out.state]
    )
    own = client is None
    try:
        try:
            if own:
                client = get_client(cfg, level.device, level=level)
            share_storage_options(client)
            result = stage.compute(cfg, out.root, client, level)
        finally:
            if own and client is not None:
                close_client(client)
        result = stage.finish(cfg, out.root, result)
    except ValueError as e:  # a check of the input's content (k-means, the methods)
        _remove_if_new(out, stage.keeps)
        raise DataError(str(e)) from None
    except BaseException:
        _remove_if_new(out, stage.keeps)
        raise
    totals = result.setdefault("totals", {})
    totals.setdefault("computed_this_run", totals.get("splits", 0))
    totals.setdefault("resumed", 0)
    manifest = {
        "status": "complete",
        "stage": stage.name,
        "fingerprint": fingerprint,
        "config": public_config(cfg),
        "device": level.device,
        "gpu": level.to_dict(),
        "seed": getattr(cfg, "seed", None),
        "versions": versions(),
        **result,
        "wall_seconds": round(time.perf_counter() - t0, 3),
    }
    write_json_atomic(manifest, out.root / MANIFEST)
    return manifest


def _remove_if_new(out: Output, keeps):
    """A directory this run created goes, unless a resumable output of its own is in it."""
    if out.created and out.root.exists() and not any((out.root / k).exists() for k in keeps):
        rmtree(out.root)
