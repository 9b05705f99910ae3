"""Running the graph backwards: :func:`run_backward`.

1. The nodes are visited in reverse order of creation: every node's inputs were recorded before
   it, so a max-heap on the creation number (``Context.seq``) hands out a node only after every
   consumer of its output has run -- its gradient is then complete. No recursion (a chain of
   100,000 ops is fine) and no separate sorting pass; the heap holds only the frontier.
2. Each node's ``backward`` is called once with that fully accumulated gradient, and the node is
   dropped (its saved arrays freed, unless ``retain_graph``) as soon as its backward has run.
3. Every returned gradient goes through :func:`reduce_grad_to_input` (``broadcast.py``), the one
   place where broadcasting is undone, and is added to the others arriving at the same tensor by
   :func:`add_term` (``accumulate.py``), the one place where gradients are summed.
4. Leaves (and tensors that called ``retain_grad()``) get their summed gradient in ``.grad``;
   :func:`grad` (``torch.autograd.grad``) returns the gradients of the tensors asked for instead,
   and touches no ``.grad``.

With ``create_graph=True`` the gradients are Tensors and each backward runs on Tensors
(``dispatch.py``), so the backward pass is itself recorded and can be differentiated again.
"""
from __future__ import annotations

import heapq

import numpy as np

from . import anomaly
from . import seam as _seam
from .accumulate import SliceGrad, add_term, dense
from .broadcast import broadcast_axes, check_reduced, leading_axes, reduce_grad_to_input
from .grad_mode import running_on_tensors
from .function import ArrayFunction, Context, _freed_error
from .versions import _check_saved
from .grad_mode import _state
from .dtypes import from_numpy_dtype
from .tensor import Tensor

# Observers of the backward pass (used by study tools); each is called as
# observer(ctx, grad_out, grads_in) after a node's backward has run (arrays).
_backward_observers: list = []


def _apply_hooks(hooks, g, create_graph):
    for hook in hooks:
        new = hook(g if create_graph else Tensor(g))
        if new is not None:
            if create_graph:
                g = new if isinstance(new, Tensor) else Tensor._from_op(np.asarray(new), None)
            else:
                g = new._data if isinstance(new, Tensor) else np.asarray(new)
    return g


def _node(t):
    """The graph node behind a Tensor: its producer's Context, or the Tensor itself (a leaf)."""
    return t if t._ctx is None else t._ctx


def _reaching(roots, targets: set) -> set:
    """ids of the Contexts from which some node in ``targets`` (ids) can be reached: only these
    need their backward run when gradients of a few tensors are asked for. Iterative DFS."""
    reach = {}
    stack = [(c, False) for c in roots if isinstance(c, Context)]
    while stack:
        node, expanded = stack.pop()
        key = id(node)
        if not expanded:
            if key in reach:
                continue
            reach[key] = False
            stack.append((node, True))
            for n in node.input_nodes:
                if isinstance(n, Context) and id(n) not in reach:
                    stack.append((n, False))
        else:
            reach[key] = any(n is not None and (id(n) in targets or reach.get(id(n), False))
                             for n in node.input_nodes)
    return {k for k, v in reach.items() if v}


