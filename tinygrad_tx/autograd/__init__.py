"""``tinygrad_tx.autograd``: the reverse-mode engine, in small files read in this order.

* ``grad_mode.py``   -- whether ops record the graph (``no_grad``, ``enable_grad``, ...);
* ``function.py``    -- ``ArrayFunction`` and its ``Context``: how one op records a graph node
  (forward and backward written in NumPy; every op of the engine is one);
* ``broadcast.py``   -- ``reduce_grad_to_input``, the one place where broadcasting is undone;
* ``accumulate.py``  -- ``add_term``, the one place where the gradients arriving at a tensor are
  summed (a slice's gradient added into place; skip it on a first reading);
* ``engine.py``      -- ``run_backward``: the graph run backwards, node by node (iterative);
* ``versions.py``    -- version counters and views: refusing to differentiate a value that an
  in-place op has changed since it was saved (skip it on a first reading);
* ``saved_memory.py`` -- bytes held for backward (read by the benchmark);
* ``dispatch.py``    -- gradients of gradients: with ``create_graph=True`` the same NumPy backward
  runs on Tensors (NumPy's protocols send each call to the Tensor op of the same meaning);
* ``anomaly.py``     -- ``detect_anomaly``: a NaN or inf from a backward names the op and your line.

PyTorch's user-level autograd, built on the engine:

* ``api.py``         -- ``grad`` and ``backward`` (argument checks around ``run_backward``);

* ``custom.py``      -- ``Function``: PyTorch's custom Function (forward and backward on Tensors);
* ``functional.py``  -- ``jacobian``, ``hessian``, ``vjp``, ``jvp``, ``hvp``, ``vhp``;
* ``gradcheck.py``   -- ``gradcheck`` and ``gradgradcheck`` (finite differences), ``GradcheckError``.
"""
from __future__ import annotations

from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled,
                        no_grad, set_grad_enabled, _set_mode, _state)
from .saved_memory import SavedMemory, _nbytes
from .versions import _check_saved, _link_view, _root, _saved_versions, _tensor_roots, unshare_saved
from .broadcast import accumulation_dtype, reduce_grad_to_input, sum_rows
from .function import ArrayFunction, Context, _creation_order, _freed_error
from .engine import _backward_observers, run_backward
from .api import backward, grad
from .anomaly import detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly
from . import api as _api, dispatch, engine as _engine, function as _function, versions as _versions
from . import custom as _custom
from .custom import Function, FunctionCtx, once_differentiable
from . import functional
from . import gradcheck as _gradcheck
from .gradcheck import GradcheckError, gradcheck, gradgradcheck

# ``torch.autograd.function`` names (``from torch.autograd.function import once_differentiable``
# under ``tinygrad-tx run``): that module is function.py here, home of the engine's ArrayFunction.
_function.Function, _function.FunctionCtx, _function.once_differentiable = Function, FunctionCtx, once_differentiable




def __getattr__(name):
    """``autograd.Variable`` (torch's pre-0.4 wrapper; ``legacy.py``), looked up on first use:
    legacy.py imports tensor.py, which imports this package."""
    if name == "Variable":
        from ..legacy import Variable
        return Variable
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _bind_tensor(tensor_cls, view_cls) -> None:
    """Called once by tensor.py: the engine's modules refer to Tensor, which imports them."""
    for m in (_engine, _function, _versions, dispatch, _api, _custom, functional, _gradcheck):
        m.Tensor, m._View = tensor_cls, view_cls
