"""The Tensor's Python operators, casts and NumPy protocols: the methods of ``Tensor`` that compute.

The class itself (data, gradient, graph node) is the core's, ``tinygrad_tx/core/tensor.py``; it
computes nothing. Its operators are here: each one prepares its arguments (dtype promotion,
dims) and calls one Function of ``tinygrad_tx/ops/`` (_E = ops/elementwise.py, _M =
ops/movement.py, _MM = ops/matmul.py), whose forward and backward sit side by side there. They
are written as the methods of ``_TensorMethods`` and bound onto ``Tensor`` in one place,
``tinygrad_tx/_bind.py`` (this module first), with the methods of the op modules (sum, sin,
softmax, ...).
"""
from __future__ import annotations

import numbers
import operator

import numpy as np

from .core import dtypes
from .core import device as _device
from .core import seam as _seam
from .core.tensor import Tensor, _adopt, _canonical_dim, _to_array  # noqa: F401  (re-exported: tensor.Tensor)
from . import layout as _layout
from . import printing as _printing
from .autograd import dispatch as _dispatch
from .autograd.node_names import named as _named
from .core import grad_mode as _grad_mode
from .core import versions as _versions

_rng = np.random.default_rng()


def default_generator() -> np.random.Generator:
    """The global generator (a ``tinygrad_tx.Generator``, installed by ``generator.py``; seeded by
    ``tinygrad_tx.manual_seed``) that randn/rand, dropout and default initialisation draw from."""
    return _rng