def run_backward(roots, grads, retain_graph, create_graph: bool = False, inputs=None,
                 accumulate: bool = True):
    """Backpropagate ``grads`` (dL/d root, one per Tensor in ``roots``) through the graph.

    ``accumulate=True`` (``backward``): add the gradients into ``.grad`` of every leaf behind
    the roots -- of the Tensors in ``inputs`` only, when given. ``accumulate=False``
    (``autograd.grad``): return the gradient of each Tensor in ``inputs`` (None where none
    arrives) and leave every ``.grad`` alone.
    """
    if _seam.recorder is not None:   # tinygrad_tx.compile is recording this call
        _seam.recorder.backward(roots, grads, create_graph, inputs, accumulate)
    if not isinstance(roots, (list, tuple)):
        roots, grads = [roots], [grads]
    wanted = None   # id(node) -> positions in ``inputs``
    if inputs is not None:
        wanted = {}
        for i, t in enumerate(inputs):
            wanted.setdefault(id(_node(t)), []).append(i)
    captured = {}
    leaves = {}                # id(leaf) -> [leaf, summed gradient], in order of first arrival
    grad_of = {}               # id(ctx) -> gradient arriving so far
    pending = []               # a max-heap on seq: nodes whose gradient has started to arrive
    for root, g in zip(roots, grads):
        node = _node(root)
        if node is root:
            _arrive_leaf(leaves, root, g)
        elif id(node) in grad_of:
            grad_of[id(node)] = grad_of[id(node)] + g
        else:
            grad_of[id(node)] = g
            heapq.heappush(pending, (-node.seq, node))
    reach = _reaching([_node(r) for r in roots], set(wanted)) if wanted is not None else None
    prev_mode = _state.enabled
    _state.enabled = create_graph   # as torch: the backward itself is recorded only with create_graph
    try:
        while pending:
            ctx = heapq.heappop(pending)[1]
            if ctx._freed:
                raise _freed_error(ctx)
            g = dense(grad_of.pop(id(ctx)))
            if ctx.hooks:
                g = _apply_hooks(ctx.hooks, g, create_graph)
            if ctx.retained is not None and accumulate and inputs is None:
                t = ctx.retained()
                if t is not None:
                    _accumulate(t, g)
            if wanted is not None:
                if id(ctx) in wanted:
                    captured[id(ctx)] = g
                if id(ctx) not in reach:
                    if not retain_graph:
                        ctx.free()
                    continue
            _backward_node(ctx, g, grad_of, pending, leaves, create_graph, wanted, reach)
            if not retain_graph:
                ctx.free()
        for key, (leaf, g) in leaves.items():
            g = dense(g)
            if leaf._hooks:
                g = _apply_hooks(leaf._hooks, g, create_graph)
            if wanted is None:
                _accumulate(leaf, g)
                _post_accumulate(leaf)
            elif key in wanted:
                captured[key] = g
    finally:
        _state.enabled = prev_mode
    if wanted is None:
        return None
    result = [None] * len(inputs)
    for key, positions in wanted.items():
        g = captured.get(key)
        for i in positions:
            if g is not None and accumulate:
                _accumulate(inputs[i], g)
                _post_accumulate(inputs[i])
            result[i] = g
    return result


def _arrive_leaf(leaves, leaf, g):
    entry = leaves.get(id(leaf))
    if entry is None:
        leaves[id(leaf)] = [leaf, g]
    else:
        entry[1] = add_term(entry[1], g)


def _backward_node(ctx, g, grad_of, pending, leaves, create_graph, wanted, reach):
    """Run one node's backward; add each input's (reduced) gradient to ``grad_of`` (a node's
    first gradient also puts it on the ``pending`` heap) or to ``leaves``."""
    fn = ctx.fn
    if create_graph:
        result = _backward_on_tensors(ctx, g)
    else:
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
        if reach is not None and (id(node) not in wanted) and (leaf or id(node) not in reach):
            continue   # leads to none of the tensors whose gradient was asked for
        if leaf:
            shape, dtype = node._data.shape, node._data.dtype
        else:
            shape, dtype = node.out_shape, node.out_dtype
        if shape is None:
            pass   # a custom Function's node with several outputs (custom.py): gi is [(output, gradient)]
        elif create_graph:
            gi = _reduce_tensor(gi, shape, dtype, fn.__name__)
        elif type(gi) is SliceGrad:   # indexing's gradient, added into place by add_term
            if gi.shape != shape or gi.dtype != dtype:
                gi = reduce_grad_to_input(gi.dense(), shape, dtype, fn.__name__)
        elif type(gi) is not np.ndarray or gi.shape != shape or gi.dtype != dtype:
            gi = reduce_grad_to_input(gi, shape, dtype, fn.__name__)
        if anomaly._state.enabled and shape is not None:
            anomaly.check(ctx, i, gi)
        reduced[i] = gi
        key = id(node)
        if leaf:
            _arrive_leaf(leaves, node, gi)
        else:
            prev = grad_of.get(key)
            if prev is None:
                grad_of[key] = gi
                heapq.heappush(pending, (-node.seq, node))
            else:
                grad_of[key] = add_term(prev, gi)
    if _backward_observers:
        arrays = [r._data if isinstance(r, Tensor) else dense(r) for r in reduced]
        for obs in _backward_observers:
            obs(ctx, g._data if isinstance(g, Tensor) else g, arrays)


