"""The selection's plan and its outputs: inputs and splits (:mod:`.io`), schema checks
(:mod:`.schema`), partition frames (:mod:`.frames`), config dataclasses (:mod:`.config`), the
split job (:mod:`.split_job`), token budgets (:mod:`.tokens`), select's per-split function
(:mod:`.select_split`), the per-split stage runner (:mod:`.runner`), the output directory and
its manifest, and the whole-corpus stages' output contract (:mod:`.corpus`). Where and how the
work runs (clients, GPU levels, object storage, the executor) is the layer below
(``datamask/runtime/``); the stages themselves, and the workflows and status that list them,
are the layer above (``datamask/stages/``).

Imports nothing heavy at package level: Dask comes in only when a stage runs.
"""
