"""``torch.autograd.gradcheck`` and ``gradgradcheck``: the backward against central finite
differences, with torch's signatures and behaviour.

``gradcheck(func, inputs)`` compares, for every output that requires grad and every input that
requires grad, the analytical Jacobian (one backward per output element, as a learner would
compute it by hand) with the numerical one, column by column::

    J[:, k] ≈ (func(x + eps·e_k) - func(x - eps·e_k)) / 2eps        (error O(eps²))

An entry passes when ``|analytical - numerical| <= atol + rtol·|numerical|`` (``torch.allclose``).
On a mismatch it raises :class:`GradcheckError` (a ``RuntimeError``, as torch's) naming the
output, the input and the worst element -- or returns ``False`` with ``raise_exception=False``.
``fast_mode=True`` checks one random projection vᵀ·J·u instead of the whole Jacobian.

``gradgradcheck(func, inputs, grad_outputs)`` is ``gradcheck`` of the function that maps
``(inputs, grad_outputs)`` to the gradients ``grad(func(inputs), inputs, grad_outputs,
create_graph=True)``: it checks the backward of the backward (the second derivatives, and the
gradient's linearity in ``grad_outputs``).

(The testing kit's array-level ``tinygrad_tx.gradcheck`` is the older, engine-internal form.)
"""
from __future__ import annotations

import warnings

import numpy as np

from ..core.api import grad as _grad
from ..core.tensor import Tensor

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]


class GradcheckError(RuntimeError):
    """A gradient that does not match its finite differences (torch's
    ``torch.autograd.gradcheck.GradcheckError``)."""


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _differentiable_inputs(inputs):
    return [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]


def _numerical_columns(func, inputs, k, eps, out_idx):
    """d outputs / d inputs[k], one column per element of inputs[k] (central differences, the
    input's array swapped for a perturbed copy and put back)."""
    x = inputs[k]
    orig = x._data
    base = np.array(orig, dtype=orig.dtype, copy=True)
    cols = []
    try:
        for e in range(base.size):
            vals = []
            for sign in (1, -1):
                p = base.copy()
                p.flat[e] += sign * eps
                x._data = p
                outs = _as_tuple(func(*inputs))   # with grad mode as it is (gradgradcheck's func calls grad)
                vals.append([np.array(outs[i]._data, dtype=np.float64) for i in out_idx])
            cols.append([(a - b) / (2 * eps) for a, b in zip(*vals)])
    finally:
        x._data = orig
    # per output: a (out numel, input numel) matrix
    return [np.stack([c[o].ravel() for c in cols], axis=1) if cols else np.zeros((0, 0))
            for o in range(len(out_idx))]


def _analytical_rows(outputs, diff_inputs, o, check_grad_dtypes):
    """d outputs[o] / d inputs, row by row: one ``grad`` per output element with a one-hot
    cotangent. Returns one (out numel, input numel) matrix per differentiable input."""
    out = outputs[o]
    n = out.numel()
    mats = [np.zeros((n, t.numel())) for t in diff_inputs]
    for r in range(n):
        u = np.zeros(out.shape, dtype=out._data.dtype)
        u.flat[r] = 1
        grads = _grad(out, diff_inputs, Tensor._from_op(u, None), retain_graph=True, allow_unused=True)
        for j, (g, t) in enumerate(zip(grads, diff_inputs)):
            if g is None:
                continue
            if g.shape != t.shape:
                raise GradcheckError(f"Gradient has incorrect size: {tuple(g.shape)} for an input of size "
                                     f"{tuple(t.shape)}")
            if check_grad_dtypes and g.dtype != t.dtype:
                raise GradcheckError(f"Gradient has dtype mismatch: {g.dtype} for an input of dtype {t.dtype}")
            mats[j][r] = g._data.ravel()
    return mats


def _worst(a, n, atol, rtol):
    excess = np.abs(a - n) - (atol + rtol * np.abs(n))
    r, c = np.unravel_index(np.argmax(excess), excess.shape)
    return r, c


