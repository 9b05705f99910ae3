"""``F.instance_norm``: each (sample, channel) plane normalised by its own statistics.

A **composite** of primitives with hand-written backwards (``mean``, subtraction, square, ``rsqrt``,
products): for x of shape (N, C, *spatial), with μ and σ² the mean and biased variance over the
spatial positions of each (n, c),

    y = (x − μ) / √(σ² + eps) · w_c + b_c

and the engine's gradient is the chain rule through those ops — the derivative torch's fused
kernel computes (instance norm is batch norm applied to an (1, N·C, *spatial) input).
With ``running_mean``/``running_var`` and ``use_input_stats`` (training), the running statistics
move by ``momentum`` towards the batch average of μ and of the *unbiased* variance, in place, as
torch's; ``use_input_stats=False`` (eval with tracked statistics) normalises by them instead.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..core.grad_mode import no_grad
from ..autograd.node_names import named
from ..core.tensor import Tensor
from ._util import as_tensor, check_float

__all__ = ["instance_norm", "group_norm"]


def _channel_shape(x: Tensor):
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """``torch.nn.functional.instance_norm`` for an (N, C, *spatial) input (at least one spatial
    dimension)."""
    op = "instance_norm"
    x = as_tensor(input, op, "input")
    if x.ndim < 3:
        raise ValueError(f"{op}: expected an input of shape (N, C, *spatial) with at least 3 dimensions, "
                         f"got shape {tuple(x.shape)}")
    for name, value in (("momentum", momentum), ("eps", eps)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{op}: {name} must be a number, got {value!r}")
    tensors = {"input": x, "weight": weight, "bias": bias, "running_mean": running_mean, "running_var": running_var}
    check_float(op, **{k: v for k, v in tensors.items() if isinstance(v, Tensor)})
    c = x.shape[1]
    for name, t in tensors.items():
        if name != "input" and t is not None and tuple(t.shape) != (c,):
            raise RuntimeError(f"{op}: {name} must have shape ({c},) (one per channel of input {tuple(x.shape)}), "
                               f"got {tuple(t.shape)}")
    dims = tuple(range(2, x.ndim))
    spatial = int(np.prod(x.shape[2:]))
    if use_input_stats:
        if spatial <= 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size {tuple(x.shape)}")
        mean = x.mean(dims, keepdim=True)
        centered = x - mean
        var = (centered * centered).mean(dims, keepdim=True)
        if running_mean is not None or running_var is not None:
            with no_grad():
                if running_mean is not None:
                    running_mean.mul_(1 - momentum).add_(mean.detach().reshape(x.shape[0], c).mean(0) * momentum)
                if running_var is not None:
                    unbiased = var.detach().reshape(x.shape[0], c).mean(0) * (spatial / (spatial - 1))
                    running_var.mul_(1 - momentum).add_(unbiased * momentum)
    else:
        if running_mean is None or running_var is None:
            raise ValueError(f"{op}: Expected running_mean and running_var to be defined when use_input_stats "
                             f"is false")
        mean = running_mean.reshape(_channel_shape(x))
        centered = x - mean
        var = running_var.reshape(_channel_shape(x))
    y = centered * (var + eps).rsqrt()
    if weight is not None:
        y = y * weight.reshape(_channel_shape(x))
    if bias is not None:
        y = y + bias.reshape(_channel_shape(x))
    return named(y, "ViewBackward0")     # torch's: batch_norm on the (1, N·C, *) view, viewed back


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """``torch.nn.functional.group_norm``: the C channels of an (N, C, *) input split into
    ``num_groups`` groups, each (sample, group) normalised by its own mean and biased variance
    (over its channels and positions), then ``weight``/``bias`` per channel. The same composite
    as ``instance_norm`` on the (N, G, C/G·*) view (instance norm is group norm with G = C,
    layer norm over (C, *) with G = 1)."""
    op = "group_norm"
    x = as_tensor(input, op, "input")
    if x.ndim < 2:
        raise RuntimeError(f"{op}: expected an input with at least 2 dimensions (N, C, *), got shape {tuple(x.shape)}")
    if isinstance(num_groups, bool) or not isinstance(num_groups, numbers.Integral) or num_groups <= 0:
        raise ValueError(f"{op}: num_groups must be a positive int, got {num_groups!r}")
    c = x.shape[1]
    if c % num_groups:
        raise RuntimeError(f"{op}: Expected number of channels in input to be divisible by num_groups, but got "
                           f"input of shape {tuple(x.shape)} and num_groups={num_groups}")
    tensors = {"input": x, "weight": weight, "bias": bias}
    check_float(op, **{k: v for k, v in tensors.items() if isinstance(v, Tensor)})
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != (c,):
            raise RuntimeError(f"{op}: {name} must have shape ({c},) (one per channel of input {tuple(x.shape)}), "
                               f"got {tuple(t.shape)}")
    g = x.reshape(x.shape[0], num_groups, -1)
    mean = g.mean(2, keepdim=True)
    centered = g - mean
    var = (centered * centered).mean(2, keepdim=True)
    y = (centered * (var + eps).rsqrt()).reshape(x.shape)
    if weight is not None:
        y = y * weight.reshape(_channel_shape(x))
    if bias is not None:
        y = y + bias.reshape(_channel_shape(x))
    return named(y, "NativeGroupNormBackward0")
