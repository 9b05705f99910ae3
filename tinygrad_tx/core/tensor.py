"""``Tensor``: a NumPy array plus the autograd bookkeeping (``requires_grad``, ``grad``, graph edge).

This is the class itself: its data, its gradient and its place in the graph. Everything that
computes (operators, ``reshape``, ``sum``, casts, printing, NumPy's protocols) is bound onto it
from outside the core, in one place (``tinygrad_tx/_bind.py``): ``tinygrad_tx/tensor.py`` binds the
operators, the op modules in ``tinygrad_tx/ops/`` the rest.

Dtype rules follow ``torch.tensor``: a NumPy array keeps its dtype (float64
stays float64 end to end), Python floats (and lists of them) become the default
float (float32 unless ``set_default_dtype`` chose another), Python ints int64 and
bools bool.

Each Tensor may carry a version counter (``_vc``, shared with its views) and, when it is a view,
how it was made from its base (``_view``): the two pieces of state that let ``ops/inplace.py``
give in-place ops torch's autograd rules.
"""
from __future__ import annotations

import weakref

import numpy as np

from . import dtypes
from . import device as _device
from . import seam as _seam
from .size import of as _size_of

def _to_array(data, dtype=None) -> np.ndarray:
    """A new array (never a view of ``data``: as ``torch.tensor``, ``Tensor(a)`` copies, so
    editing ``a`` afterwards leaves the tensor alone; ``tinygrad_tx.from_numpy`` is the
    zero-copy way) with torch.tensor's dtype rules: an array or Tensor keeps its dtype, Python
    floats (and lists of them) become the default float, ints int64, bools bool. Complex, object, string
    and datetime data are a TypeError, ragged nested lists a ValueError."""
    if isinstance(data, Tensor):
        arr = data._data
    elif isinstance(data, (np.ndarray, np.generic)):
        arr = data
    else:
        try:
            arr = np.asarray(data)
        except ValueError:   # NumPy's "inhomogeneous shape": a ragged nested list
            raise ValueError(f"Tensor(): ragged nested sequence {_short(data)}: every row must "
                             "have the same length") from None
        if arr.dtype.kind in "iu" and arr.dtype != np.int64 and dtype is None:
            arr = arr.astype(np.int64)
        elif arr.dtype.kind == "f" and dtype is None:
            arr = arr.astype(dtypes.default_float())
        if arr.dtype.kind == "O" and dtype is None:
            raise TypeError(f"Tensor(): could not infer a dtype for {_short(data)} "
                            f"(of type {type(data).__name__}); expected numbers, bools or nested "
                            "lists of them")
    _check_element_dtype(arr.dtype)
    return np.array(arr, dtype=dtype, copy=True)   # order K: the layout torch.tensor keeps


def _wrapped(data) -> np.ndarray:
    arr = data._data if isinstance(data, Tensor) else data
    _check_element_dtype(arr.dtype)
    return arr


def _short(obj) -> str:
    text = repr(obj)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_element_dtype(dt: np.dtype) -> None:
    if dt.kind == "c":
        raise TypeError(dtypes.COMPLEX_REFUSED.format(what=f"dtype {dt}"))
    if dt.kind not in "biuf":
        raise TypeError(f"Tensor(): can't convert np.ndarray of type {dt}. The only supported types "
                        "are: float64, float32, float16, int64, int32, int16, int8, uint8, and bool.")


def _adopt(array: np.ndarray) -> "Tensor":
    """A leaf over ``array`` itself, no copy: for the library's own freshly computed arrays
    (``Tensor(a)`` copies, which a result nobody else holds does not need)."""
    return Tensor._from_op(array, None)


class IndexOutOfRange(IndexError, ValueError):
    """An index outside a dimension: an IndexError (so iteration protocols work) that is
    also a ValueError (so callers catching bad input catch it)."""


class _DtypeError(TypeError, RuntimeError):
    """Only floating tensors can require gradients: torch's RuntimeError, also a TypeError (what
    this project raised before, so callers catching either keep working)."""


class _Version:
    """A version counter shared by a tensor and its views (torch's ``_version``): every in-place
    change adds one. A Function that saves an array records the counter of the tensor it came
    from and its value; backward refuses to run on a changed value (``autograd._check_saved``)."""

    __slots__ = ("value",)

    def __init__(self):
        self.value = 0


