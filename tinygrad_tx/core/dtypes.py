"""dtype objects: ``tinygrad_tx.float32``, ``float64``, ``int64`` (``long``), ... as in torch.

Each is a :class:`dtype` that wraps one NumPy dtype and compares equal to it (and to its
name), so ``x.dtype == np.float32``, ``x.dtype == tinygrad_tx.float32`` and
``arr.astype(tinygrad_tx.float32)`` all work: NumPy reads the wrapped dtype from the
``.dtype`` attribute. ``Tensor.dtype`` returns one of these objects.
"""
from __future__ import annotations

import builtins

import numpy as np


class dtype:
    """A tensor element type (torch's ``torch.dtype``): ``is_floating_point``, ``is_signed``,
    ``itemsize`` as in torch; every other attribute (``kind``, ``name``, ``char``) is the NumPy
    dtype's."""

    __slots__ = ("dtype", "_name")

    def __init__(self, np_dtype, name: str):
        self.dtype = np.dtype(np_dtype)
        self._name = name

    @property
    def is_floating_point(self) -> bool:
        return self.dtype.kind == "f"

    @property
    def is_complex(self) -> bool:
        return self.dtype.kind == "c"

    @property
    def is_signed(self) -> bool:
        return self.dtype.kind in "fic"

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    def __getattr__(self, name):
        return getattr(self.dtype, name)

    def __eq__(self, other):
        if isinstance(other, dtype):
            return self.dtype == other.dtype
        try:
            return self.dtype == np.dtype(other)
        except TypeError:
            return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        return hash(self.dtype)

    def __repr__(self):
        return f"tinygrad_tx.{self._name}"

    def __reduce__(self):
        return (_by_name, (self._name,))


float16 = half = dtype(np.float16, "float16")
float32 = float = dtype(np.float32, "float32")
float64 = double = dtype(np.float64, "float64")
uint8 = dtype(np.uint8, "uint8")
int8 = dtype(np.int8, "int8")
int16 = short = dtype(np.int16, "int16")
int32 = int = dtype(np.int32, "int32")
int64 = long = dtype(np.int64, "int64")
bool = dtype(np.bool_, "bool")
complex64 = dtype(np.complex64, "complex64")
complex128 = dtype(np.complex128, "complex128")

ALL = (float16, float32, float64, uint8, int8, int16, int32, int64, bool, complex64, complex128)
_BY_NUMPY = {d.dtype: d for d in ALL}
_BY_NAME = {d._name: d for d in ALL}
_BY_NAME.update(half=float16, float=float32, double=float64, short=int16, int=int32, long=int64)
_PYTHON_TYPES = {builtins.float: np.dtype(np.float64), builtins.int: np.dtype(np.int64),
                 builtins.bool: np.dtype(np.bool_), builtins.complex: np.dtype(np.complex128)}


def _by_name(name):
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype) -> dtype:
    """The dtype object of a NumPy dtype (a new one for dtypes torch has no name for)."""
    d = _BY_NUMPY.get(np_dtype)
    if d is None:
        np_dtype = np.dtype(np_dtype)
        d = _BY_NUMPY.get(np_dtype) or dtype(np_dtype, np_dtype.name)
    return d


def resolve(value, arg: str = "dtype"):
    """``value`` as a NumPy dtype, or None for None. Accepts our dtype objects, NumPy dtypes
    and scalar types, names ('float32', 'long') and Python's float/int/bool (torch reads
    ``dtype=float`` as float64). Anything else is a TypeError naming ``arg``."""
    if value is None:
        return None
    if isinstance(value, dtype):
        return _refuse_complex(value.dtype, arg)
    if isinstance(value, type) and value in _PYTHON_TYPES:
        return _refuse_complex(_PYTHON_TYPES[value], arg)
    if isinstance(value, str):
        d = _BY_NAME.get(value.removeprefix("torch.").removeprefix("tinygrad_tx."))
        if d is None:
            raise TypeError(f"{arg}: unknown dtype name {value!r} (expected one of "
                            f"{', '.join(sorted(n for n in _BY_NAME if 'complex' not in n))})")
        return _refuse_complex(d.dtype, arg)
    try:
        out = np.dtype(value)
    except TypeError:
        raise TypeError(f"{arg} must be a tinygrad_tx dtype (e.g. tinygrad_tx.float32), got "
                        f"{value!r} of type {type(value).__name__}") from None
    if out.kind not in "fiub":
        _refuse_complex(out, arg)
        raise TypeError(f"{arg}: dtype {out} is not a tensor element type")
    return out


def _refuse_complex(np_dtype, arg):
    if np_dtype.kind == "c":
        raise TypeError(COMPLEX_REFUSED.format(what=f"{arg}={np_dtype}"))
    return np_dtype


COMPLEX_REFUSED = ("complex tensors are not supported ({what}): every backward here is written for "
                   "real inputs (a complex gradient needs the conjugate, which none of them takes); "
                   "split the real and imaginary parts into two real tensors")


# ============================================================================ the default float

_default_float = float32   # changed only by set_default_dtype (importing tinygrad_tx leaves it float32)

_NOT_FLOATING = "only floating-point types are supported as the default type"


def default_float() -> np.dtype:
    """The NumPy dtype of the default float: what Python floats, float factories without
    ``dtype=`` (zeros, rand, linspace, ...), true division of integers and new layers' parameters
    get. float32 unless :func:`set_default_dtype` chose another."""
    return _default_float.dtype


def get_default_dtype() -> dtype:
    """The default floating dtype (``torch.get_default_dtype``): float32 unless
    :func:`set_default_dtype` chose another."""
    return _default_float


