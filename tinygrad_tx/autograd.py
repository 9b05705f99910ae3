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
the output Tensor. That context is the graph node: it remembers whatever
``forward`` saved and, per input, the node behind it -- the input's own
Context when the input was computed by an op, the Tensor itself when it is a
leaf (a parameter, an input). The graph links contexts, not the intermediate
Tensors: an intermediate array stays alive only while its Tensor is in use or
an op saved it for backward (as in PyTorch, whose graph links ``grad_fn``
nodes), so ``x = x + f(x)`` lets the old ``x`` go unless some backward needs it.

How a graph is run backwards
----------------------------
``Tensor.backward`` calls :func:`run_backward`, which

1. visits the nodes in reverse order of creation: every node's inputs were
   recorded before it, so a max-heap on the creation number (``Context.seq``)
   hands out a node only after every consumer of its output has run -- its
   gradient is then complete. No recursion (a chain of 100,000 ops is fine)
   and no separate sorting pass; the heap holds only the frontier;
2. calls each ``backward`` once with that fully accumulated gradient, and
   drops the node (and the gradient) as soon as its backward has run,
3. hands every returned gradient to :func:`reduce_grad_to_input`, the **one
   place where broadcasting is undone**: forward ops broadcast freely and their
   backwards return gradients in the broadcast shape; this function sums over
   the leading axes that broadcasting added and over the axes that were size 1
   in the input, casts to the input's dtype (mixed float32/float64 graphs), and
   checks the result's shape and dtype against the input,
4. accumulates gradients into ``.grad`` of leaves (after every node has run,
   each leaf once with its summed gradient) and of tensors that called
   ``retain_grad()``, and frees each node's saved arrays as soon as its
   backward has run (unless ``retain_graph=True``), so a second backward
   through the same graph raises a clear ``RuntimeError``.

