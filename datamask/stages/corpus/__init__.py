"""The stages whose work spans the whole corpus: ``dedup`` (its groups cross splits and files:
the corpus-wide passes ``dedup_text``, ``dedup_cc``, ``dedup_semantic``, ``dedup_groups`` over
the exchange of ``dedup_exchange``; then each split's rows are dropped or marked), ``cluster``
and ``compare`` (``analysis``; their runs over the corpus, ``cluster_run`` and ``compare_run``)
and ``search``. Imports nothing itself (see :mod:`datamask.stages`)."""
