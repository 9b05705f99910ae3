"""Generated C kernels under eager's fused ops: GELU, LayerNorm, RMSNorm, softmax, log-softmax,
cross-entropy, attention's softmax, dropout's mask, dropout + residual add, the Adam/AdamW and SGD
updates, and the pointwise primitives where one pays (sigmoid, silu, softplus, erf, erfc, integer pow).

NumPy makes one pass over memory per call; a fused op written in NumPy makes many (exact
GELU's forward and derivative 33, LayerNorm 5-6 each way). These kernels make one or two per
row, built from C (``source``) with the machine's C compiler and loaded with ``ctypes``
(``build``). The NumPy forms stay beside each op as the reference and the fallback: every
function here returns ``None`` when it does not apply (no compiler, ``TINYGRAD_TX_KERNELS=0``,
a dtype other than float32/float64, an empty array), and the caller then runs its NumPy code.

``TINYGRAD_TX_KERNELS``: unset (or ``auto``) uses kernels when a compiler is found, warning once
when one was expected and failed; ``0`` never uses them; ``1`` requires them (a build error
raises). ``mode()`` says which path runs. Nothing here is built at import: the first call does it.

Threads: rows (or, for elementwise kernels, aligned chunks) are split over
``tinygrad_tx.get_num_threads()`` threads via ``parallel.parallel_chunks``; ctypes releases the
GIL for the call, so the chunks run at once.
"""
from __future__ import annotations

import ctypes
import os
import threading
import warnings

import numpy as np

from .. import buffers
from ..parallel import parallel_chunks

_lock = threading.Lock()
_state: dict = {}            # "lib", "compiler", "path", "build_s" or "reason"


def _setting() -> str:
    return os.environ.get("TINYGRAD_TX_KERNELS", "auto").strip().lower() or "auto"


_P, _L, _D = ctypes.c_void_p, ctypes.c_long, ctypes.c_double
_SIGNATURES = {
    "gelu_erf": (_P, _P, _P, _L, _L),
    "gelu_tanh": (_P, _P, _P, _L, _L),
    "layer_norm_fwd": (_P, _P, _P, _P, _P, _P, _P, _L, _L, _L, _D, _D),
    "layer_norm_bwd": (_P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _L, _L, _L),
    "softmax_fwd": (_P, _P, _L, _L, _L),
    "softmax_bwd": (_P, _P, _P, _L, _L, _L),
    "log_softmax_fwd": (_P, _P, _L, _L, _L),
    "log_softmax_bwd": (_P, _P, _P, _L, _L, _L),
    "cross_entropy_rows": (_P, _P, _P, _P, _L, _L, _L),
    "attn_softmax": (_P, _L, _L, _L),
    "attn_softmax_bwd": (_P, _P, _L, _L, _L),
    "sigmoid": (_P, _P, _L, _L),
    "sigmoid_bwd": (_P, _P, _P, _L, _L),
    "erf": (_P, _P, _L, _L),
    "erf_bwd": (_P, _P, _P, _L, _L),
    "erfc": (_P, _P, _L, _L),
    "erfc_bwd": (_P, _P, _P, _L, _L),
    "pow_int": (_P, _P, _L, _L, ctypes.c_int),
    "pow_int_bwd": (_P, _P, _P, _L, _L, ctypes.c_int),
    "silu": (_P, _P, _L, _L),
    "silu_bwd": (_P, _P, _P, _L, _L),
    "rms_norm_fwd": (_P, _P, _P, _L, _L, _L, _D),
    "rms_norm_bwd": (_P, _P, _P, _P, _P, _L, _L, _L, _D),
}
_SCALAR = {"_f32": ctypes.c_float, "_f64": ctypes.c_double}


def _adam_signature(suffix):
    t, i = _SCALAR[suffix], ctypes.c_int
    return (_P, _P, _P, _P, _P, _L, _L, i, t, t, t, i, t, t, t, t, t)


def _softplus_signature(suffix):
    t = _SCALAR[suffix]
    return (_P, _P, _L, _L, t, t)


def _softplus_bwd_signature(suffix):
    t = _SCALAR[suffix]
    return (_P, _P, _P, _L, _L, t, t)


