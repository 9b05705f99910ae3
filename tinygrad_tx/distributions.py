"""``torch.distributions``, the part teaching code uses: ``Categorical``, ``OneHotCategorical``,
``Bernoulli``, ``Normal``, ``Uniform`` — parameters, ``sample`` (no gradient) and ``rsample``
(reparameterised: gradients flow to the parameters), ``log_prob``, ``entropy``, ``mean``,
``variance``, with torch's argument validation (on by default, ``validate_args=False`` turns it off).

Every density is a **composite** of differentiable ops with hand-written backwards, so the REINFORCE
gradient ``-(log_prob(action) · advantage)`` and the reparameterised ``rsample`` are the chain rule
through them:

* Categorical: logits normalised as ``logits − logsumexp(logits)`` (probs as ``probs / Σ probs``);
  log_prob(k) = logits[k] (a gather); entropy = −Σ p·logits.
* Bernoulli: log_prob(x) = −BCEWithLogits(logits, x); entropy = BCEWithLogits(logits, p).
* Normal: log_prob(x) = −(x − μ)²/(2σ²) − log σ − ½ log 2π; entropy = ½ + ½ log 2π + log σ;
  rsample = μ + σ·ε, ε ~ N(0, 1).
* Uniform: log_prob(x) = −log(high − low) on [low, high); rsample = low + (high − low)·u.

Draws come from tinygrad_tx's generator (``manual_seed``), not torch's: the same seed gives other
numbers than torch, from the same distribution.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from .core.tensor import Tensor

__all__ = ["Distribution", "Categorical", "OneHotCategorical", "Bernoulli", "Normal", "Uniform"]


def _as_param(value, name: str, dist: str) -> Tensor:
    if isinstance(value, Tensor):
        return value
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.ndarray, list, tuple)):
        raise TypeError(f"{dist}: {name} must be a Tensor or a number, got {type(value).__name__}")
    from .factories import tensor
    from .core.dtypes import get_default_dtype
    return tensor(np.asarray(value, dtype=get_default_dtype().dtype))


def _one_of(probs, logits, dist: str, min_ndim: int = 0):
    """("probs" or "logits", the parameter as a Tensor): exactly one must be given."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    kind, value = ("probs", probs) if probs is not None else ("logits", logits)
    t = _as_param(value, kind, dist)
    if t.ndim < min_ndim:
        raise ValueError(f"`{kind}` parameter must be at least one-dimensional.")
    return kind, t


def _shape(sample_shape) -> tuple:
    if isinstance(sample_shape, numbers.Integral):
        return (int(sample_shape),)
    return tuple(int(s) for s in sample_shape)


class Distribution:
    """Base class: ``batch_shape``, ``event_shape``, ``sample``/``rsample``, ``log_prob``."""

    has_rsample = False
    _validate_default = True

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape, self._event_shape = tuple(batch_shape), tuple(event_shape)
        self._validate_args = self._validate_default if validate_args is None else bool(validate_args)

    @property
    def batch_shape(self) -> tuple:
        return self._batch_shape

    @property
    def event_shape(self) -> tuple:
        return self._event_shape

    def _extended_shape(self, sample_shape=()) -> tuple:
        return _shape(sample_shape) + self._batch_shape + self._event_shape

    def sample(self, sample_shape=()) -> Tensor:
        from .core.grad_mode import no_grad
        with no_grad():
            return self.rsample(sample_shape).detach()

    def rsample(self, sample_shape=()) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} has no reparameterised sample (rsample)")

    def _check(self, name: str, t: Tensor, ok: np.ndarray, constraint: str) -> None:
        if self._validate_args and not np.all(ok):
            raise ValueError(f"Expected parameter {name} (Tensor of shape {tuple(t.shape)}) of distribution "
                             f"{self!r} to satisfy the constraint {constraint}, but found invalid values:\n{t}")

    def _check_value(self, value: Tensor, ok: np.ndarray, support: str) -> None:
        if self._validate_args and not np.all(ok):
            raise ValueError(f"Expected value argument (Tensor of shape {tuple(value.shape)}) to be within the "
                             f"support ({support}) of the distribution {self!r}, but found invalid values:\n{value}")

    def __repr__(self) -> str:
        parts = []
        for name in self._param_names:
            if name in self.__dict__:
                t = self.__dict__[name]
                parts.append(f"{name}: {t.item() if t.numel() == 1 and t.ndim == 0 else f'Size({list(t.shape)})'}")
        return f"{type(self).__name__}({', '.join(parts)})"


