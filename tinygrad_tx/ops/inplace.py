"""In-place ops (``x.add_(y)``, ``x += y``, ``x[i] = v``, ``x.zero_()``, ...) with torch's autograd rules.

An in-place op computes the new value with the ordinary out-of-place op and writes it into the
tensor's own array, so every view of that memory sees it. Then:

* **versions**: the tensor's version counter (shared with its views) goes up by one. A graph
  node that saved this memory for its backward recorded the version it saw; backward through
  it raises a RuntimeError naming the change (``autograd._check_saved``), never a silently wrong
  gradient. ``x.data`` is outside this bookkeeping, as in torch.
* **history**: when the graph is recorded, the tensor takes the out-of-place result's node as
  its own (torch "rebases" it): ``y = x * 2; y.add_(1)`` leaves ``y`` with the history
  ``(x * 2) + 1``. If the op saved the tensor's old value (``y.mul_(z)`` needs it for ``dz``),
  that saved array is copied first (torch's ``original_self``).
* **views**: an in-place change of a view (``y[0].mul_(3)``, ``y.T.add_(1)``) also rebases its
  base: the base's new node is :class:`CopySlices` (the old base everywhere except the viewed
  positions, which come from the new value), and the view's node is rebuilt from it.
* **leaves**: a leaf that requires grad (a parameter) cannot change in place while grad mode is
  on (``with no_grad():`` around optimizer-style updates), exactly torch's rule.
* **dtypes**: the result is cast to the tensor's dtype; an op whose result kind is wider than the
  tensor's (a float result into an int tensor, an int one into bool) raises, as torch does.
"""
from __future__ import annotations

import numpy as np

from .. import autograd
from ..core.function import Context, ArrayFunction
from ..core.grad_mode import is_grad_enabled, no_grad
from ..core.versions import unshare_saved
from ..core.tensor import Tensor
from .compat import DEPRECATED, undeprecate
from .movement import put

_KIND_ORDER = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


