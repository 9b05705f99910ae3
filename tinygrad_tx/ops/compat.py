"""Surface names old and new teaching code calls: ``select``, ``addcmul``/``addcdiv``, the
deprecated scalar-first overloads torch still accepts with a warning (``p.data.add_(-lr, grad)``),
and the in-place *view* ops (``unsqueeze_``, ``transpose_``, ``t_``, ``resize_``, ...) that change
a tensor's shape rather than its values.

Every op here is a composite of Functions whose backwards are written out in their own files
(``Select`` is ``GetItem``'s backward under torch's node name; ``addcmul`` is ``Add`` and ``Mul``),
so the gradients are those ops'; the derivations are in their docstrings.
"""
from __future__ import annotations

import numbers
import warnings
import weakref

import numpy as np

from ..core.grad_mode import is_grad_enabled
from ..autograd.hooks import RemovableHandle
from ..core.tensor import Tensor
from ..tensor import TENSOR_METHODS as _tensor_methods
from . import movement as _M

# ============================================================================ deprecated overloads

# torch 2.13's deprecated scalar-first forms (tools/autograd/deprecated.yaml): the scalar(s) come
# before the tensors; name -> (scalar names, in order; tensor names)
DEPRECATED = {
    "add": (("alpha",), ("other",)), "sub": (("alpha",), ("other",)),
    "addcmul": (("value",), ("tensor1", "tensor2")), "addcdiv": (("value",), ("tensor1", "tensor2")),
    "addmm": (("beta", "alpha"), ("mat1", "mat2")), "addmv": (("beta", "alpha"), ("mat", "vec")),
    "baddbmm": (("beta", "alpha"), ("batch1", "batch2")), "addr": (("beta", "alpha"), ("vec1", "vec2")),
    "addbmm": (("beta", "alpha"), ("batch1", "batch2")),
}
# the function forms torch still takes: torch.add(input, alpha, other), torch.addcmul(input, value, t1, t2)
DEPRECATED_FUNCTIONS = ("add", "sub", "addcmul", "addcdiv")


def _is_number(x) -> bool:
    return isinstance(x, (numbers.Number, np.generic)) and not isinstance(x, complex)


def deprecation_message(name: str, n_scalars: int, *, function: bool = False) -> str:
    """torch's warning text for the deprecated overload of ``name`` with ``n_scalars`` leading numbers."""
    scalars, tensors = DEPRECATED[name.rstrip("_")]
    lead = ["Tensor input"] if function else []
    tail = ["Tensor out = None"] if function else []
    old = lead + [f"Number {s}" for s in scalars[:n_scalars]] + [f"Tensor {t}" for t in tensors]
    new = lead + [f"Tensor {t}" for t in tensors]
    old = ", ".join(old) + (", *, " + ", ".join(tail) if tail else "")
    new = ", ".join(new) + ", *, " + ", ".join([f"Number {s} = 1" for s in scalars] + tail)
    return (f"This overload of {name} is deprecated:\n\t{name}({old})\nConsider using one of the following "
            f"signatures instead:\n\t{name}({new})")


def undeprecate(name: str, args: tuple, kwargs: dict, *, function: bool = False, strict: bool = False):
    """``args`` (after ``self``/``input``) and ``kwargs`` in the current form: a deprecated
    scalar-first call (``add(2.0, other)``, ``addcmul(0.5, t1, t2)``, ``addmm(beta, alpha, m1, m2)``)
    warns with torch's text and moves the scalars to their keywords; anything else is returned
    unchanged (the op's own signature then judges it), or with ``strict`` a TypeError."""
    scalars, tensors = DEPRECATED[name.rstrip("_")]
    n = len(args) - len(tensors)
    if n < 1 or n > len(scalars) or not all(_is_number(a) for a in args[:n]) or \
            not all(isinstance(t, Tensor) for t in args[n:]):
        if strict and len(args) > len(tensors):
            lead = 2 if function else 1
            raise TypeError(f"{name}() takes {lead + len(tensors)} positional arguments but {lead + len(args)} "
                            "were given")
        return args, kwargs
    given = [s for s in scalars[:n] if s in kwargs]
    if given:
        raise TypeError(f"{name}() received an invalid combination of arguments: the deprecated form "
                        f"{name}({', '.join('Number ' + s for s in scalars[:n])}, ...) also got "
                        f"{given[0]}={kwargs[given[0]]!r}")
    warnings.warn(deprecation_message(name, n, function=function), UserWarning, stacklevel=3)
    return args[n:], {**kwargs, **dict(zip(scalars, args[:n]))}


