"""Random factories with torch's signatures: ``rand``, ``randn``, ``randint``, ``randperm``,
``normal``, ``bernoulli``, ``poisson``, ``multinomial`` and ``rand_like``/``randn_like``/
``randint_like``. Each takes ``generator=`` (a ``tinygrad_tx.Generator`` or any
``np.random.Generator``; default the global one, seeded by ``tinygrad_tx.manual_seed``) and
draws only from it.

Gradients, as torch defines them: ``normal``, ``bernoulli`` and ``poisson`` of tensors that
require grad give outputs that require grad, and their gradient with respect to the
parameters is **zero** (torch's ``derivatives.yaml``: ``mean: zeros_like(grad)``). That is
not the pathwise derivative (d(mean + std·z)/d mean would be 1): a sample is treated as a
constant of the parameters. Reparameterise explicitly (``mean + std * randn_like(std)``) to
get gradients through a sample.
"""
from __future__ import annotations

import numbers

import numpy as np

from ._factory_args import _as_int, leaf, parse_size, resolve_dtype, shape_and_dtype_of

from .errors import InvalidArgumentError
from .core.function import ArrayFunction
from .core.device import check as _check_device
from .core.dtypes import default_float
from .generator import (draw_bernoulli, draw_integers, draw_normal, draw_uniform, get_generator,
                        _check_probabilities)
from .core.tensor import Tensor
from . import torch_streams as _ts

_INT64 = np.dtype(np.int64)


def _float_dtype(dtype, op: str) -> np.dtype:
    dt = resolve_dtype(dtype, default_float())
    if dt.kind != "f":
        raise TypeError(f"{op}(): needs a floating-point dtype, got {dt}")
    return dt


# ============================================================================ uniform, normal, integers