class _TensorMethods:
    """Tensor's methods that compute, bound onto ``Tensor`` by ``_bind.py`` (``TENSOR_METHODS``)."""

    @property
    def name(self):
        """A label for the study tools (graph pictures, backward traces); None by default."""
        return self._name

    @name.setter
    def name(self, value):
        self._name = value
        if self._ctx is not None:   # the graph node outlives this Tensor object: label it too
            self._ctx.label = value

    def __float__(self):
        return float(self._one_element("a Python float"))

    def __int__(self):
        return int(self._one_element("a Python int"))

    def ndimension(self) -> int:
        return self._data.ndim

    def nelement(self) -> int:
        return self.numel()

    @property
    def is_cuda(self) -> bool:
        return False

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return self._data.nbytes

    def element_size(self) -> int:
        return self._data.itemsize

    def __complex__(self):
        return complex(self._one_element("a Python complex"))

    def __index__(self):
        if self._data.dtype.kind not in "iub":
            raise TypeError(f"only integer tensors of a single element can be converted to an index, "
                            f"got dtype {self._data.dtype} and shape {self._data.shape}")
        return int(self._one_element("an index"))

    def stride(self, dim=None):
        strides = tuple(st // self._data.itemsize for st in self._data.strides)
        return strides if dim is None else strides[_canonical_dim(dim, self.ndim, "stride")]


    def is_contiguous(self, memory_format=None) -> bool:
        """Whether the memory holds the elements in C order (or in ``memory_format``'s order:
        ``channels_last`` is (N, H, W, C) for a 4-D tensor; see ``layout.py``)."""
        if memory_format is None:
            return bool(self._data.flags.c_contiguous)
        return _layout.is_contiguous(self._data, _layout.check(memory_format, "is_contiguous"))


    def data_ptr(self) -> int:
        _seam.read(self, "data_ptr() (a memory address)", values=False)   # an address differs at each call
        return self._data.__array_interface__["data"][0]


    def __format__(self, spec):
        _seam.read(self, "format()")
        if self._data.ndim == 0:
            return format(self._data.item(), spec)
        if spec:
            raise TypeError(f"unsupported format string {spec!r} for a Tensor of shape {self._data.shape}: "
                            "only one-element (0-d) tensors take a format spec; use .item() or .tolist()")
        return repr(self)


    def __contains__(self, element):
        if isinstance(element, Tensor):
            element = element._data
        elif not isinstance(element, (numbers.Number, np.generic, np.ndarray)):
            raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                               f"{type(element).__name__}")
        _seam.read(self, "`in` on a tensor")
        return bool(np.any(self._data == element))


    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """NumPy's ufuncs on Tensors. A ufunc with a Tensor twin (np.exp, np.multiply, ...) gives
        a Tensor, as torch's tensors do (so ``ndarray * Tensor`` is a Tensor); others compute on
        the arrays. While a backward runs on Tensors (``create_graph=True``) every call must
        have a Tensor twin (``autograd/dispatch.py``)."""
        if _dispatch._dispatch.active:
            return _dispatch.array_ufunc(ufunc, method, inputs, kwargs)
        if any(isinstance(o, Tensor) for o in kwargs.get("out", ())):
            # torch's tensors refuse too (NumPy: "return arrays must be of ArrayType"); writing
            # behind autograd's back would skip the version check of a tensor saved for backward
            raise TypeError(f"np.{ufunc.__name__}(..., out=<Tensor>): out= must be a NumPy array, not a "
                            f"Tensor; use the in-place op (e.g. t.mul_(2) for np.multiply(t, 2, out=t))")
        if method == "at" and isinstance(inputs[0], Tensor):   # np.add.at writes into its first operand
            raise TypeError(f"np.{ufunc.__name__}.at: the first operand must be a NumPy array, not a Tensor "
                            "(torch's tensors refuse too); use index_put_(..., accumulate=True) or index_add_")
        if method == "__call__" and not kwargs:
            fn = _dispatch.UFUNCS.get(ufunc.__name__)
            if fn is not None:
                return fn(*inputs)
        _seam.read(self, f"np.{ufunc.__name__} (no Tensor twin) on a tensor")
        inputs = [x._data if isinstance(x, Tensor) else x for x in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(x._data if isinstance(x, Tensor) else x for x in kwargs["out"])
        return getattr(ufunc, method)(*inputs, **kwargs)


    def __array_function__(self, func, types, args, kwargs):
        """NumPy functions on Tensors behave as NumPy makes them behave for any array-like
        (``np.sum(t, axis=1)`` calls ``t.sum``, ``np.concatenate`` converts): NumPy's own
        implementation, as without this hook; while a backward runs on Tensors they are the
        Tensor ops (``autograd/dispatch.py``)."""
        if _dispatch._dispatch.active:
            return _dispatch.array_function(func, args, kwargs)
        return func._implementation(*args, **kwargs)


    def __array__(self, dtype=None, copy=None):
        if _dispatch._dispatch.active:
            raise TypeError(f"a {tuple(self._data.shape)} Tensor was turned into a NumPy array inside a "
                            "backward that is being differentiated (create_graph=True): its derivative "
                            "would be lost")
        _seam.read(self, "np.asarray(tensor)")
        if dtype is not None:
            return self._data.astype(dtype)
        return self._data.copy() if copy else self._data


    def __repr__(self):
        _seam.read(self, "repr()/str()")
        cls = type(self)
        prefix = "tensor(" if cls is Tensor or cls.__dict__.get("_prints_as_tensor") else f"{cls.__name__}("
        return _printing.tensor_repr(self._data, prefix=prefix,
                                     grad_fn=None if self._ctx is None else self._ctx.name(),
                                     requires_grad=self._requires_grad)


    # ------------------------------------------------------------------ dtype and device casts
    def to(self, *args, **kwargs) -> "Tensor":
        """``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other)`` (its dtype and device),
        with ``dtype=``/``device=``/``copy=``/``non_blocking=`` keywords, as torch's."""
        dtype = kwargs.pop("dtype", None)
        dev = kwargs.pop("device", None)
        copy = kwargs.pop("copy", False)
        kwargs.pop("non_blocking", None)
        memory_format = _layout.check(kwargs.pop("memory_format", None), "to")
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        for a in args:
            if isinstance(a, Tensor):
                dtype = a._data.dtype
            elif isinstance(a, (str, _device.device)) and not (isinstance(a, str) and a in dtypes._BY_NAME):
                dev = a
            elif isinstance(a, bool):   # to(dtype, non_blocking, copy) positional flags
                continue
            else:
                dtype = a
        _device.check(dev)
        out = self if dtype is None else self._cast(dtypes.resolve(dtype, "to(dtype)"))
        if memory_format not in (None, _layout.preserve_format) and not _layout.has_strides_of(out._data, memory_format):
            return out.clone(memory_format)
        return out.clone() if copy and out is self else out

    def _cast(self, dtype) -> "Tensor":
        from .ops.elementwise import Cast
        if dtype == self._data.dtype:
            return self
        return Cast.apply(self, dtype=dtype)


    def type(self, dtype=None) -> "Tensor":
        """``type()`` names the type ('tinygrad_tx.FloatTensor'); ``type(dtype)`` casts."""
        if dtype is None:
            return "tinygrad_tx." + Tensor._TYPE_NAMES.get(self._data.dtype.name, self._data.dtype.name)
        if isinstance(dtype, str) and dtype.split(".")[-1] in Tensor._TYPE_NAMES.values():
            name = {v: k for k, v in Tensor._TYPE_NAMES.items()}[dtype.split(".")[-1]]
            return self._cast(np.dtype(name))
        if isinstance(dtype, type) and hasattr(dtype, "_np_dtype"):   # tinygrad_tx.FloatTensor, ...
            return self._cast(dtype._np_dtype)
        return self._cast(dtypes.resolve(dtype, "type(dtype)"))

    def type_as(self, other) -> "Tensor":
        return self._cast(other._data.dtype)

    def cpu(self) -> "Tensor":
        return self

    def cuda(self, device=None, non_blocking=False) -> "Tensor":
        _device.check("cuda")
        return self   # pragma: no cover - check raises

    def float(self):
        return self._cast(np.dtype(np.float32))

    def double(self):
        return self._cast(np.dtype(np.float64))

    def half(self):
        return self._cast(np.dtype(np.float16))

    def long(self):
        return self._cast(np.dtype(np.int64))

    def int(self):
        return self._cast(np.dtype(np.int32))

    def short(self):
        return self._cast(np.dtype(np.int16))

    def byte(self):
        return self._cast(np.dtype(np.uint8))

    def bool(self):
        return self._cast(np.dtype(np.bool_))

    def is_floating_point(self) -> bool:
        return self._data.dtype.kind == "f"

    def is_complex(self) -> bool:
        return self._data.dtype.kind == "c"

    def contiguous(self, memory_format=None) -> "Tensor":
        """self when its array is C-contiguous, else a contiguous copy (torch's contiguous,
        which is what makes a later .view() of a transposed tensor possible). ``memory_format=
        tinygrad_tx.channels_last`` (4-D) or ``channels_last_3d`` (5-D): that layout instead
        (``layout.py``: same values, other strides)."""
        if memory_format is not None and _layout.check(memory_format, "contiguous") not in (
                _layout.contiguous_format, _layout.preserve_format):
            return self if _layout.is_contiguous(self._data, memory_format) else self.clone(memory_format)
        if self._data.flags.c_contiguous:
            return self
        from .ops.elementwise import Clone
        return Clone.apply(self)

    def clone(self, memory_format=None) -> "Tensor":
        """A copy (``Clone``: dL/dx = g); ``memory_format`` picks its layout (default: this
        tensor's, torch's ``preserve_format``)."""
        from .ops.elementwise import Clone
        out = Clone.apply(self)
        if memory_format is not None and _layout.check(memory_format, "clone") is not _layout.preserve_format:
            out._data = _layout.laid_out(out._data, memory_format)   # same values, the asked strides
        return out

    # ------------------------------------------------------------------ operators
    # Each one prepares its arguments (dtype promotion, dims) and calls one Function of
    # tinygrad_tx/ops/ (_E = ops/elementwise.py, _M = ops/movement.py, _MM = ops/matmul.py), whose
    # forward and backward sit side by side there. The rest of the methods (sum, sin, softmax, ...)
    # are bound from the op modules' TENSOR_METHODS tables, in one place: tinygrad_tx/_bind.py.

    def __add__(self, other):
        """self + other, broadcast, in the promoted dtype. Backward (``Add``): g to both sides."""
        return _binary_op(_E.Add, self, other)

    def __radd__(self, other):
        return _reflected(_E.Add, self, other)

    def __sub__(self, other):
        """self − other. Backward (``Sub``): g and −g."""
        _check_no_bool_sub(self, other)
        return _binary_op(_E.Sub, self, other)

    def __rsub__(self, other):
        _check_no_bool_sub(other, self)
        return _named(_reflected(_E.Sub, self, other), "RsubBackward1")   # torch's rsub(tensor, scalar)

    def __mul__(self, other):
        """self · other, elementwise. Backward (``Mul``): g·other and g·self."""
        return _binary_op(_E.Mul, self, other)

    def __rmul__(self, other):
        return _reflected(_E.Mul, self, other)

    mul = __mul__

    def __truediv__(self, other):
        """self / other (integers give the default float, as torch's). Backward (``Div``): g/other and
        −g·self/other²."""
        return _binary_op(_E.Div, self, other, float_result=True)

    def __rtruediv__(self, other):
        y = _binary_op(_E.Div, _as_operand(other, self), self, float_result=True, reflected=True)
        return y if isinstance(other, Tensor) else _named(y, "MulBackward0")   # torch: other * self.reciprocal()

    def __neg__(self):
        """−self. Backward (``Neg``): −g."""
        return _E.Neg.apply(self)

    neg = __neg__

    def __pow__(self, exponent):
        """self ** exponent (int ** int stays an integer, as torch's; a float on either side makes
        a float). Backward (``Pow``): g·e·x^(e−1) for x, g·xᵉ·ln x for a tensor exponent."""
        if isinstance(exponent, (int, np.integer)) and not isinstance(exponent, (bool, np.bool_)) \
                and exponent < 0 and self._data.dtype.kind in "biu":
            raise RuntimeError(f"pow: Integers to negative integer powers are not allowed "
                               f"(dtype {self._data.dtype}, exponent {exponent}).")
        if isinstance(exponent, Tensor) and self._data.dtype == exponent._data.dtype == np.bool_:
            raise RuntimeError(f"pow: not implemented for 'Bool' tensors (shapes {tuple(self.shape)} and {tuple(exponent.shape)})")
        return _binary_op(_E.Pow, self, exponent)

    pow = __pow__

    def __rpow__(self, base):
        """base ** self: a Python base stays a Python number, so the backward's log(base) is exact
        in float64, as torch's is (the log of a float32-rounded base near 1 loses digits)."""
        if self._data.dtype == np.bool_ and isinstance(base, (bool, np.bool_)):
            raise RuntimeError(f"pow: not implemented for 'Bool' (base {base!r}, exponent a bool tensor "
                               f"of shape {tuple(self.shape)})")
        if isinstance(base, (int, float)) and not isinstance(base, bool) and self._data.dtype.kind == "f":
            return _named(_E.Pow.apply(float(base), self), "PowBackward2")    # torch's pow(scalar, tensor)
        return _binary_op(_E.Pow, _as_operand(base, self), self)

    def __matmul__(self, other):
        """self @ other (no dtype promotion: two dtypes are torch's error). Backward (``MatMul``):
        dA = g Bᵀ, dB = Aᵀ g (batched and broadcast in ops/matmul.py)."""
        return _MM.MatMul.apply(self, _matmul_operand(other))

    def __rmatmul__(self, other):
        return _MM.MatMul.apply(_matmul_operand(other), self)

    matmul = __matmul__

    # comparisons: no gradient, bool results, in the operands' promoted dtype (as torch's). With
    # an operand that is not a tensor, number or array (None, a str, a list, any object) the
    # operator returns NotImplemented, as torch's: Python then makes ``t == None`` False,
    # ``t != None`` True, and ``t < None`` its TypeError; the methods (``t.eq(None)``) raise.
    def __eq__(self, other):
        if not isinstance(other, _COMPARABLE):
            return NotImplemented
        return _compare(np.equal, self, other)

    def __ne__(self, other):
        if not isinstance(other, _COMPARABLE):
            return NotImplemented
        return _compare(np.not_equal, self, other)

    def __lt__(self, other):
        if not isinstance(other, _COMPARABLE):
            return NotImplemented
        return _compare(np.less, self, other)

    def __le__(self, other):
        if not isinstance(other, _COMPARABLE):
            return NotImplemented
        return _compare(np.less_equal, self, other)

    def __gt__(self, other):
        if not isinstance(other, _COMPARABLE):
            return NotImplemented
        return _compare(np.greater, self, other)

    def __ge__(self, other):
        if not isinstance(other, _COMPARABLE):
            return NotImplemented
        return _compare(np.greater_equal, self, other)

    def eq(self, other):
        return _compare(np.equal, self, _comparand(other, "eq"))

    def ne(self, other):
        return _compare(np.not_equal, self, _comparand(other, "ne"))

    def lt(self, other):
        return _compare(np.less, self, _comparand(other, "lt"))

    def le(self, other):
        return _compare(np.less_equal, self, _comparand(other, "le"))

    def gt(self, other):
        return _compare(np.greater, self, _comparand(other, "gt"))

    def ge(self, other):
        return _compare(np.greater_equal, self, _comparand(other, "ge"))

    def logical_not(self):
        return _adopt(_seam.call(np.logical_not, self._data))
    # & | ^ ~ are bitwise, as torch's: ops/binary.py binds them

    # ------------------------------------------------------------------ pointwise math
    def exp(self):
        """eˣ. Backward (``Exp``): g·y (the output)."""
        return _E.Exp.apply(_floating(self))

    def log(self):
        """ln x. Backward (``Log``): g/x."""
        return _E.Log.apply(_floating(self))

    def sqrt(self):
        """√x. Backward (``Sqrt``): g/(2y)."""
        return _E.Sqrt.apply(_floating(self))

    def tanh(self):
        """tanh x. Backward (``TanhFn``): g·(1 − y²)."""
        return _E.TanhFn.apply(_floating(self))

    def sigmoid(self):
        """σ(x) = 1/(1 + e⁻ˣ). Backward (``SigmoidFn``): g·y(1 − y)."""
        return _E.SigmoidFn.apply(_floating(self))

    def relu(self):
        """max(x, 0). Backward (``ReluFn``): g where x > 0, else 0."""
        if self._data.dtype == np.bool_:
            raise RuntimeError(f"relu: Boolean inputs not supported for relu (got dtype bool, shape {tuple(self.shape)})")
        return _E.ReluFn.apply(self)

    def gelu(self, approximate="none"):
        """x·Φ(x) (or its tanh approximation). Backward (``GeluFn``): g·(Φ(x) + x·φ(x))."""
        return _E.GeluFn.apply(self, approximate=approximate)

    def clamp(self, min=None, max=None):
        """x limited to [min, max]. Backward (``Clamp``): g inside the bounds, 0 outside."""
        if isinstance(min, float) or isinstance(max, float):   # torch: int.clamp(0.5) is the default float
            self = _floating(self)
        return _E.Clamp.apply(self, min=min, max=max)

    clip = clamp

    def maximum(self, other):
        """Elementwise max. Backward (``Maximum``): g to the larger side (split evenly on ties)."""
        return _binary_op(_E.Maximum, self, _tensor_arg(other, "maximum"))

    def minimum(self, other):
        """Elementwise min. Backward (``Minimum``): g to the smaller side (split evenly on ties)."""
        return _binary_op(_E.Minimum, self, _tensor_arg(other, "minimum"))

    def masked_fill(self, mask, value):
        """value where mask is True, else x. Backward (``MaskedFill``): g where the mask is False."""
        mask = mask._data if isinstance(mask, Tensor) else np.asarray(mask)
        if isinstance(value, Tensor):
            if value._data.size != 1:
                raise ValueError(f"masked_fill only supports a 0-dimensional value tensor, got shape {tuple(value.shape)}")
            if value._requires_grad and _grad_mode.is_grad_enabled():   # its gradient: g summed over the mask
                return where(mask, value.reshape(())._cast(self._data.dtype), self)
            value = value.item()
        return _E.MaskedFill.apply(self, mask, value)

    def where(self, condition, other):
        """self where condition, else other (``tinygrad_tx.where(condition, self, other)``)."""
        return where(condition, self, other)

    # ------------------------------------------------------------------ shape
    # (reductions — sum, mean, var, max, ... — are bound from ops/reduce.py and ops/reduce_minmax.py)
    def reshape(self, *shape):
        """The same elements in a new shape (one −1 is inferred). Backward (``Reshape``): g
        reshaped back."""
        shape = _shape_arg(_dims_arg(shape), "reshape")
        if shape == self._data.shape:
            return self
        if self._data.flags.c_contiguous:
            return _M.Reshape.apply(self, shape)            # torch's view: ViewBackward0
        return _named(_M.Reshape.apply(self, shape), "UnsafeViewBackward0")   # torch copies, then views

    def view(self, *shape):
        """reshape without a copy, as torch's view: a shape the strides cannot express (a
        transposed tensor flattened) is torch's RuntimeError; call .contiguous() or reshape."""
        shape = _shape_arg(_dims_arg(shape), "view")
        if shape == self._data.shape:
            return self
        new = _M.infer_shape(shape, self._data.size, "view")
        if not self._data.flags.c_contiguous:
            try:
                np.reshape(self._data, new, copy=False)
            except ValueError:
                raise RuntimeError(f"view size is not compatible with input tensor's size and stride "
                                   f"(shape {tuple(self.shape)}, strides {self.stride()}, requested {shape}): at least "
                                   "one dimension spans across two contiguous subspaces. Use "
                                   ".reshape(...) instead.") from None
        return _M.Reshape.apply(self, new)

    def flatten(self, start_dim=0, end_dim=-1):
        """Dims start_dim..end_dim merged into one (a reshape)."""
        if self.ndim == 0:
            _canonical_dim(start_dim, 0, "flatten"), _canonical_dim(end_dim, 0, "flatten")
            return self.reshape(1)
        a, b = _canonical_dim(start_dim, self.ndim), _canonical_dim(end_dim, self.ndim)
        if a > b:
            raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
        return self.reshape(self.shape[:a] + (-1,) + self.shape[b + 1:])

    def permute(self, *dims):
        """The axes reordered. Backward (``Permute``): g permuted by the inverse order."""
        if not dims:
            raise TypeError(f"permute() missing 1 required positional argument: 'dims' (a tensor of "
                            f"shape {tuple(self.shape)} takes {self.ndim} dims)")
        dims = _dims_arg(dims)
        if len(dims) != self.ndim:
            raise ValueError(f"permute: number of dims {len(dims)} does not match the tensor's {self.ndim} "
                             f"dimensions (shape {tuple(self.shape)})")
        dims = tuple(_canonical_dim(d, self.ndim, "permute") for d in dims)
        if len(set(dims)) != len(dims):
            raise ValueError(f"permute: repeated dim in {dims}")
        return _M.Permute.apply(self, dims)

    def transpose(self, dim0, dim1):
        """Two axes swapped (a ``Permute``)."""
        d0, d1 = _canonical_dim(dim0, self.ndim, "transpose"), _canonical_dim(dim1, self.ndim, "transpose")
        if d0 == d1:
            return self
        dims = list(range(self.ndim))
        dims[d0], dims[d1] = d1, d0
        return _named(_M.Permute.apply(self, tuple(dims)), "TransposeBackward0")

    swapaxes = transpose

    @property
    def T(self):
        """All axes reversed (a matrix transposed)."""
        return self if self.ndim < 2 else _M.Permute.apply(self, tuple(reversed(range(self.ndim))))

    @property
    def mT(self):
        """The last two axes swapped (a batch of matrices transposed)."""
        return self.transpose(-2, -1)

    def unsqueeze(self, dim):
        """A size-1 axis inserted at dim (a reshape)."""
        d = _canonical_dim(dim, self.ndim + 1, "unsqueeze")
        return _named(_M.Reshape.apply(self, self.shape[:d] + (1,) + self.shape[d:]), "UnsqueezeBackward0")

    def squeeze(self, dim=None):
        """Size-1 axes removed (all, or those among dim; a reshape)."""
        if dim is None:
            new = tuple(n for n in self.shape if n != 1)
        else:
            dims = _R.normalize_dims(dim, self.ndim, "squeeze")
            new = tuple(n for i, n in enumerate(self.shape) if not (i in dims and n == 1))
        if new == self.shape:
            return self
        kind = 0 if dim is None else 2 if isinstance(dim, (tuple, list)) else 1   # torch's three overloads
        return _named(_M.Reshape.apply(self, new), f"SqueezeBackward{kind}")

    def expand(self, *sizes):
        """Size-1 axes repeated without a copy (−1 keeps a size). Backward (``Expand``): g summed
        over the repeated axes."""
        sizes = _dims_arg(sizes)
        if len(sizes) < self.ndim:
            raise ValueError(f"expand: the number of sizes provided ({len(sizes)}) must be greater or "
                             f"equal to the number of dimensions in the tensor ({self.ndim}), shape {tuple(self.shape)}")
        lead = len(sizes) - self.ndim
        target = []
        for i, n in enumerate(sizes):
            if i < lead:
                if n < 0:
                    raise ValueError(f"expand: -1 is not allowed in a new leading dimension, sizes {sizes}")
                target.append(n)
                continue
            cur = self.shape[i - lead]
            if n == -1 or n == cur:
                target.append(cur)
            elif cur == 1:
                target.append(n)
            else:
                raise ValueError(f"expand: the expanded size {n} must match the existing size {cur} "
                                 f"at non-singleton dimension {i}; target sizes {list(sizes)}, "
                                 f"tensor shape {tuple(self.shape)}")
        target = tuple(target)
        return self if target == self.shape else _M.Expand.apply(self, target)

    broadcast_to = expand

    def expand_as(self, other):
        return self.expand(*other.shape)

    def __getitem__(self, index):
        """Indexing and slicing as NumPy/torch. Backward (``GetItem``): g added into zeros at the
        indexed places (repeated indices accumulate)."""
        idx, advanced = _M._normalize_index(index, self._data.ndim)
        split = _M.torch_order(idx)
        if split is not None:   # integers mixed with index arrays: torch's order (movement.torch_order)
            return _M.GetItem.apply(_M.GetItem.apply(self, split[0]), split[1], advanced=True)
        return _M.GetItem.apply(self, idx, advanced=advanced)

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def narrow(self, dim, start, length):
        """The slice [start, start + length) of dim (a view)."""
        if self.ndim == 0:
            raise ValueError("narrow() cannot be applied to a 0-dim tensor.")
        d = _canonical_dim(dim, self.ndim, "narrow")
        if start < 0:
            start += self.shape[d]
        if not (0 <= start and start + length <= self.shape[d]) or length < 0:
            raise ValueError(f"narrow: start ({start}) + length ({length}) exceeds dimension {dim} "
                             f"of size {self.shape[d]} (shape {tuple(self.shape)})")
        index = (slice(None),) * d + (slice(start, start + length),)
        return _M.GetItem.apply(self, index)

    def split(self, split_size_or_sections, dim=0):
        """Pieces of split_size (the last may be smaller) or of the given sizes along dim."""
        if self.ndim == 0:
            raise ValueError("split expects at least a 1-dimensional tensor")
        d = _canonical_dim(dim, self.ndim, "split")
        n = self.shape[d]
        if isinstance(split_size_or_sections, (int, np.integer)):
            size = int(split_size_or_sections)
            if size <= 0 and n > 0:
                raise ValueError(f"split: split_size must be positive, got {size}")
            sizes = [min(size, n - i) for i in range(0, n, size)] if n else [0]
        else:
            sizes = [int(x) for x in split_size_or_sections]
            if sum(sizes) != n or any(x < 0 for x in sizes):
                raise ValueError(f"split: sections {sizes} do not add up to the size {n} of dimension "
                                 f"{dim} (shape {tuple(self.shape)})")
        out, start = [], 0
        for size in sizes:
            out.append(_named(self.narrow(d, start, size), "SplitBackward0"))
            start += size
        return _versions.multi_output(out, "Split")

    def chunk(self, chunks, dim=0):
        """``chunks`` pieces of equal size along dim (the last may be smaller)."""
        if self.ndim == 0:
            raise ValueError("chunk expects at least a 1-dimensional tensor")
        if chunks <= 0:
            raise ValueError(f"chunk: chunks must be positive, got {chunks}")
        n = self.shape[_canonical_dim(dim, self.ndim, "chunk")]
        if n == 0:   # torch: `chunks` empty pieces
            return _versions.multi_output([_named(self.narrow(dim, 0, 0), "SplitBackward0")
                                                   for _ in range(chunks)], "Split")
        return self.split(-(-n // chunks), dim)




_SKIP = {"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__"}
TENSOR_METHODS = {name: fn for name, fn in vars(_TensorMethods).items()
                  if name not in _SKIP and fn is not None}   # (__hash__: None, as __eq__ is defined)
for _name, _fn in TENSOR_METHODS.items():   # each answers to its name as a Tensor method does
    if callable(_fn) and getattr(_fn, "__qualname__", "").startswith("_TensorMethods."):
        _fn.__qualname__ = "Tensor." + _fn.__name__


def is_scalar(x) -> bool:
    return isinstance(x, numbers.Number) and not isinstance(x, np.ndarray)


# ============================================================================ operators and methods
# Each method below only prepares arguments (dtype rules, dims) and calls one
# Function from tinygrad_tx.ops; the forward/backward pairs live there.

from .ops import elementwise as _E  # noqa: E402
from .ops import matmul as _MM  # noqa: E402
from .ops import movement as _M  # noqa: E402
from .ops import reduce as _R  # noqa: E402


_SCALARS = (bool, int, float, np.bool_, np.integer, np.floating)


def _as_operand(x, like: Tensor):
    """The other operand of a binary op: a Tensor stays, a Python (or NumPy) scalar stays a
    scalar (``dtypes.result_np`` ranks it below tensors), an array or list becomes a Tensor.
    ``like`` is unused (kept for the op modules that pass it)."""
    if isinstance(x, Tensor) or isinstance(x, _SCALARS):
        return x
    if isinstance(x, np.ndarray):
        return Tensor(x)
    if isinstance(x, (list, tuple)):     # as torch.tensor makes it (ints int64), not torch.Tensor(list)
        return Tensor(_to_array(x))
    if isinstance(x, complex):
        raise TypeError(dtypes.COMPLEX_REFUSED.format(what=f"the scalar {x!r}"))
    raise TypeError(f"unsupported operand type {type(x).__name__} for a Tensor operation")


def _to_dtype(x, dt):
    """Operand ``x`` (a Tensor or a scalar) in dtype ``dt``: a Tensor through the
    differentiable Cast (when it differs), a scalar as a 0-d array; an int scalar wraps into a
    narrower int dtype as torch's does (uint8 + 300 adds 44)."""
    if isinstance(x, Tensor):
        return x if x._data.dtype == dt else x._cast(dt)
    if isinstance(x, np.ndarray):
        return x if x.dtype == dt else x.astype(dt)
    if dt.kind in "iu" and not isinstance(x, (bool, np.bool_)):
        try:
            return np.asarray(np.int64(x)).astype(dt)
        except OverflowError:
            raise RuntimeError(f"value {x} cannot be converted to type int64 without overflow") from None
    with np.errstate(over="ignore"):
        return np.asarray(x, dtype=dt)


_FLOAT_KEEPS = (float, int, bool)


def _tensor_scalar_fast(t, x):
    """The fast path of ``x <op> tensor`` for a Python number x where the tensor's dtype is the
    result type (any number with a float tensor, an int with an int tensor): x becomes a 0-d
    array of it without the ranking (t * 0.5: 2.8 us instead of 6.0 us per op, measured).
    None: take the general path (an int that must wrap into a narrow dtype, other kinds)."""
    dt = t._data.dtype
    if dt.kind != "f":
        if dt.kind in "iu" and type(x) is int:
            try:
                return np.asarray(x, dtype=dt)
            except OverflowError:
                return None
        return None
    if dt.itemsize == 2:   # a large Python float rounds to float16 inf, quietly (torch's value)
        with np.errstate(over="ignore"):
            return np.asarray(x, dtype=dt)
    return np.asarray(x, dtype=dt)


def _promote_pair(a, b, float_result: bool = False):
    """``a`` and ``b`` cast to their torch ``result_type`` (``dtypes.result_np``: the one
    place the rule lives); ``float_result``: an integer or bool result type becomes the
    default float (true division, atan2, ...)."""
    if isinstance(a, Tensor):
        if isinstance(b, Tensor):
            if a._data.dtype == b._data.dtype and (not float_result or a._data.dtype.kind == "f"):
                return a, b   # the common case, without the ranking
        elif type(b) in _FLOAT_KEEPS and (not float_result or a._data.dtype.kind == "f"):
            fast = _tensor_scalar_fast(a, b)
            if fast is not None:
                return a, fast
    elif isinstance(b, Tensor) and type(a) in _FLOAT_KEEPS and (not float_result or b._data.dtype.kind == "f"):
        fast = _tensor_scalar_fast(b, a)
        if fast is not None:
            return fast, b
    dt = dtypes.result_np(a, b)
    if float_result and dt.kind != "f":
        dt = dtypes.default_float()
    return _to_dtype(a, dt), _to_dtype(b, dt)


def _binary_op(fn, a, b, float_result: bool = False, reflected: bool = False):
    """``fn`` of two operands in their promoted dtype. ``reflected``: called as ``b.__rop__(a)``."""
    if not isinstance(a, Tensor):
        a = _as_operand(a, b)
    if not isinstance(b, Tensor):
        b = _as_operand(b, a)
    pa, pb = _promote_pair(a, b, float_result)
    if getattr(fn, "__name__", None) in _HALF_OPMATH and (pa._data.dtype == _F16 if isinstance(pa, Tensor) else pb._data.dtype == _F16):
        return _half_opmath(fn, a, b, pa, pb, reflected)
    return fn.apply(pa, pb)


_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)


def _half_opmath(fn, a, b, pa, pb, reflected=False):
    """torch compatibility, float16 only: torch's CPU kernels for ``*``, ``/``, ``//`` and
    ``div(rounding_mode=)`` (``_HALF_OPMATH``) compute a float16 result in float32 with a Python number or a 0-d
    tensor of a wider dtype at float32 precision — not first rounded to float16 — and round
    once: x16 * 0.69 is float16(float32(x) * float32(0.69)). Rounding 0.69 first, 122 of 1,000
    products differed from torch's in the last bit and x16 // 0.69 by whole units. (Its ``+``,
    ``-`` and ``%`` round the number to float16 first, as NumPy does: the plain path.)

    Only as the *second* operand: a wider 0-d tensor first (``s32 * x16``, ``s32 // x16``) is
    rounded to float16 first, as is a number before ``//`` (``0.69 // x16`` is
    ``floor_divide(0.69, x16)``); but ``0.69 * x16`` (``x16.__rmul__``) is torch's
    ``mul(x16, 0.69)`` and ``0.69 / x16`` (``__rtruediv__``) its ``reciprocal(x16) * 0.69``.
    Measured on 2,000 draws each: every torch result with the wider operand first equals rounding
    it first; treating it as the second operand had 9 to 1,763 of 2,000 differ (a fresh run's
    ``1.82 // x16``: -7 where torch gives -8)."""
    half = [isinstance(o, Tensor) and o._data.dtype == _F16 for o in (a, b)]
    if all(half):
        return fn.apply(pa, pb)
    if reflected and fn is _E.Mul:     # b.__rmul__(a) is torch's mul(b, a)
        return _binary_op(_E.Mul, b, a)
    if reflected and fn is _E.Div:     # b.__rtruediv__(a) is torch's reciprocal(b) * a: 1/b rounded, then the product
        return _binary_op(_E.Mul, _E.Div.apply(*_promote_pair(1, b)), a)
    if half[1]:                        # the wider operand first: rounded to float16 first, as torch's kernel does
        return fn.apply(pa, pb)
    # a float16 operand exactly in float32; the other (a number or a wider 0-d tensor) from its
    # own value, not from its float16 rounding
    out = fn.apply(*[p._cast(_F32) if h else _to_dtype(o, _F32) for o, p, h in ((a, pa, half[0]), (b, pb, half[1]))])
    return out._cast(_F16) if out._data.dtype == _F32 else out


_HALF_OPMATH = frozenset({"Mul", "Div", "FloorDivide", "DivRounded"})   # the Functions whose torch kernels do so


def _reflected(fn, self, other):
    return _binary_op(fn, _as_operand(other, self), self, reflected=True)


def _matmul_operand(o) -> "Tensor":
    if isinstance(o, Tensor):
        return o
    if isinstance(o, np.ndarray):
        return Tensor(o)
    if isinstance(o, (list, tuple)):     # as torch.tensor makes it (ints int64), not torch.Tensor(list)
        return Tensor(_to_array(o))
    raise TypeError(f"matmul: argument 'other' must be a Tensor, not {type(o).__name__} ({o!r})")


def _tensor_arg(o, op: str, arg: str = "other") -> "Tensor":
    """``o`` for an op whose ``other`` must be a tensor (torch's maximum/minimum)."""
    if not isinstance(o, Tensor):
        raise TypeError(f"{op}(): argument '{arg}' must be Tensor, not {type(o).__name__} ({o!r})")
    return o


def _check_no_bool_sub(a, b):
    """torch refuses ``-`` with a bool operand (tensor or Python bool)."""
    ba = getattr(a, "dtype", None) == np.bool_ or isinstance(a, (bool, np.bool_))
    bb = getattr(b, "dtype", None) == np.bool_ or isinstance(b, (bool, np.bool_))
    if ba and bb:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if ba or bb:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


def _floating(s: Tensor) -> Tensor:
    """exp/log/... of an int or bool tensor compute in the default float, as torch's do (NumPy would pick float64)."""
    return s if s._data.dtype.kind == "f" else Tensor(s._data.astype(dtypes.default_float()))


def _shape_arg(shape, op: str) -> tuple:
    """A shape argument checked as torch's: a tuple of ints (a float or a str is a TypeError)."""
    for n in shape:
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer, Tensor)):
            raise TypeError(f"{op}(): argument 'shape' must be tuple of ints, but found element of "
                            f"type {type(n).__name__} ({n!r}) in {shape!r}")
    return tuple(operator.index(n) for n in shape)


