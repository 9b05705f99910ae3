"""Batch normalisation: one fused Function with a hand-written backward, and ``batch_norm``.

Batch norm normalises each **channel** (axis 1) with statistics taken across the
batch (and, for (N, C, L) input, the length axis too); layer norm (the
Transformer's choice, tutorial section 7.2) normalises each **sample** across its
own features instead. That is why batch norm needs running averages of the
statistics for inference, and why it behaves differently in train and eval
mode, while layer norm does the same thing in both.
"""
from __future__ import annotations

import numpy as np

from ..core.function import ArrayFunction
from .closed_form import BatchNormClosedForm
from ..core.tensor import Tensor


def _channel_shape(ndim: int, c: int):
    """Shape that broadcasts a per-channel vector against (N, C, *rest)."""
    return (1, c) + (1,) * (ndim - 2)


class BatchNorm(ArrayFunction):
    """y = γ x̂ + β per channel c, x̂ = (x − μ) r: batch statistics (``training=True``) or the
    running estimates as constants (``training=False``).
    Derivation: ``BatchNormClosedForm`` (functional/closed_form.py).

    In training mode forward also updates ``running_mean`` / ``running_var`` in
    place when they are given (momentum update, unbiased variance), as torch's
    kernel does; that side effect plays no part in the derivative.

    Saved: x and, per channel, μ and r; x̂ is recomputed in the backward.
    γ and β come in already shaped to broadcast against x — (C,) for (N, C)
    input, (C, 1) for (N, C, L) — so the backward returns g x̂ and g in x's
    shape and the engine's ``reduce_grad_to_input`` performs the sums over N
    (and L), the one place broadcasting is undone.

    Precision: the arithmetic runs in float64 also for float32 input (the
    result is rounded once at the end), as torch's CPU kernel accumulates the
    statistics in double. It matters for small batches: with m = 2 the two x̂
    are ±sqrt(σ²/(σ² + ε)), and dL/dx's bracket (m d_j − Σ d − x̂_j Σ d x̂) is
    (d_1 − d_2)/2 · ε/(σ² + ε), a difference of nearly equal terms that float32
    would resolve only to a few digits. No speed tricks otherwise. Gradients of gradients
    (``create_graph=True``) go through ``BatchNormClosedForm``: this backward reads μ and r,
    computed in the forward.
    """

    twice_differentiable_via = BatchNormClosedForm   # gradients of gradients go through it

    @staticmethod
    def closed_form_call(ctx, x, weight, bias, *running):
        return (x, weight, bias), {"eps": ctx.eps, "running": None if ctx.training else ctx.running}

    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, training, momentum, eps):
        axes = (0,) + tuple(range(2, x.ndim))
        cs = _channel_shape(x.ndim, x.shape[1])
        acc = np.promote_types(x.dtype, np.float64)
        xa = x.astype(acc, copy=False)
        if training:
            mean = xa.mean(axis=axes)
            centered = xa - mean.reshape(cs)
            var = (centered * centered).mean(axis=axes)
            m = x.size // x.shape[1]
            # the side effect torch's kernel has too: update the running estimates in place
            if running_mean is not None:
                running_mean[...] = (1 - momentum) * running_mean + momentum * mean
            if running_var is not None:
                running_var[...] = (1 - momentum) * running_var + momentum * (var * (m / (m - 1)))
        else:
            mean, var = running_mean.astype(acc), running_var.astype(acc)
            centered = xa - mean.reshape(cs)
        r = 1 / np.sqrt(var + eps)
        xhat = centered * r.reshape(cs)
        y = xhat if weight is None else xhat * weight
        if bias is not None:
            y = y + bias
        ctx.save_for_backward(x, mean, r, weight, bias if ctx.needs_input_grad[2] else None)   # bias: see closed_form_call
        ctx.training, ctx.axes, ctx.cs, ctx.eps = training, axes, cs, eps
        if not training:
            ctx.running = mean, var
        return y.astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        x, mean, r, weight, _ = ctx.saved_tensors
        axes, cs = ctx.axes, ctx.cs
        nx, nw, nb = ctx.needs_input_grad[:3]
        xhat = (x.astype(mean.dtype) - mean.reshape(cs)) * r.reshape(cs)
        gx = None
        if nx:
            d = g.astype(mean.dtype) if weight is None else g * weight.astype(mean.dtype)
            if ctx.training:
                m = x.size // x.shape[1]
                sum_d = d.sum(axis=axes).reshape(cs)
                sum_dx = (d * xhat).sum(axis=axes).reshape(cs)
                gx = (r.reshape(cs) / m) * (m * d - sum_d - xhat * sum_dx)
            else:
                gx = d * r.reshape(cs)
            gx = gx.astype(x.dtype, copy=False)
        return gx, (g * xhat if nw else None), (g if nb else None), None, None, None, None, None