def accepts_deprecated(name: str, method):
    """``method`` (self first) also taking ``name``'s deprecated scalar-first form."""
    def with_deprecated(self, *args, **kwargs):
        if len(args) > len(DEPRECATED[name][1]):
            args, kwargs = undeprecate(name, args, kwargs)
        return method(self, *args, **kwargs)
    with_deprecated.__name__ = with_deprecated.__qualname__ = name
    with_deprecated.__doc__ = method.__doc__
    with_deprecated.__wrapped__ = method
    return with_deprecated


def function_accepting_deprecated(name: str, fn):
    """``tinygrad_tx.name(input, ...)`` also taking the deprecated ``name(input, scalar, ...)``."""
    def with_deprecated(input, *args, **kwargs):
        if len(args) > len(DEPRECATED[name][1]):
            args, kwargs = undeprecate(name, args, kwargs, function=True)
        return fn(input, *args, **kwargs)
    with_deprecated.__name__ = with_deprecated.__qualname__ = name
    with_deprecated.__doc__ = fn.__doc__
    return with_deprecated


# ============================================================================ addcmul, addcdiv

def _addc_operand(t, op, arg):
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument '{arg}' must be Tensor, not {type(t).__name__}")
    return t


def _addcmul(self, tensor1, tensor2, *, value=1):
    """self + value · tensor1 · tensor2 (``torch.addcmul``), computed as torch's kernel does:
    (value · tensor1) · tensor2, then added. A composite of ``Mul`` and ``Add``: dL/dself = g,
    dL/dtensor1 = g · value · tensor2, dL/dtensor2 = g · value · tensor1."""
    _addc_operand(tensor1, "addcmul", "tensor1")
    _addc_operand(tensor2, "addcmul", "tensor2")
    prod = tensor1 * tensor2 if value == 1 else (tensor1 * value) * tensor2
    return self + prod


def _addcdiv(self, tensor1, tensor2, *, value=1):
    """self + value · tensor1 / tensor2 (``torch.addcdiv``), computed as torch's kernel does:
    (value · tensor1) / tensor2, then added. A composite of ``Mul``, ``Div`` and ``Add``:
    dL/dself = g, dL/dtensor1 = g · value / tensor2, dL/dtensor2 = −g · value · tensor1 / tensor2².
    Two integer tensors are torch's RuntimeError (its integer addcdiv was removed)."""
    _addc_operand(tensor1, "addcdiv", "tensor1")
    _addc_operand(tensor2, "addcdiv", "tensor2")
    if tensor1._data.dtype.kind in "biu" and tensor2._data.dtype.kind in "biu":
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release "
                           "addcdiv will perform a true division of tensor1 and tensor2. The historic "
                           "addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / "
                           "tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / "
                           "tensor2) for float inputs. The future addcdiv behavior is just the latter "
                           "implementation: (input + value * tensor1 / tensor2), for all dtypes.")
    quot = tensor1 / tensor2 if value == 1 else (tensor1 * value) / tensor2
    return self + quot


_addcmul.__qualname__, _addcdiv.__qualname__ = "addcmul", "addcdiv"
addcmul = accepts_deprecated("addcmul", _addcmul)
addcdiv = accepts_deprecated("addcdiv", _addcdiv)


# ============================================================================ small ops torch's in-place list needs

def _to_float(x: Tensor) -> Tensor:
    from ..core import dtypes
    return x if x._data.dtype.kind == "f" else x._cast(dtypes.default_float())


