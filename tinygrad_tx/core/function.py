"""``ArrayFunction`` and its ``Context``: how one op records a graph node.

Every op of the engine is a subclass of :class:`ArrayFunction` with two static methods written
in NumPy::

    class Mul(ArrayFunction):
        @staticmethod
        def forward(ctx, a, b):            # arrays in, one array out
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, grad):           # dL/d(out) in, one dL/d(input) per input out
            a, b = ctx.saved_tensors
            return grad * b, grad * a

``Mul.apply(x, y)`` unwraps the Tensor arguments, runs ``forward`` and, when any input requires
grad (and grad mode is on), records a :class:`Context` on the output Tensor. That context is the
graph node: it remembers whatever ``forward`` saved and, per input, the node behind it -- the
input's own Context when the input was computed by an op, the Tensor itself when it is a leaf.
The graph links contexts, not the intermediate Tensors: an intermediate array stays alive only
while its Tensor is in use or an op saved it for backward (as in PyTorch, whose graph links
``grad_fn`` nodes).

(``tinygrad_tx.autograd.Function`` is PyTorch's kind of custom Function, whose forward receives
Tensors: ``custom.py``. The engine's own ops are ArrayFunctions: NumPy in, NumPy out.)
"""
from __future__ import annotations

import itertools

import numpy as np

from . import anomaly as _anomaly
from . import seam as _seam
from .grad_mode import _dispatch
from .grad_mode import _state
from .saved_memory import SavedMemory, _nbytes
from .versions import _check_saved, refresh_stale_views, track_versions
from .tensor import Tensor

_creation_order = itertools.count()


class Context:
    """A node of the graph: what a Function's forward leaves for its backward (torch's ``ctx``
    and ``grad_fn`` in one).

    ``needs_input_grad[i]`` is True when positional input ``i`` is a Tensor that
    requires grad; a backward may return ``None`` for inputs that do not.
    ``input_nodes[i]`` is the graph node behind positional input ``i``: the
    Context that produced it (a non-leaf Tensor), the Tensor itself (a leaf,
    including constants that need no grad), or None (not a Tensor).
    ``seq`` numbers the nodes in creation order (the backward visits them in reverse).
    ``out_shape``/``out_dtype`` describe the output, so that a consumer can reduce
    its gradient to it without keeping the output array alive. A non-leaf Tensor's
    hooks, ``retain_grad()`` (a weak reference to it) and its ``label`` (``Tensor.name``) live
    here too, because the node outlives the Tensor object.

    It is also the tensor's ``grad_fn``, as in torch: ``name()`` (``"MulBackward0"``),
    ``next_functions`` (per input, the node behind it: a Context, an :class:`AccumulateGrad`
    for a leaf that requires grad, or None), so a graph can be walked by hand.
    """

    __slots__ = ("fn", "seq", "input_nodes", "needs_input_grad", "out_shape", "out_dtype", "hooks",
                 "retained", "label", "_saved", "_saved_bytes", "_freed", "_versions", "__dict__")

    def __init__(self, fn, input_nodes, needs_input_grad):
        self.fn = fn
        self.seq = next(_creation_order)   # larger than the seq of every input's node
        self.input_nodes = input_nodes
        self.needs_input_grad = needs_input_grad
        self.hooks = ()
        self.retained = None
        self.label = None
        self._saved = ()
        self._saved_bytes = 0
        self._freed = False
        self._versions = ()

    def save_for_backward(self, *arrays):
        if self._saved_bytes:
            self._release()
        self._saved = arrays
        self._saved_bytes = n = _nbytes(arrays)
        if n:
            memory = SavedMemory
            memory.current += n
            if memory.current > memory.peak:
                memory.peak = memory.current

    @property
    def saved_tensors(self):
        if self._freed:
            raise _freed_error(self, "its saved arrays were freed after the first backward")
        if self._versions:
            _check_saved(self)
        if _dispatch.active:   # a backward being differentiated: the saved values as Tensors
            return _saved_as_tensors(self)
        return self._saved

    def name(self) -> str:
        """torch's name of this backward node: ``"MulBackward0"`` for a node made by ``Mul``,
        ``"SoftmaxBackward0"`` for one made by ``SoftmaxFn`` (:func:`op_name`), or the name torch
        gives the same computation (``x[0]``: ``SelectBackward0``; ``autograd/node_names.py``, which
        the core reaches through its seam)."""
        if _seam.node_name is None:
            return f"{op_name(self.fn)}Backward0"
        return _seam.node_name(self)

    @property
    def next_functions(self) -> tuple:
        """``((node, 0), ...)``, one pair per input of the forward, as torch's ``grad_fn``."""
        out = []
        for node, need in zip(self.input_nodes, self.needs_input_grad):
            if isinstance(node, Context):
                out.append((node, 0))
            elif node is not None and node._requires_grad:
                out.append((AccumulateGrad(node), 0))
            else:
                out.append((None, 0))
        return tuple(out)

    @property
    def metadata(self) -> dict:
        return self.__dict__.setdefault("_metadata", {})

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"

    @property
    def saved_bytes(self) -> int:
        return self._saved_bytes

    def _release(self):
        if self._saved_bytes:
            SavedMemory.current -= self._saved_bytes
            self._saved_bytes = 0
        self._saved = ()

    def free(self):
        """Drop the saved arrays and the links to the inputs (after backward); the node keeps
        its name."""
        name = self.name()
        self._release()
        self.__dict__.clear()
        self.torch_name = name      # a name read from what the node kept (x[0]: its index)
        self.input_nodes = ()
        self._freed = True

    def __del__(self):
        if self._saved_bytes:
            SavedMemory.current -= self._saved_bytes


