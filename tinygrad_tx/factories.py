"""Tensor factories with torch's signatures: ``tensor``, ``as_tensor``, ``asarray``,
``from_numpy``, ``zeros``/``ones``/``empty``/``full`` and their ``*_like`` twins, ``arange``,
``linspace``, ``logspace``, ``eye``, and the ``Tensor.new_*`` methods. The random
factories (``rand``, ``randn``, ``randint``, ``normal``, ``multinomial``, ...) live in
``random_factories.py`` and the generators in ``generator.py``; all are exported here.

Rules (torch's):

* sizes: ``zeros(2, 3)``, ``zeros((2, 3))``, ``zeros([2, 3])``, ``zeros(size=(2, 3))``;
  ``full``'s size must be a sequence. Negative sizes raise.
* dtypes: the default float (float32 unless ``set_default_dtype`` chose another) unless
  ``dtype=``; ``tensor``/``full`` infer bool from Python bools, int64 from ints, the default
  float from floats; ``arange`` is int64 when start, end and step are all ints. Any ``dtype=`` that ``dtypes.resolve`` takes is accepted.
* ``tensor`` always copies; ``as_tensor``/``asarray`` share memory when they can;
  ``from_numpy`` always shares (writes through the Tensor show in the array and back).
* every result is a new leaf; ``requires_grad=True`` needs a floating-point dtype.

Nothing here is differentiable: factories make leaves. Float ``arange``/``linspace``/
``logspace`` values are computed in float64 and rounded once to the dtype; torch's CPU
kernels round in vector blocks whose width depends on the CPU, so its float32 values can
differ from ours in the last bits (ours are the correctly rounded ``start + i*step``).
"""
from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Sequence

import numpy as np

from .core.device import check as _check_device
from .core.dtypes import COMPLEX_REFUSED, default_float
from .generator import (Generator, default_generator, draw_bernoulli, draw_exponential,  # noqa: F401
                        draw_geometric, draw_integers, draw_normal, draw_uniform, get_rng_state,
                        initial_seed, manual_seed, seed, set_rng_state)
from .random_factories import FUNCTIONS as _RANDOM_FUNCTIONS
from .random_factories import TENSOR_METHODS as _RANDOM_METHODS
from ._factory_args import _as_int, leaf, parse_size, resolve_dtype, shape_and_dtype_of
from .errors import InvalidArgumentError
from .core.tensor import Tensor

_INT64 = np.dtype(np.int64)
_BOOL = np.dtype(np.bool_)
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


# ============================================================================ tensor(): dtype inference

class InvalidElementError(TypeError, ValueError):
    """A str inside a list given to ``tensor()``: torch raises ValueError for ``["a"]`` ("too
    many dimensions 'str'") and TypeError for ``[1, "a"]`` ("invalid data type 'str'"); both."""


def _check_array_dtype(dt: np.dtype, op: str):
    if dt.kind == "c":      # refused as everywhere else (dtypes.COMPLEX_REFUSED says why)
        raise TypeError(COMPLEX_REFUSED.format(what=f"{op}() of {dt} data"))
    if dt.kind not in "biuf":
        raise TypeError(f"{op}(): can't convert a NumPy array of dtype {dt}; the supported "
                        "dtypes are bool, integer and floating-point ones")


def _promote(a: np.dtype, b: np.dtype) -> np.dtype:
    """torch's promotion of two element types: a float/complex type beats bool and
    integers (int64 with float32 is float32, where NumPy says float64); bool loses to
    everything; otherwise the wider type."""
    if a == b:
        return a
    fa, fb = a.kind in "fc", b.kind in "fc"
    if fa != fb:
        return a if fa else b
    if a.kind == "b" or b.kind == "b":
        return b if a.kind == "b" else a
    out = np.promote_types(a, b)
    return _INT64 if out.kind == "f" and not fa else out


