"""More C kernels (issue 33): erf and erfc, pow with a small integer exponent, dropout + residual add.

As ``tests/test_kernels.py``: each kernel against its op's NumPy form (``TINYGRAD_TX_KERNELS=0`` in
the same process) and against torch (float64 to ~1e-10, float32 judged against torch's own float32
error with a float64 oracle), NaN/±Inf/−0.0/subnormal inputs as torch, sizes across the vector
widths and the thread split. Kernel tests skip where no C compiler is found.
"""
import contextlib
import warnings

import numpy as np
import pytest
import torch
from scipy.special import erf as scipy_erf, erfc as scipy_erfc

import tinygrad_tx as tg
from tinygrad_tx import kernels
from tinygrad_tx.kernels import build
from reference.testing import DEVICE, check_parity


from tests import kernel_kit
from tests.kernel_kit import _OFF, _compiler_present, _fresh_decision, needs_cc, numpy_path  # noqa: F401  (_fresh_decision: an autouse fixture)


OPS = {
    "erf": (lambda x: x.erf(), lambda x: torch.erf(x)),
    "erfc": (lambda x: x.erfc(), lambda x: torch.erfc(x)),
}
ERFS = ["erf", "erfc"]


def _ours(op, x: np.ndarray, g: np.ndarray):
    return kernel_kit.ours(OPS[op][0], x, g)


def _torch(op, x: np.ndarray, g: np.ndarray):
    return kernel_kit.theirs(OPS[op][1], x, g)


_rel = kernel_kit.rel


_SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-40, -1e-40, 1e-310, -1e-310, 1e30, -1e30,
                     3.0, -3.0, -10.0, 0.5, 3.9, 4.0, 6.0, -6.0, 9.0, 26.0, 27.5, -27.5])
SHAPES = [(1, 1), (3, 7), (5, 8), (4, 9), (2, 33), (512, 256), (300, 257)]


# ---------------------------------------------------------------------------------- erf

@needs_cc
@pytest.mark.parametrize("op", ERFS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_erf_kernel_matches_numpy_path_float64(op, shape):
    assert kernels.mode().startswith("c (")
    rng = np.random.default_rng(sum(shape))
    x, g = rng.standard_normal(shape) * 2, rng.standard_normal(shape)
    fast = _ours(op, x, g)
    with numpy_path():
        slow = _ours(op, x, g)
    for a, b in zip(fast, slow):
        assert _rel(a, b) <= 1e-12, (shape, _rel(a, b))
    assert np.max(np.abs(slow[1])) > 1e-3


@needs_cc
@pytest.mark.parametrize("op", ERFS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(5, 8), (4, 9), (64, 96)], ids=str)
def test_erf_kernel_parity_with_torch(op, dtype, shape):
    x = np.random.default_rng(shape[1]).standard_normal(shape) * 2
    check_parity(OPS[op][0], OPS[op][1], x, dtype=dtype, name=f"kernel {op}", seed=shape[0])


@needs_cc
@pytest.mark.parametrize("op", ERFS)
def test_erf_float32_error_against_float64_oracle(op):
    """(512, 256) float32: the kernel's error against float64 is at most 4x torch's own."""
    rng = np.random.default_rng(7)
    x64, g64 = rng.standard_normal((512, 256)) * 3, rng.standard_normal((512, 256))
    x32, g32 = x64.astype(np.float32), g64.astype(np.float32)
    oracle = _torch(op, x32.astype(np.float64), g32.astype(np.float64))
    ours, theirs = _ours(op, x32, g32), _torch(op, x32, g32)
    for o, t, exact in zip(ours, theirs, oracle):
        assert _rel(o, exact) <= 4 * _rel(t, exact) + 1e-7, (_rel(o, exact), _rel(t, exact))


