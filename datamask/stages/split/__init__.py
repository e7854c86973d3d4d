"""The stages that work one split at a time, each split on its own (``SplitStage``): ``select``,
``embed``, ``score``. Imports nothing itself (see :mod:`datamask.stages`)."""