def _python_scalar_dtype(x, op: str) -> np.dtype:
    if isinstance(x, bool):
        return _BOOL
    if isinstance(x, int):
        if not _INT64_MIN <= x <= _INT64_MAX:
            raise InvalidArgumentError(f"{op}(): the integer {x} does not fit in int64 (overflow)")
        return _INT64
    if isinstance(x, float):
        return default_float()
    raise TypeError(COMPLEX_REFUSED.format(what=f"{op}() of the Python complex {x!r}"))


_PY_SCALARS = (bool, int, float, complex)
_PY_ORDER = {bool: 0, int: 1, float: 2, complex: 3}


def _infer(obj, op: str, depth: int):
    """(shape, dtype, holds_tensors) of nested data, with torch.tensor's rules."""
    if isinstance(obj, Tensor):
        if depth == 0:
            return obj._data.shape, obj._data.dtype, False
        if obj._data.size != 1:
            raise ValueError(f"{op}(): a Tensor inside a list must have exactly one element (it is "
                             f"read as a scalar); got one of shape {obj._data.shape} at dim {depth - 1}; "
                             "use stack() to combine tensors")
        return (), obj._data.dtype, True
    if isinstance(obj, np.ndarray):
        _check_array_dtype(obj.dtype, op)
        return obj.shape, obj.dtype, False
    if isinstance(obj, np.generic):
        _check_array_dtype(obj.dtype, op)
        return (), obj.dtype, False
    if isinstance(obj, _PY_SCALARS):
        return (), _python_scalar_dtype(obj, op), False
    if isinstance(obj, (str, bytes)):
        if depth == 0:
            raise TypeError(f"{op}(): cannot build a tensor from a {type(obj).__name__} ({obj!r})")
        raise InvalidElementError(f"{op}(): a {type(obj).__name__} ({obj!r}) cannot be a tensor element "
                         "(only numbers, bools and nested sequences of them)")
    if hasattr(obj, "__array__") and not isinstance(obj, Sequence):
        arr = np.asarray(obj)
        _check_array_dtype(arr.dtype, op)
        return arr.shape, arr.dtype, False
    if not isinstance(obj, (Sequence, range)):
        raise RuntimeError(f"{op}(): could not infer a dtype for an object of type "
                           f"{type(obj).__name__} ({obj!r}); expected numbers, bools or "
                           "(nested) lists of them")
    n = len(obj)
    if n == 0:
        return (0,), default_float(), False
    kinds = set(map(type, obj))
    if kinds <= _PY_ORDER.keys():          # the common case: a flat list of Python numbers
        top = max(kinds, key=_PY_ORDER.__getitem__)
        if top is int:
            _python_scalar_dtype(max(obj), op), _python_scalar_dtype(min(obj), op)
        return (n,), _python_scalar_dtype(top(1), op), False
    children = [_infer(x, op, depth + 1) for x in obj]
    shape0, dtype, holds = children[0]
    for i, (shape, dt, h) in enumerate(children[1:], 1):
        if shape != shape0:
            k = next((j for j, (a, b) in enumerate(zip(shape0, shape)) if a != b), min(len(shape0), len(shape)))
            want = f"a sequence of length {shape0[k]}" if k < len(shape0) else "a number"
            raise ValueError(f"{op}(): ragged nested sequence: expected {want} at dim {depth + 1 + k} "
                             f"(element {i} at dim {depth} has shape {shape}, element 0 has shape "
                             f"{shape0}); every row must have the same length")
        dtype, holds = _promote(dtype, dt), holds or h
    return (n,) + shape0, dtype, holds


def _without_tensors(obj):
    """The nested data with each one-element Tensor replaced by its 0-d array."""
    if isinstance(obj, Tensor):
        return obj._data.reshape(())
    if isinstance(obj, (list, tuple)):
        return [_without_tensors(x) for x in obj]
    return obj


