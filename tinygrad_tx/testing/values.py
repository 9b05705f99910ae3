"""Test inputs, NumPy only: values in an op's domain and non-contiguous layouts.

Shapes are drawn by hypothesis (:mod:`tinygrad_tx.testing.strategies`); values come from a
NumPy generator seeded by a drawn integer — fast, reproducible, and shrinkable by seed. Each
domain draws directly from where the op is defined and smooth, so no test needs ``assume()``.
"""
from __future__ import annotations

import numpy as np

DOMAINS = ("real", "positive", "distinct", "away_from_zero")


def values(shape, seed, domain="real", scale=1.0):
    """float64 values for ``shape`` in an op's domain (an ndarray, also for shape ``()``).

    real: standard normal × scale; positive: in [0.5, 2.5) (log, sqrt, pow base);
    distinct: a random permutation of well-separated values (max/min without ties);
    away_from_zero: |x| in [0.1, 2) (relu/abs/clamp kinks avoided).
    """
    return np.asarray(_values(tuple(shape), np.random.default_rng(seed), domain, scale))


def _values(shape, rng, domain, scale):
    if domain == "real":
        return rng.standard_normal(shape) * scale
    if domain == "positive":
        return rng.uniform(0.5, 2.5, shape)
    if domain == "distinct":
        n = int(np.prod(shape)) if shape else 1
        return (rng.permutation(n).astype(np.float64) * 0.37 - n * 0.1).reshape(shape)
    if domain == "away_from_zero":
        x = rng.uniform(0.1, 2.0, shape)
        return x * rng.choice([-1.0, 1.0], shape)
    raise ValueError(f"values: domain must be one of {', '.join(DOMAINS)}, got {domain!r}")


def non_contiguous(a):
    """Same values, transposed memory layout (a view with non-unit last stride); arrays with
    fewer than 2 dimensions are returned as they are."""
    a = np.asarray(a)
    if a.ndim < 2:
        return a
    return np.swapaxes(np.ascontiguousarray(np.swapaxes(a, -1, -2)), -1, -2)
