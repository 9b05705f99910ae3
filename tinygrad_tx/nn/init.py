"""Weight initialisation, in place, with torch's names and distributions.

Every function fills ``tensor._data`` in place (keeping its dtype and its
identity, so tied weights stay tied) and returns the tensor, as
``torch.nn.init`` does. Nothing is recorded for autograd (torch runs these under
``no_grad``): the tensor stays a leaf. Random draws come from ``generator`` when
given (a ``tinygrad_tx.Generator`` or any ``np.random.Generator``), else from the
global generator (``tinygrad_tx.default_generator``, seeded by
``tinygrad_tx.manual_seed``). Values are drawn in float64 and rounded to the
tensor's dtype.

Functions: ``uniform_``, ``normal_``, ``trunc_normal_``, ``constant_``, ``ones_``,
``zeros_``, ``eye_``, ``dirac_``, ``xavier_uniform_``, ``xavier_normal_``,
``kaiming_uniform_``, ``kaiming_normal_``, ``orthogonal_``, and the helpers
``calculate_gain`` and ``_calculate_fan_in_and_fan_out``.

The layer defaults (what ``reset_parameters`` of each layer uses, as torch):

* Linear / Conv2d weight: ``kaiming_uniform_(w, a=sqrt(5))``. With
  ``gain = sqrt(2 / (1 + a^2)) = sqrt(1/3)`` and ``bound = gain * sqrt(3 / fan_in)``
  this is ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``; the bias is drawn from the
  same interval (``fan_in`` = in_features, or in_channels * kh * kw).
* Embedding weight: ``N(0, 1)``.
* LayerNorm / BatchNorm: weight ones, bias zeros.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ..errors import InvalidArgumentError
from ..generator import draw_normal, draw_uniform, get_generator
from ..core.tensor import Tensor


class NotATensorError(TypeError, AttributeError):
    """An init function given something other than a Tensor: torch fails with AttributeError
    (``'int' object has no attribute 'zero_'``); this is that, and the TypeError it really is."""


class UnsupportedDtypeError(TypeError, NotImplementedError):
    """A random fill of an integer or bool tensor: torch raises NotImplementedError
    (``"normal_kernel_cpu" not implemented for 'Long'``); a TypeError too."""


def _tensor_arg(tensor, op: str, random: bool = False) -> Tensor:
    """``tensor`` if it is a Tensor (floating point, for the random fills), else our error."""
    if not isinstance(tensor, Tensor):
        raise NotATensorError(f"{op}: argument 'tensor' must be a Tensor or Parameter, got "
                              f"{type(tensor).__name__}")
    if random and tensor._data.dtype.kind != "f":
        raise UnsupportedDtypeError(f"{op}: random fills need a floating point tensor, got dtype "
                                    f"{tensor._data.dtype}")
    return tensor


def _real(value, op: str, arg: str) -> float:
    """A real-number argument (a bool counts, as in torch); anything else is a TypeError naming it."""
    if not isinstance(value, numbers.Real):
        raise TypeError(f"{op}(): argument '{arg}' must be a float, not {type(value).__name__} ({value!r})")
    return float(value)


def _gen(generator):
    return get_generator(generator, "init: generator")


def _fill(tensor, values):
    _tensor_arg(tensor, "init")
    tensor._data[...] = values
    tensor._bump()   # an in-place change: graphs that saved the old values refuse to backward
    return tensor


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for a nonlinearity (torch's table)."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = float(param)
        else:
            raise ValueError(f"calculate_gain: negative_slope {param!r} is not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _calculate_fan_in_and_fan_out(tensor):
    """fan_in = size(1) * receptive field, fan_out = size(0) * receptive field (torch's rule:
    the receptive field is the product of the dims after the first two)."""
    shape = _tensor_arg(tensor, "_calculate_fan_in_and_fan_out").shape
    if len(shape) < 2:
        raise ValueError(f"init: fan in and fan out cannot be computed for a tensor with fewer "
                         f"than 2 dimensions (shape {shape})")
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive


def _fan(tensor, mode):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"init: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a: float = 0.0, b: float = 1.0, generator=None):
    """Fill with draws from U(a, b)."""
    _tensor_arg(tensor, "uniform_", random=True)
    a, b = _real(a, "uniform_", "a"), _real(b, "uniform_", "b")
    if not a <= b:   # torch: RuntimeError "uniform_ expects to return a [from, to) range"
        raise InvalidArgumentError(f"uniform_: expects a <= b, got a={a}, b={b}")
    return _fill(tensor, draw_uniform(tensor.shape, tensor._data.dtype, a, b, _gen(generator), layout=tensor._data))


def normal_(tensor, mean: float = 0.0, std: float = 1.0, generator=None):
    """Fill with draws from N(mean, std^2)."""
    _tensor_arg(tensor, "normal_", random=True)
    mean, std = _real(mean, "normal_", "mean"), _real(std, "normal_", "std")
    if std < 0:   # torch: RuntimeError "normal expects std >= 0.0"
        raise InvalidArgumentError(f"normal_: std must be non-negative, got {std}")
    return _fill(tensor, draw_normal(tensor.shape, tensor._data.dtype, mean, std, _gen(generator), layout=tensor._data))


def constant_(tensor, val: float):
    _tensor_arg(tensor, "constant_")
    if isinstance(val, Tensor) and val._data.size == 1:
        val = val.item()
    if not isinstance(val, (numbers.Number, np.bool_)):
        raise TypeError(f"constant_(): argument 'val' must be a number, not {type(val).__name__} ({val!r})")
    return _fill(tensor, val)


def ones_(tensor):
    return _fill(tensor, 1)


def zeros_(tensor):
    return _fill(tensor, 0)


def kaiming_uniform_(tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator=None):
    """U(-bound, bound) with bound = sqrt(3) * gain / sqrt(fan), gain = calculate_gain(nonlinearity, a)
    (computed in torch's order, so the float32 bounds, and the draws, are torch's)."""
    if 0 in _tensor_arg(tensor, "kaiming_uniform_", random=True).shape:
        return tensor
    fan = _fan(tensor, mode)
    bound = math.sqrt(3.0) * (calculate_gain(nonlinearity, a) / math.sqrt(fan))
    return uniform_(tensor, -bound, bound, generator=generator)


def kaiming_normal_(tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator=None):
    """N(0, std^2) with std = gain / sqrt(fan)."""
    if 0 in _tensor_arg(tensor, "kaiming_normal_", random=True).shape:
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator=generator)


def xavier_uniform_(tensor, gain: float = 1.0, generator=None):
    """U(-a, a) with a = sqrt(3) * gain * sqrt(2 / (fan_in + fan_out)) (torch's order of operations)."""
    _tensor_arg(tensor, "xavier_uniform_", random=True)
    gain = _real(gain, "xavier_uniform_", "gain")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * (gain * math.sqrt(2.0 / float(fan_in + fan_out)))
    return uniform_(tensor, -bound, bound, generator=generator)


def xavier_normal_(tensor, gain: float = 1.0, generator=None):
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    _tensor_arg(tensor, "xavier_normal_", random=True)
    gain = _real(gain, "xavier_normal_", "gain")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator=generator)