def deg2rad(self):
    """x · π/180 (an integer tensor gives the default float). A composite of ``Mul``: dL/dx = g·π/180."""
    return _to_float(_addc_operand(self, "deg2rad", "input")) * (np.pi / 180.0)


def rad2deg(self):
    """x · 180/π (an integer tensor gives the default float). dL/dx = g·180/π (``Mul``)."""
    return _to_float(_addc_operand(self, "rad2deg", "input")) * (180.0 / np.pi)


def conj_physical(self):
    """The complex conjugate, materialised; of a real tensor (the only kind here) the tensor itself,
    as torch's (the identity: dL/dx = g)."""
    return _addc_operand(self, "conj_physical", "input")


def ldexp(self, other):
    """x · 2^other, computed as torch's ``input * pow(2, other)`` in the default float when both are
    integers. Composite of ``Pow`` and ``Mul``: dL/dx = g·2^other, dL/dother = g·x·2^other·ln 2."""
    _addc_operand(self, "ldexp", "input")
    _addc_operand(other, "ldexp", "other")
    return _to_float(self) * (2.0 ** _to_float(other) if other._data.dtype.kind != "f" else 2.0 ** other)


def _integer_pair(op, a, b):
    from ..tensor import _adopt, _promote_pair
    _addc_operand(a, op, "input")
    _addc_operand(b, op, "other")
    pa, pb = _promote_pair(a, b)
    dt = pa._data.dtype
    if dt.kind not in "iu":
        names = {"float32": "Float", "float64": "Double", "float16": "Half", "bool": "Bool"}
        raise NotImplementedError(f'"{op}_cpu" not implemented for \'{names.get(dt.name, dt.name)}\'')
    return _adopt, pa._data, pb._data if isinstance(pb, Tensor) else pb


def gcd(self, other):
    """The greatest common divisor, elementwise, of two integer tensors (no gradient: integers)."""
    adopt, a, b = _integer_pair("gcd", self, other)
    return adopt(np.gcd(a, b))


def lcm(self, other):
    """The least common multiple, elementwise, of two integer tensors (no gradient: integers)."""
    adopt, a, b = _integer_pair("lcm", self, other)
    return adopt(np.lcm(a, b))


def addr(self, vec1, vec2, *, beta=1, alpha=1):
    """β·input + α·(vec1 ⊗ vec2) (``torch.addr``; β = 0 ignores input, its NaNs too). A composite of
    the outer product (``Mul`` of broadcast vectors) and ``Add``: dL/dinput = β·g, dL/dvec1 =
    α·g·vec2, dL/dvec2 = α·gᵀ·vec1."""
    from .matmul import _scaled, outer
    return _scaled(self, beta) + _scaled(outer(vec1, vec2), alpha)


def addbmm(self, batch1, batch2, *, beta=1, alpha=1):
    """β·input + α·Σ_b batch1[b] @ batch2[b] (``torch.addbmm``). A composite of ``bmm`` and
    ``sum``: dL/dbatch1[b] = α·g·batch2[b]ᵀ, dL/dbatch2[b] = α·batch1[b]ᵀ·g, dL/dinput = β·g."""
    from .matmul import _scaled, bmm
    return _scaled(self, beta) + _scaled(bmm(batch1, batch2).sum(0), alpha)


# ============================================================================ select

class Select(_M.GetItem):
    """y = x.select(dim, index): the slice at ``index`` of ``dim``, that dim removed (a view).
    The backward is ``GetItem``'s (g written into zeros at the selected positions: each x element
    is selected at most once); the class carries torch's node name, ``SelectBackward0``."""


def select(self, dim, index):
    """The slice ``index`` of dimension ``dim``, that dimension removed: a view that shares the
    memory (writes through either show in both), as ``torch.Tensor.select``."""
    from .reduce import canonical_dim
    if not isinstance(self, Tensor):
        raise TypeError(f"select(): argument 'input' must be Tensor, not {type(self).__name__}")
    if self.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = canonical_dim(dim, self.ndim, "select")
    if isinstance(index, Tensor) and index._data.ndim == 0 and index._data.dtype.kind in "iu":
        index = int(index._data)
    if isinstance(index, (bool, np.bool_)) or not isinstance(index, (int, np.integer)):
        raise TypeError(f"select(): argument 'index' must be int, not {type(index).__name__}")
    n = self.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size {tuple(self.shape)} at "
                         f"dimension {dim}")
    return Select.apply(self, (slice(None),) * d + (int(index) % n,))


