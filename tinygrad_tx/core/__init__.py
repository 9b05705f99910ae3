"""The engine: a Tensor, the op that records a graph node, and the graph run backwards.

It imports nothing from the rest of the package (``tests/test_import_contract.py``); every other
part of tinygrad_tx is a ring that imports it and plugs in only through ``seam.py``. Read in order:

First reading -- the chain rule:

* ``tensor.py``      -- ``Tensor``: an array, ``requires_grad``, ``grad``, and ``_ctx``, the graph
  node of the op that made it (the class computes nothing: its operators are bound from
  ``tinygrad_tx/tensor.py``, its ops from ``tinygrad_tx/ops/``);
* ``function.py``    -- ``ArrayFunction`` and its ``Context``: how one op records a graph node
  (forward and backward written in NumPy; every op of the engine is one);
* ``broadcast.py``   -- ``reduce_grad_to_input``, the one place where broadcasting is undone;
* ``engine.py``      -- ``run_backward``: the graph run backwards, node by node (iterative);
* ``api.py``         -- ``backward`` and ``grad``: argument checks around ``run_backward``;
* ``grad_mode.py``   -- whether ops record the graph (``no_grad``, ``enable_grad``, ...);
* ``dtypes.py``, ``device.py``, ``size.py`` -- dtypes and promotion, the device (cpu), ``Size``.

Second reading -- what keeps it correct and lean, but changes no gradient:

* ``accumulate.py``  -- ``add_term``: the gradients arriving at a tensor summed in one place;
* ``versions.py``    -- version counters and views: refusing to differentiate a value that an
  in-place op has changed since it was saved;
* ``saved_memory.py`` -- bytes held for backward (read by the benchmark);
* ``anomaly.py``     -- ``detect_anomaly``: a NaN or inf from a backward names the op and your line;
* ``seam.py``        -- the slots through which the rings plug in (``tinygrad_tx.compile``'s
  recorder, torch's node names, the legacy constructor, the speed ring's copy).
"""