@needs_cc
@pytest.mark.parametrize("op", ERFS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_erf_special_values(op, dtype):
    """NaN where torch has NaN, ±1 (erfc: 0 and 2) at ±inf, a gradient of 0 at ±inf and where
    e^{-x²} underflows, −0.0 kept by erf, subnormals, erfc's tail down to its underflow (26-27.5):
    each value as torch's and as the NumPy path's within rounding."""
    x = _SPECIAL.astype(dtype)
    g = np.random.default_rng(1).standard_normal(x.shape).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        fast = _ours(op, x, g)
        with numpy_path():
            slow = _ours(op, x, g)
        theirs = _torch(op, x, g)
    exact_y = (scipy_erf if op == "erf" else scipy_erfc)(x.astype(np.float64))
    with np.errstate(over="ignore"):
        exact_d = g.astype(np.float64) * (2 / np.sqrt(np.pi)) * np.exp(-(x.astype(np.float64) ** 2))
    if op == "erfc":
        exact_d = -exact_d
    rtol = 4e-7 if dtype == np.float32 else 1e-14
    tiny = np.finfo(dtype).smallest_subnormal * 4
    for a, b, t, e in zip(fast, slow, theirs, (exact_y, exact_d)):
        assert np.array_equal(np.isnan(a), np.isnan(t)) and np.array_equal(np.isnan(a), np.isnan(b)), (x, a, t)
        ok = np.isfinite(t)
        np.testing.assert_array_equal(a[~ok], t[~ok])
        np.testing.assert_allclose(a[ok], t[ok], rtol=rtol, atol=tiny)
        np.testing.assert_allclose(a[ok], e[ok], rtol=rtol, atol=tiny)
        np.testing.assert_allclose(a[ok], b[ok], rtol=rtol, atol=tiny)
    if op == "erf":
        assert np.signbit(fast[0][3]) and fast[0][3] == 0          # erf(-0.0) = -0.0, as torch's
        assert np.array_equal(fast[0][1:3], [1, -1])
    else:
        assert np.array_equal(fast[0][1:5], [0, 2, 1, 1])          # erfc(inf), erfc(-inf), erfc(∓0)
    assert np.array_equal(fast[1][1:3], [0, 0])


@needs_cc
@pytest.mark.parametrize("op", ERFS)
@pytest.mark.parametrize("n", [1, 7, 8, 15, 16, 17, 63, 64, 65, 255, 4097, 70001])
def test_erf_sizes_across_vector_widths_and_threads(op, n):
    """Lengths around the 4/8/16-lane vectors, the 64-element chunk alignment and the thread split:
    float64 the NumPy path's values, float32 at 2 threads equal to 1 thread bit for bit."""
    rng = np.random.default_rng(n)
    x, g = rng.standard_normal(n) * 3, rng.standard_normal(n)
    kernel_kit.check_sizes(lambda x, g: _ours(op, x, g), x, g, (op, n))


@needs_cc
@pytest.mark.parametrize("op", ERFS)
def test_erf_runs_its_kernel_and_differentiates_its_backward(op):
    """The op's values are the kernel's own, bit for bit; create_graph=True differentiates the
    formula (second derivative ∓2x·2/√π e^{-x²}·g·h, against torch)."""
    rng = np.random.default_rng(3)
    x, g, h = (rng.standard_normal((33, 20)).astype(np.float32) * 2 for _ in range(3))
    X = tg.from_numpy(x.copy()).requires_grad_()
    y = getattr(X, op)()
    np.testing.assert_array_equal(y.detach().numpy(), getattr(kernels, op)(x))
    (dx,) = tg.autograd.grad(y, X, tg.from_numpy(g))
    np.testing.assert_array_equal(dx.numpy(), getattr(kernels, f"{op}_backward")(x, g))
    x64, g64, h64 = (a.astype(np.float64) for a in (x, g, h))
    X = tg.from_numpy(x64.copy()).requires_grad_()
    (dx,) = tg.autograd.grad(getattr(X, op)(), X, tg.from_numpy(g64), create_graph=True)
    (ddx,) = tg.autograd.grad(dx, X, tg.from_numpy(h64))
    T = torch.tensor(x64, device=DEVICE, requires_grad=True)
    (dt,) = torch.autograd.grad(getattr(torch, op)(T), T, torch.tensor(g64, device=DEVICE), create_graph=True)
    (ddt,) = torch.autograd.grad(dt, T, torch.tensor(h64, device=DEVICE))
    np.testing.assert_allclose(ddx.numpy(), ddt.cpu().numpy(), rtol=1e-10, atol=1e-14)
    assert np.max(np.abs(ddt.cpu().numpy())) > 1e-3


@pytest.mark.parametrize("op", ERFS)
def test_erf_without_kernels_and_other_dtypes(op):
    """TINYGRAD_TX_KERNELS=0: SciPy's erf / erfc runs and matches torch; float16 never takes the kernel."""
    with numpy_path():
        assert kernels.mode().startswith("numpy")
        check_parity(OPS[op][0], OPS[op][1], np.random.default_rng(9).standard_normal((4, 9)) * 2,
                     name=f"numpy path {op}")
    assert getattr(kernels, op)(np.ones(3, np.float16)) is None
    y = getattr(tg.from_numpy(np.array([0.5, -1.0], np.float16)), op)()
    assert y.dtype == tg.float16


# ---------------------------------------------------------------------------------- pow

_EXPONENTS = [2, 3, -1, -2, -3, 5, 7, 1, 2.0, -1.0]


def _pow_ops(n):
    return (lambda x: x ** n), (lambda x: x ** n)


def _pow_ours(n, x, g):
    X = tg.from_numpy(x.copy()).requires_grad_()
    y = X ** n
    (dx,) = tg.autograd.grad(y, X, tg.from_numpy(g.astype(x.dtype)))
    return y.detach().numpy(), dx.numpy()


def _pow_torch(n, x, g):
    X = torch.tensor(x, device=DEVICE, requires_grad=True)
    y = X ** n
    (dx,) = torch.autograd.grad(y, X, torch.tensor(g.astype(x.dtype), device=DEVICE))
    return y.detach().cpu().numpy(), dx.cpu().numpy()


def _pow_input(rng, shape):
    """Normal draws pushed away from 0 (x**-3 of a draw near 0 would dwarf every other value)."""
    x = rng.standard_normal(shape) * 2
    return np.where(np.abs(x) < 0.3, np.sign(x) * 0.3 + x, x)


@needs_cc
@pytest.mark.parametrize("n", _EXPONENTS, ids=repr)
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (4, 9), (2, 33), (300, 257)], ids=str)
def test_pow_kernel_matches_numpy_path_float64(n, shape):
    rng = np.random.default_rng(sum(shape))
    x, g = _pow_input(rng, shape), rng.standard_normal(shape)
    fast = _pow_ours(n, x, g)
    with numpy_path():
        slow = _pow_ours(n, x, g)
    for a, b in zip(fast, slow):
        assert _rel(a, b) <= 1e-12, (n, shape, _rel(a, b))
    assert np.max(np.abs(slow[1])) > 1e-3


