"""The standard normal CDF Φ and density φ in float32 arithmetic: what exact GELU is made of.

Exact GELU is y = x Φ(x) with dy/dx = Φ(x) + x φ(x). NumPy has no erf; SciPy's
computes in float64 (one scalar at a time, ~20 ns per element), which made
exact GELU the slowest op of a float32 Transformer. This module evaluates Φ
and φ in float32 with plain vectorised NumPy arithmetic, block by block.

The approximation (for the left tail T(x) = Φ(-|x|), which fixes Φ everywhere)::

    T(x) = φ(x) · t · Q(t),      t = 1 / (1 + p|x|),      Q(t) = c0 + c1 t + ... + c8 t^8,
    φ(x) = exp(-x²/2 - ln √(2π)),
    Φ(x) = T(x)       for x < 0,
           1 - T(x)   for x >= 0       written as  Φ = T + h (1 - 2T),  h = [x >= 0].

Why this form: T/φ is the Mills ratio, √(π/2) at 0 and ~1/|x| for large |x|;
t·Q(t) → c0/(p|x|) has that 1/|x| shape built in (c0 ≈ p), so a
polynomial on t ∈ (0, 1] suffices (the form of Abramowitz & Stegun
7.1.26, which torch's CPU kernel uses for float32 erf, there of degree 5;
our coefficients are our own fit, see ``fit_tail_coefficients``). Degree 8
because the fit is for *relative* error: y = xΦ(x) for x < 0 is x·T, so T's
relative error is y's (a degree-5 fit of absolute error 1e-8 was 5e-5 off
at x = -2 and 3 % at x = -5, where torch's scalar erf path is closer).
Because φ already appears in T, the derivative Φ + xφ costs two more passes.

Accuracy (float64 evaluation of the formula against SciPy's ``ndtr``, x ∈ [-14, 14]):
relative error of the tail T ≤ 3.2e-8 (about half a float32 ulp) everywhere.
torch's float32 erf (A&S 7.1.26) has absolute error ~7.5e-8 in Φ and up to
tens of percent relative error in the far tail. In float32 the result is dominated by float32 rounding; the tests
compare it with torch's float32 GELU against a float64 oracle.

Speed: every pass is one NumPy call over a block of ``BLOCK`` elements whose
work arrays stay in the CPU's caches; 33 passes and one ``exp`` per element,
no float64.
"""
from __future__ import annotations

import numpy as np

from .. import buffers
from ..parallel import get_num_threads, parallel_chunks

# t = 1/(1 + P|x|) and Q's coefficients c0..c8 (fitted by ``fit_tail_coefficients(8, 0.35)``).
P = 0.35
Q = (0.34997896136399304, 0.35058169344968876, 0.3003765906755532, 0.2644689509971238,
     -0.05792717846259859, 0.3989901009760099, -0.6409807113962516, 0.3608838006690025,
     -0.07305811094841527)
LN_SQRT_2PI = float(0.5 * np.log(2.0 * np.pi))
# The blocks use s = 1/(1/P + |x|) = P t (one pass fewer than 1/(1 + P|x|)), so t^k = s^k / P^k and
# t·Q(t) = Σ_k (c_k / P^(k+1)) s^(k+1): the coefficients absorb the powers of P.
_QS = tuple(c / P ** (k + 1) for k, c in enumerate(Q))

# Elements per block. Each block makes 33 NumPy calls (27 before the degree-8 fit). One thread:
# a block's seven arrays (x, y, dy/dx and four work arrays, 28 bytes per element) should stay in a
# core's L2 cache. Several threads: larger blocks mean fewer NumPy calls and so fewer GIL hand-offs
# between the threads, which matters more than the cache. Measured (medians of 7, 2026-12-03,
# 2-core Xeon, 2 MiB of L2 per core): one thread, (512, 256) 131072 → 0.562 ms, 65536 → 0.496 ms
# (65536 × 28 B = 1.8 MiB), 49152 → 0.537 ms; (2048, 1024) 131072 → 9.2 ms, 65536 → 8.0 ms.
# Two threads, (2048, 1024): 131072 → 6.3 ms, 65536 → 7.7 ms. (Earlier, 2M elements on a 2-core
# EPYC VM: 32768 → 19.5 ms, 131072 → 16.9 ms, 2 threads 17.1 → 9.6 ms.)
BLOCK = 65536
PARALLEL_BLOCK = 131072


