"""PyTorch's custom ``autograd.Function``: a forward and a backward written with Tensors.

This is what a learner writes (and what ``torch.autograd.Function`` is under ``tinygrad-tx run``)::

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):               # Tensors in, run without recording (no_grad)
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):           # one Tensor per output in, one gradient per input out
            y, = ctx.saved_tensors
            return grad * y

    y = Exp.apply(x)

The engine's own ops are :class:`~tinygrad_tx.autograd.ArrayFunction`\\ s (``function.py``): NumPy
arrays in forward and backward, for the study of each op's derivation. Use a ``Function`` to add
an op of your own, as in PyTorch; use an ``ArrayFunction`` to read or write the engine itself.

How it sits on the engine: one call of ``apply`` is one graph node, a :class:`FunctionCtx` (the
``ctx`` the user's methods receive *is* the engine's :class:`~.function.Context`), whose kind is
a small :class:`~.function.ArrayFunction` made for the user's class (``_FunctionNode``): its
``backward`` hands the user's backward Tensors and returns their arrays, or, with
``create_graph=True``, runs it with grad mode on so that its Tensor ops are recorded and the
gradient can be differentiated again. A Function with several outputs gives each output a tiny
routing node (a plain ``Context`` of the same kind) whose gradient reaches the Function's node as
a list of ``(output index, gradient)`` pairs (summed by list concatenation in the engine; the node
has ``out_shape = None``), so the user's backward is called once with one gradient per output.
"""
from __future__ import annotations

import functools
import inspect
import warnings

import numpy as np

from ..core import anomaly as _anomaly
from .dispatch import _dispatch
from ..core.function import ArrayFunction, Context, _freed_error
from ..core.grad_mode import _state, is_grad_enabled, no_grad
from ..core.tensor import Tensor

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


class FunctionCtx(Context):
    """The ``ctx`` of a custom Function: torch's ``ctx`` methods on the engine's graph node.
    Any other attribute may be set on it (``ctx.k = k``) to pass values to backward."""

    def save_for_backward(self, *tensors):
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} is of type "
                                f"{type(t).__name__}")
        self.to_save = tensors

    def save_for_forward(self, *tensors):   # forward-mode AD is not supported; accepted, unused
        self.saved_for_forward = tensors

    def mark_dirty(self, *tensors):
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors):
        self.non_differentiable = tensors

    def set_materialize_grads(self, value: bool):
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self):
        """The tensors given to ``save_for_backward``, refused (as torch) when one was changed in
        place since: an input as it was passed, an output as a Tensor on this node (so a backward
        using it can be differentiated again, through this Function's backward)."""
        if self._freed:
            raise _freed_error(self, "its saved tensors were freed after the first backward")
        out = []
        for rec in self.__dict__.get("_records", ()):
            if rec is None:
                out.append(None)
                continue
            kind, obj, counter, version, what = rec
            if counter.value != version:
                data = obj if kind == "output" else obj._data
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an inplace "
                    f"operation: [{data.dtype} tensor of shape {list(data.shape)}], which is {what}, is at "
                    f"version {counter.value}; expected version {version} instead (needed by "
                    f"{self.fn.__name__}'s backward). Use an out-of-place op (x = x + 1, not x += 1) on "
                    "tensors that backward still needs.")
            if kind == "output":   # rebuilt on each read: the node does not keep its own output alive
                t = Tensor._from_op(obj, self._output_node(what))
                t._vc = counter
                out.append(t)
            else:
                out.append(obj)
        return tuple(out)

    saved_variables = saved_tensors

    def name(self) -> str:
        return f"{self.fn.__name__}Backward"   # torch's name for a custom Function's node (no 0)

    def _output_node(self, what):
        index = self._out_index[what]
        if index is None:
            return None
        if self.out_shape is not None:   # one output: this node is its node
            return self
        return _routing_node(self, index)


class _OutputCtx(Context):
    """The routing node of one output of a Function with several outputs."""

    def name(self) -> str:
        return f"{self.fn.__name__}Backward"


def _routing_node(ctx, i):
    node = _OutputCtx(ctx.fn, (ctx,), (True,))
    node.slot = i
    node.out_shape, node.out_dtype = ctx._out_meta[i]
    return node


class _FunctionNode(ArrayFunction):
    """The graph-node kind of one user Function class (made by ``Function.__init_subclass__``,
    named as the user's class): the engine calls its ``backward`` with arrays, or with Tensors
    under ``create_graph=True``."""

    differentiable_backward = True   # the user's backward is Tensor code: recorded under create_graph
    user = None

    @classmethod
    def backward(cls, ctx, g):
        if not isinstance(ctx, FunctionCtx):   # the routing node of output ``slot``
            return [(ctx.slot, g)]
        return _run_user_backward(cls.user, ctx, g)


def _as_tensor(g):
    return g if isinstance(g, Tensor) else Tensor._from_op(np.asarray(g), None)