def set_default_dtype(d, /) -> None:
    """Make ``d`` (float32, float64 or float16) the default float, as ``torch.set_default_dtype``:
    tensors built afterwards from Python floats (``tensor(1.5)``, ``tensor([1, 2.0])``), float
    factories without ``dtype=``, integer tensors promoted to float (``int_tensor / 2``) and the
    parameters of layers created afterwards get it. Existing tensors, integer tensors and
    NumPy data (``tensor(np.float32 array)`` stays float32) keep their dtypes. The setting is
    process-wide and stays until the next call. (torch also accepts bfloat16, which NumPy and
    so tinygrad_tx do not have.)"""
    global _default_float
    if not isinstance(d, dtype):   # torch refuses names, NumPy dtypes and Python's float too
        raise TypeError(f"set_default_dtype(): invalid dtype object: {_NOT_FLOATING} "
                        f"(got d={d!r} of type {type(d).__name__}; pass tinygrad_tx.float64, say)")
    if d.dtype.kind != "f":
        raise TypeError(f"set_default_dtype(): {_NOT_FLOATING} (got d={d!r})")
    _default_float = d


# ============================================================================ promotion (torch's rules)
# Categories, lowest first: bool < integer < floating. (Complex tensors are refused.)

def _category(d: np.dtype) -> builtins.int:
    return 0 if d.kind == "b" else 1 if d.kind in "iu" else 2


def _np(d) -> np.dtype:
    """A NumPy dtype from one of our dtype objects, a NumPy dtype or a name."""
    if isinstance(d, np.dtype):
        return d
    out = resolve(d, "dtype")
    if out is None:
        raise TypeError("dtype: expected a dtype, got None")
    return out


def _promote(a: np.dtype, b: np.dtype) -> np.dtype:
    """``promote_types`` on NumPy dtypes (the hot path: binary ops call it once each)."""
    if a == b:
        return a
    ca, cb = _category(a), _category(b)
    if ca != cb:   # the higher category wins outright: int64 with float16 is float16
        return a if ca > cb else b
    return np.promote_types(a, b)   # within a category NumPy's lattice is torch's (uint8+int8: int16)


def promote_types(type1, type2) -> dtype:
    """The smallest dtype both ``type1`` and ``type2`` convert to (``torch.promote_types``):
    a floating dtype beats any integer one (int64 with float16 is float16, where NumPy says
    float64), bool loses to everything, within a category the wider (uint8 with int8: int16)."""
    return from_numpy_dtype(_promote(_np(type1), _np(type2)))


_BOOL, _INT64 = np.dtype(np.bool_), np.dtype(np.int64)


def _operand_dtype(x):
    """(priority, NumPy dtype) of one operand of torch's ``result_type``: 2 for a tensor with
    dimensions, 1 for a 0-d tensor, 0 for a Python (or NumPy) scalar, whose dtype is that of
    its category's default (float: the default float, ``default_float()``; int: int64; bool: bool)."""
    arr = getattr(x, "_data", None)
    if arr is not None:
        return (2 if arr.ndim else 1), arr.dtype
    if isinstance(x, np.ndarray):
        return (2 if x.ndim else 1), x.dtype
    if isinstance(x, (builtins.bool, np.bool_)):
        return 0, _BOOL
    if isinstance(x, (builtins.int, np.integer)):
        return 0, _INT64
    if isinstance(x, (builtins.float, np.floating)):
        return 0, _default_float.dtype
    if isinstance(x, (builtins.complex, np.complexfloating)):
        raise TypeError(COMPLEX_REFUSED.format(what=f"the scalar {x!r}"))
    raise TypeError(f"result_type: expected a Tensor or a number, got {type(x).__name__} ({x!r})")


def _combine(higher, lower):
    """torch's combine_categories: the higher-priority group's dtype stands unless the lower
    group is of a higher category (a 0-d float64 or a Python float with an int32 tensor)."""
    if higher is None:
        return lower
    if lower is None or higher.kind == "f":
        return higher
    if higher.kind == "b" or lower.kind == "f":
        return _promote(higher, lower)
    return higher


def result_np(*operands) -> np.dtype:
    """``result_type`` as a NumPy dtype (what the ops use)."""
    groups = [None, None, None]   # scalars, 0-d tensors, dimensioned tensors
    for x in operands:
        prio, d = _operand_dtype(x)
        g = groups[prio]
        groups[prio] = d if g is None else _promote(g, d)
    return _combine(groups[2], _combine(groups[1], groups[0]))


def result_type(tensor, other) -> dtype:
    """The dtype of ``tensor <op> other`` (``torch.result_type``), torch's rule:

    operands are ranked dimensioned tensors > 0-d tensors > Python numbers, and the
    highest-ranked ones decide (promoted among themselves with ``promote_types``); a
    lower-ranked operand changes the result only when its *category* (bool < integer <
    floating) is higher, and then it promotes with it — a Python float counting as the
    default float (``get_default_dtype()``, float32 unless changed). So int32[n] + int64[] is int32, int32[n] + 2.5 is float32,
    float16[n] + float64[] is float16, int32[n] + float64[] is float64."""
    return from_numpy_dtype(result_np(tensor, other))


def can_cast(from_, to) -> builtins.bool:
    """Whether torch's type promotion allows casting ``from_`` to ``to`` (``torch.can_cast``):
    never floating to integer or bool, never a non-bool to bool."""
    a, b = _np(from_), _np(to)
    return _category(a) <= _category(b)


TENSOR_METHODS = {}
FUNCTIONS = {"result_type": result_type, "promote_types": promote_types, "can_cast": can_cast}
