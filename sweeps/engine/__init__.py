"""The engine below the studies: what an analysis is (``base``: ``Analysis``, ``Inputs``,
``Variable``, the ``Engine`` protocol), what an axis is (``axis``: ``Axis``, ``key_axis``, the
grid's own axes), the per-step terms every analysis shares (``steps``,
``split``, ``parallel_terms``, ``drafts``) and the core analyses of every sweep (``model``,
``decode``, ``prefill``). Imports no study and no registry: the studies build on it, and the
grid (``sweeps.grid``) evaluates their analyses through it.
"""