def _sgd_signature(suffix):
    t, i = _SCALAR[suffix], ctypes.c_int
    return (_P, _P, _P, _L, _L, i, t, i, t, t, i, t)


def _dropout_add_signature(suffix):
    return (_P, _P, _P, _P, _L, _L, _SCALAR[suffix])


def _dropout_scale_signature(suffix):
    return (_P, _P, _P, _L, _L, _SCALAR[suffix])


_TYPED_SIGNATURES = {"adam": _adam_signature, "softplus": _softplus_signature,
                     "softplus_bwd": _softplus_bwd_signature, "sgd": _sgd_signature,
                     "dropout_add": _dropout_add_signature, "dropout_scale": _dropout_scale_signature}


def _load() -> dict:
    """The loaded library's functions, {(name, dtype): function}; {} when the NumPy path runs."""
    with _lock:
        if _state:
            return _state.get("fns", {})
        setting = _setting()
        if setting in ("0", "off", "false", "no"):
            _state["reason"] = "TINYGRAD_TX_KERNELS=0"
            return {}
        from . import build
        try:
            lib, compiler, path, seconds = build.load()
        except build.NoCompiler as e:
            _state["reason"] = str(e)
            if setting == "1":
                raise
            if e.expected:
                warnings.warn(f"tinygrad_tx: C kernels off, running the NumPy code: {e}", RuntimeWarning, stacklevel=3)
            return {}
        except (build.KernelBuildError, OSError) as e:
            _state["reason"] = f"kernel build failed: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
            if setting == "1":
                raise build.KernelBuildError(str(e)) from None
            warnings.warn(f"tinygrad_tx: C kernels off, running the NumPy code: {e}", RuntimeWarning, stacklevel=3)
            return {}
        fns = {}
        for name, argtypes in list(_SIGNATURES.items()) + [(n, None) for n in _TYPED_SIGNATURES]:
            for suffix, dtype in (("_f32", np.dtype(np.float32)), ("_f64", np.dtype(np.float64))):
                f = getattr(lib, name + suffix)
                f.argtypes, f.restype = argtypes or _TYPED_SIGNATURES[name](suffix), None
                fns[(name, dtype)] = f
        f = lib.keep_from_words
        f.argtypes, f.restype = (_P, _P, _L, _L, _D), None
        fns[("keep_from_words", None)] = f
        f = lib.keep_from_mt19937
        f.argtypes, f.restype = (_P, _P, _P, _L, _D), None
        fns[("keep_from_mt19937", None)] = f
        _state.update(fns=fns, lib=lib, compiler=compiler, path=path, build_s=seconds)
        return fns


def reset() -> None:
    """Forget the loaded library and the decision (tests; after changing the environment)."""
    with _lock:
        _state.clear()


def mode() -> str:
    """Which path the fused ops run: ``'c (gcc 12.2.0)'`` or ``'numpy: <why>'`` (builds if needed)."""
    _load()
    if "fns" in _state:
        return f"c ({_state['compiler']})"
    return f"numpy: {_state.get('reason', 'unknown')}"


def available(dtype) -> bool:
    """Whether kernels run for arrays of this dtype (builds the library on first use)."""
    fns = _state.get("fns") if _state else _load()
    return bool(fns) and np.dtype(dtype) in (np.float32, np.float64)


def _fn(name: str, *arrays):
    """The kernel for the arrays' dtype, or None (NumPy path): they must share a float32/float64
    dtype and hold at least one element."""
    dtype = arrays[0].dtype
    if dtype not in (np.float32, np.float64) or arrays[0].size == 0:
        return None
    if any(a is not None and a.dtype != dtype for a in arrays):
        return None
    fns = _state.get("fns") if _state else _load()
    return None if fns is None else fns.get((name, dtype))


def _c(a: np.ndarray) -> np.ndarray:
    """C-contiguous and aligned (a copy only when it is not; the dtype is checked by ``_fn``)."""
    flags = a.flags
    return a if flags.c_contiguous and flags.aligned else np.require(a, requirements=("C", "A"))


def _ptr(a):
    return None if a is None else a.ctypes.data


