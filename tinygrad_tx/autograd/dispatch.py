"""Gradients of gradients: the same NumPy backward, run on Tensors.

Every backward in the engine is written in NumPy (``g * y``, ``np.matmul(g, np.swapaxes(b, -1,
-2))``, ``np.where(x > 0, g, 0)``). To differentiate a gradient, ``backward(create_graph=True)``
runs that very code again, but hands it Tensors instead of arrays: ``g`` is a Tensor, and
``ctx.saved_tensors`` gives back the Tensors the saved arrays came from (the op's inputs and its
output, with their graph history). NumPy's own protocols (``__array_ufunc__`` for ``np.exp``,
``np.multiply``, ...; ``__array_function__`` for ``np.sum``, ``np.where``, ...) send each NumPy
call on a Tensor to the Tensor op of the same meaning, so the backward is recorded as a graph
like any forward, and can itself be run backwards. There is one derivation per op -- the one a
learner reads -- and no second, hidden copy of it.

Never silently wrong: while a backward runs on Tensors (``active()``),

* a NumPy call with no Tensor twin here raises, naming it (a ``TypeError``);
* turning a Tensor into an array (``np.asarray``, an ``out=`` buffer, ``np.add.at``) raises:
  the value would leave the graph and its derivative would be lost;
* an op whose backward is not written to run on Tensors (``ArrayFunction.differentiable_backward
  = False``: speed tricks with in-place buffers or SciPy) is run on arrays and its gradients are
  marked, as torch's ``once_differentiable``: differentiating them again raises, naming the op;
* a saved array that is neither an input nor the output (an intermediate of the forward) cannot be
  traced back to the inputs: reading it raises unless the op lists it in ``saved_constants``
  (values that do not depend on the inputs, such as a dropout mask).
"""
from __future__ import annotations

import operator

import numpy as np


from ..core.grad_mode import _dispatch
from ..core.tensor import Tensor


def active() -> bool:
    return _dispatch.active


def _tg():
    import tinygrad_tx
    return tinygrad_tx


def _const(x):
    """A Tensor for a NumPy value met in a backward (a constant: no history)."""
    return Tensor._from_op(np.asarray(x), None)


def _as_t(x):
    return x if isinstance(x, Tensor) else _const(x)


def _binary(op):
    """A binary ufunc as the Tensor operator: a NumPy operand on the left becomes a constant
    Tensor (left as it is, NumPy would call back here); a Python number stays a number."""
    def f(a, b):
        if isinstance(a, (np.ndarray, np.generic)):
            a = _const(a)
        return op(a, b)
    return f


def _method(name):
    def f(x, *args):
        return getattr(_as_t(x), name)(*args)
    return f


def _tensor_pair(a, b):
    """Both operands as Tensors (``tinygrad_tx.maximum`` takes no Python number, as torch's): a
    number becomes a constant of the other operand's dtype (``np.maximum(x, 0)``)."""
    if not isinstance(a, Tensor):
        a = _const(np.asarray(a, dtype=b._data.dtype))
    if not isinstance(b, Tensor):
        b = _const(np.asarray(b, dtype=a._data.dtype))
    return a, b


def _square(x):
    return x * x


def _reciprocal(x):
    return 1.0 / x


