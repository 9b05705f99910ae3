"""``torch.autograd.functional``: ``vjp``, ``jvp``, ``jacobian``, ``hessian``, ``vhp``, ``hvp``.

All six are a few reverse passes (:func:`~tinygrad_tx.autograd.grad`) around a function ``f``:

* ``vjp(f, x, v)``  = vᵀ·J                one reverse pass through ``f``;
* ``jvp(f, x, v)``  = J·v                 the *double-backward trick*: u ↦ uᵀJ is linear in u,
  so the gradient of ⟨uᵀJ, v⟩ with respect to u is J·v -- no forward mode needed;
* ``jacobian(f, x)``                      one reverse pass per output element (a row of J);
* ``hessian(f, x)``                       the Jacobian of the gradient (recorded: create_graph);
* ``vhp(f, x, v)``  = vᵀ·H                the gradient of ⟨∇f, v⟩;
* ``hvp(f, x, v)``  = H·v                 the double-backward trick on ∇f (equal to vᵀH for
  the symmetric Hessian of a smooth f).

Inputs and outputs keep torch's shapes: a Tensor in gives a Tensor out, a tuple gives a tuple
(and a Jacobian of several outputs by several inputs is a tuple of tuples). Without
``create_graph`` the results are detached; ``strict=True`` raises where a result would be
independent of an input (torch's messages). Differentiating twice needs every op on the way
to be twice differentiable (``dispatch.py``).
"""
from __future__ import annotations

from ..core.api import grad as _grad
from ..core.grad_mode import enable_grad
from ..core.tensor import Tensor

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


# --------------------------------------------------------------------------- arguments

def _tensors(value, what, fn):
    """``(was_a_tuple, tuple_of_tensors)`` for a Tensor or a tuple of Tensors."""
    packed = isinstance(value, tuple)
    items = value if packed else (value,)
    for i, t in enumerate(items):
        if not isinstance(t, Tensor):
            where = f" value at index {i}" if packed else f" given {what}"
            raise TypeError(f"The {what} given to {fn} must be either a Tensor or a tuple of Tensors but "
                            f"the{where} has type {type(t)}.")
    return packed, items


def _unpack(packed, items):
    return items if packed else items[0]


def _differentiable_copies(inputs, create_graph):
    """The points to differentiate at: with ``create_graph`` an input keeps its history (so the
    result can be differentiated with respect to what made it); otherwise a detached copy."""
    return tuple(x.view_as(x) if create_graph and x.requires_grad else x.detach().requires_grad_(True)
                 for x in inputs)


def _vectors(v, like, like_packed, fn, create_graph):
    """``v`` checked against ``like`` (same count and shapes), as a tuple of Tensors."""
    _, v = _tensors(v, "v", fn)
    v = tuple(t if create_graph else t.detach() for t in v)
    if len(v) != len(like):
        if like_packed:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(like)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, like)):
        if a.shape != b.shape:
            where = f"Entry {i} in " if like_packed else ""
            raise RuntimeError(f"{where}v has invalid size: should be {tuple(b.size())} but got {tuple(a.size())}.")
    return v


def _single_element_default(v, inputs, packed, fn, create_graph):
    if v is not None:
        return _vectors(v, inputs, packed, fn, create_graph)
    if len(inputs) != 1 or inputs[0].numel() != 1:
        raise RuntimeError("The vector v can only be None if the input to the user-provided function is a single "
                           "Tensor with a single element.")
    return None


def _outputs(func, inputs, fn, strict):
    packed, outs = _tensors(func(*inputs), "outputs of the user-provided function", fn)
    if strict:
        for i, o in enumerate(outs):
            if not o.requires_grad:
                raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The "
                                   "outputs must be computed in a differentiable manner from the input when running "
                                   "in strict mode.")
    return packed, outs


