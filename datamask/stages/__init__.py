"""The stages, one module each, and what lists them: :data:`~.registry.STAGES` (the
registry), chaining workflows (:mod:`.workflow`) and ``datamask status`` (:mod:`.status`).

The stages that work one split at a time (``select``, ``embed``, ``score``) are in
:mod:`.split`; those whose work spans the corpus (``dedup``, whose groups cross splits and
files, with its corpus-wide passes; ``cluster`` and ``compare``; ``search``) are in
:mod:`.corpus`; their templates (:mod:`.base`) and declarations (:mod:`.declared`) are here.

A layer of its own, above the machinery the stages run on (the selection's plan and outputs:
:mod:`datamask.pipeline`; clients, storage and the executor: :mod:`datamask.runtime`) and the
computations they call (the optimiser, dedup, clustering, the proxy LM, the report), and below
the dataframe API and the command line. The package imports nothing itself: a worker that
unpickles one stage imports that stage's module, not every stage's.
"""