# NumPy ufunc name -> the Tensor computation of the same meaning.
UFUNCS = {
    "add": _binary(operator.add), "subtract": _binary(operator.sub), "multiply": _binary(operator.mul),
    "true_divide": _binary(operator.truediv), "divide": _binary(operator.truediv),
    "power": _binary(operator.pow), "matmul": _binary(operator.matmul),
    "greater": _binary(operator.gt), "greater_equal": _binary(operator.ge), "less": _binary(operator.lt),
    "less_equal": _binary(operator.le), "equal": _binary(operator.eq), "not_equal": _binary(operator.ne),
    "logical_and": _binary(operator.and_), "logical_or": _binary(operator.or_),
    "maximum": _binary(lambda a, b: _tg().maximum(*_tensor_pair(a, b))),
    "minimum": _binary(lambda a, b: _tg().minimum(*_tensor_pair(a, b))),
    "negative": operator.neg, "positive": lambda x: x, "square": _square, "reciprocal": _reciprocal,
    "absolute": _method("abs"), "exp": _method("exp"), "log": _method("log"), "log1p": _method("log1p"),
    "expm1": _method("expm1"), "sqrt": _method("sqrt"), "tanh": _method("tanh"), "sinh": _method("sinh"),
    "cosh": _method("cosh"), "sin": _method("sin"), "cos": _method("cos"), "tan": _method("tan"),
    "arctan": _method("atan"), "arcsin": _method("asin"), "arccos": _method("acos"),
    "arctanh": _method("atanh"), "arcsinh": _method("asinh"), "arccosh": _method("acosh"),
    "sign": _method("sign"), "exp2": _method("exp2"), "log2": _method("log2"), "log10": _method("log10"),
    "erf": _method("erf"), "expit": _method("sigmoid"), "logical_not": _method("logical_not"),
    "arctan2": _binary(lambda a, b: _tg().atan2(a, b)), "hypot": _binary(lambda a, b: _tg().hypot(a, b)),
}

# Ufuncs whose result has no derivative (comparisons of values, rounding, tests): computed on the
# arrays, the result a constant.
CONSTANT_UFUNCS = {"isnan", "isinf", "isfinite", "signbit", "floor", "ceil", "rint", "trunc", "invert",
                   "bitwise_and", "bitwise_or", "bitwise_xor", "logical_xor", "floor_divide"}


def _data(x):
    return x._data if isinstance(x, Tensor) else x


def array_ufunc(ufunc, method, inputs, kwargs):
    """``Tensor.__array_ufunc__`` while a backward runs on Tensors."""
    if method != "__call__" or kwargs.get("out") is not None:
        raise TypeError(f"np.{ufunc.__name__}.{method}{' with out=' if method == '__call__' else ''} on a "
                        "Tensor: a backward that writes into arrays cannot be differentiated (create_graph=True)")
    kwargs = {k: v for k, v in kwargs.items() if k not in ("casting",)}
    if kwargs:
        raise TypeError(f"np.{ufunc.__name__}(..., {', '.join(kwargs)}=) on a Tensor is not supported in a "
                        "differentiated backward")
    name = ufunc.__name__
    fn = UFUNCS.get(name)
    if fn is not None:
        return fn(*inputs)
    if name in CONSTANT_UFUNCS:
        return _const(ufunc(*[_data(x) for x in inputs]))
    raise TypeError(f"np.{name} on a Tensor: no Tensor op of that meaning is known, so a backward using "
                    "it cannot be differentiated (create_graph=True)")


# --------------------------------------------------------------------------- array functions

def _axis_kw(kwargs):
    out = {}
    if "axis" in kwargs and kwargs["axis"] is not None:
        out["dim"] = kwargs["axis"]
    if kwargs.get("keepdims"):
        out["keepdim"] = True
    return out


