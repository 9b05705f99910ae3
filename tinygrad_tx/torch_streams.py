"""torch's CPU random streams, bit for bit: the transforms ATen applies to its Mersenne twister.

torch's CPU generator is mt19937 seeded by ``init_genrand`` (the low 32 bits of the seed); it
hands out 32-bit words (``random()``) and 64-bit words made of two (``random64()``: the first
word is the high half). Every random function is a transform of those words, read here from
torch's source (``ATen/core/DistributionsHelper.h``, ``TransformationHelper.h``,
``native/cpu/DistributionTemplates.h``, ``DistributionKernels.cpp``, ``TensorFactories.cpp``'s
randperm, ``Distributions.cpp``'s multinomial) and checked value for value against torch 2.13:

* uniform: float64 takes 53 bits of a 64-bit word, ``x = w53 * 2^-53``; float32 and float16
  take 24 bits of a 32-bit word, ``x = w24 * 2^-24``; then ``x * (to - from) + from`` in double
  **with one rounding** (the build contracts it to an FMA), rounded to the dtype; a value that
  rounds up to ``to`` becomes ``from``.
* normal, scalar path (fewer than 16 elements, or a non-contiguous tensor, or not float32
  and not contiguous): Box–Muller on two float64 uniforms, ``r = sqrt(-2 log1p(-u2))``,
  ``cos`` sample returned, the ``sin`` sample kept in the generator for the next draw
  (``next_double_normal_sample``); ``mean + std * z`` as one FMA.
* normal, block path (16 or more contiguous elements): all uniforms first, then Box–Muller
  on blocks of 16 (``u1 = 1 - data[j]``, ``u2 = data[j + 8]``, ``j < 8``); when 16 does not
  divide the size, 16 fresh uniforms overwrite the last 16 values and that block is redone.
  float32 runs torch's AVX2 kernel (Cephes ``log``/``sincos`` in float32 with the FMAs the
  compiler makes: emulated step by step in ``_avx_log``/``_avx_sincos``); float64 uses libm.
* integers: ``w % range + from`` with a 64-bit word when the range is 2^28 or more (found by
  bisection against torch 2.13; older sources say 2^32), else a 32-bit word.
* randperm (n < 2^32/20): Fisher–Yates from the front, ``z = random() % (n - i)``.
* bernoulli(p scalar): float64 uniform < p; with a tensor of p: its dtype's uniform < p.
* exponential: ``-1/lambda * log1p(-u)``, u a float64 uniform (also for float32).
* geometric ``ceil(log(u) / log1p(-p))``; cauchy ``median + sigma * tan(pi (u - 1/2))``;
  log_normal ``exp(normal)`` (scalar normal path, cache included).
* multinomial: without replacement (or one sample) ``argmax``/``topk`` of
  ``p / q``, q exponential in p's dtype; with replacement, a binary search of each float64
  uniform in the row's normalised cumulative sums (accumulated in p's dtype).

libm, not NumPy: ``np.log1p``/``np.sin`` may use other (SIMD) implementations that differ in
the last bit, so the float64 transforms call Python's ``math`` (glibc, as torch) elementwise.
"""
from __future__ import annotations

import math

import numpy as np

_F32 = np.float32
_MASK53 = np.uint64((1 << 53) - 1)
_MASK24 = np.uint64((1 << 24) - 1)
PI = math.pi


# ============================================================================ raw words

def words32(gen, n: int) -> np.ndarray:
    """n 32-bit words of torch's ``random()`` (uint64 array)."""
    n = int(n)
    if n == 0:
        return np.zeros(0, np.uint64)
    draw = getattr(gen, "_words32", None)
    if draw is not None:
        return draw(n)
    return gen.integers(0, 1 << 32, size=n, dtype=np.uint64)   # a plain NumPy generator's words


def words64(gen, n: int) -> np.ndarray:
    """n 64-bit words of torch's ``random64()``: two 32-bit words, the first one high."""
    w = words32(gen, 2 * int(n))
    return (w[0::2] << np.uint64(32)) | w[1::2]


