"""``torch.autograd.functional``: ``jacobian``, ``hessian``, ``vjp``, ``jvp``, ``hvp``, ``vhp``.

Each is a few calls of :func:`~tinygrad_tx.autograd.grad`, written as torch writes them (the
structure of inputs and outputs -- a Tensor or a tuple, and tuples of tuples for Jacobians of
several outputs by several inputs -- and the ``strict`` errors are torch's):

* ``vjp``: one reverse pass, vᵀJ;
* ``jvp``: J·v by the *double-backward trick*: g(u) = uᵀJ is linear in u, so its own vjp with v,
  d⟨g(u), v⟩/du = J·v, needs no forward mode;
* ``jacobian``: one reverse pass per output element (``vectorize`` and the forward-mode strategy
  are accepted and compute the same rows);
* ``hessian``: the Jacobian of the Jacobian (the inner one with ``create_graph=True``);
* ``vhp`` / ``hvp``: vᵀH by differentiating the gradient once more; H·v by the trick again
  (the same numbers for the symmetric Hessians of smooth functions).

Adapted from PyTorch's ``torch/autograd/functional.py`` (BSD-style licence).
"""
from __future__ import annotations

from .api import grad as _grad
from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _as_tuple(inp, arg_name, fn_name):
    is_tuple = isinstance(inp, tuple)
    if not is_tuple:
        inp = (inp,)
    for i, el in enumerate(inp):
        if not isinstance(el, Tensor):
            where = f" value at index {i}" if is_tuple else f" given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                            f"the{where} has type {type(el)}.")
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph, need_graph):
    """Fresh Tensors to differentiate with respect to: with create_graph an input that requires
    grad stays connected to its history (an alias); otherwise a detached copy of the reference."""
    return tuple(inp.view_as(inp) if create_graph and inp.requires_grad else inp.detach().requires_grad_(need_graph)
                 for inp in inputs)


def _grad_postprocess(inputs, create_graph):
    if isinstance(inputs[0], Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.shape != el_other.shape:
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.size()} but got {el_v.size()}.")


_STRICT_NO_GRAD = {
    "hessian": ("The hessian of the user-provided function with respect to input {i} is independent of the input. "
                "This is not allowed in strict mode. You should ensure that your function is thrice differentiable "
                "and that the hessian depends on the inputs."),
    "jacobian": ("While computing the hessian, found that the jacobian of the user-provided function with respect to "
                 "input {i} is independent of the input. This is not allowed in strict mode. You should ensure that "
                 "your function is twice differentiable and that the jacobian depends on the inputs (this would be "
                 "violated by a linear function for example)."),
    "grad_inputs": ("The gradient with respect to input {i} is independent of the inputs of the user-provided "
                    "function. This is not allowed in strict mode."),
    "outputs": ("Output {i} of the user-provided function does not require gradients. The outputs must be computed "
                "in a differentiable manner from the input when running in strict mode."),
}