def _reduction(meth):
    def f(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
        if out is not None or kw:
            raise TypeError(f"np.{meth}(..., {', '.join(['out'] * (out is not None) + list(kw))}=) in a "
                            "differentiated backward")
        a = _as_t(a)
        r = getattr(a, meth)(**_axis_kw({"axis": axis, "keepdims": keepdims}))
        if isinstance(r, tuple):   # max/min with a dim give (values, indices)
            r = r[0]
        if dtype is not None and np.dtype(dtype) != r._data.dtype:
            r = r.to(_tg().dtypes.from_numpy_dtype(np.dtype(dtype)))
        return r
    return f


def _swapaxes(a, axis1, axis2):
    return _as_t(a).transpose(axis1, axis2)


def _moveaxis(a, source, destination):
    return _as_t(a).movedim(source, destination)


def _transpose(a, axes=None):
    a = _as_t(a)
    return a.permute(*(axes if axes is not None else range(a.ndim)[::-1]))


def _reshape(a, shape=None, order="C", *, newshape=None):
    return _as_t(a).reshape(shape if shape is not None else newshape)


def _expand_dims(a, axis):
    """NumPy's rule: the axes (negative ones too) are positions in the result."""
    a = _as_t(a)
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    ndim = a.ndim + len(axes)
    for ax in sorted(int(ax) % ndim for ax in axes):
        a = a.unsqueeze(ax)
    return a


def _squeeze(a, axis=None):
    a = _as_t(a)
    return a.squeeze() if axis is None else a.squeeze(axis)


def _broadcast_to(a, shape, subok=False):
    return _as_t(a).expand(*shape)


def _where(cond, x=None, y=None):
    if x is None:
        raise TypeError("np.where(cond) (the indices form) in a differentiated backward")
    return _tg().where(_as_t(cond), x if isinstance(x, Tensor) or np.ndim(x) == 0 else _const(x),
                       y if isinstance(y, Tensor) or np.ndim(y) == 0 else _const(y))


def _like(fill):
    def f(a, dtype=None, order="K", subok=True, shape=None, **kw):
        d = _data(a)
        return _const(np.full(d.shape if shape is None else shape, fill, dtype=dtype or d.dtype))
    return f


def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None):
    d = _data(a)
    return _const(np.full(d.shape if shape is None else shape, _data(fill_value), dtype=dtype or d.dtype))


def _concatenate(arrays, axis=0, out=None, **kw):
    return _tg().cat([_as_t(a) for a in arrays], dim=axis)


def _stack(arrays, axis=0, out=None, **kw):
    return _tg().stack([_as_t(a) for a in arrays], dim=axis)


def _take_along_axis(arr, indices, axis):
    return _as_t(arr).gather(axis, _as_t(indices))


def _einsum(subscripts, *operands, **kw):
    return _tg().einsum(subscripts, *[_as_t(o) for o in operands])


def _tril(m, k=0):
    return _as_t(m).tril(k)


def _triu(m, k=0):
    return _as_t(m).triu(k)


def _cumsum(a, axis=None, dtype=None, out=None):
    a = _as_t(a)
    return a.reshape(-1).cumsum(0) if axis is None else a.cumsum(axis)


def _cumprod(a, axis=None, dtype=None, out=None):
    a = _as_t(a)
    return a.reshape(-1).cumprod(0) if axis is None else a.cumprod(axis)


def _roll(a, shift, axis=None):
    return _as_t(a).roll(shift, axis)


def _take(a, indices, axis=None, out=None, mode="raise"):
    a = _as_t(a)
    if axis is None:
        return a.reshape(-1)[np.asarray(indices)]
    return a[(slice(None),) * (axis % a.ndim) + (np.asarray(indices),)]


def _flip(m, axis=None):
    m = _as_t(m)
    return m.flip(tuple(range(m.ndim)) if axis is None else ((axis,) if isinstance(axis, int) else tuple(axis)))


def _diagonal(a, offset=0, axis1=0, axis2=1):
    return _as_t(a).diagonal(offset, axis1, axis2)


def _clip(a, a_min=None, a_max=None, out=None, **kw):
    return _as_t(a).clamp(a_min, a_max)


def _copy(a, order="K", subok=False):
    return _as_t(a).clone()


def _tensordot(a, b, axes=2):
    """``np.tensordot`` as one ``einsum``: the contracted axes of a and b share letters."""
    a, b = _as_t(a), _as_t(b)
    if isinstance(axes, (int, np.integer)):
        axes = (list(range(a.ndim - int(axes), a.ndim)), list(range(int(axes))))
    ax_a, ax_b = ([x] if isinstance(x, (int, np.integer)) else list(x) for x in axes)
    ax_a, ax_b = [x % a.ndim for x in ax_a], [x % b.ndim for x in ax_b]
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    sa = [next(letters) for _ in range(a.ndim)]
    sb = [next(letters) for _ in range(b.ndim)]
    for i, j in zip(ax_a, ax_b):
        sb[j] = sa[i]
    out = [c for i, c in enumerate(sa) if i not in ax_a] + [c for j, c in enumerate(sb) if j not in ax_b]
    return _tg().einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(out)}", a, b)