def _zeros(meta):
    shape, dtype = meta
    return Tensor._from_op(np.zeros(shape, dtype=dtype), None)


def _run_user_backward(user, ctx, g):
    name = user.__name__
    n_out = len(ctx._out_meta)
    tensors = isinstance(g, Tensor) or (isinstance(g, list) and any(isinstance(p[1], Tensor) for p in g))
    if ctx.out_shape is not None:
        grads = [_as_tensor(g)]
    else:
        grads = [None] * n_out
        for i, gi in g:
            grads[i] = _as_tensor(gi) if grads[i] is None else grads[i] + _as_tensor(gi)
    if ctx.__dict__.get("materialize_grads", True):
        grads = [_zeros(m) if gi is None and m is not None else gi for gi, m in zip(grads, ctx._out_meta)]
    prev = _dispatch.active
    _dispatch.active = False   # the user's backward is plain Tensor code, not NumPy run on Tensors
    try:
        result = _user_backward(user)(ctx, *grads)
    finally:
        _dispatch.active = prev
    if not isinstance(result, tuple):
        result = (result,)
    nodes = ctx.input_nodes
    n_in = len(nodes)
    if len(result) > n_in and all(r is None for r in result[n_in:]):
        result = result[:n_in]   # torch allows extra gradients when they are None
    if len(result) != n_in:
        raise RuntimeError(f"function {name}Backward returned an incorrect number of gradients "
                           f"(expected {n_in}, got {len(result)})")
    out = []
    for i, (r, node) in enumerate(zip(result, nodes)):
        if r is None:
            out.append(None)
            continue
        if not isinstance(r, Tensor):
            raise RuntimeError(f"expected Variable or None (got {type(r).__name__})")
        if node is None:
            raise RuntimeError(f"function {name}Backward returned a gradient different than None at position "
                               f"{i + 1}, but the corresponding forward input was not a Variable")
        shape = node._data.shape if isinstance(node, Tensor) else node.out_shape
        gshape = r._data.shape
        try:
            ok = np.broadcast_shapes(shape, gshape) == gshape
        except ValueError:
            ok = False
        if not ok:
            raise RuntimeError(f"Function {name}Backward returned an invalid gradient at index {i} - got "
                               f"{list(gshape)} but expected shape compatible with {list(shape)}")
        out.append(r if tensors else r._data)
    return tuple(out)


def _user_backward(user):
    vjp, backward = user.vjp, user.backward
    if vjp is not Function.vjp:
        if backward is not Function.backward:
            raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not allowed. "
                               "You should only implement one of them.")
        return vjp
    return backward