def _check_requires_grad(inputs, input_type, strict):
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This is not "
                               "allowed in strict mode.")
        if not inp.requires_grad:
            raise RuntimeError(_STRICT_NO_GRAD[input_type].format(i=i))


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """``grad`` over the outputs that require grad, None for every input when none does."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    kept = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not kept:
        return (None,) * len(inputs)
    return _grad([o for o, _ in kept], inputs, [g for _, g in kept], allow_unused=True,
                 create_graph=create_graph, retain_graph=retain_graph)


_STRICT_NONE = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in strict mode.",
    "back_trick": ("The gradient with respect to the input is independent of entry {i} in the grad_outputs when using "
                   "the double backward trick to compute forward mode gradients. This is not allowed in strict mode."),
    "double_back": ("The jacobian of the user-provided function is independent of input {i}. This is not allowed in "
                    "strict mode."),
    "double_back_trick": ("The hessian of the user-provided function is independent of entry {i} in the grad_jacobian. "
                          "This is not allowed in strict mode as it prevents from using the double backward trick to "
                          "replace forward mode AD."),
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    res = ()
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_STRICT_NONE[stage].format(i=i))
            g = _tg().zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. This is not "
                               "allowed in strict mode when create_graph=True.")
        res += (g,)
    return res


def _single_element_v(v, inputs, is_tuple, create_graph, what):
    if v is not None:
        _, v = _as_tuple(v, "v", what)
        v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
        _validate_v(v, inputs, is_tuple)
    elif len(inputs) != 1 or inputs[0].numel() != 1:
        raise RuntimeError("The vector v can only be None if the input to the user-provided function is a single "
                           "Tensor with a single element.")
    return v


def _last_pass(outputs, is_outputs_tuple, of, wrt, v, refs, stage, is_result_tuple, create_graph, strict):
    """The closing ``grad(of, wrt, v)`` of vjp/jvp/vhp/hvp (recorded only with create_graph), its
    missing entries filled with zeros shaped as ``refs``; returns ``(outputs, result)`` shaped as torch's."""
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(of, wrt, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, refs, strict, create_graph, stage)
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_grad_postprocess(result, create_graph), is_result_tuple))


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), vᵀ·J)``: the vector-Jacobian product at ``inputs``."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, outputs, is_outputs_tuple)
        elif len(outputs) != 1 or outputs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function returns a single Tensor "
                               "with a single element.")
    return _last_pass(outputs, is_outputs_tuple, outputs, inputs, v, inputs, "back", is_inputs_tuple,
                      create_graph, strict)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J·v)``: the Jacobian-vector product, by the double-backward trick."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _single_element_v(v, inputs, is_inputs_tuple, create_graph, "jvp")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict=strict)
        # g(u) = uᵀJ, recorded: it is linear in u, and its vjp with v is J·v
        grad_outputs = tuple(_tg().zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    return _last_pass(outputs, is_outputs_tuple, grad_inputs, grad_outputs, v, outputs, "back_trick",
                      is_outputs_tuple, create_graph, strict)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: for output i and input j a Tensor of shape
    ``outputs[i].shape + inputs[j].shape``; a Tensor, a tuple, or a tuple of tuples as torch's.
    ``vectorize=True`` and ``strategy="forward-mode"`` give the same numbers, computed row by row."""
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
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict=strict)
        jac = ()
        for i, out in enumerate(outputs):
            rows = tuple([] for _ in inputs)
            flat = out.reshape(-1)
            for j in range(out.numel()):
                vj = _autograd_grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
                for k, (rows_k, vj_k, inp) in enumerate(zip(rows, vj, inputs)):
                    if vj_k is not None:
                        if strict and create_graph and not vj_k.requires_grad:
                            raise RuntimeError(f"The jacobian of the user-provided function is independent of input "
                                               f"{i}. This is not allowed in strict mode when create_graph=True.")
                        rows_k.append(vj_k)
                    else:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is independent of input "
                                               f"{k}. This is not allowed in strict mode.")
                        rows_k.append(_tg().zeros_like(inp))
            jac += (tuple(_stack_rows(rows_k, tuple(out.shape) + tuple(inputs[k].shape), inputs[k])
                          for k, rows_k in enumerate(rows)),)
        jac = _grad_postprocess(jac, create_graph)
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def _stack_rows(rows, shape, inp):
    if not rows:   # an output with no elements
        return _tg().zeros(shape, dtype=inp.dtype)
    return _tg().stack(rows, dim=0).reshape(shape)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of the scalar function ``func`` at ``inputs``: for inputs i, j a Tensor of shape
    ``inputs[i].shape + inputs[j].shape`` (a Tensor for one input, a tuple of tuples for several)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return out.squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _scalar_function_outputs(func, inputs, what, strict):
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", what)
    _check_requires_grad(outputs, "outputs", strict=strict)
    if is_outputs_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {what} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {what} should contain a single element")
    return is_outputs_tuple, outputs


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), vᵀ·H)``: the vector-Hessian product of a scalar function."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _single_element_v(v, inputs, is_inputs_tuple, create_graph, "vhp")
        is_outputs_tuple, outputs = _scalar_function_outputs(func, inputs, "vhp", strict)
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
    return _last_pass(outputs, is_outputs_tuple, jac, inputs, v, inputs, "double_back", is_inputs_tuple,
                      create_graph, strict)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H·v)``: the Hessian-vector product of a scalar function (the
    double-backward trick on its gradient)."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _single_element_v(v, inputs, is_inputs_tuple, create_graph, "hvp")
        is_outputs_tuple, outputs = _scalar_function_outputs(func, inputs, "hvp", strict)
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        grad_jac = tuple(_tg().zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    return _last_pass(outputs, is_outputs_tuple, double_back, grad_jac, v, inputs, "double_back_trick",
                      is_inputs_tuple, create_graph, strict)


def _tg():
    import tinygrad_tx
    return tinygrad_tx


Tensor = None   # bound by tensor.py once Tensor exists (``autograd._bind_tensor``)