def unit_double(gen, n: int) -> np.ndarray:
    """``uniform_real_distribution<double>(0, 1)``: 53 bits of a 64-bit word times 2^-53."""
    return (words64(gen, n) & _MASK53).astype(np.float64) * 2.0 ** -53


def unit_float(gen, n: int) -> np.ndarray:
    """``uniform_real_distribution<float>(0, 1)``: 24 bits of a 32-bit word times 2^-24 (exact in
    float32; returned as float64)."""
    return (words32(gen, n) & _MASK24).astype(np.float64) * 2.0 ** -24


# ============================================================================ exact arithmetic

def _libm(fn, x: np.ndarray) -> np.ndarray:
    """``fn`` (a ``math`` function: glibc's, as torch calls) applied elementwise, in float64."""
    x = np.asarray(x, np.float64)
    if x.size == 0:
        return x.copy()
    return np.frompyfunc(fn, 1, 1)(x).astype(np.float64)


def _split(a):
    c = 134217729.0 * a          # Veltkamp's split: 2^27 + 1
    hi = c - (c - a)
    return hi, a - hi


def fma64(a, b, c) -> np.ndarray:
    """``a * b + c`` rounded once, in float64, as the FMA the compiler emits for torch's
    ``x * (to - from) + from``: Dekker's exact product ``p + e``, Knuth's exact sum ``s + t``,
    then ``s + (t + e)``. (The last addition can round twice only when ``t + e`` is inexact and
    lands on a tie: measured 0 in 10^6 draws.)"""
    a, b, c = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64),
                                  np.asarray(c, np.float64))
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    bb = s - p
    t = (p - (s - bb)) + (c - bb)
    return s + (t + e)


def fma32(a, b, c) -> np.ndarray:
    """float32 ``a * b + c`` rounded once: the product is exact in float64; the float64 sum is
    exact up to its error ``e``; rounding it to float32 is one rounding unless it sits exactly on
    a float32 tie, where ``e`` says which way the exact value lies."""
    a, b, c = (np.asarray(v, np.float32) for v in (a, b, c))
    p = a.astype(np.float64) * b.astype(np.float64)
    c64 = np.broadcast_to(c.astype(np.float64), p.shape)
    s = p + c64
    bb = s - p
    e = (p - (s - bb)) + (c64 - bb)
    tie = (s.view(np.int64) & ((1 << 29) - 1)) == (1 << 28)
    fix = tie & (e != 0)
    if fix.any():
        s = s.copy()
        s[fix] = np.nextafter(s[fix], np.where(e[fix] > 0, np.inf, -np.inf))
    return s.astype(np.float32)


def _mul(a, b):
    return np.multiply(a, b, dtype=np.float32)


# ============================================================================ torch's AVX2 normal kernel

_LOG_P = (7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1, 1.4249322787E-1,
          -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1, 3.3333331174E-1)


def _avx_log(x: np.ndarray) -> np.ndarray:
    """The Cephes float32 log of ATen's ``avx_mathfun.h`` (x > 0), with the FMAs GCC makes of
    its multiply-adds: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), log(1 + (m - 1)) by a degree-9
    polynomial, plus e * log 2 in two parts (q2 + q1)."""
    x = np.maximum(x.astype(np.float32), np.float32(np.finfo(np.float32).tiny))
    bits = x.view(np.int32)
    e = ((bits >> 23) - 127).astype(np.float32) + _F32(1)
    m = ((bits & ~0x7f800000) | 0x3f000000).view(np.float32)      # mantissa in [0.5, 1)
    small = m < _F32(0.707106781186547524)
    e = e - np.where(small, _F32(1), _F32(0))
    m = (m - _F32(1)) + np.where(small, m, _F32(0))
    z = _mul(m, m)
    y = np.full_like(m, _F32(_LOG_P[0]))
    for coef in _LOG_P[1:]:
        y = fma32(y, m, _F32(coef))
    y = _mul(y, m)
    y = fma32(y, z, _mul(e, _F32(-2.12194440e-4)))
    y = fma32(z, _F32(-0.5), y)
    return fma32(e, _F32(0.693359375), m + y)