class CopySlices(ArrayFunction):
    """The base of a view after an in-place change of the view (torch's ``CopySlices``).

    y = base with y[P] = v, where P are the base positions the view covers (``positions``: for
    every view element, the flat index of the base element it is). The values were already
    written through the view, so the forward only returns the base array.
    dL/dbase = g with the positions P zeroed (they no longer depend on the old base);
    dL/dv = g[P] (each view element's gradient is the gradient of the base element it wrote).
    A 0-d base (``atleast_1d(s).mul_(2)``) is indexed as its one-element reshape (1,): a 0-d
    array takes no index arrays.
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, base, value, positions):
        ctx.zero_d = base.ndim == 0
        ctx.index = np.unravel_index(positions, (1,) if ctx.zero_d else base.shape)
        return base

    @staticmethod
    def backward(ctx, g):
        if ctx.zero_d:
            g1 = g.reshape(1)
            return put(np.copy(g1), ctx.index, 0).reshape(()), g1[ctx.index], None
        return put(np.copy(g), ctx.index, 0), g[ctx.index], None


def _view_positions(t: Tensor) -> np.ndarray:
    """For each element of the view ``t``, the flat (C-order) index of its base element."""
    view = t._view
    pos = np.arange(view.base._data.size).reshape(view.base._data.shape)
    with no_grad():
        for fn, i, args, kwargs in view.steps:
            args = list(args)
            args[i] = Tensor._from_op(pos, None)
            pos = fn.apply(*args, **kwargs)._data
    return pos


def _check_writable(self: Tensor, op: str) -> None:
    arr = self._data
    if not arr.flags.writeable:
        raise RuntimeError(f"{op}: this tensor's memory cannot be written in place (it is read-only, or an "
                           f"expanded view in which several elements share one memory location); "
                           f"shape {tuple(arr.shape)}. Use an out-of-place op, or .clone() first")
    if is_grad_enabled():
        if self._ctx is None and self._requires_grad:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation "
                               f"({op}); wrap the update in `with tinygrad_tx.no_grad():` as optimizers do")
        view = self._view
        if view is not None and view.base._ctx is None and view.base._requires_grad:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place "
                               f"operation ({op})")


def _dense_range(a: np.ndarray):
    """The byte range [start, end) of ``a`` when its elements fill it exactly once in some order
    of the dims (torch's "non-overlapping and dense"), else None."""
    dims = sorted((st, n) for st, n in zip(a.strides, a.shape) if n != 1)
    expected = a.itemsize
    for st, n in dims:
        if st != expected:
            return None
        expected *= n
    start = a.__array_interface__["data"][0]
    return start, start + a.nbytes


def _check_partial_overlap(out: np.ndarray, inputs, op: str, written=None) -> None:
    """torch's ``assert_no_partial_overlap``: an input that shares some but not all of the written
    memory ``out`` (``y += y.T``, ``y[1:] = y[:-1]``, ``y.add_(y[0])``) would be read while it is
    written; torch refuses where it can tell (both dense), and so do we rather than pick a result.
    ``written``: the tensor written to (an input that is that very tensor is no overlap)."""
    if out.size == 0:
        return
    out_range = None
    for a in inputs:
        if not isinstance(a, Tensor) or a is written or a._data.size == 0 or not np.may_share_memory(a._data, out):
            continue
        if out_range is None:
            out_range = _dense_range(out)
            if out_range is None:
                return
        a_range = _dense_range(a._data)
        if a_range is None:
            continue
        same = a_range == out_range and a._data.strides == out.strides and a._data.shape == out.shape
        if not same and a_range[0] < out_range[1] and out_range[0] < a_range[1]:
            raise RuntimeError(f"{op}: unsupported operation: some elements of the input tensor and the written-to "
                               "tensor refer to a single memory location. Please clone() the tensor before "
                               "performing the operation.")


def _cast_into(self: Tensor, new: Tensor, op: str) -> Tensor:
    """``new`` in ``self``'s dtype; a result of a wider kind than ``self`` raises, as torch."""
    have, want = new._data.dtype, self._data.dtype
    if have == want:
        return new
    if _KIND_ORDER.get(have.kind, 9) > _KIND_ORDER.get(want.kind, 9):
        raise RuntimeError(f"{op}: result type {have} can't be cast to the desired output type {want}")
    return new._cast(want)


def apply_inplace(self: Tensor, op: str, compute, *args, **kwargs) -> Tensor:
    """Run ``compute(self, *args, **kwargs)`` (an out-of-place op returning the new value) and make
    its result ``self``'s value and history. Returns ``self``."""
    if not isinstance(self, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(self).__name__}")
    _check_writable(self, op)
    if op != "__setitem__":   # setitem checks the region it writes (setitem below)
        _check_partial_overlap(self._data, (*args, *kwargs.values()), op, self)
    records = is_grad_enabled() and (self._requires_grad or any(
        isinstance(a, Tensor) and a._requires_grad for a in args) or any(
        isinstance(v, Tensor) and v._requires_grad for v in kwargs.values()))
    if not records:
        with no_grad():
            new = _cast_into(self, compute(self, *args, **kwargs), op)
        _write(self, new._data)
        return self
    if self._view is not None and self._view.multi is not None:
        name, k = self._view.multi
        raise RuntimeError(f"Output {k} of {name} is a view and is being modified inplace ({op}). This view is "
                           "the output of a function that returns multiple views. Such functions do not allow "
                           "the output views to be modified inplace. You should replace the inplace operation "
                           "by an out-of-place one.")
    start = next(autograd._creation_order)
    new = _cast_into(self, compute(self, *args, **kwargs), op)
    if self._vc is not None:
        _keep_old_values(new._ctx, start, self._vc)
    _write(self, new._data)
    view = self._view
    if view is None:
        self._ctx, self._requires_grad = new._ctx, new._requires_grad
        return self
    # a view: the base's new history is CopySlices(old base, new value); the view is rebuilt from it
    base = view.base
    rebased = CopySlices.apply(base, new, _view_positions(self))
    base._ctx, base._requires_grad = rebased._ctx, rebased._requires_grad
    self._refresh_view()
    return self


def _keep_old_values(ctx, start: int, counter) -> None:
    """Every node the in-place op's computation made (creation number above ``start``) that saved
    the tensor's memory gets its own copy of the old values, which its backward needs."""
    stack = [ctx]
    while stack:
        node = stack.pop()
        if isinstance(node, Context) and node.seq > start:
            unshare_saved(node, counter)
            stack.extend(node.input_nodes)


def _write(self: Tensor, values: np.ndarray) -> None:
    """Write ``values`` into ``self``'s array (every view of that memory sees them); bump the version."""
    if values is not self._data:
        np.copyto(self._data, values, casting="unsafe")
    self._bump()


# ============================================================================ the in-place ops

def _fill_value(self: Tensor, value):
    """``value`` everywhere in ``self``'s shape: no gradient to the old values; a 0-d tensor value
    that requires grad gets the sum of the gradient (torch's fill_ with a tensor)."""
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value._data.ndim} dimensions")
        return _replaced(self, value._cast(self._data.dtype).reshape(()))   # the old values get a zero gradient
    if not isinstance(value, (bool, int, float, np.generic)):
        raise TypeError(f"fill_: value must be a number or a 0-d Tensor, got {type(value).__name__}")
    return _replaced(self, np.full(self._data.shape, value, dtype=self._data.dtype))


