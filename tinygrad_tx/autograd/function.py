"""``torch.autograd.function``'s names (``from torch.autograd.function import once_differentiable``
under ``tinygrad-tx run``). The engine's own ``ArrayFunction`` and ``Context`` are the core's
(``tinygrad_tx/core/function.py``)."""
from ..core.function import ArrayFunction, Context, op_name   # noqa: F401
from .custom import Function, FunctionCtx, once_differentiable   # noqa: F401