def _dims_arg(dims):
    """Accept f(1, 0, 2) and f((1, 0, 2)) alike."""
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        return tuple(dims[0])
    return tuple(dims)


_COMPARABLE = (Tensor, bool, int, float, complex, np.bool_, np.number, np.ndarray)


def _comparand(o, op: str):
    """The other operand of ``t.eq(o)`` & co.: a tensor, a number or an array; anything else is
    torch's TypeError (the operators return NotImplemented instead)."""
    if not isinstance(o, _COMPARABLE):
        raise TypeError(f"{op}(): argument 'other' (position 1) must be Tensor or Number, not {type(o).__name__}")
    return o


def comparison_method(name: str, npfn):
    """The method ``name`` (``eq``, ``greater``, ...): ``npfn`` of self and a tensor, number or array."""
    def method(self, other):
        return _compare(npfn, self, _comparand(other, name))
    method.__name__ = method.__qualname__ = name
    return method


def _compare(npfn, s, o):
    """A comparison in the operands' result type, as torch's (no gradient; a bool result)."""
    if type(o) in _FLOAT_KEEPS and s._data.dtype.kind == "f":   # the fast path: NumPy 2
        return _adopt(_seam.call(npfn, s._data, o))   # a float array against a number in its dtype
    a, b = _promote_pair(s, _as_operand(o, s))
    b = b._data if isinstance(b, Tensor) else b
    return _adopt(_seam.call(_E._binary, npfn.__name__, npfn, a._data, b))