def _scalar_output(func, inputs, fn, strict):
    packed, outs = _outputs(func, inputs, fn, strict)
    if packed:
        raise RuntimeError(f"The function given to {fn} should return a single Tensor")
    if outs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn} should contain a single element")
    return outs[0]


# --------------------------------------------------------------------------- one reverse pass

def _reverse(outputs, wrt, cotangents, create_graph):
    """grad(outputs, wrt, cotangents) over the outputs that require grad; None per ``wrt`` that
    no gradient reaches (and for all of them when no output requires grad)."""
    if cotangents is None:
        cotangents = (None,) * len(outputs)
    live = [(o, c) for o, c in zip(outputs, cotangents) if o.requires_grad]
    if not live:
        return (None,) * len(wrt)
    return _grad([o for o, _ in live], list(wrt), [c for _, c in live], retain_graph=True,
                 create_graph=create_graph, allow_unused=True)


def _zeros_where_missing(grads, like, strict, missing_message, create_graph, independent_message=None):
    """Replace a missing gradient by zeros (or raise in strict mode)."""
    out = []
    for i, (g, x) in enumerate(zip(grads, like)):
        if g is None:
            if strict:
                raise RuntimeError(missing_message.format(i=i))
            g = _factories().zeros_like(x)
        elif strict and create_graph and independent_message and not g.requires_grad:
            raise RuntimeError(independent_message.format(i=i))
        out.append(g)
    return tuple(out)


def _result(values, create_graph):
    return tuple(v if create_graph else v.detach() for v in values)


def _strict_needs_grad(values, message, strict):
    if strict:
        for i, v in enumerate(values):
            if v is None or not v.requires_grad:
                raise RuntimeError(message.format(i=i))


_INDEPENDENT = ("The output of the user-provided function is independent of input {i}. This is not allowed in "
                "strict mode.")
_JAC_ALONE = ("The jacobian of the user-provided function is independent of input {i}. This is not allowed in "
              "strict mode when create_graph=True.")
_HESS_ALONE = ("The hessian of the user-provided function is independent of input {i}. This is not allowed in "
               "strict mode when create_graph=True.")


# --------------------------------------------------------------------------- the six products

