"""Hypothesis strategies shared by the parity tests.

Shapes come from hypothesis; values come from a NumPy generator seeded by a
hypothesis-drawn integer (fast, and still reproducible and shrinkable by seed).
Each value strategy draws directly from the op's domain, so no test needs
``assume()``.
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, mutually_broadcastable_shapes

seeds = st.integers(min_value=0, max_value=2**32 - 1)
float_dtypes = st.sampled_from([np.float64, np.float32])


def shapes(min_dims=0, max_dims=4, min_side=1, max_side=5):
    return array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def broadcastable_pair(max_dims=4, max_side=5):
    """Two shapes that broadcast together (size-1 axes and missing leading axes included)."""
    return mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=max_dims,
                                         min_side=1, max_side=max_side).map(lambda s: s.input_shapes)


@st.composite
def matmul_shapes(draw):
    """Shape pairs following torch.matmul's rules: 1-D operands and broadcast batch dims."""
    n, k, m = (draw(st.integers(1, 5)) for _ in range(3))
    kind = draw(st.sampled_from(["vv", "mv", "vm", "mm", "batched"]))
    if kind == "vv":
        return (k,), (k,)
    if kind == "mv":
        batch = draw(shapes(0, 2, max_side=3))
        return batch + (n, k), (k,)
    if kind == "vm":
        batch = draw(shapes(0, 2, max_side=3))
        return (k,), batch + (k, m)
    if kind == "mm":
        return (n, k), (k, m)
    ba, bb = draw(broadcastable_pair(max_dims=2, max_side=3))
    return ba + (n, k), bb + (k, m)


def values(shape, seed, domain="real", scale=1.0):
    """float64 values for ``shape`` in an op's domain.

    real: standard normal * scale; positive: in [0.5, 2.5) (log, sqrt, pow base);
    distinct: a random permutation of well-separated values (max/min without ties);
    away_from_zero: |x| >= 0.1 (relu/clamp kinks avoided).
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
    raise ValueError(domain)


def non_contiguous(a):
    """Same values, transposed memory layout (a view with non-unit last stride)."""
    if a.ndim < 2:
        return a
    return np.swapaxes(np.ascontiguousarray(np.swapaxes(a, -1, -2)), -1, -2)


@st.composite
def dims_and_keepdim(draw, ndim):
    """A ``dim`` argument (None, an int, or a tuple, negatives included) and ``keepdim``."""
    keepdim = draw(st.booleans())
    if ndim == 0:
        return draw(st.sampled_from([None, 0, -1])), keepdim
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        return None, keepdim
    if kind == "int":
        return draw(st.integers(-ndim, ndim - 1)), keepdim
    axes = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    return tuple(a - ndim if draw(st.booleans()) else a for a in axes), keepdim