class Categorical(Distribution):
    """Categories 0..K−1 over the last dimension of ``probs`` or ``logits`` (exactly one given)."""

    _param_names = ("probs", "logits")

    def __init__(self, probs=None, logits=None, validate_args=None):
        kind, t = _one_of(probs, logits, type(self).__name__, 1)
        if kind == "probs":
            self.probs = param = t / t.sum(-1, keepdim=True)
        else:
            self.logits = param = t - t.logsumexp(-1, keepdim=True)
        self._num_events = param.shape[-1]
        super().__init__(param.shape[:-1], (), validate_args)
        if probs is not None:
            d = self.probs._data
            self._check("probs", self.probs, (d >= 0) & (np.abs(d.sum(-1) - 1) < 1e-6)[..., None], "Simplex()")
        else:
            self._check("logits", self.logits, ~np.isnan(self.logits._data), "IndependentConstraint(Real(), 1)")

    def __getattr__(self, name):
        if name == "probs":
            self.probs = self.logits.softmax(-1)
            return self.probs
        if name == "logits":
            eps = np.finfo(self.probs._data.dtype).eps
            self.logits = self.probs.clamp(eps, 1 - eps).log()
            return self.logits
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def param_shape(self) -> tuple:
        return self._batch_shape + (self._num_events,)

    @property
    def mean(self) -> Tensor:
        return Tensor(np.full(self._batch_shape, np.nan, dtype=self.probs._data.dtype))

    variance = mean

    def sample(self, sample_shape=()) -> Tensor:
        from .factories import tensor
        from .generator import get_generator
        shape = _shape(sample_shape)
        p = self.probs._data.astype(np.float64).reshape(-1, self._num_events)
        rng = get_generator(None)
        n = int(np.prod(shape, dtype=np.int64))
        u = rng.random((n, p.shape[0]))
        cdf = np.cumsum(p, axis=-1)
        cdf /= cdf[:, -1:]
        idx = (u[..., None] > cdf[None]).sum(-1)                 # inverse cdf, one draw per row
        return tensor(np.minimum(idx, self._num_events - 1).reshape(shape + self._batch_shape).astype(np.int64))

    def log_prob(self, value) -> Tensor:
        value = _as_param(value, "value", "Categorical") if not isinstance(value, Tensor) else value
        v = value._data
        self._check_value(value, (v == np.floor(v)) & (v >= 0) & (v < self._num_events),
                          f"IntegerInterval(lower_bound=0, upper_bound={self._num_events - 1})")
        idx = value.long().unsqueeze(-1)
        shape = np.broadcast_shapes(tuple(idx.shape), self._batch_shape + (1,))
        logits = self.logits.expand(*shape[:-1], self._num_events)
        return logits.gather(-1, idx.expand(*shape)).squeeze(-1)

    def entropy(self) -> Tensor:
        min_real = float(np.finfo(self.logits._data.dtype).min)
        return -(self.probs * self.logits.clamp(min=min_real)).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        from .factories import arange
        values = arange(self._num_events).reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand(self._num_events, *self._batch_shape) if expand else values


class OneHotCategorical(Distribution):
    """``Categorical`` whose samples are one-hot vectors (event shape (K,))."""

    _param_names = ("probs", "logits")

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits, validate_args)
        super().__init__(self._categorical.batch_shape, (self._categorical._num_events,), validate_args)

    probs = property(lambda self: self._categorical.probs)
    logits = property(lambda self: self._categorical.logits)
    mean = property(lambda self: self._categorical.probs)
    variance = property(lambda self: self._categorical.probs * (1 - self._categorical.probs))

    def sample(self, sample_shape=()) -> Tensor:
        from .functional import one_hot
        k = self._categorical._num_events
        return one_hot(self._categorical.sample(sample_shape), k).to(self.probs.dtype)

    def log_prob(self, value) -> Tensor:
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def __repr__(self) -> str:
        return repr(self._categorical).replace("Categorical", "OneHotCategorical", 1)


