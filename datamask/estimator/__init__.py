"""The ``DataMask`` estimator: the scikit-learn face of the optimiser in :mod:`datamask.core`.

``estimator`` (``DataMask``), its constructor, the ``solver_params`` keys and the named recipes
(``params``: ``DataMaskParams``, ``SOLVER_PARAMS``, ``PRESETS``, read without scikit-learn), the
one table of parameter checks shared with every config (``constraints``) and ``evaluate``, which
scores a selection with ``DataMask()``'s defaults (``evaluate``). A layer of its own, just above
``core``: the methods, the pipeline and everything above may import it; core may not. The package
imports nothing itself (``datamask.DataMask`` imports scikit-learn on first use).
"""
