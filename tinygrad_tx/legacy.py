"""torch's legacy names that teaching code still writes: ``torch.Tensor(...)`` called as a
constructor, the typed constructors ``FloatTensor``/``LongTensor``/... (calls and ``isinstance``
checks), ``autograd.Variable`` and ``torch.range``.

* ``Tensor(...)`` given sizes, a Python sequence, a Tensor or nothing is torch's legacy
  ``torch.Tensor(...)`` (``tensor_constructor``): ``Tensor(2, 3)`` / ``Tensor(torch.Size([2,
  3]))`` a new (2, 3) tensor of the default float (torch leaves it uninitialised; here it is
  zeros), ``Tensor([1, 2])`` the data in the default float (``tensor([1., 2.])``), ``Tensor()``
  an empty one of shape (0,), ``Tensor(t)`` an alias of ``t`` whatever its dtype. A Python
  number (``Tensor(3.5)``), ``dtype=`` or ``requires_grad=`` is torch's TypeError.
  NumPy data (an array or a NumPy scalar) keeps ``torch.tensor``'s rules here -- the array's
  dtype, ``dtype=`` and ``requires_grad=`` accepted -- where torch's legacy constructor would
  convert it to the default float: the engine and its tests build every tensor that way.

* ``FloatTensor(2, 3)`` is a new (2, 3) float32 tensor (torch leaves it uninitialised; here it
  is zeros), ``FloatTensor([1, 2])`` holds the data as float32, ``FloatTensor()`` is empty
  (shape (0,)), ``FloatTensor(t)`` of a float32 tensor is an alias of ``t`` (gradients flow
  through, as torch's ``AliasBackward``) and refuses any other dtype; ``isinstance(x,
  FloatTensor)`` is True for a float32 tensor. ``FloatTensor.dtype`` is ``float32``.
* ``Variable(t, requires_grad=False)`` is ``t.detach()`` with ``requires_grad`` set: since
  PyTorch 0.4 a Variable is a Tensor (``isinstance(x, Variable)`` is True for every tensor);
  ``volatile`` has no effect beyond torch's warning.
* ``range(start, end, step)`` (``legacy_range`` here, so that Python's ``range`` stays itself in
  this module) is ``arange`` with ``end`` included (deprecated in torch, with its warning),
  float32 by default.
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np

from .core import dtypes as _dtypes
from ._factory_args import leaf, resolve_dtype
from .core import seam as _seam
from .core.tensor import _NO_DATA, Tensor

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor",
           "CharTensor", "ByteTensor", "BoolTensor", "Variable", "legacy_range"]

_LEGACY_TYPES = {"FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
                 "LongTensor": "int64", "IntTensor": "int32", "ShortTensor": "int16", "CharTensor": "int8",
                 "ByteTensor": "uint8", "BoolTensor": "bool"}


def _is_size(args) -> bool:
    return all(isinstance(a, (numbers.Integral, np.integer)) and not isinstance(a, (bool, np.bool_))
               for a in args)


class _LegacyTensorType(type):
    """The metaclass of ``FloatTensor`` & co.: calling one builds a Tensor of its dtype,
    ``isinstance`` tests a Tensor's dtype."""

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj._data.dtype == cls._np_dtype

    def __repr__(cls) -> str:
        return f"<class 'tinygrad_tx.{cls.__name__}'>"

    @property
    def dtype(cls):
        return _dtypes.from_numpy_dtype(cls._np_dtype)

    @property
    def is_cuda(cls) -> bool:
        return False

    def __call__(cls, *args, device=None, **kwargs):
        return construct(cls.__name__, cls._np_dtype, args, device, kwargs)


_STATE = tuple(name for name in Tensor.__slots__ if name != "__weakref__")


