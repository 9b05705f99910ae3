"""The reverse-mode engine: ``Function``, its ``Context``, and ``backward``.

How a graph is built
--------------------
Every differentiable operation is a subclass of :class:`Function` with two
static methods that work on plain NumPy arrays::

    class Mul(Function):
        @staticmethod
        def forward(ctx, a, b):            # arrays in, one array out
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, grad):           # dL/d(out) in, one dL/d(input) per input out
            a, b = ctx.saved_tensors
            return grad * b, grad * a

``Mul.apply(x, y)`` unwraps the Tensor arguments, runs ``forward`` and, when
any input requires grad (and grad mode is on), records a :class:`Context` on
the output Tensor. That context is the graph edge: it remembers the input
Tensors and whatever ``forward`` saved.

How a graph is run backwards
----------------------------
``Tensor.backward`` calls :func:`run_backward`, which

1. sorts the graph topologically **iteratively** (an explicit stack, so a
   chain of 100,000 ops needs no recursion),
2. walks it from the output to the leaves, calling each ``backward`` once
   with the fully accumulated gradient of that node's output,
3. hands every returned gradient to :func:`reduce_grad_to_input`, the **one
   place where broadcasting is undone**: forward ops broadcast freely and their
   backwards return gradients in the broadcast shape; this function sums over
   the leading axes that broadcasting added and over the axes that were size 1
   in the input, casts to the input's dtype (mixed float32/float64 graphs), and
   checks the result's shape and dtype against the input,
4. accumulates gradients into ``.grad`` of leaves (and of tensors that called
   ``retain_grad()``), and frees each node's saved arrays as soon as its
   backward has run (unless ``retain_graph=True``), so a second backward
   through the same graph raises a clear ``RuntimeError``.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
import functools

import numpy as np

# --------------------------------------------------------------------------- grad mode

class _GradMode(threading.local):
    enabled = True  # per thread, like torch's grad mode


_state = _GradMode()


def is_grad_enabled() -> bool:
    return _state.enabled


def set_grad_enabled(mode: bool) -> None:
    _state.enabled = bool(mode)


class no_grad:
    """Disable graph recording, as ``torch.no_grad``: a context manager and a decorator."""

    def __enter__(self):
        self._prev = is_grad_enabled()
        set_grad_enabled(False)
        return self

    def __exit__(self, *exc):
        set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with no_grad():
                return fn(*args, **kwargs)
        return wrapper


class enable_grad(no_grad):
    """Re-enable graph recording inside a ``no_grad`` region."""

    def __enter__(self):
        self._prev = is_grad_enabled()
        set_grad_enabled(True)
        return self


# --------------------------------------------------------------------------- saved-memory accounting

class SavedMemory:
    """Bytes of arrays currently held by graph nodes for their backward.

    ``save_for_backward`` adds the bytes it is given; they are released when the
    node's backward has run (or the graph is garbage-collected). ``peak`` is the
    high-water mark since the last :meth:`reset_peak`. The benchmark reads it to
    compare the activation memory of two implementations of the same op.
    Arrays that are views of one another are counted once per save call by their
    base buffer.
    """

    current = 0
    peak = 0

    @classmethod
    def reset_peak(cls):
        cls.peak = cls.current


def _nbytes(arrays):
    bases = {}  # id(base buffer) -> its bytes, so views of one buffer count once
    for a in arrays:
        if isinstance(a, np.ndarray):
            while isinstance(a.base, np.ndarray):
                a = a.base
            bases[id(a)] = a.nbytes
    return sum(bases.values())


# --------------------------------------------------------------------------- Function and Context

class Context:
    """What a Function's forward leaves for its backward (torch's ``ctx``).

    ``needs_input_grad[i]`` is True when positional input ``i`` is a Tensor that
    requires grad; a backward may return ``None`` for inputs that do not.
    """

    __slots__ = ("fn", "inputs", "needs_input_grad", "_saved", "_saved_bytes",
                 "_freed", "__dict__")

    def __init__(self, fn, inputs, needs_input_grad):
        self.fn = fn
        self.inputs = inputs
        self.needs_input_grad = needs_input_grad
        self._saved = ()
        self._saved_bytes = 0
        self._freed = False

    def save_for_backward(self, *arrays):
        if self._saved_bytes:
            self._release()
        self._saved = arrays
        self._saved_bytes = _nbytes(arrays)
        SavedMemory.current += self._saved_bytes
        if SavedMemory.current > SavedMemory.peak:
            SavedMemory.peak = SavedMemory.current

    @property
    def saved_tensors(self):
        if self._freed:
            raise RuntimeError(
                f"Trying to backward through the graph a second time (through {self.fn.__name__}): "
                "its saved arrays were freed after the first backward. "
                "Call .backward(retain_graph=True) the first time if you need to backward twice.")
        return self._saved

    @property
    def saved_bytes(self) -> int:
        return self._saved_bytes

    def _release(self):
        if self._saved_bytes:
            SavedMemory.current -= self._saved_bytes
            self._saved_bytes = 0
        self._saved = ()

    def free(self):
        """Drop the saved arrays and the links to the inputs (after backward)."""
        self._release()
        self.__dict__.clear()
        self.inputs = ()
        self._freed = True

    def __del__(self):
        if self._saved_bytes:
            SavedMemory.current -= self._saved_bytes


class _NothingNeeded:
    """``needs_input_grad`` of a forward that records no graph: False for every input."""

    def __getitem__(self, i):
        return False


class _NoGradContext:
    """Stand-in ctx used when no graph is recorded: saving is a no-op."""

    needs_input_grad = _NothingNeeded()

    def save_for_backward(self, *arrays):
        pass


class Function:
    """Base class of every differentiable op. Subclasses define ``forward`` and ``backward``.

    ``forward(ctx, *args, **kwargs)`` receives the NumPy arrays of Tensor
    arguments (other arguments unchanged) and returns one NumPy array.
    ``backward(ctx, grad)`` receives dL/d(output) and returns one gradient per
    positional argument of forward (a single array when there is one argument),
    ``None`` for arguments that are not Tensors or need no grad. Gradients may
    have the broadcast shape of the forward; the engine reduces them.
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):  # pragma: no cover - abstract
        raise NotImplementedError

    @staticmethod
    def backward(ctx, grad):  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def apply(cls, *args, **kwargs):
        arrays = [a.data if isinstance(a, Tensor) else a for a in args]
        record = False
        if _state.enabled:
            needs = tuple([isinstance(a, Tensor) and a._requires_grad for a in args])
            record = True in needs
        ctx = Context(cls, args, needs) if record else _NoGradContext()
        out = cls.forward(ctx, *arrays, **kwargs)
        if not isinstance(out, np.ndarray):
            out = np.asarray(out)
        if record and out.dtype.kind not in "fc":
            record = False  # as in torch, integer and bool outputs (x.long(), x > 0) are not differentiable
        return Tensor._from_op(out, ctx if record else None)

    @classmethod
    def name(cls) -> str:
        return cls.__name__