# ============================================================================ in-place view ops

def _reshape_in_place(self: Tensor, op: str, make):
    """``self`` becomes ``make(self)`` (a view of its own memory in a new shape: unsqueeze, t,
    ...), in place as torch's ``unsqueeze_``: same memory (every other view still sees it), one
    version bump, and when the graph is recorded the out-of-place op's node as its history (so
    ``y.unsqueeze_(0)`` leaves ``y`` with an ``UnsqueezeBackward``-kind node whose backward is
    that op's). A leaf that requires grad refuses while grad mode is on, as torch's."""
    if not isinstance(self, Tensor):
        raise TypeError(f"{op}(): expected a Tensor, got {type(self).__name__}")
    if is_grad_enabled() and self._ctx is None and self._requires_grad:
        raise RuntimeError(f"a leaf Variable that requires grad is being used in an in-place operation ({op}).")
    view = self._view
    new = make(self)
    self._data = new._data
    if new._ctx is not None:
        self._ctx, self._requires_grad = new._ctx, new._requires_grad
    if view is not None and new._view is not None:   # still a view of the same base: one more step
        self._view = new._view
    # (without a recorded node, e.g. under no_grad, the history is left as it was, as torch's)
    self._bump()
    return self


def _view_method(name, out_of_place):
    out_of_place.__qualname__ = name[:-1]   # its argument errors, renamed below to the in-place name
    def method(self, *args, **kwargs):
        try:
            return _reshape_in_place(self, name, lambda t: out_of_place(t, *args, **kwargs))
        except (TypeError, ValueError, IndexError, RuntimeError) as e:
            from .inplace import _rename_error
            _rename_error(e, name[:-1])
            raise
    method.__name__ = method.__qualname__ = name
    method.__doc__ = (f"In place ``{name[:-1]}``: this tensor takes the new shape over the same memory "
                      "(see ``_reshape_in_place``).")
    return method


unsqueeze_ = _view_method("unsqueeze_", lambda t, dim: t.unsqueeze(dim))
squeeze_ = _view_method("squeeze_", lambda t, dim=None: t.squeeze(dim) if dim is not None else t.squeeze())
transpose_ = _view_method("transpose_", lambda t, dim0, dim1: t.transpose(dim0, dim1))
swapdims_ = _view_method("swapdims_", lambda t, dim0, dim1: t.transpose(dim0, dim1))
swapaxes_ = _view_method("swapaxes_", lambda t, axis0, axis1: t.transpose(axis0, axis1))
t_ = _view_method("t_", lambda t: t.t())


def as_strided_(self, size, stride, storage_offset=None):
    """In place ``as_strided`` (a view of the same memory with the given sizes and strides)."""
    return _reshape_in_place(self, "as_strided_", lambda t: t.as_strided(size, stride, storage_offset))


def resize_as_(self, the_template, memory_format=None):
    """``resize_`` to the shape of ``the_template``."""
    if not isinstance(the_template, Tensor):
        raise TypeError(f"resize_as_(): argument 'the_template' must be Tensor, not {type(the_template).__name__}")
    return self.resize_(*the_template.shape, memory_format=memory_format)


# ============================================================================ more in-place methods

def apply_(self, callable):
    """Replace every element by ``callable(element)`` in place (torch's CPU-only ``apply_``; slow,
    Python per element; not differentiable, as torch's: a tensor that requires grad refuses)."""
    if self._requires_grad:
        raise RuntimeError("apply_(): cannot be used on a tensor that requires grad (torch: it is CPU-only and "
                           "not recorded)")
    flat = self._data.reshape(-1) if self._data.flags.c_contiguous else self._data.ravel()
    values = np.array([callable(v) for v in flat.tolist()], dtype=self._data.dtype).reshape(self._data.shape)
    np.copyto(self._data, values, casting="unsafe")
    self._bump()
    return self


