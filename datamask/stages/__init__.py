"""The stages, one module each, and what lists them: :data:`~.registry.STAGES` (the
registry), chaining workflows (:mod:`.workflow`) and ``datamask status`` (:mod:`.status`).

A layer of its own, above the machinery the stages run on (inputs, the runner, clients,
output directories: :mod:`datamask.pipeline`) and the computations they call (the optimiser,
dedup, clustering, the proxy LM, the report), and below the dataframe API and the command
line. The package imports nothing itself: a worker that unpickles one stage imports that
stage's module, not every stage's.
"""