def _replaced(self: Tensor, value) -> Tensor:
    """``value`` (an array, or a Tensor whose gradient is kept) as the new value, which does not
    depend on the old one: its node gives the old value zero gradient."""
    from ..tensor import where
    if not isinstance(value, Tensor):
        value = Tensor._from_op(value, None)
    return where(np.ones(self._data.shape, dtype=bool), value, self)


def fill_(self, value):
    return apply_inplace(self, "fill_", _fill_value, value)


def zero_(self):
    return apply_inplace(self, "zero_", _fill_value, 0)


def _copy_value(self: Tensor, src, non_blocking=False):
    src = src if isinstance(src, Tensor) else Tensor(src)
    try:
        fits = np.broadcast_shapes(src._data.shape, self._data.shape) == self._data.shape
    except ValueError:
        fits = False
    if not fits:
        raise RuntimeError(f"copy_: the source of shape {src._data.shape} cannot be broadcast to the "
                           f"destination's shape {self._data.shape}")
    return _replaced(self, src._cast(self._data.dtype))


def copy_(self, src, non_blocking=False):
    """Copy ``src`` (broadcast, cast to this dtype) into this tensor; the gradient goes to ``src``."""
    return apply_inplace(self, "copy_", _copy_value, src)


def _setitem(self: Tensor, index, value):
    from . import indexing
    return indexing.index_put(self, index, value)


def _setitem_target(self: Tensor, index):
    """The part of ``self`` that torch's ``x[index] = v`` writes into: the view the basic items
    select (index arrays whole), which torch then copies or index-puts ``v`` into; None if the
    index is out of range (the write itself then raises)."""
    from .movement import _normalize_index
    idx, _ = _normalize_index(index, self.ndim)
    basic = []
    for it in (idx if isinstance(idx, tuple) else (idx,)):
        if isinstance(it, np.ndarray):
            basic.extend([slice(None)] * (it.ndim if it.dtype == np.bool_ else 1))
        else:
            basic.append(None if isinstance(it, (bool, np.bool_)) else it)
    if not any(it is Ellipsis for it in basic):
        basic.append(Ellipsis)   # integers for every dim: a 0-d view, not a NumPy scalar
    try:
        return self._data[tuple(basic)]
    except (IndexError, TypeError, ValueError):
        return None


def setitem(self, index, value):
    """``x[index] = value``: differentiable item assignment (torch's ``copy_slices``/``index_put_``)."""
    if isinstance(value, Tensor) and value._data.ndim > 0 and np.may_share_memory(value._data, self._data):
        target = _setitem_target(self, index)
        if target is not None:
            _check_partial_overlap(target, (value,), "__setitem__")
    if isinstance(value, Tensor) and value._data.dtype != self._data.dtype:
        value = value._cast(self._data.dtype) if value._data.dtype.kind != "c" else value
    return apply_inplace(self, "__setitem__", _setitem, index, value)


def _draw(kind):
    def compute(self: Tensor, *args, generator=None, **kwargs):
        from .. import generator as _g
        if kind == "bernoulli":   # p first; a Tensor p is its array
            p = args[0] if args else kwargs.pop("p", 0.5)
            p = p._data if isinstance(p, Tensor) else p
            array = _g.draw_bernoulli(p, self._data.shape, self._data.dtype, generator=generator)
        else:                     # drawn in self's memory order, as torch's TensorIterator
            array = getattr(_g, "draw_" + kind)(self._data.shape, self._data.dtype, *args,
                                                generator=generator, layout=self._data, **kwargs)
        return _replaced(self, array)

    def method(self, *args, generator=None, **kwargs):
        if self._data.dtype.kind != "f" and kind != "bernoulli":
            raise RuntimeError(f"{kind}_ expects a floating point tensor, got dtype {self._data.dtype}")
        try:
            return apply_inplace(self, kind + "_", compute, *args, generator=generator, **kwargs)
        except TypeError as e:   # the draw's argument errors name the method called
            if e.args and isinstance(e.args[0], str) and e.args[0].startswith(f"draw_{kind}("):
                e.args = (f"{kind}_" + e.args[0][len(f"draw_{kind}"):],) + e.args[1:]
            raise
    method.__name__ = kind + "_"
    method.__doc__ = f"Fill this tensor in place with draws of ``factories.draw_{kind}`` (no gradient to the old values)."
    return method