def _mismatch(o, k, num, ana, atol, rtol):
    r, c = _worst(ana, num, atol, rtol)
    return GradcheckError(
        f"Jacobian mismatch for output {o} with respect to input {k},\n"
        f"numerical:{num}\nanalytical:{ana}\n\n"
        f"The worst element: d output[{o}].flat[{r}] / d input[{k}].flat[{c}]: numerical {num[r, c]:.10g}, "
        f"analytical {ana[r, c]:.10g} (difference {abs(num[r, c] - ana[r, c]):.3g}, tolerance "
        f"{atol + rtol * abs(num[r, c]):.3g} = atol + rtol·|numerical|)")


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True,
              fast_mode=False, masked=None):
    """Check the gradients of ``func`` at ``inputs`` (the Tensors among them that require grad)
    against central finite differences; True, or GradcheckError / False as torch's.

    ``check_batched_grad`` is accepted (there is no vmap: the rows computed one by one are the
    batched ones); forward-mode checks raise NotImplementedError (there is no forward mode AD)."""
    if check_forward_ad or check_batched_forward_grad:
        raise NotImplementedError("gradcheck: tinygrad_tx has no forward-mode AD (check_forward_ad / "
                                  "check_batched_forward_grad)")
    if masked:
        raise NotImplementedError("gradcheck: masked=True (sparse inputs) is not supported")
    try:
        _gradcheck(func, _as_tuple(inputs), eps, atol, rtol, nondet_tol, check_undefined_grad,
                   check_grad_dtypes, check_backward_ad, fast_mode)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def _gradcheck(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad, check_grad_dtypes,
               check_backward_ad, fast_mode):
    diff = _differentiable_inputs(inputs)
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them "
                         "have requires_grad=True.")
    for k in diff:
        if inputs[k].dtype.is_floating_point and inputs[k]._data.dtype != np.float64:
            warnings.warn(f"Input #{k} requires gradient and is not a double precision floating point or complex. "
                          "This check will likely fail if all the inputs are not of double precision floating "
                          "point or complex. ", stacklevel=3)
    outputs = _as_tuple(func(*inputs))
    out_idx = [i for i, o in enumerate(outputs) if isinstance(o, Tensor) and o.requires_grad]
    if not out_idx:   # nothing to differentiate: the function must then not depend on its inputs
        float_out = [i for i, o in enumerate(outputs) if isinstance(o, Tensor) and o._data.dtype.kind == "f"]
        for k in diff:
            for num in _numerical_columns(func, inputs, k, eps, float_out):
                if not np.allclose(num, 0, rtol=rtol, atol=atol):
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return
    if not check_backward_ad:
        return
    diff_inputs = [inputs[k] for k in diff]
    if fast_mode:
        _fast_check(func, inputs, outputs, out_idx, diff, eps, atol, rtol)
    else:
        numerical = [_numerical_columns(func, inputs, k, eps, out_idx) for k in diff]   # [input][output]
        for n_o, o in enumerate(out_idx):
            first = _analytical_rows(outputs, diff_inputs, o, check_grad_dtypes)
            for j, k in enumerate(diff):
                num, ana = numerical[j][n_o], first[j]
                if not np.allclose(ana, num, rtol=rtol, atol=atol):
                    raise _mismatch(o, k, num, ana, atol, rtol)
            again = _analytical_rows(outputs, diff_inputs, o, check_grad_dtypes)
            for j, k in enumerate(diff):
                if np.abs(again[j] - first[j]).max(initial=0.0) > nondet_tol:
                    raise GradcheckError(
                        "Backward is not reentrant, i.e., running backward with same input and grad_output multiple "
                        "times gives different values, although analytical gradient matches numerical gradient. "
                        f"The tolerance for nondeterminism was {nondet_tol}.")
    if check_undefined_grad:
        _check_zero_grad_outputs(outputs, out_idx, diff_inputs)