class AccumulateGrad:
    """The node behind a leaf that requires grad in ``next_functions`` (torch's ``AccumulateGrad``):
    where the backward pass adds into ``variable.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        self.variable = variable

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    @property
    def next_functions(self) -> tuple:
        return ()

    def __eq__(self, other):
        return isinstance(other, AccumulateGrad) and other.variable is self.variable

    def __hash__(self):
        return id(self.variable)

    def __repr__(self):
        return f"<AccumulateGrad object at {id(self.variable):#x}>"


class _NothingNeeded:
    """``needs_input_grad`` of a forward that records no graph: False for every input."""

    def __getitem__(self, i):
        return False


class _NoGradContext:
    """Stand-in ctx used when no graph is recorded: saving is a no-op."""

    needs_input_grad = _NothingNeeded()

    def save_for_backward(self, *arrays):
        pass


def op_name(fn) -> str:
    """The op a Function class computes, as torch names its backward node (``<op>Backward0``):
    the class name without the suffix ``Fn`` that an engine Function carries when an nn Module
    has its name (``SoftmaxFn`` computes, ``nn.Softmax`` is the layer): ``SoftmaxFn`` -> ``Softmax``,
    ``Mul`` -> ``Mul``."""
    name = fn.__name__
    return name[:-2] if name.endswith("Fn") and len(name) > 2 else name


class ArrayFunction:
    """Base class of every differentiable op. Subclasses define ``forward`` and ``backward``.

    ``forward(ctx, *args, **kwargs)`` receives the NumPy arrays of Tensor
    arguments (other arguments unchanged) and returns one NumPy array.
    ``backward(ctx, grad)`` receives dL/d(output) and returns one gradient per
    positional argument of forward (a single array when there is one argument),
    ``None`` for arguments that are not Tensors or need no grad. Gradients may
    have the broadcast shape of the forward; the engine reduces them.
    """

    # Gradients of gradients (``dispatch.py``): True when ``backward`` runs unchanged on Tensors
    # (every NumPy call it makes has a Tensor twin, nothing written in place, every saved float
    # array an input, the output or listed in ``saved_constants``); such a backward is recorded
    # and can be differentiated again. False: differentiating this op's gradient raises.
    differentiable_backward = False
    saved_constants = ()
    # A saved intermediate that is a function of the other saved values (σ(x) beside x): kept for
    # the fast first-order backward, and recomputed on Tensors when the backward is differentiated:
    # {position: f(ctx, *saved values as Tensors, None at recomputed positions)}.
    saved_recomputed = {}
    # A fused op whose fast backward cannot run on Tensors may name its closed form (rung 2, an
    # ArrayFunction whose forward and backward do): create_graph then differentiates that one
    # (``engine._backward_via_closed_form``; the fused class also defines ``closed_form_call``).
    twice_differentiable_via = None

    @staticmethod
    def forward(ctx, *args, **kwargs):  # pragma: no cover - abstract
        raise NotImplementedError

    @staticmethod
    def backward(ctx, grad):  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` on the inputs' arrays; when an input requires grad, record the node: a
        Context that remembers the nodes behind the inputs and what ``forward`` saved."""
        if _seam.recorder is not None:     # tinygrad_tx.compile is recording this call
            return _seam.recorder.apply(cls, args, kwargs)
        arrays = [a._data if isinstance(a, Tensor) else a for a in args]
        needs = _needs_input_grad(args)
        if needs is None:                       # nothing to differentiate: no node
            out = _as_array(cls.forward(_NoGradContext(), *arrays, **kwargs))
            return track_versions(None, Tensor._from_op(out, None), cls, args, arrays, kwargs)
        refresh_stale_views(args)
        # the node behind each input: its producer's Context, or the Tensor itself for a leaf
        nodes = tuple([(a if a._ctx is None else a._ctx) if isinstance(a, Tensor) else None for a in args])
        ctx = Context(cls, nodes, needs)
        if _anomaly._state.enabled:
            _anomaly.record_creation(ctx)
        out = _as_array(cls.forward(ctx, *arrays, **kwargs), ctx)
        if out.dtype.kind not in "fc":          # integer and bool outputs are not differentiable (torch)
            ctx.free()
            return track_versions(None, Tensor._from_op(out, None), cls, args, arrays, kwargs)
        ctx.out_shape, ctx.out_dtype = out.shape, out.dtype
        return track_versions(ctx, Tensor._from_op(out, ctx), cls, args, arrays, kwargs)

    @classmethod
    def name(cls) -> str:
        """The op's name: the class name without a trailing ``Fn`` (:func:`op_name`)."""
        return op_name(cls)


