"""Watch gradients flow: record every node of a backward pass, in the order it runs.

::

    with trace_backward(params=model) as trace:
        loss.backward()
    print(trace.table())              # one row per Function, in execution order
    print(trace.parameter_table())    # the total gradient that reached every parameter

How it works
------------
The engine's :func:`~tinygrad_tx.autograd.run_backward` calls every function in
``autograd._backward_observers`` as ``observer(ctx, grad_out, grads_in)`` right after a
node's ``backward`` has run (and before its saved arrays are freed). ``trace_backward``
registers one such observer for the duration of the ``with`` block and removes it on exit,
also when the block raises. Nothing else changes: the same backward, the same numbers.

Each :class:`BackwardRecord` holds

* ``fn``: the Function's class name (``LinearFn``, ``SoftmaxFn``, ``Mul``, ...), ``index``: its position in
  the execution order (1 = the first node run, the one that produced the root);
* ``output_shape`` and ``grad_out_norm`` = ‖dL/d(output)‖₂: the *total* gradient of the
  node's output, every use of it summed (the engine runs a node only once all of them
  have arrived);
* per positional input: its shape (None for a non-tensor argument), its label (a
  parameter name, a ``Tensor.name``, or None) and ``grad_in_norms[i]`` = ‖dL/d(input_i)‖₂ as
  *this* node contributes it (None when the input needs no gradient). A tensor used by
  several ops receives several contributions; their sum is its gradient;
* ``saved_bytes``: what the node kept from its forward for this backward.

For leaves (parameters, inputs that require grad) the trace also sums those contributions
into the leaf's full gradient: :meth:`BackwardTrace.leaf_grad` and
:meth:`BackwardTrace.parameter_grad_norms` (the norms PyTorch's ``register_hook`` on the
twin's parameters reports; ``tests/test_study.py`` checks them to 1e-10).
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from .. import autograd
from ..core.tensor import Tensor
from .graph import _shape, format_bytes, leaf_label, parameter_names


def l2_norm(a) -> float:
    """‖a‖₂ over all entries, accumulated in float64."""
    a = np.asarray(a)
    return float(np.sqrt(np.sum(np.square(a, dtype=np.float64))))


@dataclass
class BackwardRecord:
    """One node of a backward pass (see the module docstring)."""

    index: int
    fn: str
    output_shape: tuple
    output_dtype: str
    grad_out_norm: float
    input_shapes: tuple
    input_labels: tuple
    grad_in_norms: tuple
    saved_bytes: int
    ctx_id: int = field(repr=False, default=0)


class BackwardTrace:
    """The records of the backward passes run inside a :func:`trace_backward` block."""

    def __init__(self, params=None):
        self.records: list[BackwardRecord] = []
        self._names = parameter_names(params)
        self._leaf_grads: dict = {}     # id(leaf) -> summed gradient
        self._leaves: dict = {}         # id(leaf) -> leaf (kept alive so ids stay unique)

    # ------------------------------------------------------------------ the observer
    def _observe(self, ctx, grad_out, grads_in):
        shapes, labels, norms = [], [], []
        for inp, g in zip(ctx.input_nodes, grads_in):
            if isinstance(inp, Tensor):     # a leaf (or a constant)
                shapes.append(tuple(inp.shape))
                labels.append(leaf_label(inp, self._names))
                if g is not None:
                    prev = self._leaf_grads.get(id(inp))
                    self._leaf_grads[id(inp)] = np.array(g, copy=True) if prev is None else prev + g
                    self._leaves[id(inp)] = inp
            elif inp is not None:           # the node of an op's output
                shapes.append(tuple(inp.out_shape))
                labels.append(inp.label)
            else:
                shapes.append(None)
                labels.append(None)
            norms.append(None if g is None else l2_norm(g))
        g = np.asarray(grad_out)
        self.records.append(BackwardRecord(
            index=len(self.records) + 1, fn=ctx.fn.__name__, output_shape=tuple(g.shape),
            output_dtype=str(g.dtype), grad_out_norm=l2_norm(g), input_shapes=tuple(shapes),
            input_labels=tuple(labels), grad_in_norms=tuple(norms), saved_bytes=int(ctx.saved_bytes),
            ctx_id=id(ctx)))

    # ------------------------------------------------------------------ queries
    def __len__(self):
        return len(self.records)

    def __iter__(self):
        return iter(self.records)

    def record_for(self, tensor: Tensor) -> BackwardRecord:
        """The record of the node that produced ``tensor`` (a non-leaf of the traced graph):
        its ``grad_out_norm`` is ‖dL/d(tensor)‖₂."""
        ctx = tensor._ctx
        if ctx is None:
            raise ValueError(f"tensor of shape {tuple(tensor.shape)} is a leaf: no Function produced it "
                             "(use leaf_grad for leaves)")
        for r in self.records:
            if r.ctx_id == id(ctx) and r.fn == ctx.fn.__name__ and r.output_shape == tuple(tensor.shape):
                return r
        raise KeyError(f"the {ctx.fn.__name__} node that produced this tensor of shape {tuple(tensor.shape)} "
                       "was not run by the traced backward")

    def leaf_grad(self, tensor: Tensor) -> np.ndarray:
        """The gradient that the traced backward sent to the leaf ``tensor`` (all uses summed)."""
        if id(tensor) not in self._leaf_grads:
            raise KeyError(f"no gradient reached this leaf of shape {tuple(tensor.shape)} in the traced backward")
        return self._leaf_grads[id(tensor)]

    def parameter_grad_norms(self) -> dict:
        """``{name: ‖gradient‖₂}`` of every named leaf that received a gradient, in the order
        the gradients first arrived."""
        out = {}
        for key, g in self._leaf_grads.items():
            name = leaf_label(self._leaves[key], self._names)
            if name is not None:
                out[name] = l2_norm(g)
        return out

    @property
    def total_saved_bytes(self) -> int:
        return sum(r.saved_bytes for r in self.records)

    def counts(self) -> dict:
        """``{Function name: number of nodes}``, in order of first appearance."""
        out: dict = {}
        for r in self.records:
            out[r.fn] = out.get(r.fn, 0) + 1
        return out

    # ------------------------------------------------------------------ printing
    def table(self, max_rows: int | None = None) -> str:
        """The records as a fixed-width table, one row per node in execution order."""
        header = f"{'#':>4}  {'op':<26} {'output':<16} {'|dL/dout|':>10}  {'saved':>9}   inputs: shape |dL/dinput|"
        rows = [header, "-" * len(header)]
        records = self.records if max_rows is None else self.records[:max_rows]
        for r in records:
            parts = []
            for shape, label, norm in zip(r.input_shapes, r.input_labels, r.grad_in_norms):
                if shape is None:
                    continue
                g = "-" if norm is None else f"{norm:.3e}"
                parts.append(f"{label + ' ' if label else ''}{_shape(shape)} {g}")
            rows.append(f"{r.index:>4}  {r.fn:<26} {_shape(r.output_shape):<16} {r.grad_out_norm:>10.3e}  "
                        f"{format_bytes(r.saved_bytes):>9}   " + "; ".join(parts))
        if max_rows is not None and len(self.records) > max_rows:
            rows.append(f"... {len(self.records) - max_rows} more nodes")
        n = len(self.records)
        rows.append(f"{n} node{'' if n == 1 else 's'}, {format_bytes(self.total_saved_bytes)} saved for backward")
        return "\n".join(rows)

    def parameter_table(self) -> str:
        """The gradient norm that reached every named leaf, one per line."""
        norms = self.parameter_grad_norms()
        if not norms:
            return "(no named leaf received a gradient: pass params= to trace_backward or set Tensor.name)"
        width = max(len("leaf"), *(len(n) for n in norms))
        lines = [f"{'leaf':<{width}}  {'shape':<12} {'|grad|':>10}"]
        shapes = {leaf_label(self._leaves[k], self._names): self._leaves[k].shape for k in self._leaf_grads}
        for name, norm in norms.items():
            lines.append(f"{name:<{width}}  {_shape(shapes[name]):<12} {norm:>10.4e}")
        return "\n".join(lines)

    def __str__(self):
        return self.table()


@contextmanager
def trace_backward(params=None):
    """Record every backward node run inside the block (see the module docstring).

    ``params``: a Module or a mapping ``name -> Tensor`` whose parameters are labelled by
    name in the records and in :meth:`BackwardTrace.parameter_grad_norms`.
    """
    trace = BackwardTrace(params)
    observer = trace._observe
    autograd._backward_observers.append(observer)
    try:
        yield trace
    finally:
        autograd._backward_observers.remove(observer)