def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), vᵀ·J)``: one reverse pass with cotangent ``v`` (``v`` may be omitted when
    ``func`` returns one element)."""
    with enable_grad():
        in_packed, xs = _tensors(inputs, "inputs", "vjp")
        xs = _differentiable_copies(xs, create_graph)
        out_packed, outs = _outputs(func, xs, "vjp", strict)
        v = _vectors(v, outs, out_packed, "vjp", create_graph) if v is not None else _v_for_scalar_output(outs)
        grads = _reverse(outs, xs, v, create_graph)
        grads = _zeros_where_missing(grads, xs, strict, _INDEPENDENT, create_graph, _JAC_ALONE)
    return _unpack(out_packed, _result(outs, create_graph)), _unpack(in_packed, _result(grads, create_graph))


def _v_for_scalar_output(outs):
    if len(outs) != 1 or outs[0].numel() != 1:
        raise RuntimeError("The vector v can only be None if the user-provided function returns a single Tensor "
                           "with a single element.")
    return None


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J·v)`` by the double-backward trick: with u a zero cotangent that requires
    grad, g(u) = grad(func(x), x, u) = uᵀJ is recorded; grad(g, u, v) = J·v."""
    with enable_grad():
        in_packed, xs = _tensors(inputs, "inputs", "jvp")
        xs = _differentiable_copies(xs, create_graph)
        v = _single_element_default(v, xs, in_packed, "jvp", create_graph)
        out_packed, outs = _outputs(func, xs, "jvp", strict)
        us = tuple(_factories().zeros_like(o, requires_grad=True) for o in outs)
        g_of_u = _reverse(outs, xs, us, create_graph=True)
        _strict_needs_grad(g_of_u, "The gradient with respect to input {i} is independent of the inputs of the "
                           "user-provided function. This is not allowed in strict mode.", strict)
        live = [(g, vi) for g, vi in zip(g_of_u, v if v is not None else (None,) * len(g_of_u)) if g is not None]
        if live:
            jv = _grad([g for g, _ in live], list(us), [vi for _, vi in live], create_graph=create_graph,
                       allow_unused=True, retain_graph=True)
        else:
            jv = (None,) * len(us)
        jv = _zeros_where_missing(jv, outs, strict, "The gradient with respect to the input is independent of entry "
                                  "{i} in the grad_outputs when using the double backward trick to compute forward "
                                  "mode gradients. This is not allowed in strict mode.", create_graph, _JAC_ALONE)
    return _unpack(out_packed, _result(outs, create_graph)), _unpack(out_packed, _result(jv, create_graph))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian at ``inputs``: for output i and input j, a Tensor of shape
    ``outputs[i].shape + inputs[j].shape`` whose row r is the gradient of output element r (one
    reverse pass each). ``vectorize=True`` computes the same rows one by one; forward mode is not
    available (``strategy="forward-mode"`` raises as torch does without ``vectorize``)."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                             'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                             'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` and '
                                      '`strategy="forward-mode"` are not supported together (yet). Please either set '
                                      '`create_graph=False` or `strategy="reverse-mode"`.')
        if not vectorize:
            raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is only "
                                      "implemented for `vectorize=True`.")
    if vectorize and strict:
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
                           "supported together. Please either set `strict=False` or `vectorize=False`.")
    with enable_grad():
        in_packed, xs = _tensors(inputs, "inputs", "jacobian")
        xs = _differentiable_copies(xs, create_graph)
        out_packed, outs = _outputs(func, xs, "jacobian", strict)
        blocks = []
        for i, out in enumerate(outs):
            rows = [[] for _ in xs]
            flat = out.reshape(-1)
            for r in range(out.numel()):
                grads = _reverse((flat[r],), xs, None, create_graph)
                for j, g in enumerate(grads):
                    if g is None:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is independent of input "
                                               f"{j}. This is not allowed in strict mode.")
                        g = _factories().zeros_like(xs[j])
                    elif strict and create_graph and not g.requires_grad:
                        raise RuntimeError(_JAC_ALONE.format(i=i))
                    rows[j].append(g)
            blocks.append(tuple(_rows_to_block(rows[j], out, xs[j], create_graph) for j in range(len(xs))))
    blocks = [_unpack(in_packed, b) for b in blocks]
    return tuple(blocks) if out_packed else blocks[0]