@needs_cc
@pytest.mark.parametrize("n", _EXPONENTS, ids=repr)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_pow_kernel_parity_with_torch(n, dtype):
    x = _pow_input(np.random.default_rng(abs(int(n))), (8, 33))
    ours, theirs = _pow_ops(n)
    check_parity(ours, theirs, x, dtype=dtype, name=f"kernel x**{n!r}", seed=int(n) % 7)


@needs_cc
@pytest.mark.parametrize("n", [2, 3, -1, -2, -3, 5, 7], ids=repr)
def test_pow_float32_error_against_float64_oracle(n):
    """(512, 256) float32: the kernel's error against float64 is at most 4x torch's own."""
    rng = np.random.default_rng(7)
    x64, g64 = _pow_input(rng, (512, 256)), rng.standard_normal((512, 256))
    x32, g32 = x64.astype(np.float32), g64.astype(np.float32)
    oracle = _pow_torch(n, x32.astype(np.float64), g32.astype(np.float64))
    ours, theirs = _pow_ours(n, x32, g32), _pow_torch(n, x32, g32)
    for o, t, exact in zip(ours, theirs, oracle):
        assert _rel(o, exact) <= 4 * _rel(t, exact) + 1e-7, (n, _rel(o, exact), _rel(t, exact))


@needs_cc
@pytest.mark.parametrize("n", [2, 3, -1, -2, -3, 5, -4, 6, 1], ids=repr)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pow_special_values(n, dtype):
    """0 ** negative (±inf by the zero's sign), ±inf, NaN, −0.0, subnormals, negative bases and
    overflow: NaN exactly where torch has NaN, the same non-finite values, finite ones as torch's."""
    x = np.concatenate([_SPECIAL, [-2.0, -0.5, 1e20, -1e20, 1e-20, -1e-20, 2.0 ** 40, -(2.0 ** -40)]]).astype(dtype)
    g = np.random.default_rng(1).standard_normal(x.shape).astype(dtype)
    g[4] = 0.0                                            # 0 · inf at the zero base: NaN, as torch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        fast = _pow_ours(n, x, g)
        with numpy_path():
            slow = _pow_ours(n, x, g)
        theirs = _pow_torch(n, x, g)
    rtol = 4e-7 if dtype == np.float32 else 1e-14
    for a, b, t in zip(fast, slow, theirs):
        assert np.array_equal(np.isnan(a), np.isnan(t)), (n, x, a, t)
        assert np.array_equal(np.isnan(a), np.isnan(b)), (n, x, a, b)
        ok = np.isfinite(t)
        np.testing.assert_array_equal(a[~ok], t[~ok])
        # subnormal results: a few units of the smallest subnormal (pow rounds them once, products twice)
        np.testing.assert_allclose(a[ok], t[ok], rtol=rtol, atol=np.finfo(dtype).smallest_subnormal * 4)
        zeros = ok & (t == 0)
        assert np.array_equal(np.signbit(a[zeros]), np.signbit(t[zeros])), (n, x[zeros], a[zeros], t[zeros])