def _inplace_of(name: str):
    """``name_``: the in-place twin of the out-of-place method ``name`` (looked up when called)."""
    deprecated = name in DEPRECATED and len(DEPRECATED[name][1])

    def method(self, *args, **kwargs):
        if deprecated and len(args) > deprecated:   # add_(-lr, grad): torch's deprecated form, with its warning
            args, kwargs = undeprecate(name + "_", args, kwargs)
        try:
            return apply_inplace(self, name + "_", getattr(Tensor, name), *args, **kwargs)
        except (TypeError, ValueError, IndexError, RuntimeError) as e:
            _rename_error(e, name)
            raise
    method.__name__ = name + "_"
    method.__doc__ = f"In place ``{name}`` (see ``ops/inplace.py`` for the autograd rules)."
    return method


def _rename_error(e: Exception, name: str) -> None:
    """An argument error of the out-of-place ``name`` (``add() takes ...``, ``add(): argument ...``)
    raised by its in-place twin names the method the user called (``add_()``), as torch's do."""
    if e.args and isinstance(e.args[0], str):
        for prefix in (name, "Tensor." + name):   # a function's message, a Tensor class method's
            if e.args[0].startswith(prefix + "("):
                e.args = (name + "_" + e.args[0][len(prefix):],) + e.args[1:]
                return


# every out-of-place method with an in-place twin in torch; the ones a build lacks are skipped
_TWINS = ("add", "sub", "mul", "div", "pow", "neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh",
          "sigmoid", "relu", "clamp", "clip", "clamp_min", "clamp_max", "masked_fill", "floor", "ceil",
          "round", "trunc", "frac", "sin", "cos", "tan", "sign", "square", "reciprocal", "fmod",
          "remainder", "lerp", "log1p", "expm1", "log2", "log10", "erf", "atan", "asin", "acos", "sinh",
          "cosh", "asinh", "acosh", "atanh", "floor_divide", "true_divide", "nan_to_num", "index_put",
          "index_fill", "index_add", "index_copy", "scatter", "scatter_add", "masked_scatter", "tril",
          "triu", "addcmul", "addcdiv", "maximum", "minimum", "logical_not", "logical_and",
          "logical_or", "logical_xor", "subtract", "multiply", "divide", "negative", "hardtanh",
          "leaky_relu", "elu", "silu", "xlogy", "copysign", "hypot", "atan2", "float_power", "eq", "ne",
          "lt", "le", "gt", "ge",
          # torch's other in-place twins of value ops (tests/test_surface_round3.py checks the list against
          # torch's own Tensor; the view ops unsqueeze_, t_, ... are in compat.py)
          "absolute", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh",
          "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
          "bitwise_right_shift", "cumsum", "cumprod", "deg2rad", "rad2deg", "digamma", "lgamma", "erfc",
          "erfinv", "exp2", "fix", "gcd", "lcm", "greater", "greater_equal", "less", "less_equal",
          "not_equal", "heaviside", "i0", "igamma", "igammac", "ldexp", "logit", "mvlgamma",
          "nextafter", "polygamma", "renorm", "sgn", "sinc", "addmm", "addmv", "addr", "baddbmm",
          "addbmm", "index_reduce", "scatter_reduce", "put", "conj_physical")

_AUGMENTED = {"__iadd__": "add", "__isub__": "sub", "__imul__": "mul", "__itruediv__": "div",
              "__ipow__": "pow", "__imod__": "remainder", "__ifloordiv__": "floor_divide",
              "__iand__": "__and__", "__ior__": "__or__", "__ixor__": "__xor__", "__imatmul__": None}


def _augmented(name, target):
    if target is None:
        def refuse(self, other):
            raise RuntimeError("@= is not supported in place (torch neither): write x = x @ y")
        return refuse

    def method(self, other):
        return apply_inplace(self, name, getattr(Tensor, target), other)
    method.__name__ = name
    return method


def in_place_methods() -> dict:
    """The in-place methods this build can offer, for ``_bind.py``; called after the op modules."""
    methods = {name + "_": _inplace_of(name) for name in _TWINS if hasattr(Tensor, name)}
    methods.update({name: _augmented(name, target) for name, target in _AUGMENTED.items()})
    methods.update(fill_=fill_, zero_=zero_, copy_=copy_, __setitem__=setitem,
                   normal_=_draw("normal"), uniform_=_draw("uniform"), exponential_=_draw("exponential"),
                   bernoulli_=_draw("bernoulli"), geometric_=_draw("geometric"),
                   cauchy_=_draw("cauchy"), log_normal_=_draw("log_normal"))
    return methods


TENSOR_METHODS = None   # computed by in_place_methods() when bound: it depends on what was bound before
FUNCTIONS = {}