def _rows_to_block(rows, out, x, create_graph):
    shape = tuple(out.shape) + tuple(x.shape)
    if not rows:   # an output with no elements
        return _factories().zeros(shape, dtype=x.dtype)
    block = _stack(rows, dim=0).reshape(shape)
    return block if create_graph else block.detach()


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of the scalar function ``func`` at ``inputs``: the Jacobian of its gradient; for
    inputs i, j a Tensor of shape ``inputs[i].shape + inputs[j].shape`` (a Tensor for one input,
    a tuple of tuples for several)."""
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    in_packed, xs = _tensors(inputs, "inputs", "hessian")

    def gradient(*points):
        with enable_grad():
            y = _scalar_output(func, points, "hessian", strict).reshape(())
            grads = _reverse((y,), points, None, create_graph=True)
            if strict:
                for i, g in enumerate(grads):
                    if g is None or not g.requires_grad:
                        raise RuntimeError(f"While computing the hessian, found that the jacobian of the user-provided "
                                           f"function with respect to input {i} is independent of the input. This is "
                                           "not allowed in strict mode. You should ensure that your function is twice "
                                           "differentiable and that the jacobian depends on the inputs (this would be "
                                           "violated by a linear function for example).")
            grads = tuple(_factories().zeros_like(p) if g is None else g for g, p in zip(grads, points))
            return grads

    h = jacobian(gradient, xs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                 strategy=outer_jacobian_strategy)
    if in_packed:
        return h
    return h[0][0]


def _scalar_and_gradient(func, xs, fn, strict):
    """``(y, ∇y)`` of a function returning one element, the gradient recorded (create_graph)."""
    y = _scalar_output(func, xs, fn, strict)
    grads = _reverse((y,), xs, None, create_graph=True)
    _strict_needs_grad(grads, "While computing the hessian, found that the jacobian of the user-provided "
                       "function with respect to input {i} is independent of the input. This is not allowed "
                       "in strict mode. You should ensure that your function is twice differentiable and that "
                       "the jacobian depends on the inputs (this would be violated by a linear function for "
                       "example).", strict)
    return y, grads


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), vᵀ·H)``: the gradient of ⟨∇func, v⟩ (func returns one element)."""
    with enable_grad():
        in_packed, xs = _tensors(inputs, "inputs", "vhp")
        xs = _differentiable_copies(xs, create_graph)
        v = _single_element_default(v, xs, in_packed, "vhp", create_graph)
        y, grads = _scalar_and_gradient(func, xs, "vhp", strict)
        live = [(g, vi) for g, vi in zip(grads, v if v is not None else (None,) * len(grads)) if g is not None]
        res = (_grad([g for g, _ in live], list(xs), [vi for _, vi in live], create_graph=create_graph,
                     allow_unused=True, retain_graph=True) if live and any(g.requires_grad for g, _ in live)
               else (None,) * len(xs))
        res = _zeros_where_missing(res, xs, strict, "The jacobian of the user-provided function is independent of "
                                   "input {i}. This is not allowed in strict mode.", create_graph, _HESS_ALONE)
    return _result((y,), create_graph)[0], _unpack(in_packed, _result(res, create_graph))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H·v)``: the double-backward trick on ∇func: with u a zero cotangent that
    requires grad, grad(∇func, x, u) = uᵀH is recorded; grad(uᵀH, u, v) = H·v."""
    with enable_grad():
        in_packed, xs = _tensors(inputs, "inputs", "hvp")
        xs = _differentiable_copies(xs, create_graph)
        v = _single_element_default(v, xs, in_packed, "hvp", create_graph)
        y, grads = _scalar_and_gradient(func, xs, "hvp", strict)
        us = tuple(_factories().zeros_like(x, requires_grad=True) for x in xs)
        live = [(g, u) for g, u in zip(grads, us) if g is not None and g.requires_grad]
        u_h = (_grad([g for g, _ in live], list(xs), [u for _, u in live], create_graph=True, allow_unused=True,
                     retain_graph=True) if live else (None,) * len(xs))
        _strict_needs_grad(u_h, "The hessian of the user-provided function with respect to input {i} is independent "
                           "of the input. This is not allowed in strict mode. You should ensure that your function "
                           "is thrice differentiable and that the hessian depends on the inputs.", strict)
        live = [(h, vi) for h, vi in zip(u_h, v if v is not None else (None,) * len(u_h))
                if h is not None and h.requires_grad]
        res = (_grad([h for h, _ in live], list(us), [vi for _, vi in live], create_graph=create_graph,
                     allow_unused=True, retain_graph=True) if live else (None,) * len(us))
        res = _zeros_where_missing(res, xs, strict, "The hessian of the user-provided function is independent of "
                                   "entry {i} in the grad_jacobian. This is not allowed in strict mode as it prevents "
                                   "from using the double backward trick to replace forward mode AD.", create_graph,
                                   _HESS_ALONE)
    return _result((y,), create_graph)[0], _unpack(in_packed, _result(res, create_graph))


def _factories():
    """factories.py (zeros, zeros_like), imported when first needed: it sits above this package."""
    from .. import factories
    return factories


def _stack(tensors, dim):
    from ..tensor import stack
    return stack(tensors, dim=dim)