def _over_rows(n_rows: int, row_len: int, call) -> None:
    """``call(lo, hi)`` on row ranges split over the threads (aligned element chunks)."""
    parallel_chunks(n_rows * row_len, lambda a, b: call(a // row_len, b // row_len), align=row_len)


# ---------------------------------------------------------------------------------- GELU

def gelu(x: np.ndarray, approximate: str, need_d: bool):
    """(y, dy/dx or None) of GELU in one pass, or None. Exact: y = xΦ(x), Φ = erfc(-x/√2)/2;
    tanh: y = xσ(2u) (see ``source``). Why: one pass with libmvec's vector erfc/exp instead of
    33 NumPy passes. Gain, fwd+bwd (512, 256) float32, 1 thread, CPU time (bench/kernels_ab.py,
    2026-12-07, loaded VM): exact 1169 -> 462 µs (torch 540), tanh 1314 -> 402 µs (torch 860)."""
    f = _fn("gelu_erf" if approximate == "none" else "gelu_tanh", x)
    if f is None:
        return None
    x = _c(x)
    y = buffers.empty(x.shape, x.dtype)             # forward outputs pooled, as the NumPy forms do
    d = buffers.empty(x.shape, x.dtype) if need_d else None
    px, py, pd = _ptr(x), _ptr(y), _ptr(d)
    parallel_chunks(x.size, lambda lo, hi: f(px, py, pd, lo, hi), align=64)
    return y, d


# ---------------------------------------------------------------------------------- sigmoid family

def _pointwise(name: str, x: np.ndarray, *scalars):
    f = _fn(name, x)
    if f is None:
        return None
    x = _c(x)
    y = buffers.empty(x.shape, x.dtype)
    px, py = _ptr(x), _ptr(y)
    parallel_chunks(x.size, lambda lo, hi: f(px, py, lo, hi, *scalars), align=64)
    return y


def _pointwise_backward(name: str, saved: np.ndarray, g: np.ndarray, *scalars):
    f = _fn(name, saved, g)
    if f is None or g.shape != saved.shape:
        return None
    saved, g = _c(saved), _c(g)
    dx = np.empty_like(saved)
    ps, pg, pd = _ptr(saved), _ptr(g), _ptr(dx)
    parallel_chunks(saved.size, lambda lo, hi: f(ps, pg, pd, lo, hi, *scalars), align=64)
    return dx


# The backwards read what the NumPy forms (and torch) save, y for sigmoid, x for silu and
# softplus, and recompute the rest: a change made through ``.data`` between forward and backward
# moves the gradient as it does in torch.

def sigmoid(x: np.ndarray):
    """σ(x) in one pass, or None: e = e^{-|x|}, σ = 1/(1+e) or e/(1+e) (see ``source``). Why:
    one pass with libmvec's vector exp instead of NumPy's three. Gain, with ``sigmoid_backward``,
    fwd+bwd (512, 256) float32, 1 thread, CPU time (bench/kernels_ab.py, 2026-12-07): 610 -> 447 µs
    (torch 555; a rerun at the same load: 473 -> 437, torch 479): the engine's own per-op work is
    most of sigmoid's time."""
    return _pointwise("sigmoid", x)


def sigmoid_backward(y: np.ndarray, g: np.ndarray):
    """dx = g y (1 - y) in one pass (the NumPy form's operations, in its order), or None."""
    return _pointwise_backward("sigmoid_bwd", y, g)


def erf(x: np.ndarray):
    """erf x in one pass with libmvec's vector erf, or None. Why: SciPy's erf is a scalar loop
    (float32 computed through double). Gain, with ``erf_backward``, fwd+bwd (512, 256) float32,
    1 thread, CPU time: 2409 -> 521 µs (torch 1117; 2026-12-07, load 0.8)."""
    return _pointwise("erf", x)


def erf_backward(x: np.ndarray, g: np.ndarray):
    """dx = g (2/√π e^{-x²}) from x in one pass (the NumPy form's operations, in its order), or None."""
    return _pointwise_backward("erf_bwd", x, g)


def erfc(x: np.ndarray):
    """erfc x in one pass with libmvec's vector erfc, or None. Why: SciPy's erfc is a scalar loop,
    as its erf (the per-op table, 2026-12-07: erfc fwd+bwd 4.8x torch at 1024×1024). Gain, with
    ``erfc_backward``, fwd+bwd (512, 256) float32, 1 thread, CPU time: 2293 -> 319 µs (torch 928;
    2026-12-07, load 0.5)."""
    return _pointwise("erfc", x)


def erfc_backward(x: np.ndarray, g: np.ndarray):
    """dx = -g (2/√π e^{-x²}) from x in one pass (the NumPy form's operations, in its order), or None."""
    return _pointwise_backward("erfc_bwd", x, g)


# ---------------------------------------------------------------------------------- pow

POW_INT_MAX = 64     # |n| up to this: an exponent written in code, not data


def int_exponent(x, b):
    """The exponent of ``x ** b`` as an int n when a kernel can run it, else None: x a float32 or
    float64 array, b a 0-d array of its dtype (how a Python number arrives after promotion) or a
    number, whose value is an integer, 0 < |n| <= POW_INT_MAX, n != 4 (the NumPy form's
    (x·x)·(x·x) and 4·x·x·x beat the kernel's pow: fwd+bwd (512, 256) float32 500 µs against 671)."""
    if type(x) is not np.ndarray or x.dtype not in (np.float32, np.float64):
        return None
    if type(b) is np.ndarray:
        if b.ndim != 0 or b.dtype != x.dtype:
            return None
        b = b.item()
    elif not isinstance(b, (int, float)) or isinstance(b, bool):
        return None
    if b != b or b == 0 or b == 4 or abs(b) > POW_INT_MAX or b != int(b):
        return None
    return int(b)


def pow_int(x: np.ndarray, b):
    """x ** b in one pass when b is an integer n (``int_exponent``), formed as torch's
    pow(tensor, scalar) forms it (x·x, x·x·x, 1/x, 1/(x·x), else libmvec's vector pow), or None.
    Why: NumPy's power calls powf per element for any exponent but -1, 0, 0.5, 1, 2 (the
    backward of x**-1 needs x^-2). Gain, with ``pow_int_backward``, fwd+bwd (512, 256) float32,
    1 thread, CPU time (2026-12-07, load 2.1): x**-1 7844 -> 451 µs (torch 607), x**-2
    14824 -> 574 (977), x**5 7729 -> 728 (1335), x**2 498 -> 431 (769), x**3 470 -> 342 (531)."""
    n = int_exponent(x, b)
    return None if n is None else _pointwise("pow_int", x, n)


def pow_int_backward(x: np.ndarray, b, g: np.ndarray):
    """dx = g (n x^(n-1)) from x in one pass (torch's pow_backward in its order) when b is an
    integer n (``int_exponent``), or None."""
    n = int_exponent(x, b)
    return None if n is None or type(g) is not np.ndarray else _pointwise_backward("pow_int_bwd", x, g, n)


def silu(x: np.ndarray):
    """x σ(x) in one pass, or None. Why: one pass instead of NumPy's sigmoid (three passes) and the
    product; the backward recomputes σ in one pass instead of five. Gain, fwd+bwd (512, 256)
    float32, 1 thread, CPU time: 678 -> 483 µs (torch 517; rerun 640 -> 464, torch 415)."""
    return _pointwise("silu", x)


def silu_backward(x: np.ndarray, g: np.ndarray):
    """dx = g σ (1 + x (1 - σ)) from x in one pass, or None."""
    return _pointwise_backward("silu_bwd", x, g)


def softplus(x: np.ndarray, beta: float, threshold: float):
    """torch's softplus (β, threshold) in one pass, or None: y = x where βx > threshold, else
    (max(βx, 0) + log1p(e^{-|βx|}))/β. β and the threshold are rounded to x's dtype, as torch's
    kernel does. Why: one pass instead of about ten each way. Gain, fwd+bwd (512, 256) float32,
    1 thread, CPU time: 1107 -> 623 µs (torch 717; rerun 1273 -> 613, torch 674)."""
    T = x.dtype.type
    return _pointwise("softplus", x, T(beta), T(threshold))


def softplus_backward(x: np.ndarray, g: np.ndarray, beta: float, threshold: float):
    """dx = g where βx > threshold, else g σ(βx), from x in one pass, or None."""
    T = x.dtype.type
    return _pointwise_backward("softplus_bwd", x, g, T(beta), T(threshold))


# ---------------------------------------------------------------------------------- RMSNorm

def rms_norm_forward(x2: np.ndarray, w, eps: float):
    """y of RMSNorm over the rows of a 2-D array (w of the row's length, or None), or None:
    r = 1/√(mean x² + eps) per row, y = x r w. Why: two in-cache passes per row instead of four
    NumPy passes over the array. Gain, fwd+bwd (512, 256) float32, 1 thread, CPU time:
    1246 -> 623 µs (torch 1456; rerun 1258 -> 676, torch 1509)."""
    f = _fn("rms_norm_fwd", x2, w)
    if f is None or x2.shape[1] == 0:
        return None
    n, d = x2.shape
    x2 = _c(x2)
    w = None if w is None else _c(w)
    y = buffers.empty(x2.shape, x2.dtype)
    args = [_ptr(a) for a in (x2, w, y)]
    _over_rows(n, d, lambda lo, hi: f(*args, lo, hi, d, float(eps)))
    return y


def rms_norm_backward(x2, g2, w, eps: float, need_dx: bool, need_dw: bool):
    """(dx or None, dw as float64 column sums or None) of RMSNorm, or None: r recomputed,
    dx = r (ĝ - x r² mean(ĝ x)), ĝ = g w; dw = Σ_rows g x r, summed per thread in double."""
    f = _fn("rms_norm_bwd", x2, g2, w)
    if f is None or x2.shape[1] == 0:
        return None
    n, d = x2.shape
    x2, g2 = _c(x2), _c(g2)
    w = None if w is None else _c(w)
    dx = np.empty_like(x2) if need_dx else None
    chunks = []

    def call(lo, hi):
        acc = np.zeros(d) if need_dw else None
        if need_dw:
            chunks.append(acc)
        f(_ptr(x2), _ptr(g2), _ptr(w), _ptr(dx), _ptr(acc), lo, hi, d, float(eps))

    _over_rows(n, d, call)
    dw = sum(chunks[1:], chunks[0].copy()) if need_dw else None
    return dx, dw


# ---------------------------------------------------------------------------------- LayerNorm

def layer_norm_forward(x2: np.ndarray, w, b, eps: float):
    """(y, μ, δ, ρ) of LayerNorm over the rows of a 2-D array (w, b of the row's length or None),
    or None. Saved values as ``LayerNormFn``'s NumPy forward saves them. Why: two passes per row
    (statistics in double, then the affine output) instead of six NumPy passes per block. Gain,
    fwd+bwd (512, 256) float32, 1 thread, CPU time: 1137 -> 526 µs (torch 467; 2026-12-07)."""
    f = _fn("layer_norm_fwd", x2, w, b)
    if f is None:
        return None
    n, d = x2.shape
    x2 = _c(x2)
    w = None if w is None else _c(w)
    b = None if b is None else _c(b)
    y = buffers.empty(x2.shape, x2.dtype)
    mu, dl, rs = (np.empty(n, x2.dtype) for _ in range(3))
    big = float(np.sqrt(np.finfo(x2.dtype).max))
    args = [_ptr(a) for a in (x2, w, b, y, mu, dl, rs)]
    _over_rows(n, d, lambda lo, hi: f(*args, lo, hi, d, float(eps), big))
    return y, mu, dl, rs


def layer_norm_backward(x2, g2, w, mu, dl, rs, need_dx: bool, need_dw: bool, need_db: bool):
    """(dx or None, dγ as float64 or None, dβ as float64 or None), or None. Why: the two row
    means and dx in two passes per row, dγ/dβ summed per thread in double on the way."""
    f = _fn("layer_norm_bwd", x2, g2, w, mu, dl, rs)
    if f is None:
        return None
    n, d = x2.shape
    x2, g2 = _c(x2), _c(g2)
    w = np.ones(d, x2.dtype) if w is None else _c(w)
    dx = np.empty_like(x2) if need_dx else None
    chunks = []                                    # each thread's double column sums

    def call(lo, hi):
        acc = np.zeros((2, d))
        scratch = np.empty((2, d), x2.dtype)        # the kernel's per-block column sums
        chunks.append(acc)
        f(_ptr(x2), _ptr(g2), _ptr(w), _ptr(mu), _ptr(dl), _ptr(rs), _ptr(dx),
          _ptr(acc[0]), _ptr(acc[1]), _ptr(scratch[0]), _ptr(scratch[1]), lo, hi, d)

    _over_rows(n, d, call)
    total = sum(chunks[1:], chunks[0].copy())
    return dx, (total[0] if need_dw else None), (total[1] if need_db else None)


# ---------------------------------------------------------------------------------- softmax

def _rowwise(name: str, *arrays, pooled: bool = False):
    f = _fn(name, *arrays)
    if f is None or arrays[0].shape[1] == 0:
        return None
    arrays = [_c(a) for a in arrays]
    n, d = arrays[0].shape
    out = buffers.empty(arrays[0].shape, arrays[0].dtype) if pooled else np.empty_like(arrays[0])
    ptrs = [_ptr(a) for a in arrays] + [_ptr(out)]
    _over_rows(n, d, lambda lo, hi: f(*ptrs, lo, hi, d))
    return out


def softmax_forward(x2):
    """softmax along the rows of a 2-D array, or None. Why: max, exp+sum, divide as three
    in-cache passes over each row instead of NumPy passes over blocks. Gain, fwd+bwd (512, 256)
    float32, 1 thread, CPU time: 817 -> 445 µs (torch 404; 2026-12-07)."""
    return _rowwise("softmax_fwd", x2, pooled=True)


def softmax_backward(y2, g2):
    """dx = y (h - ⟨h, y⟩), h = g - ⟨g, y⟩, along the rows, or None."""
    return _rowwise("softmax_bwd", y2, g2)


def log_softmax_forward(x2):
    """log-softmax along the rows, or None. Why: one kernel per direction instead of five NumPy
    passes. Gain, fwd+bwd (512, 256) float32, 1 thread, CPU time: 768 -> 470 µs (torch 457)."""
    return _rowwise("log_softmax_fwd", x2, pooled=True)


def log_softmax_backward(y2, g2):
    """dx = g - e^y Σ g along the rows, or None."""
    return _rowwise("log_softmax_bwd", y2, g2)


# ---------------------------------------------------------------------------------- cross-entropy

def cross_entropy_rows(z2: np.ndarray, keep_p: bool):
    """(p or None, row maxima m, log Σ e^{z - m}) of cross-entropy's logits rows, or None.
    Why: the row pass (max, exp, sum, log, p = e / sum) in one C loop per row instead of six
    NumPy passes. Gain, fwd+bwd of (512, 256) float32 logits, 1 thread, CPU time: 710 -> 522 µs
    (torch 574; 2026-12-07)."""
    f = _fn("cross_entropy_rows", z2)
    if f is None or z2.shape[1] == 0:
        return None
    z2 = _c(z2)
    n, d = z2.shape
    p = np.empty_like(z2) if keep_p else None
    m, ls = np.empty(n, z2.dtype), np.empty(n, z2.dtype)
    ptrs = [_ptr(a) for a in (z2, p, m, ls)]
    _over_rows(n, d, lambda lo, hi: f(*ptrs, lo, hi, d))
    return p, m, ls


# ---------------------------------------------------------------------------------- Adam

def adam(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, *, step_size: float, bias_correction2_sqrt: float,
         lr: float, beta1: float, beta2: float, eps: float, weight_decay: float, decoupled: bool) -> bool:
    """``optim.adam.adam_update`` in one C pass, in place; False (nothing done) when it does not
    apply: every array must be C-contiguous of one float dtype and shape (the state is updated in
    place, so nothing may be copied). Bit-identical to the NumPy form (same operations, same
    order, scalars rounded to the dtype as NumPy rounds them, no FMA contraction). Why: one pass
    instead of a dozen. Gain, one AdamW step over 2^20 float32 parameters, 1 thread, CPU time:
    4775 -> 1570 µs (torch 5152; 2026-12-07)."""
    arrays = (param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq)
    if not all(a is None or type(a) is np.ndarray for a in arrays):
        return False
    f = _fn("adam", *arrays)
    if f is None or any(a is not None and (a.shape != param.shape or not a.flags.c_contiguous
                                           or not a.flags.aligned) for a in arrays):
        return False
    if not all(a is None or a.flags.writeable for a in (param, exp_avg, exp_avg_sq, max_exp_avg_sq)):
        return False
    T = param.dtype.type
    w = T(1 - beta1)
    far = abs(w) >= 0.5
    mode = 0 if weight_decay == 0 else (2 if decoupled else 1)
    scalars = (mode, T(weight_decay), T(1 - lr * weight_decay), (T(1) - w) if far else w, int(far), T(beta2),
               T(1 - beta2), T(bias_correction2_sqrt), T(eps), T(-step_size))
    ptrs = [_ptr(a) for a in arrays]
    parallel_chunks(param.size, lambda lo, hi: f(*ptrs, lo, hi, *scalars), align=64)
    return True


# ---------------------------------------------------------------------------------- SGD

def sgd(param, grad, buf, first: bool, *, lr: float, momentum: float, dampening: float, weight_decay: float,
        nesterov: bool) -> bool:
    """``optim.sgd.SGD.step`` for one parameter in one C pass, in place (``param``, and ``buf``,
    the momentum buffer, unless None: without momentum); ``first`` says ``buf`` is fresh (it gets
    the gradient). False (nothing done) when it does not apply: param and buf C-contiguous,
    aligned, writeable, of one float dtype and shape as grad. Bit-identical to the NumPy form
    (same operations and order, scalars rounded to the dtype as NumPy rounds them, no FMA).
    Why: one pass instead of up to seven. Gain, one SGD step (momentum 0.9, weight decay 1e-4)
    over 2^20 float32 parameters in four tensors, 1 thread, CPU time: 2413 -> 852 µs (torch 2003;
    rerun 2486 -> 1037, torch 2013; 2026-12-07)."""
    if isinstance(grad, np.generic):          # -g of a 0-d array (maximize) is a NumPy scalar
        grad = np.asarray(grad)
    arrays = (param, grad, buf)
    if not all(a is None or type(a) is np.ndarray for a in arrays):
        return False
    f = _fn("sgd", *arrays)
    if f is None or any(a is not None and (a.shape != param.shape or not a.flags.c_contiguous
                                           or not a.flags.aligned) for a in arrays):
        return False
    if not param.flags.writeable or (buf is not None and not buf.flags.writeable):
        return False
    T = param.dtype.type
    scalars = (int(weight_decay != 0), T(weight_decay), int(first), T(momentum), T(1 - dampening),
               int(bool(nesterov)), T(lr))
    ptrs = [_ptr(a) for a in arrays]
    parallel_chunks(param.size, lambda lo, hi: f(*ptrs, lo, hi, *scalars), align=64)
    return True


# ---------------------------------------------------------------------------------- dropout

def keep_from_words(words: np.ndarray, q: float):
    """Dropout's keep mask (bool, ``len(words) // 2`` entries) from 32-bit words of torch's
    stream (a uint64 array, as ``torch_streams.words32`` returns it): entry i kept where
    ((w[2i] << 32 | w[2i+1]) & (2^53 - 1)) · 2^-53 < q. Bit-identical to
    ``torch_streams.bernoulli_scalar``; None when kernels are off. Why: one pass instead of
    seven over 8-byte arrays (the words pairing, the mask, the float conversion, the scaling,
    the comparison)."""
    fns = _state.get("fns") if _state else _load()
    f = fns.get(("keep_from_words", None)) if fns else None
    if f is None or words.dtype != np.uint64:
        return None
    words = _c(words)
    n = words.size // 2
    keep = np.empty(n, np.bool_)
    pw, pk = _ptr(words), _ptr(keep)
    if n:
        parallel_chunks(n, lambda lo, hi: f(pw, pk, lo, hi, float(q)), align=64)
    return keep


def _mask_ok(keep, like) -> bool:
    return type(keep) is np.ndarray and keep.dtype == np.bool_ and keep.shape == like.shape


def dropout_add(r: np.ndarray, x: np.ndarray, keep: np.ndarray, scale):
    """r + (x·keep)·scale in one pass (dropout of x added to the residual r), or None: r and x
    of one float32/float64 dtype and shape, keep a bool mask of that shape. Equal bit for bit to
    the unfused ``r + dropout(x)`` (its operations in its order). Why: one pass over four arrays
    instead of three NumPy passes (x·m, ·s, r +)."""
    if type(r) is not np.ndarray or type(x) is not np.ndarray or r.shape != x.shape or not _mask_ok(keep, x):
        return None
    f = _fn("dropout_add", r, x)
    if f is None:
        return None
    r, x, keep = _c(r), _c(x), _c(keep)
    out = buffers.empty(x.shape, x.dtype)
    s = x.dtype.type(scale)
    ptrs = [_ptr(a) for a in (r, x, keep, out)]
    parallel_chunks(x.size, lambda lo, hi: f(*ptrs, lo, hi, s), align=64)
    return out


def dropout_scale(a: np.ndarray, keep: np.ndarray, scale, pooled: bool = False):
    """(a·keep)·scale in one pass, or None: dropout's forward (a = x, ``pooled`` output as the
    forward outputs are) and its backward and dropout_add's (a = g), DropoutFn's operations in
    its order, so equal to them bit for bit. Why: one pass instead of two NumPy passes (the
    product with the bool mask, then the scaling)."""
    if type(a) is not np.ndarray or not _mask_ok(keep, a):
        return None
    f = _fn("dropout_scale", a)
    if f is None:
        return None
    a, keep = _c(a), _c(keep)
    out = buffers.empty(a.shape, a.dtype) if pooled else np.empty_like(a)
    s = a.dtype.type(scale)
    pa, pk, po = _ptr(a), _ptr(keep), _ptr(out)
    parallel_chunks(a.size, lambda lo, hi: f(pa, pk, po, lo, hi, s), align=64)
    return out


def keep_from_generator(generator, n: int, q: float):
    """Dropout's keep mask (bool, n entries) drawn in C straight from a ``tinygrad_tx.Generator``'s
    mt19937 state, which is advanced by the 2n words drawn, or None (kernels off, another kind
    of generator). Bit-identical to ``keep_from_words(words32(generator, 2 * n), q)`` and leaves
    the generator in the same state. Why: NumPy's ``random_raw`` and the uint64 words it returns
    cost ~1 ms per 2^18 words and 2 MB of memory traffic, for a mask of 2^17 bytes."""
    fns = _state.get("fns") if _state else _load()
    f = fns.get(("keep_from_mt19937", None)) if fns else None
    bg = getattr(generator, "bit_generator", None)
    if f is None or n <= 0 or type(bg) is not np.random.MT19937 or not hasattr(generator, "_words32"):
        return None
    state = bg.state["state"]
    key = np.array(state["key"], dtype=np.uint32)       # a copy, written by the kernel
    pos = np.array([state["pos"]], dtype=np.int64)
    keep = np.empty(n, np.bool_)
    f(_ptr(key), _ptr(pos), _ptr(keep), n, float(q))
    generator._words32(0)                               # the generator's own bookkeeping of a draw
    bg.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": int(pos[0])}}
    return keep


# ---------------------------------------------------------------------------------- attention

def _inplace_rows(name, a, *others) -> bool:
    f = _fn(name, a, *others)
    if f is None or a.shape[-1] == 0 or not all(x.flags.c_contiguous and x.flags.aligned and x.shape == a.shape
                                                 for x in (a, *others)) or not a.flags.writeable:
        return False
    d = a.shape[-1]
    n = a.size // d
    ptrs = [_ptr(x) for x in (a, *others)]
    _over_rows(n, d, lambda lo, hi: f(*ptrs, lo, hi, d))
    return True


def attention_softmax_(scores: np.ndarray) -> bool:
    """Softmax over the last axis of attention scores, in place, fully masked rows zero (torch's
    safe softmax); False (nothing done) when no kernel applies. Why: max, shift, exp, sum and
    divide in one C pass per row instead of five NumPy passes over the (…, L, S) array. Gain (with
    the backward below): causal sdpa (16, 8, 128, 32) float32 fwd+bwd 29.0 -> 25.3 ms, 1 thread."""
    return _inplace_rows("attn_softmax", scores)


def attention_softmax_backward_(ds: np.ndarray, p: np.ndarray) -> bool:
    """ds <- (ds - rowsum(ds ∘ p)) ∘ p in place; False when no kernel applies."""
    return _inplace_rows("attn_softmax_bwd", ds, p)