def _avx_sincos(x: np.ndarray):
    """``sincos256_ps`` of ``avx_mathfun.h`` (float32, with GCC's FMAs): reduce |x| by
    multiples of pi/4 in three parts, then the Cephes sin and cos polynomials, picked and
    signed by the octant."""
    x = x.astype(np.float32)
    neg = np.signbit(x)
    x = np.abs(x)
    j = _mul(x, _F32(1.27323954473516)).astype(np.int32)         # truncation, as cvttps
    j = (j + 1) & ~1
    y = j.astype(np.float32)
    for dp in (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8):
        x = fma32(y, _F32(dp), x)
    sin_sign = neg ^ ((j & 4) != 0)
    cos_sign = (~(j - 2) & 4) != 0
    first = (j & 2) == 0
    z = _mul(x, x)
    c = fma32(_F32(2.443315711809948E-005), z, _F32(-1.388731625493765E-003))
    c = fma32(c, z, _F32(4.166664568298827E-002))
    c = fma32(_mul(c, z), z, -_mul(z, _F32(0.5))) + _F32(1)
    s = fma32(_F32(-1.9515295891E-4), z, _F32(8.3321608736E-3))
    s = fma32(s, z, _F32(-1.6666654611E-1))
    s = fma32(_mul(s, z), x, x)
    sin, cos = np.where(first, s, c), np.where(first, c, s)
    return np.where(sin_sign, -sin, sin), np.where(cos_sign, -cos, cos)


def _box_muller16_f32(u: np.ndarray, mean: float, std: float) -> np.ndarray:
    """``normal_fill_16_AVX2`` on rows of 16 float32 uniforms."""
    u = u.astype(np.float32).reshape(-1, 16)
    radius = np.sqrt(_mul(_F32(-2), _avx_log(_F32(1) - u[:, :8])))
    sin, cos = _avx_sincos(_mul(_F32(2.0 * PI), u[:, 8:]))
    m, s = _F32(mean), _F32(std)
    return np.concatenate([fma32(_mul(radius, cos), s, m), fma32(_mul(radius, sin), s, m)], 1).reshape(-1)


def _box_muller16_f64(u: np.ndarray, mean: float, std: float) -> np.ndarray:
    """``normal_fill_16<double>`` on rows of 16 float64 uniforms (libm log/cos/sin)."""
    u = u.reshape(-1, 16)
    radius = np.sqrt(-2.0 * _libm(math.log, 1.0 - u[:, :8]))
    theta = (2.0 * PI) * u[:, 8:]
    cos = radius * _libm(math.cos, theta)
    sin = radius * _libm(math.sin, theta)
    return np.concatenate([fma64(cos, std, mean), fma64(sin, std, mean)], 1).reshape(-1)


# ============================================================================ distributions

def uniform(gen, n: int, dt: np.dtype, low: float, high: float) -> np.ndarray:
    """``uniform_(low, high)`` on n elements of dtype ``dt`` (float16/32/64)."""
    dt = np.dtype(dt)
    if dt == np.float64:
        x = unit_double(gen, n)
        lo, hi = float(low), float(high)
    else:
        x = unit_float(gen, n)
        lo, hi = float(np.float32(low)), float(np.float32(high))
    out = fma64(x, hi - lo, lo).astype(dt) if (lo, hi) != (0.0, 1.0) else x.astype(dt)
    top, bottom = dt.type(high), dt.type(low)
    return np.where(out >= top, bottom, out)     # a value rounded up to `to` becomes `from`


def _scalar_normals(gen, n: int) -> np.ndarray:
    """n draws of ``normal_distribution<double>`` (standard), using and refilling the
    generator's cached second Box–Muller sample as torch does."""
    out = np.empty(n, np.float64)
    if n == 0:
        return out
    start = 0
    cached = getattr(gen, "_next_double_normal", None)
    if cached is not None:
        out[0] = cached
        _set_cache(gen, None)
        start = 1
    pairs = (n - start + 1) // 2
    if pairs:
        u = unit_double(gen, 2 * pairs)
        u1, u2 = u[0::2], u[1::2]
        r = np.sqrt(-2.0 * _libm(math.log1p, -u2))
        theta = (2.0 * PI) * u1
        cos, sin = r * _libm(math.cos, theta), r * _libm(math.sin, theta)
        both = np.empty(2 * pairs)
        both[0::2], both[1::2] = cos, sin
        out[start:] = both[:n - start]
        if (n - start) % 2:
            _set_cache(gen, float(sin[-1]))
    return out