def _needs_input_grad(args):
    """Which arguments are Tensors that require grad, or None when grad mode is off or none does."""
    if not _state.enabled:
        return None
    needs = tuple([isinstance(a, Tensor) and a._requires_grad for a in args])
    return needs if True in needs else None


def _as_array(out, ctx=None) -> np.ndarray:
    """``forward``'s result as an ndarray: NumPy ufuncs on 0-d arrays give NumPy scalars (a saved
    output is swapped for the array too, so that it stays recognisable as the output)."""
    if isinstance(out, np.ndarray):
        return out
    array = np.asarray(out)
    if ctx is not None and ctx._saved:
        ctx._saved = tuple([array if s is out else s for s in ctx._saved])
    return array


def _saved_as_tensors(ctx) -> tuple:
    """``ctx``'s saved arrays as Tensors with their history, for a backward that is being
    differentiated (``dispatch.py``): an input's array is that input (the leaf itself, or a Tensor
    over the node that produced it), the output's array is the output of ``ctx``; integer and
    bool arrays (indices, masks) and non-arrays stay as they are: they have no derivative. A
    floating array computed inside the forward cannot be traced back to the inputs and is
    refused, unless the op lists its position in ``saved_constants`` (it does not depend on the
    inputs: a dropout mask) or in ``saved_recomputed`` (a function of the other saved values,
    computed again from them, with their history: σ(x) from x)."""
    origin = {rec[0]: rec[4] for rec in ctx._versions}
    out = []
    for k, s in enumerate(ctx._saved):
        if not isinstance(s, (np.ndarray, np.generic)) or s.dtype.kind not in "fc":
            out.append(s)
            continue
        o = origin.get(k)
        if o == "const":
            out.append(Tensor._from_op(s, None))
            continue
        if o is None:
            if k in ctx.fn.saved_recomputed:
                out.append(None)   # filled below, from the others
                continue
            if k in ctx.fn.saved_constants:
                out.append(Tensor._from_op(s, None))
                continue
            raise RuntimeError(
                f"{ctx.fn.__name__}'s backward reads a saved array (saved_tensors[{k}]) computed inside its "
                "forward, which cannot be traced back to its inputs: this backward cannot be differentiated "
                "(create_graph=True)")
        if o == -1:
            out.append(Tensor._from_op(s, ctx))
        else:
            node = ctx.input_nodes[o]
            out.append(node if isinstance(node, Tensor) else Tensor._from_op(s, node))
    for k, recompute in ctx.fn.saved_recomputed.items():
        if out[k] is None:
            out[k] = recompute(ctx, *out)
    return tuple(out)


def _freed_error(ctx, what: str = "the graph was freed by the first backward"):
    return RuntimeError(
        f"Trying to backward through the graph a second time (through {ctx.fn.__name__}): {what}. "
        "Call .backward(retain_graph=True) the first time if you need to backward twice.")