def _array(t):
    return None if t is None else (t._data if isinstance(t, Tensor) else np.asarray(t))


def check_batch_norm(input, running_mean, running_var, weight, bias, training, op):
    """``(input as a Tensor, weight, bias)`` after torch's checks of ``F.batch_norm``'s arguments
    (shapes (C,) for the per-channel vectors, one dtype, running statistics in eval mode, more
    than one value per channel when training)."""
    if not isinstance(input, Tensor):
        input = Tensor(input)
    x = input._data
    if x.ndim < 2:
        raise ValueError(f"{op}: expected input of shape (N, C, *) with at least 2 dimensions, "
                         f"got shape {tuple(x.shape)}")
    if x.dtype.kind != "f":
        raise TypeError(f"{op}: expected a floating point input, got dtype {x.dtype}")
    c = x.shape[1]
    for name, t in (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                    ("running_var", running_var)):
        if t is not None and _array(t).shape != (c,):
            raise ValueError(f"{op}: {name} has shape {tuple(_array(t).shape)} but the input has {c} channels "
                             f"at dim 1 (input shape {tuple(x.shape)})")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and _array(t).dtype != x.dtype:
            raise TypeError(f"{op}: {name} has dtype {_array(t).dtype} but the input has dtype {x.dtype}; "
                            "cast the module (.double() / .float()) or the input")
    if not training and (running_mean is None or running_var is None):
        raise ValueError(f"{op}: running_mean and running_var are required when training=False")
    m = x.size // c if c else 0
    if training and m <= 1:
        raise ValueError(f"{op}: expected more than 1 value per channel when training, "
                         f"got input of shape {tuple(x.shape)}")
    return input, weight, bias


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """``torch.nn.functional.batch_norm``: normalise (N, C, *) input per channel.

    In training mode the batch statistics are used, and when ``running_mean`` /
    ``running_var`` are given they are updated **in place** (as torch does):
    ``running = (1 − momentum) · running + momentum · batch_stat``, where the
    running variance takes the unbiased batch variance (σ² · m/(m − 1)).
    In eval mode the running statistics are used and must be given.
    """
    input, weight, bias = check_batch_norm(input, running_mean, running_var, weight, bias, training, "batch_norm")
    x = input._data
    c = x.shape[1]
    if x.ndim > 2:  # per-channel parameters broadcast as (C, 1, ...) against (N, C, L, ...)
        trailing = (1,) * (x.ndim - 2)
        weight = None if weight is None else weight.reshape((c,) + trailing)
        bias = None if bias is None else bias.reshape((c,) + trailing)
    return BatchNorm.apply(input, weight, bias, _array(running_mean), _array(running_var), training, momentum, eps)


def batch_norm_composite(input, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """Training-mode batch norm from primitives (no running statistics): the mean and biased
    variance of every channel over all axes but axis 1, then (x - μ)/√(σ² + eps) · γ + β."""
    input, weight, bias = check_batch_norm(input, None, None, weight, bias, True, "batch_norm_composite")
    axes = (0,) + tuple(range(2, input.ndim))
    shape = (1, input.shape[1]) + (1,) * (input.ndim - 2)
    centered = input - input.mean(axes, keepdim=True)
    y = centered / ((centered * centered).mean(axes, keepdim=True) + float(eps)).sqrt()
    if weight is not None:
        y = y * weight.reshape(shape)
    return y if bias is None else y + bias.reshape(shape)
