"""Argument checks and small helpers shared by the functional ops.

Every public function in ``tinygrad_tx.functional`` validates its arguments
here before any arithmetic, so bad input fails with a ValueError/TypeError
that names the shapes or values involved rather than with a NumPy message
from deep inside a forward.
"""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor, default_generator


def as_tensor(x, op: str, name: str) -> Tensor:
    """``x`` as a Tensor (arrays and Python numbers are wrapped; Tensors pass through)."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (np.ndarray, np.generic, list, tuple, float, int)) and not isinstance(x, bool):
        return Tensor(x)
    raise TypeError(f"{op}: {name} must be a Tensor, got {type(x).__name__}")


def check_float(op: str, **tensors) -> np.dtype:
    """All given tensors (None skipped) are floating point and share one dtype; return it.

    Like torch, no implicit promotion: float32 activations with float64 weights is an error
    rather than a silent upcast of the whole computation.
    """
    dtype, first = None, None
    for name, t in tensors.items():
        if t is None:
            continue
        d = t.data.dtype
        if d.kind != "f":
            raise TypeError(f"{op}: {name} must be a floating point tensor, got dtype {d} (shape {t.shape})")
        if dtype is None:
            dtype, first = d, name
        elif d != dtype:
            raise TypeError(f"{op}: {name} has dtype {d} but {first} has dtype {dtype}; "
                            f"cast one of them (e.g. .float() or .double())")
    return dtype


def int_array(x, op: str, name: str) -> np.ndarray:
    """The integer array behind ``x`` (a Tensor, array, list or int) — ids, class targets."""
    a = x.data if isinstance(x, Tensor) else np.asarray(x)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{op}: {name} must be an integer (long) tensor of indices, got dtype {a.dtype}")
    return a


def describe_values(values, limit: int = 8) -> str:
    """The distinct values of an array as a short list for an error message."""
    u = np.unique(values)
    head = ", ".join(str(v) for v in u[:limit].tolist())
    return f"[{head}{', ...' if u.size > limit else ''}]"


def check_probability(op: str, name: str, p) -> float:
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: {name} must be a probability in [0, 1], got {p}")
    return p


def keep_mask(shape, p: float, generator) -> np.ndarray:
    """A boolean mask of ``shape`` with each entry True (kept) with probability 1 - p.

    Drawn as float32 uniforms (half the random bits of float64, and so about
    twice as fast) compared with p. ``generator`` is a ``np.random.Generator``;
    None means the global one seeded by ``tinygrad_tx.manual_seed``. Both the
    fused ops and their composites draw their masks here, so the same seed
    gives them the same mask.
    """
    if generator is None:
        generator = default_generator()
    if not isinstance(generator, np.random.Generator):
        raise TypeError(f"generator must be a numpy.random.Generator, got {type(generator).__name__}")
    return generator.random(shape, dtype=np.float32) >= np.float32(p)


def keep_scale(p: float) -> float:
    """1/(1-p), the factor that keeps E[dropout(x)] = x; 0 when p == 1 (everything dropped)."""
    return 0.0 if p == 1.0 else 1.0 / (1.0 - p)