@needs_cc
@pytest.mark.parametrize("n", [-1, 5])
@pytest.mark.parametrize("size", [1, 7, 8, 15, 16, 17, 63, 64, 65, 255, 4097, 70001])
def test_pow_sizes_across_vector_widths_and_threads(n, size):
    rng = np.random.default_rng(size)
    x, g = _pow_input(rng, size), rng.standard_normal(size)
    kernel_kit.check_sizes(lambda x, g: _pow_ours(n, x, g), x, g, (n, size))


@needs_cc
def test_pow_runs_its_kernel_only_for_integer_exponents():
    """x ** n takes the kernel (bit for bit its output) for integer n other than 0 and 4; a
    fractional, zero, large or tensor exponent and float16 run the NumPy form; create_graph=True
    differentiates the formula (second derivative against torch)."""
    rng = np.random.default_rng(4)
    x, g, h = (_pow_input(rng, (33, 20)).astype(np.float32) for _ in range(3))
    for n in (2, 3, -1, -2, 5, -7):
        X = tg.from_numpy(x.copy()).requires_grad_()
        y = X ** n
        np.testing.assert_array_equal(y.detach().numpy(), kernels.pow_int(x, np.array(n, np.float32)))
        (dx,) = tg.autograd.grad(y, X, tg.from_numpy(g))
        np.testing.assert_array_equal(dx.numpy(), kernels.pow_int_backward(x, np.array(n, np.float32), g))
    for b in (0, 4, 2.5, 65, np.array([2.0], np.float32), np.array(2.0, np.float64), True):
        assert kernels.int_exponent(x, b) is None, b
    assert kernels.int_exponent(x.astype(np.float16), 2) is None
    assert kernels.int_exponent(x, np.array(-3.0, np.float32)) == -3
    x64, g64, h64 = (a.astype(np.float64) for a in (x, g, h))
    X = tg.from_numpy(x64.copy()).requires_grad_()
    (dx,) = tg.autograd.grad(X ** -3, X, tg.from_numpy(g64), create_graph=True)
    (ddx,) = tg.autograd.grad(dx, X, tg.from_numpy(h64))
    T = torch.tensor(x64, device=DEVICE, requires_grad=True)
    (dt,) = torch.autograd.grad(T ** -3, T, torch.tensor(g64, device=DEVICE), create_graph=True)
    (ddt,) = torch.autograd.grad(dt, T, torch.tensor(h64, device=DEVICE))
    np.testing.assert_allclose(ddx.numpy(), ddt.cpu().numpy(), rtol=1e-10)
    assert np.max(np.abs(ddt.cpu().numpy())) > 1e-3