def map_(self, tensor, callable):
    """``self[i] = callable(self[i], tensor[i])`` in place, ``tensor`` broadcast to this shape
    (torch's CPU-only ``map_``); not differentiable, as torch's."""
    if self._requires_grad:
        raise RuntimeError("map_(): cannot be used on a tensor that requires grad")
    other = np.broadcast_to(tensor._data if isinstance(tensor, Tensor) else np.asarray(tensor), self._data.shape)
    values = np.array([callable(a, b) for a, b in zip(self._data.ravel().tolist(), other.ravel().tolist())],
                      dtype=self._data.dtype).reshape(self._data.shape)
    np.copyto(self._data, values, casting="unsafe")
    self._bump()
    return self


def map2_(self, x, y, callable):
    """``self[i] = callable(self[i], x[i], y[i])`` in place, ``x`` and ``y`` broadcast to this shape
    (torch's CPU-only ``map2_``); not differentiable, as torch's."""
    if self._requires_grad:
        raise RuntimeError("map2_(): cannot be used on a tensor that requires grad")
    xs, ys = (np.broadcast_to(t._data if isinstance(t, Tensor) else np.asarray(t), self._data.shape) for t in (x, y))
    values = np.array([callable(a, b, c) for a, b, c in zip(self._data.ravel().tolist(), xs.ravel().tolist(),
                                                            ys.ravel().tolist())],
                      dtype=self._data.dtype).reshape(self._data.shape)
    np.copyto(self._data, values, casting="unsafe")
    self._bump()
    return self