# ============================================================================ module-level functions



def _check_same_rank(tensors, op):
    if not tensors:
        raise ValueError(f"{op}: expected a non-empty sequence of tensors")
    return [t if isinstance(t, Tensor) else Tensor(t) for t in tensors]


def _common_dtype(tensors):
    """torch's promotion: a float dtype beats int/bool (int64 with float32 -> float32, where
    NumPy would pick float64); within a kind the wider dtype wins."""
    return dtypes.result_np(*tensors)


def cat(tensors, dim: int = 0) -> Tensor:
    """Concatenate along an existing dimension (``torch.cat``)."""
    tensors = _check_same_rank(list(tensors), "cat")
    if len(tensors) > 1:   # torch skips legacy empty (0,) tensors, whatever the others' rank
        kept = [t for t in tensors if t.shape != (0,)]
        if not kept:
            return _M.Cat.apply(*[t.to(_common_dtype(tensors)) for t in tensors], dim=0)
        if len(kept) < len(tensors):
            dtype = _common_dtype(tensors)
            out = cat([t.to(dtype) for t in kept], dim)
            if not any(t.requires_grad for t in tensors if t.shape == (0,)):
                return out
            # a skipped tensor that requires grad: still an input of the node (torch: CatBackward, grad [])
            return _M.Cat.apply(*[t.to(dtype) for t in tensors], dim=_canonical_dim(dim, out.ndim, "cat"),
                                skip_legacy=True)
    for i, t in enumerate(tensors):
        if t.ndim == 0:
            raise ValueError(f"cat: zero-dimensional tensor (at position {i}) cannot be concatenated")
    ref = tensors[0]
    d = _canonical_dim(dim, ref.ndim, "cat")
    for i, t in enumerate(tensors):
        if t.ndim != ref.ndim or any(a != b for k, (a, b) in enumerate(zip(t.shape, ref.shape)) if k != d):
            raise ValueError(f"cat: sizes of tensors must match except in dimension {dim}; "
                             f"tensor 0 has shape {tuple(ref.shape)}, tensor {i} has shape {tuple(t.shape)}")
    dtype = _common_dtype(tensors)
    tensors = [t if t._data.dtype == dtype else t.to(dtype) for t in tensors]
    return _M.Cat.apply(*tensors, dim=d)