class _View:
    """How a view tensor was made from its base (the tensor that owns the memory): the chain of
    view Functions that produced it (``steps``: (Function, input position, other args, kwargs)),
    and the base's version when the view's graph node was last built. A view whose base changed
    in place since then rebuilds its node from the base (``Tensor._refresh_view``), so a gradient
    through it reaches the base's newest history, as torch's views do."""

    __slots__ = ("base", "steps", "version", "multi")

    def __init__(self, base, steps, version, multi=None):
        # multi: (op name, output number) when the view is (a view of) one output of an op that
        # returns several views (split, chunk, unbind): torch refuses recorded in-place writes to those
        self.base, self.steps, self.version, self.multi = base, steps, version, multi


def _check_hook_result(hook, grad, new) -> None:
    """A tensor hook may replace the gradient only by a Tensor of the same shape and dtype (torch's
    checks and messages): anything else would flow on as a gradient of the wrong kind."""
    name = getattr(hook, "__name__", type(hook).__name__)
    if not isinstance(new, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(new).__name__}' (hook '{name}' must "
                        "return a Tensor or None)")
    if new._data.shape != grad._data.shape:
        raise RuntimeError(f"hook '{name}' has changed the size of value (was {tuple(grad._data.shape)}, "
                           f"got {tuple(new._data.shape)})")
    if new._data.dtype != grad._data.dtype:
        names = Tensor._TYPE_NAMES
        was, got = (names.get(a._data.dtype.name, a._data.dtype.name) for a in (grad, new))
        raise RuntimeError(f"hook '{name}' has changed the type of value (was tinygrad_tx.{was} got "
                           f"tinygrad_tx.{got})")


class _NoData:
    """``Tensor()``'s missing ``data`` (``torch.Tensor()`` is an empty float tensor)."""

    def __repr__(self) -> str:
        return "<no data>"


_NO_DATA = _NoData()
_NUMPY_DATA = (np.ndarray, np.generic)   # data that keeps torch.tensor's rules in Tensor(...)