def tail_float64(x: np.ndarray) -> np.ndarray:
    """T(x) = Φ(-|x|) from the formula above, evaluated in float64 (for tests and the fit's check)."""
    x = np.asarray(x, dtype=np.float64)
    t = 1.0 / (1.0 + P * np.abs(x))
    q = np.polynomial.polynomial.polyval(t, Q)
    return t * q * np.exp(-0.5 * x * x - LN_SQRT_2PI)


def fit_tail_coefficients(degree: int = 8, p: float = P, x_max: float = 14.0, points: int = 200_001):
    """Fit Q's coefficients: minimise max |T_approx / T - 1| over x ∈ [0, x_max] (relative error).

    The Mills ratio over t, M = T/(φ t), is fitted as a polynomial in t, each point weighted by
    1/M (so the residual is T's relative error), by Lawson's iteration: weighted least
    squares whose weights grow where the error is large, converging towards
    the minimax fit. Needs SciPy (``log_ndtr`` for an accurate T); used by the
    tests to show where ``Q`` comes from.
    """
    from scipy.special import log_ndtr
    x = np.linspace(0.0, x_max, points)
    t = 1.0 / (1.0 + p * x)
    mills_over_t = np.exp(log_ndtr(-x) + 0.5 * x * x + LN_SQRT_2PI) / t   # T / (φ t)
    scale = 1.0 / mills_over_t
    V = np.vander(t, degree + 1, increasing=True)
    w = np.ones_like(x)
    best_err, best = np.inf, None
    for _ in range(200):
        sw = np.sqrt(w) * scale
        c, *_ = np.linalg.lstsq(V * sw[:, None], mills_over_t * sw, rcond=None)
        err = np.abs(V @ c - mills_over_t) * scale
        if err.max() < best_err:
            best_err, best = err.max(), c
        w = np.maximum(w * err / np.mean(w * err), 1e-14)
    return tuple(float(v) for v in best), float(best_err)


def _block(x, y, d, work):
    """One block: y = x Φ(x) and (if d is not None) d = Φ(x) + x φ(x), all float32, in place."""
    s, tail, pdf, h = work
    f32 = np.float32
    np.abs(x, out=s)                                      # s = 1/(1/P + |x|) = P t
    s += f32(1 / P)
    np.reciprocal(s, out=s)
    np.multiply(s, f32(_QS[-1]), out=tail)                # t·Q(t) = Σ_k (c_k / P^(k+1)) s^(k+1), Horner
    for c in _QS[-2::-1]:
        tail += f32(c)
        tail *= s
    np.multiply(x, x, out=pdf)                            # φ = exp(-x²/2 - ln√(2π))
    pdf *= f32(-0.5)
    pdf -= f32(LN_SQRT_2PI)
    np.exp(pdf, out=pdf)
    tail *= pdf                                           # T = Φ(-|x|)
    np.greater_equal(x, f32(0), out=h, casting="unsafe")  # h = [x >= 0] as 0.0/1.0
    np.multiply(tail, f32(-2), out=y)                     # Φ = T + h(1 - 2T)  (y holds Φ for now)
    y += f32(1)
    y *= h
    y += tail
    if d is not None:
        np.multiply(x, pdf, out=d)                        # dy/dx = Φ + x φ
        d += y
    y *= x                                                # y = x Φ


def gelu_float32(x: np.ndarray, with_derivative: bool):
    """Exact GELU of a float32 array: ``(y, dy/dx)`` (``dy/dx`` is None unless asked for).

    Large arrays are split into one contiguous chunk per thread (``tinygrad_tx.parallel``);
    each chunk walks its blocks with its own work arrays.
    """
    flat = np.ascontiguousarray(x).reshape(-1)
    y = buffers.empty(flat.shape, np.float32)            # pooled arrays: no fresh pages at every call
    d = buffers.empty(flat.shape, np.float32) if with_derivative else None

    block = BLOCK if get_num_threads() == 1 else PARALLEL_BLOCK

    def chunk(lo, hi):
        work = buffers.empty((4, min(block, hi - lo)), np.float32)
        # x² may overflow to inf (then φ = 0, right) and φ underflow to 0; ±inf inputs give nan, as in torch
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            for start in range(lo, hi, block):
                stop = min(start + block, hi)
                _block(flat[start:stop], y[start:stop], None if d is None else d[start:stop],
                       work[:, :stop - start])

    parallel_chunks(flat.size, chunk, align=block)
    return y.reshape(x.shape), (None if d is None else d.reshape(x.shape))