def stack(tensors, dim: int = 0) -> Tensor:
    """Stack equally shaped tensors along a new dimension (``torch.stack``)."""
    tensors = _check_same_rank(list(tensors), "stack")
    ref = tensors[0]
    d = _canonical_dim(dim, ref.ndim + 1, "stack")
    for i, t in enumerate(tensors):
        if t.shape != ref.shape:
            raise ValueError(f"stack expects each tensor to be equal size, but got {tuple(ref.shape)} at entry 0 "
                             f"and {tuple(t.shape)} at entry {i}")
    dtype = _common_dtype(tensors)
    tensors = [t if t._data.dtype == dtype else t.to(dtype) for t in tensors]
    return _M.Stack.apply(*tensors, dim=d)


def where(condition, input, other) -> Tensor:
    """``input`` where ``condition`` is true, else ``other`` (``torch.where``)."""
    cond = condition._data if isinstance(condition, Tensor) else np.asarray(condition)
    input, other = _as_operand(input, other), _as_operand(other, input)
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        # two scalars: torch makes the default dtype of their category (float32, int64, bool)
        dt = dtypes.result_np(input, other)
        input, other = _adopt(_to_dtype(input, dt)), _adopt(_to_dtype(other, dt))
    input, other = _promote_pair(input, other)
    return _E.Where.apply(cond, input, other)


def matmul(a, b) -> Tensor:
    return a @ b if isinstance(a, Tensor) else Tensor(a) @ b


def maximum(a, b) -> Tensor:
    return _tensor_arg(a, "maximum", "input").maximum(b)


def minimum(a, b) -> Tensor:
    return _tensor_arg(a, "minimum", "input").minimum(b)


# The factories (zeros, ones, arange, randn, ...) live in factories.py and random_factories.py.