def tensor_constructor(self: Tensor, data, sizes: tuple, requires_grad, dtype, device) -> None:
    """``Tensor(...)`` called as torch's legacy constructor ``torch.Tensor(...)`` (anything but
    NumPy data, which keeps ``torch.tensor``'s rules here): fills ``self`` with the tensor
    :func:`construct` builds. ``dtype=``/``requires_grad=`` are not arguments of that
    constructor (torch raises; so does this)."""
    kwargs = {k: v for k, v in (("requires_grad", requires_grad), ("dtype", dtype))
              if v is not None and v is not False}
    args = sizes if data is _NO_DATA else (data, *sizes)
    made = construct("Tensor", None, args, device, kwargs)
    for name in _STATE:
        if hasattr(made, name):       # a slot set on demand only (_post_hooks) may be empty
            setattr(self, name, getattr(made, name))


def construct(name: str, dt, args: tuple, device, kwargs: dict) -> Tensor:
    """torch's legacy constructors, ``FloatTensor(...)`` & co. (``dt`` their dtype) and
    ``torch.Tensor(...)`` (``dt`` None: the default float, and a Tensor of any dtype aliased):
    sizes (ints or a ``torch.Size``) give a new tensor of zeros (torch leaves it uninitialised),
    no arguments an empty one of shape (0,), one sequence its data in the dtype, one Tensor an
    alias of it (a view: gradients flow through, as torch's ``AliasBackward``)."""
    if kwargs:
        given = ", ".join(f"{k}={v}" for k, v in sorted(kwargs.items()))
        raise TypeError(f"{name}(): unexpected keyword argument(s) {given} (the legacy constructors take "
                        f"sizes or data, and device=); use tinygrad_tx.tensor(data, dtype=..., requires_grad=...)")
    if device is not None and str(device) != "cpu":
        from .core.device import device as _device_cls
        _device_cls(device)               # an unknown device string raises there
        raise RuntimeError(f"{name}(): device={device!r}: tinygrad_tx runs on the cpu only")
    if len(args) == 1 and isinstance(args[0], Tensor):
        other = args[0]
        if dt is not None and other._data.dtype != dt:
            raise TypeError(f"{name}(): expected a tensor of dtype {dt}, got one of dtype "
                            f"{other._data.dtype}; cast it with .to({dt.name}) or .type({name!r})")
        if device is not None:
            raise RuntimeError(f"Legacy tensor constructor of the form {name}(tensor, device={device!r}) is "
                               f"not supported. Use tinygrad_tx.tensor(...) or tinygrad_tx.as_tensor(...) instead.")
        return other[...]                 # an alias (a view), as torch's: gradients flow through
    dt = _dtypes.default_float() if dt is None else dt
    if len(args) == 1 and isinstance(args[0], (tuple, list)) and type(args[0]).__name__ == "Size":
        return _new_of_size(name, tuple(args[0]), dt)   # torch.Size([2, 3]); Size([]) is 0-d
    if _is_size(args):                    # FloatTensor(), FloatTensor(2, 3)
        return _new_of_size(name, args if args else (0,), dt)
    if len(args) != 1:
        raise TypeError(f"{name}(): expected sizes (ints) or one sequence of data, got arguments of types "
                        f"({', '.join(type(a).__name__ for a in args)})")
    data = args[0]
    if isinstance(data, (str, bytes)):
        raise TypeError(f"{name}(): invalid data type {type(data).__name__!r} (data={data!r})")
    if isinstance(data, range):
        data = list(data)
    if not isinstance(data, (list, tuple, np.ndarray)):
        raise TypeError(f"{name}(): data must be a sequence (got {type(data).__name__}: {data!r})")
    from .factories import tensor
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # a nested one-element Tensor copied: no copy warning
        return tensor(data, dtype=getattr(_dtypes, dt.name))


def _new_of_size(name: str, sizes: tuple, dt) -> Tensor:
    shape = tuple(int(a) for a in sizes)
    if any(s < 0 for s in shape):
        raise RuntimeError(f"{name}(): trying to create tensor with negative dimension: sizes {shape}")
    return leaf(np.zeros(shape, dtype=dt))


def _legacy_class(name: str, np_name: str):
    cls = _LegacyTensorType(name, (), {"_np_dtype": np.dtype(np_name), "__module__": "tinygrad_tx",
                                       "__doc__": f"``tinygrad_tx.{name}``: torch's legacy constructor and "
                                                  f"type of a {np_name} tensor (see ``legacy.py``)."})
    return cls