# --------------------------------------------------------------------------- create_graph=True

def _backward_on_tensors(ctx, g):
    """``ctx``'s backward with ``g`` a Tensor, recorded as a graph (``dispatch.py``). A fused op
    with a closed form is differentiated through it (``_backward_via_closed_form``). Any other op
    whose backward cannot run on Tensors runs on arrays and its gradients get a node that refuses
    to be differentiated (torch's ``once_differentiable``)."""
    fn = ctx.fn
    if fn.differentiable_backward:
        with running_on_tensors():
            return fn.backward(ctx, g)
    if fn.twice_differentiable_via is not None:
        return _backward_via_closed_form(ctx, g, fn.twice_differentiable_via)
    result = fn.backward(ctx, g._data)
    if not isinstance(result, tuple):
        return _once_differentiable(ctx, g, result)
    return tuple([_once_differentiable(ctx, g, r) for r in result])


class _ClosedFormContext:
    """The ctx of a closed form replayed on Tensors: what its forward saves (Tensors with their
    history) is what its backward reads; attributes set on it stay."""

    def __init__(self, needs_input_grad):
        self.needs_input_grad = needs_input_grad
        self.saved_tensors = ()

    def save_for_backward(self, *values):
        self.saved_tensors = values


def _backward_via_closed_form(ctx, g, closed_form):
    """The backward of a fused op (``functional/``) differentiated through its closed form.

    A fused op's fast backward cannot run on Tensors: it writes into buffers, works in row blocks
    or with SciPy, and reads intermediates its forward saved (x̂, the probabilities) that have no
    history. Its derivation is written once, plainly, as the op's rung 2 (``closed_form.py``), and
    that is the one differentiated: the closed form's forward runs again on the fused node's
    inputs -- as Tensors with their history, so every value it saves is recorded -- and then its
    backward runs on Tensors. The fused class names its closed form (``twice_differentiable_via``)
    and says how to call it (``closed_form_call(ctx, *inputs)``: the arguments from the fused
    node's inputs and attributes; the closed form's positional inputs are the fused op's first
    ones, in order, any further fused inputs being constants such as targets); its forward saves
    each input that the closed form needs. A closed form whose backward reads only the output
    (softmax, log_softmax) needs no replay: the fused op gives its saved values from the fused
    node's output (``closed_form_saved(ctx, as_output)``), and nothing more is kept.
    Without ``create_graph`` none of this runs: the first-order backward is the fast one."""
    replay = _ClosedFormContext(ctx.needs_input_grad)
    from_output = getattr(ctx.fn, "closed_form_saved", None)
    if from_output is not None:   # the closed form's backward reads only the output: no replay
        replay.saved_tensors, attributes = from_output(ctx, lambda array: Tensor._from_op(array, ctx))
        vars(replay).update(attributes)
        with running_on_tensors():
            grads = closed_form.backward(replay, g)
    else:
        args, kwargs = ctx.fn.closed_form_call(ctx, *_inputs_as_tensors(ctx))   # reads ctx.saved_tensors as arrays
        with running_on_tensors():
            closed_form.forward(replay, *args, **kwargs)
            grads = closed_form.backward(replay, g)
    grads = grads if isinstance(grads, tuple) else (grads,)
    return grads + (None,) * (len(ctx.input_nodes) - len(grads))   # the fused op's trailing constants


