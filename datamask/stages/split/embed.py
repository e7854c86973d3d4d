"""``datamask embed``: an L2-normalised ``embedding`` column from the text, split by split.

Runs on :func:`~datamask.pipeline.runner.run_stage`, like every stage. Each split's usable
texts get an embedding (``fixed_size_list<float32|float16>[d]``). The sentence-transformers
model is loaded once per worker process (the :class:`~datamask.features.Embedder` cache),
never from a hub; an ONNX export or a static model (``--backend``, ``--model static``) is
built here on the client, once, into the cache directory, before any split runs. Texts
longer than the model's window are truncated unless ``chunk``. Rows with null/empty text are
dropped; their count is ``skipped_texts`` in each split's record and the manifest totals.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace

from ...errors import ConfigError, DataError
from ...pipeline.frames import pandas_table, text_frame
from ...runtime.gpu import CPU
from ...runtime.gpu_worker import DeviceWork
from ...runtime.progress import row_progress
from ..base import split_runs
from ..declared import Embed

__all__ = ["EmbedStage", "run_embed", "embed_split", "make_embedder"]


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _workers_per_host(client) -> dict:
    from distributed.comm import get_address_host

    counts: dict = {}
    for addr in client.scheduler_info().get("workers", {}):
        h = get_address_host(addr)
        counts[h] = counts.get(h, 0) + 1
    return counts


def embed_split(pdf, where, *, cfg, embedder, level=CPU, progress=None):
    """One split's embeddings (rows with null/empty text dropped, counted in
    ``attrs["n_skipped"]``) and the device record: the per-split function of ``datamask
    embed``, shared with :func:`datamask.dask.embed`; ``progress(done)`` after each block of
    texts (:func:`~datamask.runtime.progress.row_progress`)."""
    from ...features.embed import embed_frame

    try:  # the texts are read and decoded outside: on a GPU worker, while another split embeds
        with DeviceWork(level, where, cfg.split_size, flag="--batch-size or --split-size") as work:
            out = embed_frame(pdf, cfg.text_column, embedder, column=cfg.embedding_column, progress=progress)
    except ValueError as e:
        raise DataError(f"{where}: {e}") from None
    return out, work.record()


def make_embedder(cfg, device):
    from ...features.embed import Embedder
    from ...features.model_cache import cache_root

    try:
        emb = Embedder(
            model=cfg.model,
            device="cuda" if device == "gpu" else "cpu",
            batch_size=None if cfg.batch_size is None else int(cfg.batch_size),
            max_length=cfg.max_length,
            prefix=cfg.prefix,
            chunk=bool(cfg.chunk),
            dtype=cfg.dtype,
            compute=cfg.compute,
            backend=cfg.backend,
            # resolved here: a relative --cache-dir or a $DATAMASK_CACHE_DIR set on the client
            # names the folder the client prepares, not one in each worker's own directory
            cache_dir=str(cache_root(cfg.cache_dir).absolute()),
        )
        if emb.resolved_backend() != "torch":  # export or distil once, here, before any worker starts
            emb.prepare(log=None if cfg.quiet else lambda line: print(line, file=sys.stderr, flush=True))
        dim = emb.dim  # from the model's config files; loads the model here only when they do not say
    except ValueError as e:
        raise ConfigError(str(e)) from None
    return emb, dim


class EmbedStage(Embed):  # name, config, help: .declared
    needs = ("torch",)  # the model runs on CUDA with torch
    progress_rows = True  # a bar over rows within the splits, a block of texts at a time
    summed = ("skipped_texts",)

    per_host: dict = {}  # workers per host (setup): the CPU threads each worker's model takes

    def prepare(self, cfg):
        super().prepare(cfg)
        self.embedder, self.dim = make_embedder(self.cfg, self.plan_.device)  # built once, on the client

    def setup(self, client, pending, out):
        self.per_host = _workers_per_host(client)

    def process(self, table, split):
        embedder = self.embedder
        if embedder.num_threads is None and embedder.resolved_device() == "cpu":
            # cores // workers on this host, so worker processes do not oversubscribe the CPU
            try:
                from distributed import get_worker
                from distributed.comm import get_address_host

                k = self.per_host.get(get_address_host(get_worker().address), 1)
            except (ImportError, ValueError):
                k = 1
            embedder = replace(embedder, num_threads=max(1, _cores() // max(k, 1)))
        pdf = text_frame(table, split, self.cfg.text_column)
        out, device = embed_split(
            pdf,
            split.where(),
            cfg=self.cfg,
            embedder=embedder,
            level=self.plan_.level,
            progress=row_progress(split.name),
        )
        return pandas_table(out), dict(skipped_texts=int(out.attrs.get("n_skipped", 0)), **device)

    def extra(self, out):
        cfg, emb = self.cfg, self.embedder
        return {
            "embed": {
                "model": emb.path,
                "dim": self.dim,
                "dtype": cfg.dtype,
                "max_length": cfg.max_length,
                "chunk": bool(cfg.chunk),
                "compute": cfg.compute,
                "batch_size": cfg.batch_size or "auto",
                "tokenize_threads": emb.tokenize_threads,
                "backend": emb.resolved_backend(),
            }
        }

    def summary(self, manifest, out):
        t = manifest["totals"]
        return (
            f"datamask: embedded {t['rows_out']:,} of {t['rows_in']:,} rows ({t['skipped_texts']:,} empty texts, or texts "
            f"with no token the model knows, skipped) {split_runs(t, out)}"
        )


# ``datamask embed``: ``cfg`` is an :class:`~datamask.pipeline.config.EmbedConfig`; returns the manifest.
run_embed = EmbedStage().run