def _fast_check(func, inputs, outputs, out_idx, diff, eps, atol, rtol):
    """vᵀ·J·u for one random u (over the inputs) and v (over the outputs): the finite difference
    along u against the backward of v, dotted with u."""
    rng = np.random.default_rng(0)
    us = {k: rng.standard_normal(inputs[k].shape) for k in diff}
    vs = {o: rng.standard_normal(outputs[o].shape) for o in out_idx}
    orig = {k: inputs[k]._data for k in diff}
    vals = []
    try:
        for sign in (1, -1):
            for k in diff:
                inputs[k]._data = orig[k] + sign * eps * us[k]
            outs = _as_tuple(func(*inputs))
            vals.append(sum(float(np.sum(vs[o] * outs[o]._data)) for o in out_idx))
    finally:
        for k in diff:
            inputs[k]._data = orig[k]
    numerical = (vals[0] - vals[1]) / (2 * eps)
    grads = _grad([outputs[o] for o in out_idx], [inputs[k] for k in diff],
                  [Tensor._from_op(vs[o].astype(outputs[o]._data.dtype), None) for o in out_idx],
                  retain_graph=True, allow_unused=True)
    analytical = sum(float(np.sum(g._data * us[k])) for g, k in zip(grads, diff) if g is not None)
    if not abs(analytical - numerical) <= atol + rtol * abs(numerical):
        raise GradcheckError(
            f"Jacobian mismatch (fast mode): the projection vᵀ·J·u with random v, u is {analytical:.10g} from the "
            f"backward but {numerical:.10g} from finite differences (difference {abs(analytical - numerical):.3g}, "
            f"inputs {diff}). Run with fast_mode=False to see the worst element.")


def _check_zero_grad_outputs(outputs, out_idx, diff_inputs):
    """torch's check_undefined_grad, in this engine's terms: zero cotangents give zero gradients."""
    zeros = [Tensor._from_op(np.zeros_like(outputs[o]._data), None) for o in out_idx]
    grads = _grad([outputs[o] for o in out_idx], diff_inputs, zeros, retain_graph=True, allow_unused=True)
    for g in grads:
        if g is not None and np.any(g._data != 0):
            raise GradcheckError("Expected backward function to handle undefined output grads. Please look at "
                                 "\"Notes about undefined output gradients\" in \"tools/autograd/derivatives.yaml\" "
                                 "(here: zero grad_outputs gave a non-zero gradient)")


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False, masked=False):
    """Check the second derivatives of ``func``: ``gradcheck`` of ``(inputs, grad_outputs) ->
    grad(func(inputs), inputs, grad_outputs, create_graph=True)``. ``grad_outputs`` default to
    random Tensors in [-1, 1) that require grad (so the gradient's dependence on them is checked too)."""
    if check_fwd_over_rev:
        raise NotImplementedError("gradgradcheck: tinygrad_tx has no forward-mode AD (check_fwd_over_rev)")
    tupled_inputs = _as_tuple(inputs)
    if grad_outputs is None:
        outputs = _as_tuple(func(*tupled_inputs))
        rng = np.random.default_rng(0)
        grad_outputs = tuple(_random_grad_output(o, rng, gen_non_contig_grad_outputs)
                             for o in outputs if isinstance(o, Tensor) and o.requires_grad)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_in = len(tupled_inputs)
    diff = _differentiable_inputs(tupled_inputs)

    def new_func(*args):
        inps, gos = args[:n_in], args[n_in:]
        outs = [o for o in _as_tuple(func(*inps)) if isinstance(o, Tensor) and o.requires_grad]
        grads = _grad(outs, [inps[k] for k in diff], list(gos), create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    if not check_rev_over_rev:
        return True
    return gradcheck(new_func, tupled_inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad, check_grad_dtypes=check_grad_dtypes,
                     check_batched_grad=check_batched_grad, fast_mode=fast_mode, masked=masked or None)


def _random_grad_output(o, rng, non_contiguous):
    arr = rng.uniform(-1, 1, o.shape).astype(o._data.dtype)
    if non_contiguous and arr.ndim:
        wide = np.zeros(arr.shape[:-1] + (2 * arr.shape[-1],), dtype=arr.dtype)
        wide[..., ::2] = arr
        arr = wide[..., ::2]
    t = Tensor._from_op(arr, None)
    t.requires_grad = True
    return t
