"""``tinygrad_tx.backends.cudnn``: the cuDNN switches teaching code sets (``cudnn.benchmark = True``,
``cudnn.deterministic = True``) with torch's defaults on a machine without CUDA: ``enabled`` and
``allow_tf32`` True, ``benchmark`` and ``deterministic`` False, ``is_available()`` False, ``version()``
None. No cuDNN exists here, so they change nothing (NumPy is deterministic and has no TF32)."""
from __future__ import annotations

from contextlib import contextmanager

enabled = True
benchmark = False
benchmark_limit = None   # torch's value without CUDA
deterministic = False
allow_tf32 = True
fp32_precision = "none"


def is_available() -> bool:
    return False


def version():
    return None


def is_acceptable(tensor) -> bool:
    """Whether cuDNN could run on ``tensor``: never here (no CUDA)."""
    return False


def set_flags(_enabled=None, _benchmark=None, _benchmark_limit=None, _deterministic=None, _allow_tf32=None,
              _fp32_precision="none", _depthwise_kernel=None):
    """Set the flags given (None leaves one as it is); return the previous values, as torch's."""
    global enabled, benchmark, deterministic, allow_tf32, fp32_precision
    orig = (enabled, benchmark, benchmark_limit, deterministic, allow_tf32, fp32_precision, None)
    if _enabled is not None:
        enabled = _enabled
    if _benchmark is not None:
        benchmark = _benchmark
    if _deterministic is not None:
        deterministic = _deterministic
    if _allow_tf32 is not None:
        allow_tf32 = _allow_tf32
    if _fp32_precision is not None:
        fp32_precision = _fp32_precision
    return orig


@contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True,
          fp32_precision="none", depthwise_kernel="auto"):
    """``with cudnn.flags(...):`` the given flags inside, the previous ones restored after."""
    orig = set_flags(enabled, benchmark, benchmark_limit, deterministic, allow_tf32, fp32_precision,
                     depthwise_kernel)
    try:
        yield
    finally:
        set_flags(*orig)
