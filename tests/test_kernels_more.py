"""More C kernels (issue 33): erf, pow with a small integer exponent, dropout + residual add.

As ``tests/test_kernels.py``: each kernel against its op's NumPy form (``TINYGRAD_TX_KERNELS=0`` in
the same process) and against torch (float64 to ~1e-10, float32 judged against torch's own float32
error with a float64 oracle), NaN/±Inf/−0.0/subnormal inputs as torch, sizes across the vector
widths and the thread split. Kernel tests skip where no C compiler is found.
"""
import contextlib
import os
import warnings

import numpy as np
import pytest
import torch
from scipy.special import erf as scipy_erf

import tinygrad_tx as tg
from tinygrad_tx import kernels
from tinygrad_tx.kernels import build
from reference.testing import DEVICE, check_parity


def _compiler_present() -> bool:
    try:
        build.find_compiler()
        return True
    except build.NoCompiler:
        return False


_OFF = os.environ.get("TINYGRAD_TX_KERNELS", "").strip().lower() in ("0", "off", "false", "no")
needs_cc = pytest.mark.skipif(_OFF or not _compiler_present(),
                              reason="TINYGRAD_TX_KERNELS=0 or no C compiler: the NumPy path runs")


@pytest.fixture(autouse=True)
def _fresh_decision():
    kernels.reset()
    yield
    kernels.reset()


@contextlib.contextmanager
def numpy_path():
    old = os.environ.get("TINYGRAD_TX_KERNELS")
    os.environ["TINYGRAD_TX_KERNELS"] = "0"
    kernels.reset()
    try:
        yield
    finally:
        if old is None:
            del os.environ["TINYGRAD_TX_KERNELS"]
        else:
            os.environ["TINYGRAD_TX_KERNELS"] = old
        kernels.reset()


OPS = {
    "erf": (lambda x: x.erf(), lambda x: torch.erf(x)),
}


def _ours(op, x: np.ndarray, g: np.ndarray):
    """(output, gradient w.r.t. x for cotangent g) of our op."""
    X = tg.from_numpy(x.copy()).requires_grad_()
    y = OPS[op][0](X)
    (dx,) = tg.autograd.grad(y, X, tg.from_numpy(g.astype(x.dtype)))
    return y.detach().numpy(), dx.numpy()


def _torch(op, x: np.ndarray, g: np.ndarray):
    X = torch.tensor(x, device=DEVICE, requires_grad=True)
    y = OPS[op][1](X)
    (dx,) = torch.autograd.grad(y, X, torch.tensor(g.astype(x.dtype), device=DEVICE))
    return y.detach().cpu().numpy(), dx.cpu().numpy()


def _rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)


_SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-40, -1e-40, 1e-310, -1e-310, 1e30, -1e30,
                     3.0, -3.0, -10.0, 0.5, 3.9, 4.0, 6.0, -6.0, 9.0, 26.0, 27.5, -27.5])
SHAPES = [(1, 1), (3, 7), (5, 8), (4, 9), (2, 33), (512, 256), (300, 257)]


# ---------------------------------------------------------------------------------- erf

@needs_cc
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_erf_kernel_matches_numpy_path_float64(shape):
    assert kernels.mode().startswith("c (")
    rng = np.random.default_rng(sum(shape))
    x, g = rng.standard_normal(shape) * 2, rng.standard_normal(shape)
    fast = _ours("erf", x, g)
    with numpy_path():
        slow = _ours("erf", x, g)
    for a, b in zip(fast, slow):
        assert _rel(a, b) <= 1e-12, (shape, _rel(a, b))
    assert np.max(np.abs(slow[1])) > 1e-3


@needs_cc
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(5, 8), (4, 9), (64, 96)], ids=str)
def test_erf_kernel_parity_with_torch(dtype, shape):
    x = np.random.default_rng(shape[1]).standard_normal(shape) * 2
    check_parity(OPS["erf"][0], OPS["erf"][1], x, dtype=dtype, name="kernel erf", seed=shape[0])


@needs_cc
def test_erf_float32_error_against_float64_oracle():
    """(512, 256) float32: the kernel's error against float64 is at most 4x torch's own."""
    rng = np.random.default_rng(7)
    x64, g64 = rng.standard_normal((512, 256)) * 3, rng.standard_normal((512, 256))
    x32, g32 = x64.astype(np.float32), g64.astype(np.float32)
    oracle = _torch("erf", x32.astype(np.float64), g32.astype(np.float64))
    ours, theirs = _ours("erf", x32, g32), _torch("erf", x32, g32)
    for o, t, exact in zip(ours, theirs, oracle):
        assert _rel(o, exact) <= 4 * _rel(t, exact) + 1e-7, (_rel(o, exact), _rel(t, exact))