def fan_in_uniform_(tensor, fan_in: int, generator=None):
    """U(-1/sqrt(fan_in), 1/sqrt(fan_in)): the bias default of Linear and Conv2d (0 when fan_in == 0)."""
    bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
    return uniform_(tensor, -bound, bound, generator=generator)


def trunc_normal_(tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0, generator=None):
    """Fill with N(mean, std^2) truncated to [a, b] (``a``, ``b`` in the values' units), by
    torch 2.13's rejection sampling, draw for draw:

    * when the interval holds more than 30 % of the mass (p = Φ(β) − Φ(α) > 0.3, with
      α = (a − mean)/std, β = (b − mean)/std): ``normal_(mean, std)`` of the whole tensor, then,
      while any value lies outside [a, b] (bounds rounded to the dtype), a fresh
      ``normal_(mean, std)`` of the whole shape replaces just those values;
    * otherwise: candidates x ~ U(a, b), accepted when log(v) ≤ −((x − mean)/std)²/2 − log_peak
      (v ~ U(0, 1), log_peak the log-density at the mode clipped into [a, b]); rejected ones
      are redrawn, a whole tensor of candidates and of v per round.

    Either way the accepted values have exactly the truncated density.
    """
    _tensor_arg(tensor, "trunc_normal_", random=True)
    mean, std, a, b = (_real(v, "trunc_normal_", k) for k, v in (("mean", mean), ("std", std), ("a", a), ("b", b)))
    if std < 0:   # torch accepts it; a negative spread is a mistake, refused
        raise InvalidArgumentError(f"trunc_normal_: std must be non-negative, got {std}")
    if not a <= b:   # torch: RuntimeError from uniform_
        raise InvalidArgumentError(f"trunc_normal_: expects a <= b, got a={a}, b={b}")
    if std == 0:
        return _fill(tensor, np.clip(mean, a, b))
    gen, dt, shape = _gen(generator), tensor._data.dtype, tensor.shape

    def cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if cdf((b - mean) / std) - cdf((a - mean) / std) > 0.3:
        lo, hi = dt.type(a), dt.type(b)
        result = draw_normal(shape, dt, mean, std, gen, layout=tensor._data)
        while True:
            outside = (result < lo) | (result > hi)
            if not outside.any():
                return _fill(tensor, result)
            result = np.where(outside, draw_normal(shape, dt, mean, std, gen), result)
    mode = max(a, min(mean, b))
    log_peak = -0.5 * ((mode - mean) / std) ** 2

    def log_density(x):   # torch's in-place steps, each rounded to the dtype
        x = ((x - dt.type(mean)) / dt.type(std)).astype(dt)
        return ((x * x).astype(dt) * dt.type(-0.5)).astype(dt) - dt.type(log_peak)

    result = draw_uniform(shape, dt, a, b, gen, layout=tensor._data)
    with np.errstate(divide="ignore"):
        pending = np.log(draw_uniform(shape, dt, 0.0, 1.0, gen)) > log_density(result)
        while pending.any():
            candidates = draw_uniform(shape, dt, a, b, gen)
            result = np.where(pending, candidates, result)
            pending = np.where(pending, np.log(draw_uniform(shape, dt, 0.0, 1.0, gen)) > log_density(candidates),
                               pending)
    return _fill(tensor, result)