class Tensor:
    """An n-dimensional array that can record the operations applied to it.

    >>> x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    >>> (x * x).sum().backward(); x.grad
    tensor([2., 4.])

    The array is ``_data`` (``.numpy()`` returns it); ``.data`` is a Tensor sharing it whose
    in-place changes autograd does not see (as torch's ``.data``); ``.grad`` is a Tensor or None.

    ``Tensor(a)`` of a NumPy array copies ``a`` and keeps its dtype (as ``torch.tensor`` does:
    editing ``a`` afterwards leaves the tensor alone); ``tinygrad_tx.from_numpy(a)`` shares its
    memory, ``as_tensor`` shares when the dtype allows. A known difference: torch's legacy
    ``torch.Tensor(a)`` converts an array to the default float (float32); use
    ``Tensor(a.astype(np.float32))`` or ``tinygrad_tx.tensor(a, dtype=...)`` for that. Anything
    else follows torch's legacy constructor (``legacy.py``): ``Tensor(2, 3)`` is a new (2, 3)
    tensor of the default float (zeros; torch leaves it uninitialised), ``Tensor([1, 2])``
    ``tensor([1., 2.])``, ``Tensor()`` empty, ``Tensor(t)`` an alias of ``t``.

    A subclass (``nn.Parameter``) wraps a Tensor's or array's memory without copying, as
    ``torch.nn.Parameter`` does. Complex data is refused (TypeError): every backward here is
    written for real inputs.
    """

    __slots__ = ("_data", "_grad", "_requires_grad", "_ctx", "_retains_grad", "_hooks", "_name",
                 "_vc", "_view", "_post_hooks", "__weakref__")   # _post_hooks: register_post_accumulate_grad_hook's
    __array_priority__ = 1000  # make ndarray <op> Tensor defer to Tensor's reflected ops
    __module__ = "tinygrad_tx"   # <class 'tinygrad_tx.Tensor'>, as torch's <class 'torch.Tensor'>
    _TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
                   "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor", "int8": "CharTensor",
                   "uint8": "ByteTensor", "bool": "BoolTensor"}

    def __init__(self, data=_NO_DATA, *sizes, requires_grad: bool = False, dtype=None, device=None):
        if device is not None:
            _device.check(device)
        dtype = dtypes.resolve(dtype)
        if sizes or (type(self) is Tensor and not isinstance(data, _NUMPY_DATA)):
            # Tensor(2, 3), Tensor([1, 2]), Tensor(t), Tensor(): torch.Tensor's legacy rules (legacy.py)
            _seam.legacy_constructor(self, data, sizes, requires_grad, dtype, device)
        else:
            if type(self) is not Tensor and isinstance(data, (Tensor, np.ndarray)) and dtype is None:
                # a subclass (nn.Parameter) wraps the array it is given, as torch.nn.Parameter does
                self._data = _wrapped(data)
            else:
                self._data = _to_array(data, dtype)
            self._grad = None
            self._ctx = None
            self._retains_grad = False
            self._hooks = ()
            self._name = None
            self._vc = None
            self._view = None
            self._post_hooks = None
            self._requires_grad = False
            if requires_grad:
                self.requires_grad = True
        _seam.created(self, data, dtype)   # tinygrad_tx.compile: a tensor made outside a Function

    @classmethod
    def _from_op(cls, array: np.ndarray, ctx) -> "Tensor":
        t = cls.__new__(cls)
        t._data = np.asarray(array) if isinstance(array, np.generic) else array   # np.argmax gives a scalar
        t._grad = None
        t._ctx = ctx
        t._requires_grad = ctx is not None
        t._retains_grad = False
        t._hooks = ()
        t._name = None
        t._vc = None
        t._view = None
        t._post_hooks = None
        if _seam.recorder is not None:   # tinygrad_tx.compile: a tensor made outside a Function (hot: inline)
            _seam.recorder.created(t, None, None)
        return t

    # ------------------------------------------------------------------ data, grad, versions
    @property
    def data(self) -> "Tensor":
        """A Tensor sharing this tensor's array, outside autograd: its in-place changes are not
        recorded and bump no version (torch's ``.data``; prefer ``detach()``, which is tracked)."""
        return Tensor._from_op(self._data, None)

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be set to a Tensor, got {type(value).__name__}")
        self._data = value._data

    @property
    def grad(self):
        """The accumulated gradient: a Tensor of this tensor's shape and dtype, or None."""
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                                f"{type(value).__name__}")
            if value._data.shape != self._data.shape:
                raise RuntimeError(f"assigned grad has data of a different size: grad shape "
                                   f"{value._data.shape}, tensor shape {self._data.shape}")
            if value._data.dtype != self._data.dtype:
                raise RuntimeError(f"assigned grad has data of a different type: grad dtype "
                                   f"{value._data.dtype}, tensor dtype {self._data.dtype}")
        _seam.grad_set(self, value)   # tinygrad_tx.compile records the assignment
        self._grad = value

    def _counter(self) -> _Version:
        """This tensor's version counter (made on first use: most tensors never need one)."""
        vc = self._vc
        if vc is None:
            vc = self._vc = _Version()
        return vc

    @property
    def _version(self) -> int:
        """How many in-place changes this tensor's memory has seen (torch's ``_version``)."""
        return 0 if self._vc is None else self._vc.value

    def _bump(self) -> None:
        """Record an in-place change of this tensor's values (every writer calls it)."""
        _seam.bump(self)   # tinygrad_tx.compile refuses in-place edits
        self._counter().value += 1

    def _refresh_view(self) -> None:
        """Rebuild a view's graph node from its base after the base changed in place. torch cannot
        rebuild one output of an op that returns several views (split, chunk, unbind) and refuses
        it: so do we, with its message."""
        view = self._view
        if view.multi is not None and self._requires_grad:
            name, k = view.multi
            raise RuntimeError(f"Output {k} of {name} is a view and its base or another view of its base has been "
                               "modified inplace. This view is the output of a function that returns multiple "
                               "views. Such functions do not allow the output views to be modified inplace. You "
                               "should replace the inplace operation by an out-of-place one.")
        t = view.base
        for fn, pos, args, kwargs in view.steps:
            args = list(args)
            args[pos] = t
            t = fn.apply(*args, **kwargs)
        self._ctx = t._ctx
        self._requires_grad = t._requires_grad
        view.version = view.base._version

    # ------------------------------------------------------------------ autograd attributes
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool):
        value = bool(value)
        if value and self._data.dtype.kind not in "fc":
            raise _DtypeError(f"only Tensors of floating point dtype can require gradients, "
                            f"got dtype {self._data.dtype} (shape {self._data.shape})")
        if not value and self._ctx is not None:
            raise RuntimeError("you can only change requires_grad flags of leaf tensors; "
                               "use .detach() to get a tensor that does not require grad")
        self._requires_grad = value

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self) -> bool:
        return self._ctx is None

    @property
    def grad_fn(self):
        """The graph node that produced this tensor (None for leaves), like torch's ``grad_fn``:
        ``grad_fn.name()``, ``grad_fn.next_functions``; ``grad_fn.fn`` is the ArrayFunction.
        A view whose base changed in place since its node was built gets its node rebuilt first."""
        view = self._view
        if view is not None and view.version != view.base._version:
            self._refresh_view()
        return self._ctx

    def retain_grad(self) -> None:
        """Keep ``.grad`` of this non-leaf tensor after backward (leaves always keep theirs)."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on a Tensor that has requires_grad=False")
        self._retains_grad = True
        if self._ctx is not None:   # the node sets .grad on this Tensor, if it is still alive then
            self._ctx.retained = weakref.ref(self)

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def register_hook(self, hook):
        """Call ``hook(grad_tensor)`` when this tensor's gradient is computed; a non-None
        return value replaces the gradient (torch's ``Tensor.register_hook``)."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        def entry(grad):  # one object per registration, so a handle removes exactly its own
            new = hook(grad)
            if new is not None:
                _check_hook_result(hook, grad, new)
            return new
        # a leaf keeps its hooks; a non-leaf's live on its graph node, which runs them even
        # after this Tensor object is gone (as torch's grad_fn pre-hooks do)
        ctx = self._ctx
        if ctx is None:
            self._hooks += (entry,)
        else:
            ctx.hooks += (entry,)
        tensor = self

        class _Handle:
            def remove(self_inner):
                if ctx is None:
                    tensor._hooks = tuple(h for h in tensor._hooks if h is not entry)
                else:
                    ctx.hooks = tuple(h for h in ctx.hooks if h is not entry)
        return _Handle()

    def backward(self, gradient=None, retain_graph=None, create_graph: bool = False, inputs=None) -> None:
        """Accumulate d(self)/d(leaf) · gradient into ``.grad`` of every leaf that requires grad
        (of ``inputs`` only, when given). ``create_graph=True`` records the backward itself, so
        the gradients can be differentiated again; ``retain_graph`` defaults to ``create_graph``."""
        from .api import backward   # api.py imports this module
        backward(self, None if gradient is None else [gradient], retain_graph, create_graph,
                               inputs=inputs)

    def detach(self) -> "Tensor":
        """A new leaf sharing this tensor's data (and version counter: an in-place change
        through it is seen by the graph, as in torch), outside any graph."""
        t = Tensor._from_op(self._data, None)
        t._vc = self._counter()
        return t

    def detach_(self) -> "Tensor":
        self._ctx = None
        self._view = None
        self._requires_grad = False
        return self

    # ------------------------------------------------------------------ array attributes
    @property
    def shape(self):
        _seam.shape_read(self)   # tinygrad_tx.compile: a size that depends on values?
        return _size_of(self._data.shape)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def dtype(self) -> dtypes.dtype:
        """One of ``tinygrad_tx.float32``, ``int64``, ...: equal to the NumPy dtype of the array."""
        return dtypes.from_numpy_dtype(self._data.dtype)

    @property
    def device(self) -> _device.device:
        return _device.CPU

    def size(self, dim=None):
        _seam.shape_read(self)   # tinygrad_tx.compile: a size that depends on values?
        if dim is None:
            return _size_of(self._data.shape)
        return self._data.shape[_canonical_dim(dim, self.ndim)]

    def dim(self) -> int:
        return self._data.ndim


    def numel(self) -> int:
        _seam.shape_read(self)   # tinygrad_tx.compile: a size that depends on values?
        return self._data.size


    def __len__(self):
        _seam.shape_read(self)   # tinygrad_tx.compile: a size that depends on values?
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def _one_element(self, what: str):
        _seam.read(self, f"converting a tensor to {what}")
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to {what} "
                               f"(shape {self._data.shape})")
        return self._data.reshape(()).item()

    def item(self):
        return self._one_element("a Python scalar")

    def numpy(self, *, force: bool = False) -> np.ndarray:
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on a Tensor that requires grad. Use tensor.detach().numpy() instead.")
        _seam.read(self, ".numpy()")
        return self._data

    def tolist(self):
        _seam.read(self, ".tolist()")
        return self._data.tolist()

    def __bool__(self):
        _seam.read(self, "bool(tensor)")
        if self._data.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with {self._data.size} elements is ambiguous")
        return bool(self._data)

    def __hash__(self):
        return id(self)


def _canonical_dim(dim: int, ndim: int, op: str = "dim") -> int:
    """``dim`` (maybe negative) in ``range(ndim)``, with torch's errors (a 0-d tensor takes 0 and -1)."""
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"{op}: dim must be an int, got {dim!r} of type {type(dim).__name__}")
    lo, hi = (-ndim, ndim - 1) if ndim > 0 else (-1, 0)
    if not lo <= dim <= hi:
        raise IndexOutOfRange(f"{op}: dimension out of range (expected to be in range of [{lo}, {hi}], "
                              f"but got {dim})")
    return int(dim) % ndim if ndim > 0 else 0