def _set_cache(gen, value):
    try:
        gen._next_double_normal = value
    except AttributeError:     # a plain np.random.Generator has no room for it: no cache
        pass


def normal(gen, n: int, dt: np.dtype, mean: float, std: float, contiguous: bool = True) -> np.ndarray:
    """``normal_(mean, std)`` on n elements of dtype ``dt``, in torch's memory order."""
    dt = np.dtype(dt)
    mean, std = float(mean), float(std)
    if n >= 16 and contiguous and dt in (np.float32, np.float64):
        if dt == np.float32:
            unit, fill = unit_float, _box_muller16_f32
            m, s = float(np.float32(mean)), float(np.float32(std))
        else:
            unit, fill, m, s = unit_double, _box_muller16_f64, mean, std
        u = unit(gen, n)
        whole = n - n % 16
        out = np.empty(n, np.float64)
        out[:whole] = fill(u[:whole], m, s)
        if n % 16:
            out[n - 16:] = fill(unit(gen, 16), m, s)
        return out.astype(dt)
    return fma64(_scalar_normals(gen, n), std, mean).astype(dt)


def log_normal(gen, n: int, dt, mean: float, std: float) -> np.ndarray:
    """``log_normal_(mean, std)``: exp of the scalar-path normal (glibc exp)."""
    return _libm(math.exp, fma64(_scalar_normals(gen, n), float(std), float(mean))).astype(dt)


def exponential(gen, n: int, dt, lambd: float) -> np.ndarray:
    """``exponential_(lambd)``: ``-1/lambd * log1p(-u)``, u a float64 uniform."""
    return ((-1.0 / float(lambd)) * _libm(math.log1p, -unit_double(gen, n))).astype(dt)


def geometric(gen, n: int, dt, p: float) -> np.ndarray:
    """``geometric_(p)``: ``ceil(log(u) / log1p(-p))``, u a float64 uniform."""
    u = unit_double(gen, n)
    with np.errstate(divide="ignore"):
        return np.ceil(_libm(lambda v: math.log(v) if v > 0 else -math.inf, u) / math.log1p(-float(p))).astype(dt)


def cauchy(gen, n: int, dt, median: float, sigma: float) -> np.ndarray:
    """``cauchy_(median, sigma)``: ``median + sigma * tan(pi * (u - 0.5))`` (one FMA)."""
    t = _libm(math.tan, PI * (unit_double(gen, n) - 0.5))
    return fma64(float(sigma), t, float(median)).astype(dt)


def bernoulli_scalar(gen, n: int, p: float) -> np.ndarray:
    """``bernoulli_(p)``, p a number: float64 uniform < p (bool array)."""
    return unit_double(gen, n) < float(p)


def bernoulli_tensor(gen, p: np.ndarray) -> np.ndarray:
    """``bernoulli_(p)``, p an array (already broadcast, C order): float64 p compares a float64
    uniform, any other float dtype a float uniform (bool array)."""
    p = np.asarray(p)
    unit = unit_double if p.dtype == np.float64 else unit_float
    return (unit(gen, p.size) < p.reshape(-1).astype(np.float64)).reshape(p.shape)


def integers(gen, n: int, dt, low: int, high: int) -> np.ndarray:
    """``random_(low, high)`` / ``randint``: ``w % (high - low) + low`` with a 64-bit word when
    the range is 2^28 or more, else a 32-bit word."""
    span = int(high) - int(low)
    dt = np.dtype(dt)
    if span >= 1 << 28:       # torch 2.13 switches to 64-bit words here (measured), any dtype
        w = words64(gen, n)
    else:
        w = words32(gen, n)
    # (w % span) + low in int64, as torch's static_cast<int64_t>: wrapping arithmetic modulo 2^64
    # gives the exact result, which lies in [low, high) inside the int64 range
    with np.errstate(over="ignore"):
        vals = (w % np.uint64(span)).astype(np.int64) + np.int64(low)
    return vals.astype(dt)