def orthogonal_(tensor, gain: float = 1.0, generator=None):
    """A (semi-)orthogonal matrix (torch's recipe): the Q of the QR decomposition of a standard
    normal (rows × cols) matrix (transposed first when rows < cols), its columns' signs fixed
    by diag(R) so the distribution is uniform (Haar), scaled by ``gain``; the trailing dims
    are flattened into cols."""
    if _tensor_arg(tensor, "orthogonal_", random=True).ndim < 2:
        raise ValueError(f"orthogonal_: only tensors with 2 or more dimensions are supported, got shape "
                         f"{tuple(tensor.shape)}")
    if tensor._data.size == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor._data.size // rows
    flat = draw_normal((rows, cols), tensor._data.dtype, 0.0, 1.0, _gen(generator)).astype(np.float64)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, (gain * q).reshape(tensor.shape))


def eye_(tensor):
    """The identity matrix (ones on the main diagonal of a 2-D tensor, zeros elsewhere)."""
    if _tensor_arg(tensor, "eye_").ndim != 2:
        raise ValueError(f"eye_: only tensors with 2 dimensions are supported, got shape {tuple(tensor.shape)}")
    return _fill(tensor, np.eye(*tensor.shape))


def dirac_(tensor, groups: int = 1):
    """The Dirac delta for a 3-, 4- or 5-D convolution weight: each output channel of each group
    passes its matching input channel through unchanged (a one at the kernel's centre)."""
    if _tensor_arg(tensor, "dirac_").ndim not in (3, 4, 5):
        raise ValueError(f"dirac_: only tensors with 3, 4, or 5 dimensions are supported, got shape "
                         f"{tuple(tensor.shape)}")
    out_per_group = tensor.shape[0] // groups
    if tensor.shape[0] % groups != 0:
        raise ValueError(f"dirac_: dim 0 ({tensor.shape[0]}) must be divisible by groups ({groups})")
    values = np.zeros(tensor.shape)
    centre = tuple(k // 2 for k in tensor.shape[2:])
    for g in range(groups):
        for d in range(min(out_per_group, tensor.shape[1])):
            values[(g * out_per_group + d, d) + centre] = 1
    return _fill(tensor, values)
