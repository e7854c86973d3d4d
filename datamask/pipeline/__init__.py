"""The Dask pipeline: inputs and splits (:mod:`.io`), schema checks (:mod:`.schema`),
partition frames (:mod:`.frames`), config dataclasses (:mod:`.config`), clients
(:mod:`.client`), the per-split stage runner (:mod:`.runner`) and the whole-corpus
stages' output contract (:mod:`.corpus`). The stages themselves, and the workflows and
status that list them, are the layer above (``datamask/stages/``).

Imports nothing heavy at package level: Dask comes in only when a stage runs.
"""