How an in-place change is caught
--------------------------------
When a node saves arrays, ``apply`` records, for each saved array that is (a view of) an input's
or the output's memory, that tensor's version counter and its value (``_saved_versions``). Every
in-place write bumps the counter (``ops/inplace.py``, the optimizers, ``nn.init``,
``load_state_dict``); reading ``ctx.saved_tensors`` in backward compares the values and raises
torch's "modified by an inplace operation" error on a change (``_check_saved``), so a stale saved
value never becomes a gradient. An output whose array shares an input's memory is a view: it
shares the input's version counter (``_link_view``).
"""
from __future__ import annotations

import functools
import heapq
import itertools
import math
import threading

import numpy as np

# --------------------------------------------------------------------------- grad mode

class _GradMode(threading.local):
    enabled = True  # per thread, like torch's grad mode


_state = _GradMode()


def is_grad_enabled() -> bool:
    return _state.enabled


def _set_mode(mode: bool) -> None:
    _state.enabled = bool(mode)


class _GradModeGuard:
    """Base of the grad-mode switches: a context manager that restores the previous mode, and a
    decorator (``@no_grad()`` or bare ``@no_grad``), as torch's."""

    mode = False

    def __new__(cls, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs and cls._takes_function:
            return cls()(args[0])    # bare @no_grad / @inference_mode on a function
        return super().__new__(cls)

    _takes_function = True

    def __enter__(self):
        self._prev = is_grad_enabled()
        _set_mode(self.mode)
        return self

    def __exit__(self, *exc):
        _set_mode(self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__._fresh(self):
                return fn(*args, **kwargs)
        return wrapper

    def _fresh(self):
        return self.__class__()


class no_grad(_GradModeGuard):
    """Disable graph recording, as ``torch.no_grad``: a context manager and a decorator."""

    mode = False


class enable_grad(_GradModeGuard):
    """Re-enable graph recording inside a ``no_grad`` region."""

    mode = True


class inference_mode(_GradModeGuard):
    """``torch.inference_mode(mode=True)``: here the same as ``no_grad`` (mode=True) or a no-op
    (mode=False); a context manager and a decorator, with or without parentheses."""

    def __init__(self, mode: bool = True):
        self.enabled = bool(mode)

    def __enter__(self):
        self._prev = is_grad_enabled()
        if self.enabled:
            _set_mode(False)
        return self

    def _fresh(self):
        return inference_mode(self.enabled)


class set_grad_enabled(_GradModeGuard):
    """``set_grad_enabled(mode)`` sets grad mode at once (a function call, as torch's) and, used
    as a context manager, restores the previous mode on exit."""

    _takes_function = False

    def __init__(self, mode: bool):
        if not isinstance(mode, (bool, int)):
            raise TypeError(f"set_grad_enabled: mode must be a bool, got {mode!r}")
        self._prev = is_grad_enabled()
        self.mode = bool(mode)
        _set_mode(mode)

    def __enter__(self):
        return self

    def __call__(self, fn):
        _set_mode(self._prev)   # as a decorator it changes nothing until the function runs
        return super().__call__(fn)

    def _fresh(self):
        return set_grad_enabled(self.mode)


def is_inference_mode_enabled() -> bool:
    return False


# --------------------------------------------------------------------------- saved-memory accounting

class _SavedMemory:
    """Bytes of arrays currently held by graph nodes for their backward.

    ``save_for_backward`` adds the bytes it is given; they are released when the
    node's backward has run (or the graph is garbage-collected). ``peak`` is the
    high-water mark since the last :meth:`reset_peak`. The benchmark reads it to
    compare the activation memory of two implementations of the same op.
    Arrays that are views of one another are counted once per save call by their
    base buffer. (One instance, ``SavedMemory``: updating an instance's slots is
    cheaper than assigning class attributes, which every op does twice.)
    """

    __slots__ = ("current", "peak")

    def __init__(self):
        self.current = 0
        self.peak = 0

    def reset_peak(self):
        self.peak = self.current


SavedMemory = _SavedMemory()


def _nbytes(arrays):
    """Bytes of the distinct base buffers behind ``arrays`` (non-arrays skipped): views of
    one buffer count once. A list scan, not a dict: a save holds a handful of arrays."""
    bases = []
    for a in arrays:
        if isinstance(a, np.ndarray):
            b = a.base
            while isinstance(b, np.ndarray):
                a, b = b, b.base
            for seen in bases:
                if seen is a:
                    break
            else:
                bases.append(a)
    return sum([b.nbytes for b in bases])


# --------------------------------------------------------------------------- Function and Context

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
    hooks, ``retain_grad()`` (a weak reference to it) and ``name`` live here too,
    because the node outlives the Tensor object.
    """

    __slots__ = ("fn", "seq", "input_nodes", "needs_input_grad", "out_shape", "out_dtype", "hooks",
                 "retained", "name", "_saved", "_saved_bytes", "_freed", "_versions", "__dict__")

    def __init__(self, fn, input_nodes, needs_input_grad):
        self.fn = fn
        self.seq = next(_creation_order)   # larger than the seq of every input's node
        self.input_nodes = input_nodes
        self.needs_input_grad = needs_input_grad
        self.hooks = ()
        self.retained = None
        self.name = None
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
        self.input_nodes = ()
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
        arrays = [a._data if isinstance(a, Tensor) else a for a in args]
        needs = None
        if _state.enabled:
            needs = tuple([isinstance(a, Tensor) and a._requires_grad for a in args])
            if True not in needs:
                needs = None
        if needs is None:
            out = cls.forward(_NoGradContext(), *arrays, **kwargs)
            if not isinstance(out, np.ndarray):
                out = np.asarray(out)
            t = Tensor._from_op(out, None)
            if out.base is not None or (arrays and out is arrays[0]):
                _link_view(t, cls, args, _tensor_roots(args, arrays), kwargs)
            return t
        for a in args:   # a view whose base changed in place since its node was built: rebuild it
            if isinstance(a, Tensor) and a._view is not None and a._view.version != a._view.base._version:
                a._refresh_view()
        # the node behind each input: its producer's Context, or the Tensor itself for a leaf
        nodes = tuple([(a if a._ctx is None else a._ctx) if isinstance(a, Tensor) else None for a in args])
        ctx = Context(cls, nodes, needs)
        roots = None
        out = cls.forward(ctx, *arrays, **kwargs)
        if not isinstance(out, np.ndarray):
            out = np.asarray(out)
        if out.dtype.kind not in "fc":
            ctx.free()   # as in torch, integer and bool outputs (x.long(), x > 0) are not differentiable
            t = Tensor._from_op(out, None)
        else:
            ctx.out_shape, ctx.out_dtype = out.shape, out.dtype
            t = Tensor._from_op(out, ctx)
            if ctx._saved:
                roots = _tensor_roots(args, arrays)
                ctx._versions = _saved_versions(ctx._saved, roots, out, t)
        if out.base is not None or (arrays and out is arrays[0]):
            if roots is None:
                roots = _tensor_roots(args, arrays)
            _link_view(t, cls, args, roots, kwargs)
        return t

    @classmethod
    def name(cls) -> str:
        return cls.__name__


# --------------------------------------------------------------------------- versions and views

def _root(a: np.ndarray) -> np.ndarray:
    """The array that owns ``a``'s memory (``a`` itself when it owns it). NumPy points a view's
    ``base`` at the owner already, so this is one step but for views built on foreign buffers."""
    b = a.base
    if not isinstance(b, np.ndarray):   # owns its memory, or wraps a foreign buffer (memoryview, bytes)
        return a
    while True:
        nb = b.base
        if not isinstance(nb, np.ndarray):
            return b
        b = nb


def _tensor_roots(args, arrays) -> list:
    """``(position, tensor, root array)`` for each Tensor argument (computed once per op, shared
    by the view link and the saved-array records)."""
    return [(pos, a, _root(arr)) for pos, (a, arr) in enumerate(zip(args, arrays)) if isinstance(a, Tensor)]


def _link_view(t, fn, args, roots, kwargs) -> None:
    """``t``'s array shares memory with a Tensor input's: ``t`` is a view of it. Give ``t`` that
    input's version counter (an in-place change through either is a change of both) and
    remember how to rebuild ``t`` from the base (``tensor._View``)."""
    root = _root(t._data)
    for pos, a, r in roots:
        if r is root:
            t._vc = a._counter()
            step = (fn, pos, tuple(args), kwargs)
            if a._view is None:
                t._view = _View(a, (step,), a._vc.value)
            else:
                t._view = _View(a._view.base, a._view.steps + (step,), a._vc.value)
            return


def _saved_versions(saved, roots, out, t_out) -> tuple:
    """For each saved array that is (a view of) an input's or the output's array: (position,
    that tensor's version counter, its value now, the tensor's producer). Arrays computed in the
    forward belong to no tensor and cannot be changed from outside."""
    records = []
    out_root = None
    for k, s in enumerate(saved):
        if not isinstance(s, np.ndarray):
            continue
        if s is out:
            owner = t_out
        else:
            root = _root(s)
            owner = None
            for _, a, r in roots:
                if r is root:
                    owner = a
                    break
            if owner is None and s.base is not None:
                if out_root is None:
                    out_root = _root(out)
                if root is out_root:
                    owner = t_out
        if owner is not None:
            vc = owner._counter()
            records.append((k, vc, vc.value, owner._ctx.fn if owner._ctx is not None else None))
    return tuple(records)


def _check_saved(ctx) -> None:
    """Raise, as torch does, when an array this node saved was changed in place since."""
    for k, vc, value, producer in ctx._versions:
        if vc.value != value:
            s = ctx._saved[k]
            what = f"output 0 of {producer.__name__}" if producer else "a leaf or an input"
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an inplace "
                f"operation: [{s.dtype} tensor of shape {list(s.shape)}], which is {what}, is at version "
                f"{vc.value}; expected version {value} instead (needed by {ctx.fn.__name__}'s backward). "
                "Use an out-of-place op (x = x + 1, not x += 1) on tensors that backward still needs.")


def unshare_saved(ctx, counter) -> None:
    """Give ``ctx`` its own copies of the saved arrays that belong to ``counter``'s tensor: an
    in-place op saves its input's original value (torch's ``original_self``) before writing over it."""
    keep, saved = [], list(ctx._saved)
    for rec in ctx._versions:
        if rec[1] is counter:
            saved[rec[0]] = np.array(saved[rec[0]], copy=True)
        else:
            keep.append(rec)
    ctx._saved, ctx._versions = tuple(saved), tuple(keep)


# --------------------------------------------------------------------------- the one place broadcasting is undone

def accumulation_dtype(dtype):
    """The dtype a sum of ``dtype`` values accumulates in: float64 for float32 (and float16),
    rounded once at the end; None (NumPy's default) otherwise. NumPy's float32 running sum over
    a non-contiguous axis loses about N ulps in N terms, where torch's cascade sum stays near one."""
    dtype = np.dtype(dtype)
    return np.float64 if dtype.kind == "f" and dtype.itemsize < 8 else None


# Below this many rows a float64 accumulation is cheaper than the pairwise passes (each a NumPy call).
_PAIRWISE_MIN_ROWS = 64


def sum_rows(a: np.ndarray) -> np.ndarray:
    """``a.sum(axis=0)`` of a 2-D (N, M) array, accurate without widening to float64.

    For float32 with many rows: a pairwise (tree) sum -- add the bottom half of the rows onto
    the top half, repeat -- so each total is a balanced tree of log2(N) additions, whose
    rounding error grows like log2(N) ulps (a running sum's grows like N), the accuracy of
    torch's cascade sum. Each pass is one vectorised NumPy add over half the remaining rows,
    so the work is the N·M additions of any sum, at float32 memory traffic; the last few rows
    are summed in float64. About 2x faster than accumulating the whole sum in float64, whose
    cast doubles the bytes touched. Other dtypes (float64, ints) use NumPy's sum.
    """
    acc = accumulation_dtype(a.dtype)
    if acc is None:
        return a.sum(axis=0)
    n = a.shape[0]
    if n >= _PAIRWISE_MIN_ROWS:
        half = n // 2
        top = a[:half] + a[half:2 * half]          # a fresh array: later passes add in place
        if n % 2:
            top[0] += a[-1]
        n = half
        while n >= _PAIRWISE_MIN_ROWS:
            half = n // 2
            if n % 2:
                top[0] += top[n - 1]
            top[:half] += top[half:2 * half]
            n = half
        a = top[:n]
    return a.sum(axis=0, dtype=acc).astype(a.dtype)


def reduce_grad_to_input(grad, shape, dtype, fn_name: str):
    """Return ``grad`` reduced to an input of ``shape`` and cast to its ``dtype``.

    Derivation: if forward broadcast ``x`` of shape ``s`` to shape ``S`` then
    ``y[i] = x[proj(i)]`` and ``dL/dx[j] = sum_{i: proj(i)=j} dL/dy[i]``: a sum
    over the leading axes that broadcasting prepended, and over every axis where
    ``x`` had size 1 but ``S`` does not. A sum over leading axes only (a bias, a
    positional embedding added to a batch) of a contiguous gradient is a sum of the
    rows of a 2-D view, done by the pairwise :func:`sum_rows`; other sums accumulate
    float32 in float64.
    """
    if not isinstance(grad, np.ndarray):
        grad = np.asarray(grad)
    if grad.shape != shape:
        nlead = grad.ndim - len(shape)
        if nlead < 0:
            raise RuntimeError(f"{fn_name}.backward returned a gradient of shape {grad.shape} "
                               f"for an input of shape {shape}")
        if nlead and grad.shape[nlead:] == shape and grad.size and grad.flags.c_contiguous:
            grad = sum_rows(grad.reshape(math.prod(grad.shape[:nlead]), -1)).reshape(shape)
        else:
            axes = tuple(range(nlead)) + tuple(nlead + i for i, s in enumerate(shape)
                                               if s == 1 and grad.shape[nlead + i] != 1)
            if axes:
                grad = grad.sum(axis=axes, keepdims=True, dtype=accumulation_dtype(grad.dtype))
            if nlead:
                grad = grad.reshape(grad.shape[nlead:])
        if grad.shape != shape:
            raise RuntimeError(f"{fn_name}.backward returned a gradient of shape {grad.shape} "
                               f"that cannot be reduced to its input's shape {shape}")
    if grad.dtype != dtype:
        grad = grad.astype(dtype)
    return grad


# --------------------------------------------------------------------------- backward

def _freed_error(ctx, what: str = "the graph was freed by the first backward"):
    return RuntimeError(
        f"Trying to backward through the graph a second time (through {ctx.fn.__name__}): {what}. "
        "Call .backward(retain_graph=True) the first time if you need to backward twice.")


# Observers of the backward pass (used by study tools); each is called as
# observer(ctx, grad_out, grads_in) after a node's backward has run.
_backward_observers: list = []


def _apply_hooks(hooks, g):
    for hook in hooks:
        new = hook(Tensor(g))
        if new is not None:
            g = new._data if isinstance(new, Tensor) else np.asarray(new)
    return g


def run_backward(root, gradient, retain_graph: bool):
    """Backpropagate ``gradient`` (dL/d root) to every leaf behind the Tensor ``root``."""
    ctx = root._ctx
    leaves = {}                # id(leaf) -> [leaf, summed gradient], in order of first arrival
    if ctx is None:
        leaves[id(root)] = [root, gradient]
    else:
        grads = {id(ctx): gradient}
        pending = [(-ctx.seq, ctx)]     # a max-heap on seq: nodes whose gradient has started to arrive
        while pending:
            ctx = heapq.heappop(pending)[1]
            if ctx._freed:
                raise _freed_error(ctx)
            g = grads.pop(id(ctx))
            if ctx.hooks:
                g = _apply_hooks(ctx.hooks, g)
            if ctx.retained is not None:
                t = ctx.retained()
                if t is not None:
                    _accumulate(t, g)
            _backward_node(ctx, g, grads, pending, leaves)
            if not retain_graph:
                ctx.free()
    for leaf, g in leaves.values():
        if leaf._hooks:
            g = _apply_hooks(leaf._hooks, g)
        _accumulate(leaf, g)


def _backward_node(ctx, g, grads, pending, leaves):
    """Run one node's backward; add each input's (reduced) gradient to ``grads`` (a node's
    first gradient also puts it on the ``pending`` heap) or to ``leaves``."""
    fn = ctx.fn
    result = fn.backward(ctx, g)
    if not isinstance(result, tuple):
        result = (result,)
    nodes = ctx.input_nodes
    if len(result) != len(nodes):
        raise RuntimeError(f"{fn.__name__}.backward returned {len(result)} gradients "
                           f"for {len(nodes)} inputs")
    reduced = [None] * len(nodes)
    for i, (node, need, gi) in enumerate(zip(nodes, ctx.needs_input_grad, result)):
        if not need or gi is None:
            continue
        leaf = isinstance(node, Tensor)
        if leaf:
            shape, dtype = node._data.shape, node._data.dtype
        else:
            shape, dtype = node.out_shape, node.out_dtype
        if type(gi) is not np.ndarray or gi.shape != shape or gi.dtype != dtype:
            gi = reduce_grad_to_input(gi, shape, dtype, fn.__name__)
        reduced[i] = gi
        key = id(node)
        if leaf:
            entry = leaves.get(key)
            if entry is None:
                leaves[key] = [node, gi]
            else:
                entry[1] = entry[1] + gi
        else:
            prev = grads.get(key)
            if prev is None:
                grads[key] = gi
                heapq.heappush(pending, (-node.seq, node))
            else:
                grads[key] = prev + gi
    if _backward_observers:
        for obs in _backward_observers:
            obs(ctx, g, reduced)


def _accumulate(t, g):
    """Accumulate into ``t.grad`` (a Tensor) like torch: the first gradient is copied, later ones added."""
    grad = t._grad
    if grad is None:
        t._grad = Tensor._from_op(np.array(g, dtype=t._data.dtype, copy=True), None)
    else:
        grad._data = np.asarray(grad._data + g)
        grad._bump()


# tensor.py imports this module first (the package imports autograd before tensor), so Tensor
# is bound here once both modules exist, rather than imported inside every Function.apply.
from .tensor import Tensor, _View  # noqa: E402