# --------------------------------------------------------------------------- the one place broadcasting is undone

def accumulation_dtype(dtype):
    """The dtype a sum of ``dtype`` values accumulates in: float64 for float32 (and float16),
    rounded once at the end; None (NumPy's default) otherwise. NumPy's float32 running sum over
    a non-contiguous axis loses about N ulps in N terms, where torch's cascade sum stays near one."""
    dtype = np.dtype(dtype)
    return np.float64 if dtype.kind == "f" and dtype.itemsize < 8 else None


def reduce_grad_to_input(grad, inp, fn_name: str):
    """Return ``grad`` reduced to ``inp``'s shape and cast to its dtype.

    Derivation: if forward broadcast ``x`` of shape ``s`` to shape ``S`` then
    ``y[i] = x[proj(i)]`` and ``dL/dx[j] = sum_{i: proj(i)=j} dL/dy[i]``: a sum
    over the leading axes that broadcasting prepended, and over every axis where
    ``x`` had size 1 but ``S`` does not.
    """
    if not isinstance(grad, np.ndarray):
        grad = np.asarray(grad)
    shape = inp.data.shape
    if grad.shape != shape:
        nlead = grad.ndim - len(shape)
        if nlead < 0:
            raise RuntimeError(f"{fn_name}.backward returned a gradient of shape {grad.shape} "
                               f"for an input of shape {shape}")
        axes = list(range(nlead))
        for i, s in enumerate(shape):
            if s == 1 and grad.shape[nlead + i] != 1:
                axes.append(nlead + i)
        if axes:
            grad = grad.sum(axis=tuple(axes), keepdims=True, dtype=accumulation_dtype(grad.dtype))
        if nlead:
            grad = grad.reshape(grad.shape[nlead:])
        if grad.shape != shape:
            raise RuntimeError(f"{fn_name}.backward returned a gradient of shape {grad.shape} "
                               f"that cannot be reduced to its input's shape {shape}")
    dtype = inp.data.dtype
    if grad.dtype != dtype:
        grad = grad.astype(dtype)
    return grad


