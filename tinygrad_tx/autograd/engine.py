"""Running the graph backwards: :func:`run_backward`."""
from __future__ import annotations

import heapq

import numpy as np

from .broadcast import reduce_grad_to_input
from .function import _freed_error


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


Tensor = _View = None   # bound by tensor.py once Tensor exists (``_bind_tensor``)