@needs_cc
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_erf_special_values(dtype):
    """NaN where torch has NaN, ±1 at ±inf, a gradient of 0 at ±inf and where e^{-x²} underflows,
    −0.0 kept, subnormals: each value as torch's and as the NumPy path's within rounding."""
    x = _SPECIAL.astype(dtype)
    g = np.random.default_rng(1).standard_normal(x.shape).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        fast = _ours("erf", x, g)
        with numpy_path():
            slow = _ours("erf", x, g)
        theirs = _torch("erf", x, g)
    exact_y = scipy_erf(x.astype(np.float64))
    with np.errstate(over="ignore"):
        exact_d = g.astype(np.float64) * (2 / np.sqrt(np.pi)) * np.exp(-(x.astype(np.float64) ** 2))
    rtol = 4e-7 if dtype == np.float32 else 1e-14
    tiny = np.finfo(dtype).smallest_subnormal * 4
    for a, b, t, e in zip(fast, slow, theirs, (exact_y, exact_d)):
        assert np.array_equal(np.isnan(a), np.isnan(t)) and np.array_equal(np.isnan(a), np.isnan(b)), (x, a, t)
        ok = np.isfinite(t)
        np.testing.assert_array_equal(a[~ok], t[~ok])
        np.testing.assert_allclose(a[ok], t[ok], rtol=rtol, atol=tiny)
        np.testing.assert_allclose(a[ok], e[ok], rtol=rtol, atol=tiny)
        np.testing.assert_allclose(a[ok], b[ok], rtol=rtol, atol=tiny)
    assert np.signbit(fast[0][3]) and fast[0][3] == 0          # erf(-0.0) = -0.0, as torch's
    assert np.array_equal(fast[0][1:3], [1, -1]) and np.array_equal(fast[1][1:3], [0, 0])


@needs_cc
@pytest.mark.parametrize("n", [1, 7, 8, 15, 16, 17, 63, 64, 65, 255, 4097, 70001])
def test_erf_sizes_across_vector_widths_and_threads(n):
    """Lengths around the 4/8/16-lane vectors, the 64-element chunk alignment and the thread split:
    float64 the NumPy path's values, float32 at 2 threads equal to 1 thread bit for bit."""
    rng = np.random.default_rng(n)
    x, g = rng.standard_normal(n) * 3, rng.standard_normal(n)
    fast = _ours("erf", x, g)
    with numpy_path():
        slow = _ours("erf", x, g)
    for a, b in zip(fast, slow):
        assert _rel(a, b) <= 1e-12, (n, _rel(a, b))
    old = tg.get_num_threads()
    try:
        tg.set_num_threads(1)
        one = _ours("erf", x.astype(np.float32), g.astype(np.float32))
        tg.set_num_threads(2)
        two = _ours("erf", x.astype(np.float32), g.astype(np.float32))
    finally:
        tg.set_num_threads(old)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)


@needs_cc
def test_erf_runs_its_kernel_and_differentiates_its_backward():
    """The op's values are the kernel's own, bit for bit; create_graph=True differentiates the
    formula (second derivative -2x·2/√π e^{-x²}·g·h, against torch)."""
    rng = np.random.default_rng(3)
    x, g, h = (rng.standard_normal((33, 20)).astype(np.float32) * 2 for _ in range(3))
    X = tg.from_numpy(x.copy()).requires_grad_()
    y = X.erf()
    np.testing.assert_array_equal(y.detach().numpy(), kernels.erf(x))
    (dx,) = tg.autograd.grad(y, X, tg.from_numpy(g))
    np.testing.assert_array_equal(dx.numpy(), kernels.erf_backward(x, g))
    x64, g64, h64 = (a.astype(np.float64) for a in (x, g, h))
    X = tg.from_numpy(x64.copy()).requires_grad_()
    (dx,) = tg.autograd.grad(X.erf(), X, tg.from_numpy(g64), create_graph=True)
    (ddx,) = tg.autograd.grad(dx, X, tg.from_numpy(h64))
    T = torch.tensor(x64, device=DEVICE, requires_grad=True)
    (dt,) = torch.autograd.grad(torch.erf(T), T, torch.tensor(g64, device=DEVICE), create_graph=True)
    (ddt,) = torch.autograd.grad(dt, T, torch.tensor(h64, device=DEVICE))
    np.testing.assert_allclose(ddx.numpy(), ddt.cpu().numpy(), rtol=1e-10, atol=1e-14)
    assert np.max(np.abs(ddt.cpu().numpy())) > 1e-3


def test_erf_without_kernels_and_other_dtypes():
    """TINYGRAD_TX_KERNELS=0: SciPy's erf runs and matches torch; float16 never takes the kernel."""
    with numpy_path():
        assert kernels.mode().startswith("numpy")
        check_parity(OPS["erf"][0], OPS["erf"][1], np.random.default_rng(9).standard_normal((4, 9)) * 2,
                     name="numpy path erf")
    assert kernels.erf(np.ones(3, np.float16)) is None
    y = tg.from_numpy(np.array([0.5, -1.0], np.float16)).erf()
    assert y.dtype == tg.float16