FloatTensor = _legacy_class("FloatTensor", "float32")
DoubleTensor = _legacy_class("DoubleTensor", "float64")
HalfTensor = _legacy_class("HalfTensor", "float16")
LongTensor = _legacy_class("LongTensor", "int64")
IntTensor = _legacy_class("IntTensor", "int32")
ShortTensor = _legacy_class("ShortTensor", "int16")
CharTensor = _legacy_class("CharTensor", "int8")
ByteTensor = _legacy_class("ByteTensor", "uint8")
BoolTensor = _legacy_class("BoolTensor", "bool")


class _VariableType(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor)

    def __call__(cls, data=None, requires_grad: bool = False, volatile: bool = False):
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with tinygrad_tx.no_grad():` "
                          "instead.", UserWarning, stacklevel=2)
        if data is None:
            return leaf(np.zeros((0,), dtype=_dtypes.default_float()))
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if not isinstance(requires_grad, (bool, np.bool_)):
            raise TypeError(f"Variable(): requires_grad must be a bool, got {requires_grad!r}")
        out = data.detach()
        if requires_grad:
            out.requires_grad_(True)          # an integer tensor raises there, as torch
        return out


class Variable(metaclass=_VariableType):
    """``torch.autograd.Variable(data, requires_grad=False, volatile=False)``: since PyTorch 0.4
    a Tensor; this returns ``data.detach()`` with ``requires_grad`` set (a Variable of a
    non-leaf starts a new graph, as torch's), and every Tensor is an instance of it."""


def legacy_range(start, end, step=1, *, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """``torch.range`` (exported as ``tinygrad_tx.range``): ``start, start + step, ...`` up to
    ``end`` *included* when a step lands on it; ``floor((end - start) / step) + 1`` values, each
    ``start + i·step`` computed in float64 and rounded once. Deprecated in torch in favour of
    ``arange`` (end excluded), with the same warning here. float32 unless ``dtype`` is given."""
    warnings.warn("tinygrad_tx.range is deprecated and will be removed in a future release because its "
                  "behavior is inconsistent with Python's range builtin. Instead, use tinygrad_tx.arange, "
                  "which produces values in [start, end).", UserWarning, stacklevel=2)
    bounds = []
    for arg, value in (("start", start), ("end", end), ("step", step)):
        if isinstance(value, Tensor) and value.numel() == 1:
            value = value.item()
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"range(): argument {arg!r} must be a number, got {value!r}")
        bounds.append(value)
    start, end, step = bounds
    if step == 0:
        raise RuntimeError(f"range(): step must be nonzero, got step={step!r}")
    if (end - start) / step < 0:
        raise RuntimeError(f"range(): upper bound and lower bound inconsistent with step sign "
                           f"(start={start!r}, end={end!r}, step={step!r})")
    dt = resolve_dtype(dtype, _dtypes.default_float())
    n = int(np.floor((end - start) / step)) + 1
    values = start + step * np.arange(n, dtype=np.float64)
    return leaf(values.astype(dt), requires_grad, device)


def new(self, *args, device=None):
    """``Tensor.new(...)``: the legacy constructor of this tensor's dtype (``x.new(2, 3)``,
    ``x.new([1, 2])``, ``x.new()``), as ``FloatTensor(...)`` is for float32."""
    cls = _BY_DTYPE.get(self._data.dtype.name)
    if cls is None:
        raise TypeError(f"Tensor.new: no legacy constructor for dtype {self._data.dtype}")
    return cls(*args, device=device)


_BY_DTYPE = {np_name: globals()[name] for name, np_name in _LEGACY_TYPES.items()}
TENSOR_METHODS: dict = {"new": new}
FUNCTIONS = {**{name: globals()[name] for name in _LEGACY_TYPES}, "range": legacy_range}


_seam.legacy_constructor = tensor_constructor   # the core's Tensor(...) hands its legacy forms here