def _array_from_data(data, dtype, op: str) -> np.ndarray:
    """A new array (never a view of ``data``) with torch.tensor's shape and dtype rules."""
    dt = resolve_dtype(dtype, None) if dtype is not None else None
    if isinstance(data, Tensor):
        return np.array(data._data, dtype=dt, copy=True)
    if isinstance(data, np.ndarray):
        _check_array_dtype(data.dtype, op)
        return np.array(data, dtype=dt, copy=True)
    shape, inferred, holds = _infer(data, op, 0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            arr = np.array(_without_tensors(data) if holds else data, dtype=dt or inferred)
    except OverflowError as e:
        raise ValueError(f"{op}(): a value does not fit in dtype {dt or inferred} ({e})") from None
    return arr.reshape(shape)


# ============================================================================ from data

def tensor(data, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A new leaf holding a copy of ``data`` (``torch.tensor``): numbers, nested lists or
    tuples of them (one-element Tensors count as numbers), NumPy arrays, or a Tensor (copied
    and detached, with torch's warning)."""
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or sourceTensor.detach().clone()."
                      "requires_grad_(True), rather than tinygrad_tx.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
    return leaf(_array_from_data(data, dtype, "tensor"), requires_grad, device)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` as a Tensor, sharing memory when it can (``torch.as_tensor``): a Tensor of the
    requested dtype is returned as is (another dtype: a differentiable cast); a NumPy array
    of the requested dtype is shared; anything else is copied as ``tensor`` does."""
    dt = resolve_dtype(dtype, None) if dtype is not None else None
    _check_device(device)
    if isinstance(data, Tensor):
        return data if dt is None or dt == data._data.dtype else data.to(dt)
    if isinstance(data, np.ndarray):
        _check_array_dtype(data.dtype, "as_tensor")
        return leaf(data if dt is None or dt == data.dtype else data.astype(dt))
    return leaf(_array_from_data(data, dt, "as_tensor"))


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad: bool = False) -> Tensor:
    """``torch.asarray``: like ``as_tensor``; ``copy=True`` always copies, ``copy=False``
    raises if a copy would be needed; ``requires_grad=True`` gives a leaf that requires grad
    (sharing ``obj``'s memory when it can)."""
    if copy not in (None, True, False):
        raise TypeError(f"asarray(): copy must be None, True or False, got {copy!r}")
    dt = resolve_dtype(dtype, None) if dtype is not None else None
    if isinstance(obj, (Tensor, np.ndarray)):
        arr = obj._data if isinstance(obj, Tensor) else obj
        _check_array_dtype(arr.dtype, "asarray")
        needs_copy = dt is not None and dt != arr.dtype
        if copy is False and needs_copy:
            raise ValueError(f"asarray(): copy=False, but converting dtype {arr.dtype} to {dt} needs a copy")
        if copy or needs_copy:
            arr = np.array(arr, dtype=dt, copy=True)
        elif isinstance(obj, Tensor) and not requires_grad:
            _check_device(device)
            return obj
        return leaf(arr, requires_grad, device)
    if copy is False:
        raise ValueError(f"asarray(): copy=False, but a {type(obj).__name__} can only be copied into a tensor")
    return leaf(_array_from_data(obj, dt, "asarray"), requires_grad, device)


def from_numpy(ndarray) -> Tensor:
    """A Tensor that **shares memory** with ``ndarray`` (``torch.from_numpy``): writes to
    either show in the other; the dtype is the array's. Arrays with negative strides or a
    non-native byte order are refused, as torch refuses them."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy(): expected np.ndarray (got {type(ndarray).__name__})")
    _check_array_dtype(ndarray.dtype, "from_numpy")
    if any(s < 0 for s in ndarray.strides):
        raise ValueError("from_numpy(): at least one stride of the array is negative, which "
                         "tensors do not support; pass array.copy()")
    if not ndarray.dtype.isnative:
        raise ValueError(f"from_numpy(): the array's byte order ({ndarray.dtype.str}) is not the "
                         "native one; convert it with array.astype(array.dtype.newbyteorder('='))")
    if not ndarray.flags.writeable:
        warnings.warn("from_numpy(): the given NumPy array is not writable; the tensor shares "
                      "it, so writing to the tensor will fail", UserWarning, stacklevel=2)
    return leaf(ndarray)


# ============================================================================ filled with one value

def _filled(op, fill, args, size, dtype, device, requires_grad):
    shape = parse_size(args, size, op)
    return leaf(fill(shape, resolve_dtype(dtype, default_float())), requires_grad, device)


def zeros(*size_args, size=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor of zeros (the default float, float32, unless ``dtype``)."""
    return _filled("zeros", np.zeros, size_args, size, dtype, device, requires_grad)


def ones(*size_args, size=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones (the default float, float32, unless ``dtype``)."""
    return _filled("ones", np.ones, size_args, size, dtype, device, requires_grad)


def empty(*size_args, size=None, dtype=None, device=None, requires_grad: bool = False, memory_format=None) -> Tensor:
    """An uninitialised tensor (its values are whatever the memory held), in ``memory_format``'s layout."""
    from . import layout
    out = _filled("empty", np.empty, size_args, size, dtype, device, requires_grad)
    if layout.check(memory_format, "empty") not in (None, layout.preserve_format):
        out._data = layout.laid_out(out._data, memory_format)
    return out


def _number_arg(value, op: str, arg: str):
    """A Python number from numbers, NumPy scalars and one-element Tensors (else TypeError)."""
    if isinstance(value, Tensor):
        if value._data.size != 1:
            raise TypeError(f"{op}(): argument '{arg}' must be a number, got a Tensor of shape {tuple(value.shape)}")
        value = value.item()     # Tensor.item: a compiled call guards or refuses the read
    if isinstance(value, np.generic):
        value = value.item()
    if not isinstance(value, numbers.Number):
        raise TypeError(f"{op}(): argument '{arg}' must be a number, not {type(value).__name__} ({value!r})")
    return value


def _scalar_dtype(value) -> np.dtype:
    if isinstance(value, bool):
        return _BOOL
    if isinstance(value, numbers.Integral):
        return _INT64
    if not isinstance(value, numbers.Real):
        raise TypeError(COMPLEX_REFUSED.format(what=f"the value {value!r}"))
    return default_float()


def full(size, fill_value, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor of ``size`` (a tuple or list) filled with ``fill_value``; the dtype follows
    the value (bool, int64, the default float32) unless ``dtype`` is given."""
    shape = parse_size((size,), None, "full", sequence_only=True)
    value = _number_arg(fill_value, "full", "fill_value")
    dt = resolve_dtype(dtype, _scalar_dtype(value))
    return leaf(np.full(shape, value, dtype=dt), requires_grad, device)


# ============================================================================ *_like

def _like(op, fill, input, dtype, device, requires_grad, memory_format=None):
    """``memory_format``: the layout of the new tensor (``layout.py``); the default keeps a
    ``channels_last`` input's layout, as torch's ``preserve_format``."""
    from . import layout
    shape, dt = shape_and_dtype_of(input, op)
    fmt = layout.check(memory_format, op)
    array = fill(shape, resolve_dtype(dtype, dt))
    if fmt in (None, layout.preserve_format) and isinstance(input, Tensor) and not input._data.flags.c_contiguous:
        fmt = next((f for f in (layout.channels_last, layout.channels_last_3d)
                    if input.ndim == (4 if f is layout.channels_last else 5) and layout.is_contiguous(input._data, f)), None)
    return leaf(layout.laid_out(array, fmt) if fmt is not layout.preserve_format else array, requires_grad, device)


def zeros_like(input, *, dtype=None, device=None, requires_grad: bool = False, memory_format=None) -> Tensor:
    """Zeros of ``input``'s shape and dtype (a new leaf: ``input``'s requires_grad is not copied)."""
    return _like("zeros_like", np.zeros, input, dtype, device, requires_grad, memory_format)


def ones_like(input, *, dtype=None, device=None, requires_grad: bool = False, memory_format=None) -> Tensor:
    """Ones of ``input``'s shape and dtype."""
    return _like("ones_like", np.ones, input, dtype, device, requires_grad, memory_format)


def empty_like(input, *, dtype=None, device=None, requires_grad: bool = False, memory_format=None) -> Tensor:
    """An uninitialised tensor of ``input``'s shape and dtype."""
    return _like("empty_like", np.empty, input, dtype, device, requires_grad, memory_format)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad: bool = False,
              memory_format=None) -> Tensor:
    """``fill_value`` in ``input``'s shape and dtype (the value is cast: 2.7 in int32 is 2)."""
    value = _number_arg(fill_value, "full_like", "fill_value")
    return _like("full_like", lambda s, d: np.full(s, value, dtype=d), input, dtype, device, requires_grad,
                 memory_format)


# ============================================================================ ranges

def _range_number(v, op: str, arg: str):
    """A Python int or float for arange/linspace bounds (bools count as ints, as in torch)."""
    v = _number_arg(v, op, arg)
    return int(v) if isinstance(v, bool) else v


def arange(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """``[start, start + step, ...)`` up to ``end`` excluded (``arange(n)``: 0..n-1).

    Length ``ceil((end - start) / step)``; int64 when start, end and step are all ints,
    else the default float (float32). With an integer ``dtype`` the bounds are truncated toward zero first,
    as torch does (``arange(0, 5.5, 1.5, dtype=int64)`` is 0..4)."""
    if end is None:
        start, end = 0, start
    start, end, step = (_range_number(v, "arange", a) for v, a in ((start, "start"), (end, "end"), (step, "step")))
    if any(isinstance(v, complex) for v in (start, end, step)):
        raise TypeError("arange(): complex bounds are not supported")
    all_int = all(isinstance(v, int) for v in (start, end, step))
    dt = resolve_dtype(dtype, _INT64 if all_int else default_float())
    if dt.kind not in "iuf":
        raise TypeError(f"arange(): dtype {dt} is not supported (use an integer or floating-point dtype)")
    for v in (start, end, step):
        if not math.isfinite(v):
            raise InvalidArgumentError(f"arange(): unsupported range: {start} -> {end} (step {step})")
    if dt.kind in "iu":   # torch computes integer ranges in int64 from the truncated bounds
        xstart, xend, xstep = int(start), int(end), int(step)
    else:
        xstart, xend, xstep = float(start), float(end), float(step)
    if xstep == 0:
        raise InvalidArgumentError(f"arange(): step must be nonzero (got step={step}"
                         + (f", truncated to {xstep} for dtype {dt})" if xstep != step else ")"))
    if not ((xstep > 0 and xend >= xstart) or (xstep < 0 and xend <= xstart)):
        raise InvalidArgumentError(f"arange(): upper bound and lower bound inconsistent with step sign "
                         f"(start={start}, end={end}, step={step})")
    if dt == _INT64:
        sign = 1 if xstep > 0 else -1
        n = (xend - xstart + xstep - sign) // xstep
    else:
        n = math.ceil((float(end) - float(start)) / float(step))
    if dt.kind in "iu":
        values = xstart + xstep * np.arange(n, dtype=np.int64)
    else:
        values = xstart + xstep * np.arange(n, dtype=np.float64)
    return leaf(values.astype(dt, copy=False), requires_grad, device)


def _linspace_values(op, start, end, steps, dtype):
    start, end = _range_number(start, op, "start"), _range_number(end, op, "end")
    steps = _as_int(steps, op, "steps")
    if steps < 0:
        raise InvalidArgumentError(f"{op}(): number of steps must be non-negative, got {steps}")
    if isinstance(start, complex) or isinstance(end, complex):
        raise TypeError(COMPLEX_REFUSED.format(what=f"{op}() from {start!r} to {end!r}"))
    dt = resolve_dtype(dtype, default_float())
    if dt.kind in "iu":          # torch converts the bounds to the integer dtype first
        start, end = int(start), int(end)
    work = np.float64
    idx = np.arange(steps, dtype=np.float64)
    if steps == 1:     # the one value is start (the formula below would give end)
        return np.full(1, start, dtype=work), dt
    step = (end - start) / (steps - 1) if steps > 1 else 0.0
    # the first half counts up from start, the second down from end (torch's formula): both
    # ends are exact and the rounding is symmetric
    values = np.where(idx < steps // 2, start + step * idx, end - step * (steps - 1 - idx)).astype(work)
    return values, dt


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end``, both included."""
    values, dt = _linspace_values("linspace", start, end, steps, dtype)
    return leaf(values.astype(dt), requires_grad, device)


def logspace(start, end, steps, base: float = 10.0, *, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """``base ** linspace(start, end, steps)`` (computed in float64, then rounded)."""
    base = _range_number(base, "logspace", "base")
    values, dt = _linspace_values("logspace", start, end, steps, dtype)
    return leaf(np.power(base, values).astype(dt), requires_grad, device)


def eye(n, m=None, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """The ``n x m`` identity (ones on the diagonal; ``m`` defaults to ``n``)."""
    n = _as_int(n, "eye", "n")
    m = n if m is None else _as_int(m, "eye", "m")
    for name, v in (("n", n), ("m", m)):
        if v < 0:
            raise InvalidArgumentError(f"eye(): {name} must be greater or equal to 0, got {v}")
    return leaf(np.eye(n, m, dtype=resolve_dtype(dtype, default_float())), requires_grad, device)


# ============================================================================ Tensor.new_* methods
# torch's methods: a new leaf of the same dtype as ``self`` unless ``dtype`` is given.

def new_zeros(self, *size_args, size=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return zeros(*size_args, size=size, dtype=self._data.dtype if dtype is None else dtype, device=device, requires_grad=requires_grad)


def new_ones(self, *size_args, size=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return ones(*size_args, size=size, dtype=self._data.dtype if dtype is None else dtype, device=device, requires_grad=requires_grad)


def new_empty(self, *size_args, size=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return empty(*size_args, size=size, dtype=self._data.dtype if dtype is None else dtype, device=device, requires_grad=requires_grad)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return full(size, fill_value, dtype=self._data.dtype if dtype is None else dtype, device=device, requires_grad=requires_grad)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A copy of ``data`` in ``self``'s dtype (``[1.5, 2]`` on an int32 tensor is [1, 2])."""
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone(), rather than tensor.new_tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
    arr = _array_from_data(data, self._data.dtype if dtype is None else dtype, "new_tensor")
    return leaf(arr, requires_grad, device)


# ============================================================================ exports

TENSOR_METHODS = {
    "new_zeros": new_zeros, "new_ones": new_ones, "new_empty": new_empty, "new_full": new_full,
    "new_tensor": new_tensor, **_RANDOM_METHODS,
}

FUNCTIONS = {
    "tensor": tensor, "as_tensor": as_tensor, "asarray": asarray, "from_numpy": from_numpy,
    "zeros": zeros, "ones": ones, "empty": empty, "full": full,
    "zeros_like": zeros_like, "ones_like": ones_like, "empty_like": empty_like, "full_like": full_like,
    "arange": arange, "linspace": linspace, "logspace": logspace, "eye": eye,
    "Generator": Generator, "default_generator": default_generator, "manual_seed": manual_seed,
    "seed": seed, "initial_seed": initial_seed, "get_rng_state": get_rng_state, "set_rng_state": set_rng_state,
    **_RANDOM_FUNCTIONS,
}