class Bernoulli(Distribution):
    """0/1 draws with probability ``probs`` (or ``sigmoid(logits)``)."""

    _param_names = ("probs", "logits")

    def __init__(self, probs=None, logits=None, validate_args=None):
        kind, param = _one_of(probs, logits, "Bernoulli")
        setattr(self, kind, param)
        super().__init__(param.shape, (), validate_args)
        if probs is not None:
            d = self.probs._data
            self._check("probs", self.probs, (d >= 0) & (d <= 1), "Interval(lower_bound=0.0, upper_bound=1.0)")

    def __getattr__(self, name):
        if name == "probs":
            self.probs = self.logits.sigmoid()
            return self.probs
        if name == "logits":
            eps = np.finfo(self.probs._data.dtype).eps
            p = self.probs.clamp(eps, 1 - eps)
            self.logits = p.log() - (1 - p).log()
            return self.logits
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    mean = property(lambda self: self.probs)
    variance = property(lambda self: self.probs * (1 - self.probs))

    def sample(self, sample_shape=()) -> Tensor:
        from .generator import draw_bernoulli
        from .factories import tensor
        shape = self._extended_shape(sample_shape)
        p = np.broadcast_to(self.probs._data, shape)
        return tensor(draw_bernoulli(p, shape, self.probs._data.dtype))

    def log_prob(self, value) -> Tensor:
        from .functional import binary_cross_entropy_with_logits
        value = _as_param(value, "value", "Bernoulli") if not isinstance(value, Tensor) else value
        self._check_value(value, (value._data == 0) | (value._data == 1), "Boolean()")
        logits, value = _broadcast(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self) -> Tensor:
        from .functional import binary_cross_entropy_with_logits
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")


def _broadcast(*tensors):
    shape = np.broadcast_shapes(*[tuple(t.shape) for t in tensors])
    return [t.expand(*shape) if tuple(t.shape) != shape else t for t in tensors]


class _TwoParameters(Distribution):
    """A distribution of two broadcast parameters (``_param_names``) with a reparameterised
    sample ``_from_noise(noise)``, the noise drawn by ``generator.draw_<_noise>``."""

    has_rsample = True
    _noise = ""

    def __init__(self, a, b, validate_args=None):
        name = type(self).__name__
        a, b = (_as_param(v, n, name) for v, n in zip((a, b), self._param_names))
        a, b = _broadcast(a, b)
        setattr(self, self._param_names[0], a)
        setattr(self, self._param_names[1], b)
        super().__init__(a.shape, (), validate_args)

    def rsample(self, sample_shape=()) -> Tensor:
        from . import generator
        first = getattr(self, self._param_names[0])
        noise = getattr(generator, "draw_" + self._noise)(self._extended_shape(sample_shape), first._data.dtype)
        return self._from_noise(Tensor(noise))


class Normal(_TwoParameters):
    """N(loc, scale²), ``loc`` and ``scale`` broadcast."""

    _param_names, _noise = ("loc", "scale"), "normal"

    def __init__(self, loc, scale, validate_args=None):
        super().__init__(loc, scale, validate_args)
        self._check("scale", self.scale, self.scale._data > 0, "GreaterThan(lower_bound=0.0)")

    mean = property(lambda self: self.loc)
    stddev = property(lambda self: self.scale)
    variance = property(lambda self: self.scale * self.scale)

    def _from_noise(self, eps: Tensor) -> Tensor:
        return self.loc + eps * self.scale

    def log_prob(self, value) -> Tensor:
        value = _as_param(value, "value", "Normal") if not isinstance(value, Tensor) else value
        var = self.scale * self.scale
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - math.log(math.sqrt(2 * math.pi))

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()

    def cdf(self, value) -> Tensor:
        return 0.5 * (1 + ((value - self.loc) / (self.scale * math.sqrt(2))).erf())


class Uniform(_TwoParameters):
    """U[low, high), ``low`` and ``high`` broadcast."""

    _param_names, _noise = ("low", "high"), "uniform"

    def __init__(self, low, high, validate_args=None):
        super().__init__(low, high, validate_args)
        self._check("low", self.low, self.low._data < self.high._data, "LessThan(upper_bound=high)")

    mean = property(lambda self: (self.high + self.low) / 2)
    variance = property(lambda self: (self.high - self.low) ** 2 / 12)

    def _from_noise(self, u: Tensor) -> Tensor:
        return self.low + u * (self.high - self.low)

    def log_prob(self, value) -> Tensor:
        value = _as_param(value, "value", "Uniform") if not isinstance(value, Tensor) else value
        v = value._data
        self._check_value(value, (v >= self.low._data) & (v < self.high._data), "Interval(low, high)")
        shape = np.broadcast_shapes(tuple(value.shape), self._batch_shape)
        return (-(self.high - self.low).log()).expand(*shape)

    def entropy(self) -> Tensor:
        return (self.high - self.low).log()
