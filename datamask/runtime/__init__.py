"""Where and how the work runs, knowing nothing of what is selected: Dask clients
(:mod:`.client`), the one loop that runs a batch of tasks (:mod:`.executor`), GPU levels and
a split's device work on a GPU worker (:mod:`.gpu`, :mod:`.gpu_worker`), paths and object
storage (:mod:`.storage`; its worker plugin, :mod:`.storage_plugin`), files written whole or
not at all and Parquet/JSONL read on any of them (:mod:`.files`), and the progress bars
(:mod:`.progress`). The layer below ``datamask/pipeline/`` (the selection's plan), above
``core`` … ``dedup``, which run inside one task and need none of it.

Imports nothing heavy at package level: Dask comes in only when a client or a task needs it.
"""