def _fill_diagonal(self, fill_value, wrap=False):
    """``self`` with its main diagonal (all dims equal indices; for a tall 2-D matrix with
    ``wrap``, restarting every ``cols + 1`` rows, as NumPy's ``fill_diagonal``) set to
    ``fill_value``: a ``where`` whose backward gives the old diagonal zero gradient."""
    from ..tensor import where
    shape = self.shape
    if self.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.ndim > 2 and len(set(shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    mask = np.zeros(shape, dtype=bool)
    np.fill_diagonal(mask, True, wrap=bool(wrap))
    value = np.asarray(fill_value).astype(self._data.dtype)
    return where(Tensor._from_op(mask, None), Tensor._from_op(value, None), self)


def fill_diagonal_(self, fill_value, wrap=False):
    from .inplace import apply_inplace
    return apply_inplace(self, "fill_diagonal_", _fill_diagonal, fill_value, wrap)


# ============================================================================ hooks

def register_post_accumulate_grad_hook(self, hook):
    """Call ``hook(tensor)`` after each backward has accumulated this leaf's gradient into ``.grad``
    (torch's; optimizers fused into backward use it). The hook must return None. Only a leaf that
    requires grad takes one; ``autograd.grad``, which accumulates nothing, calls none."""
    if not self._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self._ctx is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    hooks = self._post_hooks
    if hooks is None:
        hooks = self._post_hooks = {}
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


# ============================================================================ is_* attributes

_shared = weakref.WeakValueDictionary()   # id(memory) -> memory, for the arrays share_memory_() marked


def _memory(t: Tensor) -> np.ndarray:
    from ..core.versions import _root
    return _root(t._data)


def share_memory_(self):
    """Move the memory to shared memory (torch, CPU). One process here: the memory stays where it
    is and is marked, so ``is_shared()`` answers True afterwards, as torch's."""
    root = _memory(self)
    _shared[id(root)] = root
    return self


def is_shared(self) -> bool:
    root = _memory(self)
    return _shared.get(id(root)) is root


def _false(name):
    def attribute(self) -> bool:
        return False
    attribute.__name__ = attribute.__qualname__ = name
    return attribute


# torch's device and layout properties: a dense tensor on the CPU
_DEVICE_PROPERTIES = ("is_xpu", "is_sparse", "is_sparse_csr", "is_quantized", "is_meta", "is_mkldnn",
                      "is_nested", "is_mps", "is_ipu", "is_maia", "is_mtia", "is_vulkan", "is_xla")
# torch's predicates that are False for every tensor this engine makes: no lazy conjugate or negation
# bit, no distributed or pinned memory, no inference tensors (inference_mode is no_grad here: its
# tensors are ordinary ones, usable in autograd later)
_FALSE_METHODS = ("is_conj", "is_neg", "is_distributed", "is_pinned", "is_inference")


def is_signed(self) -> bool:
    """Whether the dtype holds negative numbers (floats and signed ints; not uint8 or bool)."""
    return self._data.dtype.kind in "fic"


def is_nonzero(self) -> bool:
    """The truth of a one-element tensor (torch's errors for more or fewer elements)."""
    if self._data.size == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if self._data.size > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(self._data.reshape(()) != 0)


def is_same_size(self, other) -> bool:
    if not isinstance(other, Tensor):
        raise TypeError(f"is_same_size(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")
    return self._data.shape == other._data.shape


def is_set_to(self, tensor) -> bool:
    """Whether both tensors are the same memory with the same offset, shape and strides."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"is_set_to(): argument 'tensor' (position 1) must be Tensor, not {type(tensor).__name__}")
    a, b = self._data, tensor._data
    return (_memory(self) is _memory(tensor) and a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.shape == b.shape and a.strides == b.strides)


def is_coalesced(self) -> bool:
    raise RuntimeError("is_coalesced expected sparse coordinate tensor layout but got Strided")


def _tensor_function(name, method):
    def f(input, *args, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
        return method(input, *args, **kwargs)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = method.__doc__
    return f


TENSOR_METHODS = {
    "select": select, "addcmul": addcmul, "addcdiv": addcdiv, "deg2rad": deg2rad, "rad2deg": rad2deg,
    "conj_physical": conj_physical, "ldexp": ldexp, "gcd": gcd, "lcm": lcm,
    "addr": accepts_deprecated("addr", addr), "addbmm": accepts_deprecated("addbmm", addbmm), "map2_": map2_,
    "unsqueeze_": unsqueeze_, "squeeze_": squeeze_, "transpose_": transpose_, "swapdims_": swapdims_,
    "swapaxes_": swapaxes_, "t_": t_, "resize_as_": resize_as_,
    "share_memory_": share_memory_, "apply_": apply_, "map_": map_, "fill_diagonal_": fill_diagonal_,
    "is_cpu": property(lambda self: True, doc="True: every tensor here lives in the CPU's memory"),
    **{name: property(_false(name), doc="False: a dense tensor on the CPU") for name in _DEVICE_PROPERTIES},
    **{name: _false(name) for name in _FALSE_METHODS},
    "is_shared": is_shared, "is_signed": is_signed, "is_nonzero": is_nonzero, "is_same_size": is_same_size,
    "is_set_to": is_set_to, "is_coalesced": is_coalesced,
    "register_post_accumulate_grad_hook": register_post_accumulate_grad_hook,
}
if hasattr(Tensor, "as_strided"):
    TENSOR_METHODS["as_strided_"] = as_strided_


def _select_function(input, dim, index):
    return select(input, dim, index)


_select_function.__name__ = _select_function.__qualname__ = "select"
FUNCTIONS = {
    "select": _select_function,
    **{name: _tensor_function(name, TENSOR_METHODS[name] if name in TENSOR_METHODS else _tensor_methods[name])
       for name in ("is_complex", "is_conj", "is_nonzero", "is_same_size", "is_signed", "is_inference",
                    "is_distributed")},
    "addcmul": function_accepting_deprecated("addcmul", _addcmul),
    "addcdiv": function_accepting_deprecated("addcdiv", _addcdiv),
    **{name: _tensor_function(name, fn) for name, fn in (("deg2rad", deg2rad), ("rad2deg", rad2deg),
       ("conj_physical", conj_physical), ("ldexp", ldexp), ("gcd", gcd), ("lcm", lcm), ("addr", addr),
       ("addbmm", addbmm))},
}