def test_pow_without_kernels():
    with numpy_path():
        assert kernels.mode().startswith("numpy")
        for n in (2, -1, 5):
            ours, theirs = _pow_ops(n)
            check_parity(ours, theirs, _pow_input(np.random.default_rng(9), (4, 9)), name=f"numpy path x**{n}")


# ---------------------------------------------------------------------------------- dropout + residual add

from tinygrad_tx.functional.activation import dropout_add  # noqa: E402
import tinygrad_tx.nn.functional as F  # noqa: E402


def _residual_dropout(fused, r, x, g, p, seed=5, **kw):
    """(out, d out/dr, d out/dx, the generator's next draw) of r + dropout(x, p), fused or not."""
    tg.manual_seed(seed)
    R, X = tg.from_numpy(r.copy()).requires_grad_(), tg.from_numpy(x.copy()).requires_grad_()
    out = dropout_add(R, X, p, **kw) if fused else R + F.dropout(X, p, **kw)
    dr, dx = tg.autograd.grad(out, (R, X), tg.from_numpy(g))
    return out.detach().numpy(), dr.numpy(), dx.numpy(), tg.rand(1).numpy()


@pytest.mark.parametrize("kernel", [True, False], ids=["kernels", "numpy"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("p", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("shape", [(1,), (7,), (3, 17), (65, 33), (300, 257)], ids=str)
def test_dropout_add_equals_the_unfused_path_bit_for_bit(kernel, dtype, p, shape):
    """Same seed: the same mask, output, gradients (dr = g, dx = (g ∘ m)/(1 - p)) and generator
    state after, bit for bit, as ``r + F.dropout(x, p)``, on both paths."""
    if kernel and (_OFF or not _compiler_present()):
        pytest.skip("no C compiler")
    rng = np.random.default_rng(sum(shape))
    r, x, g = (rng.standard_normal(shape).astype(dtype) for _ in range(3))
    with (contextlib.nullcontext() if kernel else numpy_path()):
        fused = _residual_dropout(True, r, x, g, p)
        unfused = _residual_dropout(False, r, x, g, p)
    for a, b in zip(fused, unfused):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype
    np.testing.assert_array_equal(fused[1], g)
    if p < 1 and x.size > 16:                            # (one element may be dropped)
        assert np.max(np.abs(fused[2])) > 1e-3


@needs_cc
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dropout_add_matches_torch_with_the_same_seed(dtype):
    """torch.manual_seed(s) and tinygrad_tx.manual_seed(s) give the same mask: r + dropout(x) and
    both gradients equal torch's bit for bit."""
    rng = np.random.default_rng(12)
    r, x, g = (rng.standard_normal((40, 33)).astype(dtype) for _ in range(3))
    ours = _residual_dropout(True, r, x, g, 0.3, seed=21)
    torch.manual_seed(21)
    R = torch.tensor(r, device=DEVICE, requires_grad=True)
    X = torch.tensor(x, device=DEVICE, requires_grad=True)
    out = R + torch.nn.functional.dropout(X, 0.3)
    dr, dx = torch.autograd.grad(out, (R, X), torch.tensor(g, device=DEVICE))
    for a, t in zip(ours, (out, dr, dx)):
        np.testing.assert_array_equal(a, t.detach().cpu().numpy())


@needs_cc
def test_dropout_add_special_values_and_its_kernel():
    """A dropped inf gives NaN (inf · 0, as torch's x · noise), a NaN residual passes, −0.0 kept:
    as the unfused path; the op's output is the kernel's own."""
    x = np.array([np.inf, -np.inf, np.nan, -0.0, 1e-40, 3.0] * 20, np.float32)
    r = np.array([1.0, np.nan, 2.0, -0.0, -1e-40, np.inf] * 20, np.float32)
    g = np.random.default_rng(2).standard_normal(x.shape).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        fused = _residual_dropout(True, r, x, g, 0.5)
        unfused = _residual_dropout(False, r, x, g, 0.5)
    for a, b in zip(fused, unfused):
        np.testing.assert_array_equal(a, b)
        assert np.array_equal(np.signbit(a[~np.isnan(a)]), np.signbit(b[~np.isnan(b)]))   # −0.0 kept
    assert np.isnan(fused[0][:2]).any()            # a dropped ±inf
    from tinygrad_tx.functional._util import keep_mask, keep_scale_of
    tg.manual_seed(5)
    keep = keep_mask(x.shape, 0.5, None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np.testing.assert_array_equal(fused[0], kernels.dropout_add(r, x, keep, keep_scale_of(0.5, np.float32)))


def test_dropout_add_falls_back_to_the_unfused_expression():
    """Not training, p = 0, a broadcast or number residual, another dtype: r + dropout(x) itself;
    bad arguments raise dropout's errors; create_graph differentiates the backward."""
    rng = np.random.default_rng(3)
    x, g = rng.standard_normal((6, 5)), rng.standard_normal((6, 5))
    X = tg.from_numpy(x)
    np.testing.assert_array_equal(dropout_add(tg.from_numpy(x), X, 0.5, training=False).numpy(), x + x)
    np.testing.assert_array_equal(dropout_add(tg.from_numpy(x), X, 0.0).numpy(), x + x)
    for r in (tg.from_numpy(x[0]), 2.5, tg.from_numpy(x.astype(np.float32))):
        tg.manual_seed(1)
        got = dropout_add(r, X, 0.4)
        tg.manual_seed(1)
        np.testing.assert_array_equal(got.numpy(), (r + F.dropout(X, 0.4)).numpy())
    with pytest.raises(ValueError, match="p"):
        dropout_add(X, X, 1.5)
    with pytest.raises(TypeError, match="training"):
        dropout_add(X, X, 0.5, training="yes")
    tg.manual_seed(4)
    Xg = tg.from_numpy(x.copy()).requires_grad_()
    (dx,) = tg.autograd.grad(dropout_add(tg.from_numpy(x), Xg, 0.5), Xg, tg.from_numpy(g).requires_grad_(),
                             create_graph=True)
    assert dx.requires_grad


# ---------------------------------------------------------------------------------- first-build progress line

class _Terminal:
    """A stand-in for a terminal's stderr: records what is written."""

    def __init__(self, tty=True):
        self.text, self._tty = "", tty

    def isatty(self):
        return self._tty

    def write(self, s):
        self.text += s

    def flush(self):
        pass


@pytest.mark.parametrize("case", ["slow", "fast", "pipe", "quiet"])
def test_progress_line_only_for_a_slow_build_at_a_terminal(case, monkeypatch):
    """One line, start and end, when the build outlasts PROGRESS_AFTER_S at a terminal; nothing for
    a quicker build, a pipe, or TINYGRAD_TX_KERNELS_QUIET=1."""
    import time
    monkeypatch.setattr(build, "PROGRESS_AFTER_S", 0.05)
    term = _Terminal(tty=case != "pipe")
    monkeypatch.setattr(build.sys, "stderr", term)
    if case == "quiet":
        monkeypatch.setenv("TINYGRAD_TX_KERNELS_QUIET", "1")
    progress = build._Progress("tinygrad_tx: building C kernels...")
    if case != "fast":
        time.sleep(0.3)
    progress.finish("done in 0.3 s")
    time.sleep(0.1)                                   # a cancelled timer must print nothing later
    expected = "tinygrad_tx: building C kernels... done in 0.3 s\n" if case == "slow" else ""
    assert term.text == expected


@needs_cc
def test_first_build_prints_one_line_then_the_cache_is_silent(tmp_path, monkeypatch):
    """A real build into an empty cache at a terminal (threshold 0 s): one line naming the compiler
    and the seconds it took; loading the cached library afterwards prints nothing."""
    import re
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("TINYGRAD_TX_KERNELS_QUIET", raising=False)
    monkeypatch.setattr(build, "PROGRESS_AFTER_S", 0.0)
    term = _Terminal()
    monkeypatch.setattr(build.sys, "stderr", term)
    _, short, _, seconds = build.load()
    assert seconds > 0
    assert re.fullmatch(r"tinygrad_tx: building C kernels with .+ \(first run; cached in .+\)\.\.\. done in \d+\.\d s\n",
                        term.text), term.text
    assert short in term.text
    term.text = ""
    assert build.load()[3] == 0.0 and term.text == ""


# ---------------------------------------------------------------------------------- LayerNorm dγ, dβ

@needs_cc
@pytest.mark.parametrize("shape", [(512, 256), (4099, 64), (37, 1000)], ids=str)
def test_layer_norm_weight_and_bias_gradients_float32_error(shape):
    """dγ and dβ sum over every row: the kernel sums blocks of 32 rows in float32, then the blocks
    in double. Their error against a float64 oracle stays within 4x torch's float32 own."""
    rng = np.random.default_rng(shape[0])
    d = shape[1]
    x, g = rng.standard_normal(shape) * 3 + 1, rng.standard_normal(shape)
    w, b = rng.standard_normal(d) * 0.5 + 1, rng.standard_normal(d)

    def ours(dtype):
        ts = [tg.from_numpy(a.astype(dtype)).requires_grad_() for a in (x, w, b)]
        y = F.layer_norm(ts[0], (d,), ts[1], ts[2], 1e-5)
        return [r.numpy() for r in tg.autograd.grad(y, ts[1:], tg.from_numpy(g.astype(dtype)))]

    def theirs(dtype):
        ts = [torch.tensor(a.astype(dtype), device=DEVICE, requires_grad=True) for a in (x, w, b)]
        y = torch.nn.functional.layer_norm(ts[0], (d,), ts[1], ts[2], 1e-5)
        return [r.cpu().numpy() for r in torch.autograd.grad(y, ts[1:], torch.tensor(g.astype(dtype), device=DEVICE))]

    x = x.astype(np.float32).astype(np.float64)          # the float32 inputs, exactly
    g = g.astype(np.float32).astype(np.float64)
    w, b = w.astype(np.float32).astype(np.float64), b.astype(np.float32).astype(np.float64)
    oracle = theirs(np.float64)
    for o, t, exact in zip(ours(np.float32), theirs(np.float32), oracle):
        assert _rel(o, exact) <= 4 * _rel(t, exact) + 1e-7, (_rel(o, exact), _rel(t, exact))
    assert all(np.max(np.abs(e)) > 1e-3 for e in oracle)


def test_explain_kernel_prints_the_new_kernels(capsys):
    """``tinygrad-tx explain OP --kernel`` for erf, pow and dropout_add: each kernel's C, its
    comment first."""
    from tinygrad_tx.cli import main
    for op, names in (("erf", ("erf_f32", "erf_bwd_f32")), ("erfc", ("erfc_f32", "erfc_bwd_f32")), ("pow", ("pow_int_loop_f32", "pow_int_f32", "pow_int_bwd_f32")),
                      ("dropout_add", ("keep_from_mt19937", "dropout_add_f32", "dropout_scale_f32")),
                      ("dropout", ("keep_from_mt19937", "keep_from_words", "dropout_scale_f32"))):
        assert main(["explain", op, "--kernel"]) == 0
        out = capsys.readouterr().out
        assert "path now: " in out
        for name in names:
            assert f"void {name}(" in out, (op, name)
        assert out.count("/*") >= len(names)


def test_dropout_add_under_compile_redraws_its_mask():
    """``tinygrad_tx.compile`` of a step using dropout_add redraws the mask at every call: loss and
    both gradients equal the eager unfused step's bit for bit for each seed (x ** 3 on top: the
    pow kernel in the same program)."""
    import warnings as w
    rng = np.random.default_rng(6)
    x = tg.from_numpy(rng.standard_normal((8, 16)).astype(np.float32)).requires_grad_()
    r = tg.from_numpy(rng.standard_normal((8, 16)).astype(np.float32)).requires_grad_()

    def step(fused):
        def run():
            out = dropout_add(r, x, 0.3) if fused else r + F.dropout(x, 0.3)
            loss = (out ** 3).sum()
            loss.backward()
            return loss.detach()
        return run

    with w.catch_warnings():
        w.simplefilter("error")                             # compiled, not run eagerly
        compiled = tg.compile(step(True))
        for seed in range(3):
            results = []
            for run in (compiled, step(False)):
                x.grad = r.grad = None
                tg.manual_seed(seed)
                loss = run().item()
                results.append((loss, x.grad.numpy().copy(), r.grad.numpy().copy()))
            assert results[0][0] == results[1][0]
            np.testing.assert_array_equal(results[0][1], results[1][1])
            np.testing.assert_array_equal(results[0][2], results[1][2])


# ---------------------------------------------------------------------------------- dropout's mask from the mt19937 state

@needs_cc
@pytest.mark.parametrize("n", [1, 2, 311, 312, 313, 511, 512, 513, 624, 1000, 70001])
@pytest.mark.parametrize("offset", [0, 1, 623, 624, 1000])
def test_keep_mask_from_the_mt19937_state_is_the_words_mask(n, offset):
    """The mask drawn in C from the generator's state equals the mask formed from its words
    (``keep_from_words(words32(g, 2n))``) and leaves the generator in the same state (next
    words, get_state) across block boundaries (offsets, odd positions, rounds of 512)."""
    from tinygrad_tx.torch_streams import words32
    for q in (0.9, 0.5):
        g1, g2 = tg.Generator().manual_seed(n + offset), tg.Generator().manual_seed(n + offset)
        if offset:
            g1._words32(offset), g2._words32(offset)
        ours = kernels.keep_from_generator(g1, n, q)
        theirs = kernels.keep_from_words(words32(g2, 2 * n), q)
        np.testing.assert_array_equal(ours, theirs)
        assert 0 < ours.sum() < n or n < 30
        assert bytes(g1.get_state().numpy()) == bytes(g2.get_state().numpy())
        np.testing.assert_array_equal(g1._words32(9), g2._words32(9))


def test_keep_mask_from_other_generators_falls_back():
    """A plain numpy Generator (no torch stream) or kernels off: None, and dropout's mask comes
    from the words as before."""
    assert kernels.keep_from_generator(np.random.default_rng(0), 10, 0.5) is None
    with numpy_path():
        assert kernels.keep_from_generator(tg.Generator(), 10, 0.5) is None


@needs_cc
def test_dropout_with_the_fresh_generator_matches_torch_default_stream():
    """F.dropout after manual_seed: torch's mask (the C draw from the state), twice in a row."""
    x = np.ones((70, 33), np.float32)
    tg.manual_seed(8)
    torch.manual_seed(8)
    for _ in range(2):
        ours = F.dropout(tg.from_numpy(x), 0.4).numpy()
        theirs = torch.nn.functional.dropout(torch.tensor(x, device=DEVICE), 0.4).cpu().numpy()
        np.testing.assert_array_equal(ours, theirs)


@needs_cc
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dropout_forward_and_backward_run_their_kernel_bit_for_bit(dtype):
    """F.dropout's output and gradient are dropout_scale's, and equal the NumPy path's bit for bit
    (same mask, same operations), special values included (a dropped inf gives NaN, as torch)."""
    rng = np.random.default_rng(13)
    x, g = rng.standard_normal((67, 33)).astype(dtype), rng.standard_normal((67, 33)).astype(dtype)
    x[0, :6] = [np.inf, -np.inf, np.nan, -0.0, 1e-40, 3.0]

    def run():
        tg.manual_seed(2)
        X = tg.from_numpy(x.copy()).requires_grad_()
        y = F.dropout(X, 0.35)
        (dx,) = tg.autograd.grad(y, X, tg.from_numpy(g))
        return y.detach().numpy(), dx.numpy()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        fast = run()
        with numpy_path():
            slow = run()
    from tinygrad_tx.functional._util import keep_mask, keep_scale_of
    tg.manual_seed(2)
    keep, s = keep_mask(x.shape, 0.35, None), keep_scale_of(0.35, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np.testing.assert_array_equal(fast[0], kernels.dropout_scale(x, keep, s))
    np.testing.assert_array_equal(fast[1], kernels.dropout_scale(g, keep, s))
    for a, b in zip(fast, slow):
        np.testing.assert_array_equal(a, b)
        assert np.array_equal(np.signbit(a[~np.isnan(a)]), np.signbit(b[~np.isnan(b)]))