# --------------------------------------------------------------------------- backward

def _topological_order(root):
    """Tensors that ``root`` depends on through recorded ops, outputs before inputs.

    Iterative post-order depth-first search: no recursion, so graph depth is
    unbounded.
    """
    order = []
    visited = set()
    stack = [(root, False)]
    while stack:
        t, expanded = stack.pop()
        if expanded:
            order.append(t)
            continue
        if id(t) in visited:
            continue
        visited.add(id(t))
        stack.append((t, True))
        ctx = t._ctx
        if ctx is not None:
            if ctx._freed:
                raise RuntimeError(
                    f"Trying to backward through the graph a second time (through {ctx.fn.__name__}): "
                    "the graph was freed by the first backward. "
                    "Call .backward(retain_graph=True) the first time if you need to backward twice.")
            for inp, need in zip(ctx.inputs, ctx.needs_input_grad):
                if need and id(inp) not in visited:
                    stack.append((inp, False))
    order.reverse()
    return order


# Observers of the backward pass (used by study tools); each is called as
# observer(ctx, grad_out, grads_in) after a node's backward has run.
_backward_observers: list = []


def run_backward(root, gradient, retain_graph: bool):
    grads = {id(root): gradient}
    order = _topological_order(root)
    for t in order:
        g = grads.pop(id(t), None)
        if g is None:
            continue
        if t._hooks:
            for hook in t._hooks:
                new = hook(Tensor(g))
                if new is not None:
                    g = new.data if isinstance(new, Tensor) else np.asarray(new)
        ctx = t._ctx
        if ctx is None or t._retains_grad:
            _accumulate(t, g)
        if ctx is None:
            continue
        fn = ctx.fn
        result = fn.backward(ctx, g)
        if not isinstance(result, tuple):
            result = (result,)
        inputs = ctx.inputs
        if len(result) != len(inputs):
            raise RuntimeError(f"{fn.__name__}.backward returned {len(result)} gradients "
                               f"for {len(inputs)} inputs")
        needs = ctx.needs_input_grad
        reduced = []
        for inp, need, gi in zip(inputs, needs, result):
            if not need or gi is None:
                reduced.append(None)
                continue
            gi = reduce_grad_to_input(gi, inp, fn.__name__)
            reduced.append(gi)
            key = id(inp)
            prev = grads.get(key)
            grads[key] = gi if prev is None else prev + gi
        if _backward_observers:
            for obs in _backward_observers:
                obs(ctx, g, reduced)
        if not retain_graph:
            ctx.free()


def _accumulate(t, g):
    """Accumulate into ``t.grad`` like torch: the first gradient is copied, later ones added."""
    if t.grad is None:
        t.grad = np.array(g, dtype=t.data.dtype, copy=True)
    else:
        t.grad = np.asarray(t.grad + g)


# tensor.py imports this module first (the package imports autograd before tensor), so Tensor
# is bound here once both modules exist, rather than imported inside every Function.apply.
from .tensor import Tensor  # noqa: E402
