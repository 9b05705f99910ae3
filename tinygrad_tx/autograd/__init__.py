"""``tinygrad_tx.autograd``: PyTorch's ``torch.autograd``, around the engine in ``tinygrad_tx/core/``.

The engine itself (``ArrayFunction``, ``run_backward``, grad mode, versions) is the core; its
reading order is in ``tinygrad_tx/core/__init__.py``. Here, built on it:

* ``dispatch.py``    -- gradients of gradients: with ``create_graph=True`` the same NumPy backward
  runs on Tensors (NumPy's protocols send each call to the Tensor op of the same meaning);
* ``custom.py``      -- ``Function``: PyTorch's custom Function (forward and backward on Tensors);
* ``function.py``    -- ``torch.autograd.function``'s names (``Function``, ``once_differentiable``);
* ``functional.py``  -- ``jacobian``, ``hessian``, ``vjp``, ``jvp``, ``hvp``, ``vhp``;
* ``gradcheck.py``   -- ``gradcheck`` and ``gradgradcheck`` (finite differences), ``GradcheckError``.

``grad`` and ``backward`` (argument checks around ``run_backward``) are the core's ``api.py``;
``detect_anomaly`` its ``anomaly.py``.
"""
from __future__ import annotations

from ..core.grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled,
                              no_grad, set_grad_enabled, _set_mode, _state)
from ..core.saved_memory import SavedMemory, _nbytes
from ..core.versions import _check_saved, _link_view, _root, _saved_versions, _tensor_roots, unshare_saved
from ..core.broadcast import accumulation_dtype, reduce_grad_to_input, sum_rows
from ..core.function import ArrayFunction, Context, _creation_order, _freed_error
from ..core.engine import _backward_observers, run_backward
from ..core.api import backward, grad
from ..core.anomaly import detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly
from . import dispatch
from . import custom as _custom
from .custom import Function, FunctionCtx, once_differentiable
from . import function
from . import functional
from . import gradcheck as _gradcheck
from .gradcheck import GradcheckError, gradcheck, gradgradcheck


def __getattr__(name):
    """``autograd.Variable`` (torch's pre-0.4 wrapper; ``legacy.py``), looked up on first use:
    legacy.py imports tensor.py, which imports this package."""
    if name == "Variable":
        from ..legacy import Variable
        return Variable
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