class Function:
    """Base class of a custom autograd Function (``torch.autograd.Function``): subclass it, write
    ``forward`` and ``backward`` as static methods with Tensor code, call ``YourFunction.apply``.

    ``forward(ctx, *args, **kwargs)`` runs without recording and returns a Tensor or a tuple;
    or ``forward(*args)`` with a ``setup_context(ctx, inputs, output)``. ``backward(ctx, *grads)``
    gets one gradient per output and returns one per forward argument (None for non-Tensors and
    inputs that need none). With ``create_graph=True`` the backward runs with grad mode on: if it
    is written with Tensor ops, the gradient it returns can be differentiated again."""

    _node_kind = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._node_kind = type(cls.__name__, (_FunctionNode,),
                              {"user": cls, "__module__": cls.__module__, "__qualname__": cls.__qualname__,
                               "__doc__": f"The graph node of {cls.__qualname__} (a custom Function)."})

    def __init__(self, *args, **kwargs):
        warnings.warn(f"{self.__class__} should not be instantiated. Methods on autograd functions are all "
                      "static, so you should invoke them on the class itself. Instantiating an autograd "
                      "function will raise an error in a future version of PyTorch.",
                      DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use "
                           "new-style autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @staticmethod
    def vjp(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it "
                                  "with forward mode AD (tinygrad_tx has no forward mode AD).")

    @classmethod
    def apply(cls, *args, **kwargs):
        if cls._node_kind is None:
            raise RuntimeError("apply is called on a subclass of autograd.Function, not on Function itself")
        setup = cls.setup_context is not Function.setup_context
        if setup:
            bound = inspect.signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, bound.kwargs
        for a in args:   # a view whose base changed in place since its node was built: rebuild it
            if isinstance(a, Tensor) and a._view is not None and a._view.version != a._view.base._version:
                a._refresh_view()
        inputs = args + tuple(kwargs.values())   # as torch, keyword arguments are inputs too (one gradient each)
        needs = tuple([isinstance(a, Tensor) and a._requires_grad for a in inputs])
        record = _state.enabled and True in needs
        # the node behind each input, taken before forward (an input marked dirty gets a new one)
        nodes = tuple([(a if a._ctx is None else a._ctx) if isinstance(a, Tensor) else None for a in inputs])
        ctx = FunctionCtx(cls._node_kind, nodes, needs)
        if record and _anomaly._state.enabled:
            _anomaly.record_creation(ctx)
        prev = _state.enabled
        _state.enabled = False
        try:
            if setup:
                output = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        finally:
            _state.enabled = prev
        return _wrap_outputs(ctx, inputs, output, record)


def _differentiable(o, nondiff):
    return isinstance(o, Tensor) and o._data.dtype.kind in "fc" and not any(o is n for n in nondiff)


def _wrap_outputs(ctx, args, output, record):
    """Give the outputs their graph node (``ctx``, or one routing node each when there are
    several), check mark_dirty, and record the saved tensors with their versions."""
    single = not isinstance(output, tuple)
    outs = [output] if single else list(output)
    d = ctx.__dict__
    dirty = d.pop("dirty_tensors", ())
    nondiff = d.pop("non_differentiable", ())
    for t in dirty:
        if not any(o is t for o in outs):
            raise RuntimeError("Some elements marked as dirty during the forward method were not returned as "
                               "output. The inputs that are modified inplace must all be outputs of the Function.")
    if record:
        for t in dirty:
            if t._ctx is None and t._requires_grad:
                raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
    for t in dirty:
        t._bump()
    if not record:
        ctx.free()
        return output
    ctx._out_meta = [(o._data.shape, o._data.dtype) if isinstance(o, Tensor) else None for o in outs]
    ctx._out_index = {}
    if len(outs) == 1:
        ctx.out_shape, ctx.out_dtype = ctx._out_meta[0] if ctx._out_meta[0] is not None else (None, None)
    else:
        ctx.out_shape = ctx.out_dtype = None   # several outputs: each gets a routing node (the module docstring)
    done = {}   # id(returned Tensor) -> the output Tensor given for it (one Tensor returned twice: one output)
    for i, o in enumerate(outs):
        if not _differentiable(o, nondiff):
            continue
        if id(o) in done:
            outs[i] = done[id(o)]
            continue
        node = ctx if len(outs) == 1 else _routing_node(ctx, i)
        changed_in_place = any(o is t for t in dirty)
        if not changed_in_place and (any(o is a for a in args) or o._ctx is not None or o._requires_grad):
            t = Tensor._from_op(o._data, node)   # an input returned as it is, or a tensor with history: an alias
            t._vc = o._counter()
            outs[i] = t
        else:   # made by forward, or an input changed in place (mark_dirty): that Tensor, on this node now
            o._ctx, o._requires_grad, o._view = node, True, None
        done[id(o)] = outs[i]
    _save(ctx, args, outs, nondiff)
    return outs[0] if single else tuple(outs)


def _save(ctx, args, outs, nondiff):
    to_save = ctx.__dict__.pop("to_save", ())
    records, arrays = [], []
    for t in to_save:
        if t is None:
            records.append(None)
            continue
        arrays.append(t._data)
        k = next((k for k, o in enumerate(outs) if o is t), None)
        if k is not None:
            what = f"output {k} of {ctx.fn.__name__}"
            ctx._out_index[what] = k if (t._ctx is not None and _differentiable(t, nondiff)) else None
            records.append(("output", t._data, t._counter(), t._version, what))
        else:
            what = "a leaf" if t._ctx is None else f"output 0 of {t._ctx.fn.__name__}"
            records.append(("tensor", t, t._counter(), t._version, what))
    ctx._records = records
    Context.save_for_backward(ctx, *arrays)   # counts the bytes held for backward (saved_memory.py)


# --------------------------------------------------------------------------- once_differentiable

class DelayedError(ArrayFunction):
    """The gradient of a backward marked ``@once_differentiable``: differentiating it raises."""

    @staticmethod
    def forward(ctx, *inputs):
        raise AssertionError("never called")

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("trying to differentiate twice a function that was marked with @once_differentiable")


def _delayed_error(t):
    if t is None:
        return None
    fake = Tensor._from_op(t._data, None)
    fake.requires_grad = True
    node = Context(DelayedError, (fake,), (True,))
    node.out_shape, node.out_dtype = t._data.shape, t._data.dtype
    return Tensor._from_op(t._data, node)


def once_differentiable(fn):
    """Decorate a custom Function's ``backward`` that is not written to be differentiated (it
    uses NumPy, say): it runs without recording, and under ``create_graph=True`` differentiating
    its gradients raises (as torch's ``torch.autograd.function.once_differentiable``)."""

    @functools.wraps(fn)
    def wrapper(ctx, *args, **kwargs):
        with no_grad():
            outputs = fn(ctx, *args, **kwargs)
        if not is_grad_enabled():
            return outputs
        if not any(isinstance(a, Tensor) and a._requires_grad for a in args):
            return outputs
        if not isinstance(outputs, tuple):
            return _delayed_error(outputs)
        return tuple([_delayed_error(o) for o in outputs])

    return wrapper