def _inputs_as_tensors(ctx) -> list:
    """The positional inputs of ``ctx``'s op as Tensors with their history (None where the input
    was not a Tensor): a leaf is its own node; a computed input is rebuilt over the node that
    produced it from the array the forward saved (an input not saved cannot be rebuilt: error)."""
    if ctx._versions:
        _check_saved(ctx)
    saved = {rec[4]: ctx._saved[rec[0]] for rec in ctx._versions if type(rec[4]) is int and rec[4] >= 0}
    out = []
    for pos, node in enumerate(ctx.input_nodes):
        if node is None or isinstance(node, Tensor):
            out.append(node)
        elif pos in saved:
            out.append(Tensor._from_op(saved[pos], node))
        else:
            raise RuntimeError(
                f"{ctx.fn.__name__}'s backward cannot be differentiated (create_graph=True) through "
                f"{ctx.fn.twice_differentiable_via.__name__}: its forward did not save input {pos}, a computed "
                "tensor, which the closed form needs")
    return out


class NotTwiceDifferentiable(ArrayFunction):
    """The gradient of an op whose backward is not written to run on Tensors: differentiating
    it raises, naming the op (torch's ``DelayedError`` behind ``once_differentiable``)."""

    @staticmethod
    def forward(ctx, *inputs):
        raise AssertionError("never called")

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError(
            f"the gradient computed by {ctx.op_name}'s backward cannot be differentiated: that backward "
            "is not written to run on Tensors (differentiable_backward = False), so create_graph=True "
            "cannot record it (as torch's once_differentiable)")


def _once_differentiable(ctx, g, r):
    if r is None:
        return None
    r = np.asarray(r)
    nodes = (_node(g),) + tuple(ctx.input_nodes)
    needs = (g._requires_grad,) + tuple(ctx.needs_input_grad)
    if r.dtype.kind not in "fc" or True not in needs:
        return Tensor._from_op(r, None)
    node = Context(NotTwiceDifferentiable, nodes, needs)
    node.op_name = ctx.fn.__name__
    node.out_shape, node.out_dtype = r.shape, r.dtype
    return Tensor._from_op(r, node)


def _reduce_tensor(gi, shape, dtype, fn_name):
    """``reduce_grad_to_input`` for a Tensor gradient (create_graph): the same axes
    (``broadcast.broadcast_axes``), summed by Tensor ops so that the sum is recorded."""
    if not isinstance(gi, Tensor):
        gi = Tensor._from_op(np.asarray(gi), None)
    gshape = gi._data.shape
    if gshape != shape:
        nlead = leading_axes(gshape, shape, fn_name)
        axes = broadcast_axes(gshape, shape, nlead)
        if axes:
            gi = gi.sum(dim=axes, keepdim=True)
        check_reduced(gi._data.shape[nlead:], shape, fn_name)
        gi = gi.reshape(shape)
    if gi._data.dtype != dtype:
        gi = gi.to(from_numpy_dtype(dtype))
    return gi


def _accumulate(t, g):
    """Accumulate into ``t.grad`` like torch: the first gradient is copied, later ones added in place
    (its views see the sum); a gradient with history (create_graph) is added out of place."""
    grad = t._grad
    if isinstance(g, Tensor):
        t._grad = g if grad is None else grad + g
        return
    if grad is None:
        t._grad = Tensor._from_op(_seam.copy_array(g, t._data.dtype), None)   # np.array(g, copy=True)
    elif grad._ctx is not None:
        t._grad = grad + Tensor._from_op(g, None)
    else:   # in place, as torch; a read-only (or broadcast) .grad is replaced instead
        if grad._data.flags.writeable and np.shape(g) == grad._data.shape:
            np.add(grad._data, g, out=grad._data, casting="unsafe")
        else:
            grad._data = np.asarray(grad._data + g)
        grad._bump()


def _post_accumulate(t) -> None:
    """Run ``t``'s post-accumulate-grad hooks (``register_post_accumulate_grad_hook``): each is
    called with ``t`` once its ``.grad`` holds this backward's gradient, and must return None."""
    hooks = t._post_hooks   # None for almost every tensor
    if not hooks:
        return
    for hook in tuple(hooks.values()):
        result = hook(t)
        if isinstance(result, Tensor):
            raise RuntimeError("Tensor post accumulate grad hooks should return None.")
        if result is not None:
            raise TypeError(f"expected Variable, but hook returned '{type(result).__name__}' (a post accumulate "
                            "grad hook must return None)")