def random_default(gen, n: int, dt) -> np.ndarray:
    """``random_()`` with no range: ``w % (max + 1)`` over the dtype's default range: int64 and
    float64 from 64-bit words, the rest from 32-bit ones; floats on [0, 2^mantissa_bits]."""
    dt = np.dtype(dt)
    if dt == np.bool_:
        return (words32(gen, n) & np.uint64(1)).astype(bool)
    w = words64(gen, n) if dt in (np.int64, np.float64) else words32(gen, n)
    if dt.kind == "f":
        mod = (1 << (np.finfo(dt).nmant + 1)) + 1
    else:
        mod = int(np.iinfo(dt).max) + 1
    return (w % np.uint64(mod)).astype(dt)


def randperm(gen, n: int) -> np.ndarray:
    """``randperm(n)``: for n < 2^32/20, swap i with i + random() % (n - i) for i = 0..n-2; above,
    the inside-out shuffle with 64-bit words (i's slot from random64() % (i + 1))."""
    n = int(n)
    if n < (1 << 32) // 20:
        out = list(range(n))
        if n > 1:
            picks = (words32(gen, n - 1) % np.arange(n, 1, -1, dtype=np.uint64)).tolist()
            for i, z in enumerate(picks):
                j = i + z
                out[i], out[j] = out[j], out[i]
        return np.array(out, dtype=np.int64)
    w = words64(gen, n)
    out = np.empty(n, np.int64)
    for i in range(n):
        z = int(w[i] % np.uint64(i + 1))
        out[i] = out[z]
        out[z] = i
    return out


def multinomial(gen, rows: np.ndarray, k: int, replacement: bool) -> np.ndarray:
    """``multinomial`` of the rows of ``rows`` (2-D, float dtype): int64 (rows, k)."""
    if not replacement or k == 1:
        q = exponential(gen, rows.size, rows.dtype, 1.0).reshape(rows.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            keys = rows / q
        if k == 1:
            return np.argmax(keys, axis=1).reshape(-1, 1).astype(np.int64)
        return np.argsort(-keys, axis=1, kind="stable")[:, :k].astype(np.int64)
    out = np.empty((rows.shape[0], k), np.int64)
    for i, row in enumerate(rows):
        cum = np.cumsum(row, dtype=row.dtype)      # sequential, in the row's dtype (as torch)
        cum = (cum / cum[-1]).astype(row.dtype)
        u = unit_double(gen, k)
        out[i] = np.searchsorted(cum.astype(np.float64), u, side="left")
    return out


def _poisson_one(gen, lam: float) -> int:
    """One draw of ATen's ``sample_poisson``: for lam >= 10 Hörmann's transformed rejection
    (PTRS, 1993), else the product of uniforms until it falls below exp(-lam)."""
    def u():
        return float(unit_double(gen, 1)[0])
    if lam >= 10:
        slam, loglam = math.sqrt(lam), math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            U, V = u() - 0.5, u()
            us = 0.5 - abs(U)
            k = math.floor((2 * a / us + b) * U + lam + 0.43)
            if us >= 0.07 and V <= vr:
                return k
            if k < 0 or (us < 0.013 and V > us):
                continue
            if (math.log(V) + math.log(invalpha) - math.log(a / (us * us) + b)
                    <= -lam + k * loglam - math.lgamma(k + 1.0)):
                return k
    if lam == 0:
        return 0
    enlam, x, prod = math.exp(-lam), 0, 1.0
    while True:
        prod *= u()
        if prod > enlam:
            x += 1
        else:
            return x


def poisson(gen, rates: np.ndarray) -> np.ndarray:
    """``torch.poisson(rates)``: one ``sample_poisson`` per element, in C order, in the rates' dtype."""
    flat = np.asarray(rates, np.float64).reshape(-1)
    return np.array([_poisson_one(gen, lam) for lam in flat.tolist()], np.float64).reshape(np.shape(rates)).astype(rates.dtype)
