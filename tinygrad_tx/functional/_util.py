"""Argument checks and small helpers shared by the functional ops.

Every public function in ``tinygrad_tx.functional`` validates its arguments
here before any arithmetic, so bad input fails with a ValueError/TypeError
that names the shapes or values involved rather than with a NumPy message
from deep inside a forward.
"""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from .. import kernels
from ..errors import InvalidArgumentError, InvalidDtypeError
from ..core import seam as _seam
from ..tensor import Tensor, default_generator


def as_tensor(x, op: str, name: str) -> Tensor:
    """``x`` as a Tensor (arrays and Python numbers are wrapped; Tensors pass through)."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (np.ndarray, np.generic)):
        return Tensor(x)
    if isinstance(x, (list, tuple, float, int)) and not isinstance(x, bool):
        from ..factories import tensor    # torch.tensor's rules (Tensor(3) is torch.Tensor's size 3)
        return tensor(x)
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
        d = t._data.dtype
        if d.kind != "f":
            raise TypeError(f"{op}: {name} must be a floating point tensor, got dtype {d} (shape {tuple(t.shape)})")
        if dtype is None:
            dtype, first = d, name
        elif d != dtype:
            raise TypeError(f"{op}: {name} has dtype {d} but {first} has dtype {dtype}; "
                            f"cast one of them (e.g. .float() or .double())")
    return dtype


def int_array(x, op: str, name: str) -> np.ndarray:
    """The integer array behind ``x`` (a Tensor, array, list or int) — ids, class targets."""
    a = x._data if isinstance(x, Tensor) else np.asarray(x)
    if a.dtype.kind not in "iu":
        raise InvalidDtypeError(f"{op}: {name} must be an integer (long) tensor of indices, got dtype {a.dtype}")
    return a


def describe_values(values, limit: int = 8) -> str:
    """The distinct values of an array as a short list for an error message."""
    u = np.unique(values)
    head = ", ".join(str(v) for v in u[:limit].tolist())
    return f"[{head}{', ...' if u.size > limit else ''}]"


def check_real(op: str, name: str, value) -> float:
    """A float argument (``eps``, ``beta``, ``delta``, a fill value): a real number, a bool or a
    one-element Tensor, else a TypeError naming it (where ``float('a')`` would say only
    "could not convert string to float")."""
    if isinstance(value, Tensor) and value._data.size == 1:
        value = value.item()     # Tensor.item: a compiled call guards or refuses the read
    if not isinstance(value, (numbers.Real, np.bool_)):
        raise TypeError(f"{op}(): argument '{name}' must be a float, not {type(value).__name__} ({value!r})")
    return float(value)


def check_probability(op: str, name: str, p) -> float:
    """A dropout probability ``p`` as a float: a real number (bools too, as torch) or a
    one-element Tensor; anything else is a TypeError (torch: "'<' not supported between
    'str' and 'float'"); outside [0, 1], NaN included, an :class:`InvalidArgumentError`
    (torch: ValueError, and RuntimeError for NaN) in torch's words."""
    if isinstance(p, Tensor) and p._data.size == 1:
        p = p.item()
    if not isinstance(p, numbers.Real):
        raise TypeError(f"{op}(): argument '{name}' must be a float, not {type(p).__name__} ({p!r})")
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise InvalidArgumentError(f"{op}: {name} must be a probability in [0, 1], got {p} "
                                   "(torch: dropout probability has to be between 0 and 1)")
    return p


@_seam.replayed   # tinygrad_tx.compile redraws it at each replay
def keep_mask(shape, p: float, generator) -> np.ndarray:
    """A boolean mask of ``shape`` with each entry True (kept) with probability 1 - p.

    Drawn as torch's CPU dropout draws it, ``empty_like(x).bernoulli_(1 - p)``: one float64
    uniform u per element (two 32-bit words of the Mersenne twister), kept where u < 1 - p, so
    that the same seed gives torch's mask. ``generator`` is a ``tinygrad_tx.Generator`` (or a
    ``np.random.Generator``); None means the global one seeded by ``tinygrad_tx.manual_seed``.
    Both the fused ops and their composites draw their masks here, so the same seed gives them
    the same mask.
    """
    if generator is None:
        generator = default_generator()
    if not isinstance(generator, np.random.Generator):
        raise TypeError(f"generator must be a numpy.random.Generator, got {type(generator).__name__}")
    from ..torch_streams import bernoulli_scalar, words32
    n = int(np.prod(shape, dtype=np.int64))
    if n and kernels.available(np.float64):   # the same mask from the same words, in one C pass
        keep = kernels.keep_from_generator(generator, n, 1.0 - p)   # drawn in C from the mt19937 state
        if keep is None:
            keep = kernels.keep_from_words(words32(generator, 2 * n), 1.0 - p)
        return keep.reshape(shape)
    return bernoulli_scalar(generator, n, 1.0 - p).reshape(shape)


def keep_scale_of(p: float, dtype) -> float:
    """torch's dropout scale in the input's dtype: ``noise.div_(1 - p)`` computes 1 / (1 - p)
    with both sides rounded to the dtype first (so float32 gets 1f / (float)(1 - p), which can
    differ in the last bit from float32(1 / (1 - p))); 0 when p == 1."""
    dt = np.dtype(dtype)
    if p == 1.0 or dt.kind != "f":
        return keep_scale(p)
    return dt.type(1) / dt.type(1.0 - p)


def keep_scale(p: float) -> float:
    """1/(1-p), the factor that keeps E[dropout(x)] = x; 0 when p == 1 (everything dropped)."""
    return 0.0 if p == 1.0 else 1.0 / (1.0 - p)


# ---------------------------------------------------------------------------- row blocks

# Elements per block in the row loops of the fused softmax, log_softmax, cross_entropy and
# layer_norm. NumPy makes one pass over its arguments per operation; an op of five passes over a
# large array streams it from memory five times. Cut into blocks of rows that stay in the CPU's
# L2 cache (a few arrays of 256 KiB in float32), only the first pass over a block reads memory.
# Smaller blocks pay NumPy's per-call overhead (about a microsecond) more often. Tests lower it
# to exercise many blocks on small inputs.
BLOCK_ELEMENTS = 1 << 16


def row_blocks(n_rows: int, row_len: int, scale: int = 1) -> list:
    """Slices cutting ``n_rows`` rows of ``row_len`` elements into consecutive blocks of about
    ``scale * BLOCK_ELEMENTS`` elements (at least one row each; the last block may be shorter)."""
    step = max(1, scale * BLOCK_ELEMENTS // max(row_len, 1))
    return [slice(i, min(i + step, n_rows)) for i in range(0, n_rows, step)]


def to_rows(a: np.ndarray, axis: int) -> np.ndarray:
    """``a`` as a C-contiguous 2-D array whose rows are its slices along ``axis``.

    A view when ``axis`` is the last axis of a C-contiguous array (softmax over attention
    scores, cross-entropy over (N, C) logits); otherwise the axis is moved last and the result
    copied. A 0-d array is one row of one element. :func:`from_rows` undoes it.
    """
    if a.ndim == 0:
        return a.reshape(1, 1)
    if axis in (-1, a.ndim - 1) and a.flags.c_contiguous:   # the usual case, without moveaxis (~15 µs)
        return a.reshape(math.prod(a.shape[:-1]), a.shape[-1])
    moved = np.moveaxis(a, axis, -1)
    n_rows = int(np.prod(moved.shape[:-1]))
    return np.ascontiguousarray(moved).reshape(n_rows, a.shape[axis])


def from_rows(r: np.ndarray, shape: tuple, axis: int) -> np.ndarray:
    """The rows ``r`` of :func:`to_rows` back in an array of ``shape``: a view with ``axis``
    moved back into place (not C-contiguous when ``axis`` is not the last axis)."""
    if len(shape) == 0:
        return r.reshape(())
    if axis in (-1, len(shape) - 1):
        return r.reshape(shape)
    moved = shape[:axis] + shape[axis + 1:] + (shape[axis],)
    return np.moveaxis(r.reshape(moved), -1, axis)


# Row sums are matrix-vector products with ones (BLAS), several times faster than np.sum along a
# short row; rows longer than this are summed by BLAS in pieces of this length (see row_sums).
_PIECE = 128


def row_sums(block: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Σ along each row of a 2-D block, about as accurate as NumPy's pairwise ``np.sum``.

    BLAS (``block @ ones``) is several times faster than ``np.sum`` on short rows, but over a
    long row each of its float32 accumulators adds many terms in turn: 2.5x ``np.sum``'s error
    on rows of 1024 (measured). So a row of more than 128 entries is cut into pieces of 128
    (when its length is a multiple of 128, as a reshape of a contiguous block) that BLAS sums
    and NumPy adds up; other long rows go to ``np.add.reduce``.
    """
    n, d = block.shape
    if d <= _PIECE:
        return np.matmul(block, np.ones(d, block.dtype), out=out)
    if d % _PIECE or not block.flags.c_contiguous:
        return np.add.reduce(block, axis=1, out=out)
    pieces = block.reshape(n * (d // _PIECE), _PIECE) @ np.ones(_PIECE, block.dtype)
    return np.add.reduce(pieces.reshape(n, d // _PIECE), axis=1, out=out)


def row_max(block: np.ndarray) -> np.ndarray:
    """The maximum of each row of a 2-D block, as a column (an empty row's is -inf).

    ``np.maximum.reduce`` rather than ``np.max``: the same reduction without the Python
    wrapper, whose overhead is felt once per block.
    """
    return np.maximum.reduce(block, axis=1, keepdims=True, initial=-np.inf)


# ---------------------------------------------------------------------------- loss reductions

REDUCTIONS = ("mean", "sum", "none")


def loss_reduction(op: str, reduction, size_average=None, reduce=None, allowed=REDUCTIONS) -> str:
    """The ``reduction`` string of a loss, validated; torch's legacy ``size_average``/``reduce``
    pair (either given) overrides it, with torch's deprecation warning."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "none" if not reduce else ("mean" if size_average else "sum")
        warnings.warn(f"size_average and reduce args will be deprecated, please use "
                      f"reduction='{reduction}' instead.", UserWarning, stacklevel=3)
    if not isinstance(reduction, str) or reduction not in allowed:
        raise ValueError(f"{op}: {reduction!r} is not a valid value for reduction "
                         f"(expected one of {', '.join(map(repr, allowed))})")
    return reduction


def reduce_loss(loss: Tensor, reduction: str) -> Tensor:
    """'none': every element; 'sum': Σ; 'mean': Σ / count (nan for no elements, as torch).
    A composite of the engine's Sum/Mean, whose gradients are torch's."""
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()
