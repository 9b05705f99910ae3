"""``torch.autograd.grad`` and ``torch.autograd.backward``: argument checking around
``engine.run_backward``, with torch's defaults and errors."""
from __future__ import annotations

import numpy as np

from .engine import run_backward
from .versions import refresh_stale_views
from .tensor import Tensor


class GradShapeError(RuntimeError, ValueError):
    """A gradient whose shape is not its output's: torch's RuntimeError (a ValueError too, as this
    project raised before)."""


def _as_list(x, what):
    if isinstance(x, Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return list(x)
    raise TypeError(f"{what} must be a Tensor or a sequence of Tensors, got {type(x).__name__}")


def _seed(out, g, create_graph, i):
    """The gradient fed to ``out``: ``g`` checked against it, or ones for a one-element output."""
    if g is None:
        if out._data.size != 1:
            raise RuntimeError(f"grad can be implicitly created only for scalar outputs (output {i} has "
                               f"shape {tuple(out._data.shape)}: pass grad_outputs= / gradient=)")
        arr = np.ones_like(out._data)
        return Tensor._from_op(arr, None) if create_graph else arr
    if isinstance(g, Tensor):
        if g._data.shape != out._data.shape:
            raise GradShapeError(f"Mismatch in shape: grad_output[{i}] has a shape of {tuple(g._data.shape)} "
                               f"and output[{i}] has a shape of {tuple(out._data.shape)}.")
        if g._data.dtype != out._data.dtype:
            g = g.to(out.dtype)
        return g if create_graph else g._data
    arr = np.asarray(g, dtype=out._data.dtype)
    if arr.shape != out._data.shape:
        raise GradShapeError(f"Mismatch in shape: grad_output[{i}] has a shape of {tuple(arr.shape)} "
                           f"and output[{i}] has a shape of {tuple(out._data.shape)}.")
    return Tensor._from_op(arr, None) if create_graph else arr


def _roots(outputs, grad_outputs, create_graph, what):
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    else:
        grad_outputs = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"{what}: got {len(grad_outputs)} gradients for {len(outputs)} outputs")
    roots, seeds = [], []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if not isinstance(out, Tensor):
            raise TypeError(f"{what}: output {i} is a {type(out).__name__}, not a Tensor")
        refresh_stale_views([out])   # a view whose base changed in place (through a sibling view) since
        if not out._requires_grad:   # its node was built differentiates through the change, as torch's
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        roots.append(out)
        seeds.append(_seed(out, g, create_graph, i))
    return roots, seeds


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs`` (torch.autograd.grad): the sum over
    outputs of ``grad_outputs[i]ᵀ · d outputs[i] / d inputs``, returned as a tuple, one per input;
    no ``.grad`` is touched. ``create_graph=True`` records the backward, so the result can be
    differentiated again (``retain_graph`` then defaults to True)."""
    if is_grads_batched:
        raise NotImplementedError("autograd.grad(is_grads_batched=True) (torch's vmap over grad_outputs) is not "
                                  "supported: call grad once per row of grad_outputs")
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _as_list(outputs, "outputs")
    inputs_list = _as_list(inputs, "inputs")
    for i, t in enumerate(inputs_list):
        if not isinstance(t, Tensor):
            raise TypeError(f"grad: inputs[{i}] is a {type(t).__name__}, not a Tensor")
        if not t._requires_grad:
            raise RuntimeError(f"One of the differentiated Tensors (inputs[{i}]) does not require grad")
    if not inputs_list:
        raise RuntimeError("grad requires non-empty inputs.")
    if retain_graph is None:
        retain_graph = create_graph
    roots, seeds = _roots(outputs, grad_outputs, create_graph, "grad")
    result = run_backward(roots, seeds, retain_graph, create_graph, inputs=inputs_list, accumulate=False)
    out, seen = [], [id(s) for s in seeds]
    for i, (t, g) in enumerate(zip(inputs_list, result)):
        if g is None:
            if not allow_unused:
                raise RuntimeError(f"One of the differentiated Tensors (inputs[{i}]) appears to not have been "
                                   "used in the graph. Set allow_unused=True if this is the desired behavior.")
            out.append(Tensor._from_op(np.zeros_like(t._data), None) if materialize_grads else None)
            continue
        if not isinstance(g, Tensor):
            if id(g) in seen:   # the same array reached two inputs (or is a seed): each gets its own
                g = g.copy()
            seen.append(id(g))
            g = Tensor._from_op(g, None)
        out.append(g)
    return tuple(out)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None):
    """Accumulate into ``.grad`` the gradients of ``tensors`` (torch.autograd.backward) with
    respect to the leaves behind them, or only to ``inputs`` (leaves or not) when given."""
    if grad_variables is not None:
        if grad_tensors is not None:
            raise RuntimeError("backward: pass grad_tensors, not both grad_tensors and grad_variables")
        grad_tensors = grad_variables
    tensors = _as_list(tensors, "tensors")
    if inputs is not None:
        inputs = _as_list(inputs, "inputs")
        if not inputs:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
        for i, t in enumerate(inputs):
            if not isinstance(t, Tensor):
                raise TypeError(f"backward: inputs[{i}] is a {type(t).__name__}, not a Tensor")
            if not t._requires_grad:
                raise RuntimeError(f"One of the differentiated Tensors (inputs[{i}]) does not require grad")
    if retain_graph is None:
        retain_graph = create_graph
    roots, seeds = _roots(tensors, grad_tensors, create_graph, "backward")
    run_backward(roots, seeds, retain_graph, create_graph, inputs=inputs, accumulate=True)