def _pad(array, pad_width, mode="constant", constant_values=0, **kw):
    """``np.pad`` with a constant as ``nn.functional.pad`` (torch's flat pads, last axis first)."""
    if mode != "constant" or kw:
        raise TypeError(f"np.pad(mode={mode!r}) in a differentiated backward: only the constant mode")
    a = _as_t(array)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (a.ndim, 2))
    flat = [int(w) for before_after in widths[::-1] for w in before_after]
    return _tg().nn.functional.pad(a, flat, value=float(_data(constant_values)))


def _dot(a, b, out=None):
    return _as_t(a) @ b


def _outer(a, b, out=None):
    return _as_t(a).reshape(-1, 1) * _as_t(b).reshape(1, -1)


def _split(ary, indices_or_sections, axis=0):
    a = _as_t(ary)
    n = a.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        sizes = [n // int(indices_or_sections)] * int(indices_or_sections)
    else:
        bounds = [0] + [min(int(i), n) for i in indices_or_sections] + [n]
        sizes = [max(e - s, 0) for s, e in zip(bounds[:-1], bounds[1:])]
    return list(a.split(sizes, axis))


def _astype(x, dtype, /, *, copy=True, device=None):
    x = _as_t(x)
    dt = np.dtype(dtype)
    return x if dt == x._data.dtype and not copy else x.to(_tg().dtypes.from_numpy_dtype(dt))


def _linsolve():
    from ..ops import linsolve
    return linsolve


def _linalg_solve(a, b):
    return _linsolve().numpy_solve(_as_t(a), _as_t(b))


def _linalg_det(a):
    return _linsolve().det(_as_t(a))


def _linalg_inv(a):
    return _linsolve().inv(_as_t(a))


def _on_data(func):
    """A NumPy function whose answer is not a differentiable value (a shape, a dtype, a test)."""
    def f(*args, **kwargs):
        return func(*[_data(a) for a in args], **{k: _data(v) for k, v in kwargs.items()})
    return f


FUNCTIONS = {
    np.sum: _reduction("sum"), np.mean: _reduction("mean"), np.prod: _reduction("prod"),
    np.max: _reduction("amax"), np.amax: _reduction("amax"), np.min: _reduction("amin"), np.amin: _reduction("amin"),
    np.swapaxes: _swapaxes, np.moveaxis: _moveaxis, np.transpose: _transpose, np.reshape: _reshape,
    np.expand_dims: _expand_dims, np.squeeze: _squeeze, np.broadcast_to: _broadcast_to, np.where: _where,
    np.zeros_like: _like(0), np.ones_like: _like(1), np.full_like: _full_like,
    np.concatenate: _concatenate, np.stack: _stack, np.take_along_axis: _take_along_axis, np.einsum: _einsum,
    np.tril: _tril, np.triu: _triu, np.cumsum: _cumsum, np.flip: _flip, np.diagonal: _diagonal,
    np.clip: _clip, np.copy: _copy, np.dot: _dot, np.outer: _outer, np.split: _split, np.astype: _astype,
    np.linalg.solve: _linalg_solve, np.linalg.det: _linalg_det, np.linalg.inv: _linalg_inv,
    np.cumprod: _cumprod, np.roll: _roll, np.take: _take, np.tensordot: _tensordot, np.pad: _pad,
    np.shape: _on_data(np.shape), np.ndim: _on_data(np.ndim), np.size: _on_data(np.size),
    np.result_type: _on_data(np.result_type), np.any: _on_data(np.any), np.all: _on_data(np.all),
    np.count_nonzero: _on_data(np.count_nonzero), np.array_equal: _on_data(np.array_equal),
    np.isfinite: _on_data(np.isfinite), np.isnan: _on_data(np.isnan),
}


def array_function(func, args, kwargs):
    """``Tensor.__array_function__`` while a backward runs on Tensors."""
    impl = FUNCTIONS.get(func)
    if impl is None:
        raise TypeError(f"np.{getattr(func, '__name__', func)} on a Tensor: no Tensor op of that meaning is "
                        "known, so a backward using it cannot be differentiated (create_graph=True)")
    return impl(*args, **kwargs)
