"""tinygrad_tx: a reverse-mode autograd engine on NumPy, and a Transformer built on it.

Every op's forward and hand-written backward live side by side in
``tinygrad_tx/ops/`` (elementwise, reductions, movement, matmul); the engine
that runs them backwards is the package ``tinygrad_tx/autograd/``.
"""
from . import allocator
from .core import dtypes
from .autograd import (SavedMemory, enable_grad, inference_mode, is_grad_enabled,
                       is_inference_mode_enabled, no_grad, set_grad_enabled)
from . import tensor as _tensor   # before ``.device`` below rebinds the name to the device class
from .core.device import device
from .core.dtypes import (bool, complex64, complex128, double, dtype, float, float16, float32, float64, get_default_dtype,
                     half, int, int8, int16, int32, int64, long, set_default_dtype, short, uint8)
from .ops.movement import IndexOutOfRange
from .gradcheck import GradcheckError, gradcheck
from .parallel import get_num_threads, set_num_threads
from .core.size import Size
from .tensor import Tensor, cat, matmul, maximum, minimum, stack, where

from ._bind import bind as _bind

globals().update(_bind())   # every op module's FUNCTIONS (tinygrad_tx.sin, ...); methods onto Tensor

# torch's sub-namespaces: tinygrad_tx.nn, .nn.functional, .optim, .utils.data, .linalg
from . import accelerator, backends, cuda, distributions, functional, linalg, nn, optim, random, utils  # noqa: E402
from math import e, inf, nan, pi  # noqa: E402  (torch.e, torch.inf, torch.nan, torch.pi: Python floats, as torch's)
from .serialization import load, save  # noqa: E402  (torch.save / torch.load, no pickle danger)
from .layout import (channels_last, channels_last_3d, contiguous_format, memory_format,  # noqa: E402
                     preserve_format)
from .core.anomaly import is_anomaly_check_nan_enabled, is_anomaly_enabled  # noqa: E402
from .compile import compile  # noqa: E402,A004  (torch.compile: record once, replay; compile/)

__version__ = "0.1.0"



def is_tensor(obj) -> bool:
    """True for a Tensor (or Parameter), as ``torch.is_tensor``."""
    return isinstance(obj, Tensor)


def numel(input) -> int:
    return input.numel()


def is_floating_point(input) -> bool:
    if not isinstance(input, Tensor):
        raise TypeError(f"is_floating_point(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return input.is_floating_point()


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """``torch.set_anomaly_enabled``: turn anomaly detection on or off (``autograd/anomaly.py``)."""
    from .core.anomaly import set_detect_anomaly
    set_detect_anomaly(enabled, check_nan)


__all__ = [
    "device", "dtype", "dtypes", "bool", "complex64", "complex128", "double", "float", "float16", "float32",
    "float64", "half", "int", "int8", "int16", "int32", "int64", "long", "short", "uint8", "get_default_dtype",
    "set_default_dtype", "inference_mode", "is_inference_mode_enabled", "is_tensor", "numel", "is_floating_point",
    "GradcheckError", "SavedMemory", "gradcheck", "Tensor", "IndexOutOfRange", "arange", "cat", "enable_grad", "full",
    "get_num_threads", "is_grad_enabled", "manual_seed", "matmul", "maximum", "minimum", "no_grad", "ones", "ones_like",
    "rand", "randn", "set_grad_enabled", "set_num_threads", "stack", "tensor", "where", "zeros", "zeros_like",
    "load", "save", "compile", "Size", "memory_format", "contiguous_format", "channels_last", "channels_last_3d",
    "preserve_format", "is_anomaly_enabled", "is_anomaly_check_nan_enabled", "set_anomaly_enabled",
]
