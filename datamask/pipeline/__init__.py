"""The Dask pipeline: inputs and splits (:mod:`.io`), schema checks (:mod:`.schema`),
partition frames (:mod:`.frames`), config dataclasses (:mod:`.config`), clients
(:mod:`.client`), the per-split stage runner (:mod:`.runner`), the stages
(:mod:`.stages`) and workflows (:mod:`.workflow`).

Imports nothing heavy at package level: ``import datamask.pipeline.stages.select`` brings
in Dask only when a stage runs.
"""