def rand(*size_args, size=None, generator=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """Samples of U[0, 1) (float32 unless ``dtype``)."""
    shape = parse_size(size_args, size, "rand")
    return leaf(draw_uniform(shape, _float_dtype(dtype, "rand"), 0.0, 1.0, generator), requires_grad, device)


def randn(*size_args, size=None, generator=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """Samples of N(0, 1) (float32 unless ``dtype``)."""
    shape = parse_size(size_args, size, "randn")
    return leaf(draw_normal(shape, _float_dtype(dtype, "randn"), 0.0, 1.0, generator), requires_grad, device)


def randint(*args, low=None, high=None, size=None, generator=None, dtype=None, device=None,
            requires_grad: bool = False) -> Tensor:
    """Integers uniform on [low, high): ``randint(high, size)`` or ``randint(low, high, size)``
    (``size`` a tuple); int64 unless ``dtype``."""
    args = list(args)
    if size is None and args and isinstance(args[-1], (tuple, list)):
        size = args.pop()
    if size is None:
        if len(args) >= 2:
            raise TypeError(f"randint(): argument 'size' must be a tuple of ints, not "
                            f"{type(args[-1]).__name__} ({args[-1]!r})")
        raise TypeError("randint() missing the required argument 'size' (a tuple of ints)")
    if len(args) > 2 or (len(args) == 2 and (low is not None or high is not None)):
        raise TypeError(f"randint(): too many bounds: positional {args}, low={low}, high={high}")
    if len(args) == 2:
        low, high = args
    elif len(args) == 1:
        if high is None:
            high = args[0]
        else:
            low = args[0]
    if high is None:
        raise TypeError("randint() missing the required argument 'high'")
    low = 0 if low is None else _as_int(low, "randint", "low")
    high = _as_int(high, "randint", "high")
    shape = parse_size((), size, "randint")
    return leaf(draw_integers(shape, resolve_dtype(dtype, _INT64), low, high, generator), requires_grad, device)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    """A random permutation of 0..n-1 (int64 unless ``dtype``)."""
    n = _as_int(n, "randperm", "n")
    if n < 0:
        raise InvalidArgumentError(f"randperm(): n must be non-negative, got {n}")
    dt = resolve_dtype(dtype, _INT64)
    return leaf(_ts.randperm(get_generator(generator), n).astype(dt), requires_grad, device)


def rand_like(input, *, generator=None, dtype=None, device=None, requires_grad: bool = False,
              memory_format=None) -> Tensor:
    """U[0, 1) samples of ``input``'s shape and (floating-point) dtype."""
    shape, dt = shape_and_dtype_of(input, "rand_like")
    return rand(shape, generator=generator, dtype=dt if dtype is None else dtype, device=device,
                requires_grad=requires_grad)


def randn_like(input, *, generator=None, dtype=None, device=None, requires_grad: bool = False,
               memory_format=None) -> Tensor:
    """N(0, 1) samples of ``input``'s shape and (floating-point) dtype."""
    shape, dt = shape_and_dtype_of(input, "randn_like")
    return randn(shape, generator=generator, dtype=dt if dtype is None else dtype, device=device,
                 requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, generator=None, dtype=None, device=None,
                 requires_grad: bool = False, memory_format=None) -> Tensor:
    """Integers uniform on [low, high) in ``input``'s shape and dtype
    (``randint_like(x, high)`` or ``randint_like(x, low, high)``)."""
    shape, dt = shape_and_dtype_of(input, "randint_like")
    if high is None:
        low, high = 0, low
    return randint(low, high, shape, generator=generator, dtype=dt if dtype is None else dtype,
                   device=device, requires_grad=requires_grad)


# ============================================================================ samples of tensor parameters

class NormalSample(ArrayFunction):
    """y = mean + std * z with z ~ N(0, 1) drawn from ``generator`` (mean, std broadcast), in
    torch's steps: ``normal_(0, 1)`` of the output (``normal_(0, std)`` when std is a number),
    then ``mul_(std)`` (a tensor std) and ``add_(mean)``, each rounded to the output dtype.

    Backward, as torch defines it: dL/dmean = 0 and dL/dstd = 0 -- the sample is treated
    as a constant of its parameters (torch's ``normal`` derivatives are ``zeros_like``)."""

    differentiable_backward = True   # the zero gradient is a constant under create_graph, as torch's

    @staticmethod
    def forward(ctx, mean, std, generator=None, dtype=None):
        shape = np.broadcast_shapes(np.shape(mean), np.shape(std))
        tensor_std = isinstance(std, np.ndarray)
        out = draw_normal(shape, dtype, 0.0, 1.0 if tensor_std else std, generator)
        if tensor_std:
            out = np.multiply(out, std, dtype=dtype)
        return np.add(out, mean, dtype=dtype)

    @staticmethod
    def backward(ctx, g):
        zero = np.zeros_like(g)
        return zero, zero


class BernoulliSample(ArrayFunction):
    """y = 1 where u < p else 0, u ~ U[0, 1) from ``generator``; y has the input's dtype.
    ``p`` is the input itself (``bernoulli(probs)``) or a float (``bernoulli(x, p)``).

    Backward, as torch defines it: dL/dinput = 0 (y is piecewise constant in p)."""

    differentiable_backward = True   # the zero gradient is a constant under create_graph, as torch's

    @staticmethod
    def forward(ctx, x, p=None, generator=None):
        if p is None:   # torch's bernoulli_(tensor p): a uniform of p's own dtype against each p
            return _ts.bernoulli_tensor(get_generator(generator), x).astype(x.dtype)
        return draw_bernoulli(p, x.shape, x.dtype, generator)

    @staticmethod
    def backward(ctx, g):
        return np.zeros_like(g)


class PoissonSample(ArrayFunction):
    """y ~ Poisson(rate) elementwise, from ``generator``, in the rate's dtype.

    Backward, as torch defines it: dL/drate = 0 (y is integer-valued, piecewise constant)."""

    differentiable_backward = True   # the zero gradient is a constant under create_graph, as torch's

    @staticmethod
    def forward(ctx, rate, generator=None):
        return _ts.poisson(get_generator(generator), rate)

    @staticmethod
    def backward(ctx, g):
        return np.zeros_like(g)


def _param(x, op: str, arg: str):
    """A float Tensor parameter (kept, for autograd), or a Python float."""
    if isinstance(x, Tensor):
        if x._data.dtype.kind != "f":
            raise TypeError(f"{op}(): {arg} must be a floating-point tensor, got dtype {x._data.dtype}")
        return x
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{op}(): {arg} must be a Tensor or a real number, got {type(x).__name__} ({x!r})")
    return float(x)


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad: bool = False) -> Tensor:
    """Samples of N(mean, std²), torch's four forms: ``normal(mean_tensor, std_tensor)``,
    ``normal(mean_tensor, std=1.0)``, ``normal(mean, std_tensor)`` (shape: the broadcast
    of the tensors, dtype: theirs) and ``normal(mean, std, size)`` with numbers (float32
    unless ``dtype``). Every std must be >= 0."""
    mean, std = _param(mean, "normal", "mean"), _param(std, "normal", "std")
    if not isinstance(mean, Tensor) and not isinstance(std, Tensor):
        if size is None:
            raise TypeError("normal(): with a number mean and std, size (a tuple) is required")
        shape = parse_size((), size, "normal")
        return leaf(draw_normal(shape, _float_dtype(dtype, "normal"), mean, std, generator), requires_grad, device)
    if size is not None or dtype is not None or requires_grad:
        raise TypeError("normal(): size, dtype and requires_grad are only taken with a number "
                        "mean and std (with tensors, the shape and dtype are theirs)")
    _check_device(device)
    if isinstance(std, Tensor):
        if std._data.size and not (std._data >= 0).all():
            raise InvalidArgumentError("normal(): expects all elements of std >= 0.0")
    elif not std >= 0:
        raise InvalidArgumentError(f"normal(): expects std >= 0.0, but found std {std}")
    try:
        np.broadcast_shapes(np.shape(mean), np.shape(std))
    except ValueError:
        raise InvalidArgumentError(f"normal(): the shapes of mean {np.shape(mean)} and std {np.shape(std)} "
                         "do not broadcast") from None
    dt = (mean if isinstance(mean, Tensor) else std)._data.dtype
    return NormalSample.apply(mean, std, generator=generator, dtype=dt)


def bernoulli(input, p=None, *, generator=None) -> Tensor:
    """1 with probability ``input`` (elementwise) else 0, in ``input``'s dtype; with a float
    ``p``, draws of probability ``p`` in ``input``'s shape and dtype."""
    if not isinstance(input, Tensor):
        raise TypeError(f"bernoulli(): argument 'input' must be a Tensor, not {type(input).__name__}")
    if p is None:
        _check_probabilities(input._data, "bernoulli")
    else:
        if isinstance(p, bool) or not isinstance(p, numbers.Real):
            raise TypeError(f"bernoulli(): p must be a float, got {type(p).__name__} ({p!r})")
        if not 0 <= p <= 1:
            raise InvalidArgumentError(f"bernoulli(): expects p to be in [0, 1], but got p={p}")
        p = float(p)
    return BernoulliSample.apply(input, p=p, generator=generator)


def poisson(input, generator=None) -> Tensor:
    """Poisson(rate) samples with the rates ``input`` (floating point, >= 0, finite)."""
    rate = _param(input, "poisson", "input")
    if not isinstance(rate, Tensor):
        raise TypeError(f"poisson(): argument 'input' must be a Tensor, not {type(input).__name__}")
    r = rate._data
    if r.size and not (r >= 0).all():
        raise InvalidArgumentError("poisson(): invalid Poisson rate, expected rate to be non-negative (and not NaN)")
    if r.size and not np.isfinite(r).all():
        raise InvalidArgumentError("poisson(): the Poisson rate must be finite (torch returns garbage for inf)")
    return PoissonSample.apply(rate, generator=generator)


# ============================================================================ multinomial

def multinomial(input, num_samples, replacement: bool = False, *, generator=None) -> Tensor:
    """Category indices drawn with the (unnormalised, non-negative) weights in each row of
    ``input`` (1-D: one row; 2-D: one draw set per row); int64 of shape (num_samples,) or
    (rows, num_samples).

    With replacement: inverse CDF, index j where cdf[j-1] <= u < cdf[j]. Without: the
    exponential trick -- the indices of the num_samples largest w_j / E_j with E_j ~ Exp(1)
    are distributed as drawing one by one without replacement; categories of weight zero come
    last, in index order (torch too returns them once the positive ones run out)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"multinomial(): argument 'input' must be a Tensor, not {type(input).__name__}")
    p = input._data
    if p.dtype.kind != "f":
        raise TypeError(f"multinomial(): only floating-point weights are supported, got dtype {p.dtype}")
    if p.ndim not in (1, 2):
        raise InvalidArgumentError(f"multinomial(): input must be 1 or 2 dim, got shape {tuple(p.shape)}")
    k = _as_int(num_samples, "multinomial", "num_samples")
    if k <= 0:
        raise InvalidArgumentError(f"multinomial(): cannot sample num_samples <= 0 samples (got {k})")
    rows = p.reshape(-1, p.shape[-1])
    n = rows.shape[1]
    if not replacement and k > n:
        raise InvalidArgumentError(f"multinomial(): cannot sample num_samples={k} > input.size(-1)={n} "
                         "samples without replacement")
    if rows.size and not (np.isfinite(rows).all() and (rows >= 0).all()):
        raise InvalidArgumentError("multinomial(): probability tensor contains either inf, nan or element < 0")
    if rows.shape[0] and (n == 0 or (rows.sum(axis=1) <= 0).any()):
        raise InvalidArgumentError("multinomial(): invalid multinomial distribution (sum of probabilities <= 0)")
    out = _ts.multinomial(get_generator(generator), rows, k, replacement)
    return Tensor._from_op(out.reshape(p.shape[:-1] + (k,)), None)


TENSOR_METHODS = {"multinomial": multinomial, "bernoulli": bernoulli}

FUNCTIONS = {
    "rand": rand, "randn": randn, "randint": randint, "randperm": randperm,
    "rand_like": rand_like, "randn_like": randn_like, "randint_like": randint_like,
    "normal": normal, "bernoulli": bernoulli, "poisson": poisson, "multinomial": multinomial,
}
