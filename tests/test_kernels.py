"""The C kernels under the fused ops (``tinygrad_tx/kernels``, issue 33).

Each kernel against its op's NumPy form (run in the same process with ``TINYGRAD_TX_KERNELS=0``)
and against torch (``check_parity``: float64 to the kit's tolerance, float32 judged against
torch's own float32 error with a float64 oracle); NaN/±Inf/−0.0/subnormal inputs; non-contiguous
inputs; empty and 0-d shapes; sizes crossing a vector width and the thread split; the cache
(damaged file rebuilt, file writable by others refused); the fallbacks (``TINYGRAD_TX_KERNELS=0``,
``CC=/nonexistent`` with its warning, a failing compiler). Kernel-specific tests skip where no C
compiler is found; the fallback tests run everywhere.
"""
import contextlib
import os
import stat
import warnings

import numpy as np
import pytest
import torch

import tinygrad_tx as tg
import tinygrad_tx.nn.functional as F
from tinygrad_tx import kernels
from tinygrad_tx.kernels import build
from reference.testing import DEVICE, check_parity


from tests import kernel_kit
from tests.kernel_kit import _fresh_decision, needs_cc, numpy_path  # noqa: F401  (_fresh_decision: an autouse fixture)


# (name, our op, torch's op): each a function of one tensor, forward + backward
_W = {}


def _ln(mod):
    def f(x):
        d = x.shape[-1]
        w = _W.setdefault(("w", d), np.random.default_rng(d).standard_normal(d) * 0.5 + 1)
        b = _W.setdefault(("b", d), np.random.default_rng(d + 1).standard_normal(d))
        lib = tg if mod is F else torch
        kw = {} if lib is tg else {"device": DEVICE}
        return mod.layer_norm(x, (d,), lib.tensor(w.astype(np.float64), dtype=x.dtype, **kw),
                              lib.tensor(b.astype(np.float64), dtype=x.dtype, **kw), 1e-5)
    return f


def _rms(mod):
    def f(x):
        d = x.shape[-1]
        w = _W.setdefault(("w", d), np.random.default_rng(d).standard_normal(d) * 0.5 + 1)
        lib = tg if mod is F else torch
        kw = {} if lib is tg else {"device": DEVICE}
        return mod.rms_norm(x, (d,), lib.tensor(w.astype(np.float64), dtype=x.dtype, **kw), 1e-6)
    return f


OPS = {
    "sigmoid": (lambda x: x.sigmoid(), lambda x: torch.sigmoid(x)),
    "silu": (lambda x: F.silu(x), lambda x: torch.nn.functional.silu(x)),
    "softplus": (lambda x: F.softplus(x), lambda x: torch.nn.functional.softplus(x)),
    "softplus_b2_t3": (lambda x: F.softplus(x, 2.0, 3.0), lambda x: torch.nn.functional.softplus(x, 2.0, 3.0)),
    "rms_norm": (_rms(F), _rms(torch.nn.functional)),
    "gelu": (lambda x: F.gelu(x), lambda x: torch.nn.functional.gelu(x)),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), lambda x: torch.nn.functional.gelu(x, approximate="tanh")),
    "layer_norm": (_ln(F), _ln(torch.nn.functional)),
    "softmax": (lambda x: F.softmax(x, -1), lambda x: torch.nn.functional.softmax(x, -1)),
    "log_softmax": (lambda x: F.log_softmax(x, -1), lambda x: torch.nn.functional.log_softmax(x, -1)),
}


def _ours(op, x: np.ndarray, g: np.ndarray):
    return kernel_kit.ours(OPS[op][0], x, g)


def _torch(op, x: np.ndarray, g: np.ndarray):
    return kernel_kit.theirs(OPS[op][1], x, g)


_rel = kernel_kit.rel


POINTWISE = {"gelu", "gelu_tanh", "sigmoid", "silu", "softplus", "softplus_b2_t3"}
SHAPES = [(1, 1), (3, 7), (5, 8), (4, 9), (2, 33), (512, 256), (300, 257)]


@needs_cc
@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_kernel_matches_numpy_path_float64(op, shape):
    """The kernel path gives the NumPy path's values and gradients to ~1e-12 in float64."""
    assert kernels.mode().startswith("c (")
    rng = np.random.default_rng(sum(shape))
    x, g = rng.standard_normal(shape) * 2, rng.standard_normal(shape)
    fast = _ours(op, x, g)
    with numpy_path():
        slow = _ours(op, x, g)
    # rms_norm over a row of one: dx = r g (1 - x² r²) ~ g eps/x², a cancellation of two
    # terms ~1e5 times larger than the result, so only their rounding (~1e-16) relative to them agrees
    tol = 1e-9 if op == "rms_norm" and shape[-1] == 1 else 1e-12
    for a, b in zip(fast, slow):
        assert _rel(a, b) <= tol, (op, shape, _rel(a, b))
    if shape[-1] > 1 or op in POINTWISE:                # a row of one: the gradient is 0
        assert np.max(np.abs(slow[1])) > 1e-3            # a non-trivial gradient


@needs_cc
@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(5, 8), (4, 9), (64, 96)], ids=str)
def test_kernel_parity_with_torch(op, dtype, shape):
    """Against torch with the kit's rule (float64 to its tolerance; float32 within 4x torch's
    own float32 error against a float64 oracle), cotangent random."""
    assert kernels.mode().startswith("c (")
    x = np.random.default_rng(len(op) + shape[1]).standard_normal(shape) * 2
    check_parity(OPS[op][0], OPS[op][1], x, dtype=dtype, name=f"kernel {op}", seed=shape[0])


@needs_cc
@pytest.mark.parametrize("op", sorted(OPS))
def test_kernel_float32_error_against_float64_oracle(op):
    """(512, 256) float32: the kernel's error against float64 is at most 4x torch's own."""
    rng = np.random.default_rng(7)
    x64, g64 = rng.standard_normal((512, 256)) * 3, rng.standard_normal((512, 256))
    x32, g32 = x64.astype(np.float32), g64.astype(np.float32)
    oracle = _torch(op, x32.astype(np.float64), g32.astype(np.float64))
    ours, theirs = _ours(op, x32, g32), _torch(op, x32, g32)
    for o, t, exact in zip(ours, theirs, oracle):
        assert _rel(o, exact) <= 4 * _rel(t, exact) + 1e-7, (op, _rel(o, exact), _rel(t, exact))


def _gelu_oracle(op, x):
    """y and dy/dx in long double arithmetic from forms without cancellation: exact GELU via
    SciPy's ndtr (Φ accurate in the tail), tanh GELU as x σ(2u) (an identity of x(1 + tanh u)/2)."""
    from scipy.special import ndtr
    if op == "gelu":
        with np.errstate(invalid="ignore", over="ignore"):
            cdf = ndtr(x)
            return x * cdf, cdf + x * np.exp(-0.5 * x * x) / np.sqrt(2 * np.pi)
    v = x.astype(np.longdouble)
    with np.errstate(over="ignore", invalid="ignore"):
        k = np.sqrt(np.longdouble(2) / np.pi)
        u = k * (v + np.longdouble(0.044715) * v ** 3)
        s = 1 / (1 + np.exp(-2 * u))
        return (v * s).astype(np.float64), (s + 2 * v * s * (1 - s) * k * (1 + 3 * np.longdouble(0.044715) * v * v)).astype(np.float64)


_SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-40, -1e-40, 1e30, -1e30, 3.0, -3.0, -10.0, 0.5])


@needs_cc
@pytest.mark.parametrize("op", ["gelu", "gelu_tanh"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_special_values(op, dtype):
    """NaN, ±Inf, −0.0, subnormals, huge values: where the NumPy path (which the suite checks
    against torch) gives NaN the kernel does, and the finite values and zero signs agree."""
    x = _SPECIAL.astype(dtype)
    g = np.ones_like(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        fast = _ours(op, x, g)
        with numpy_path():
            slow = _ours(op, x, g)
    ty, tdx = _torch(op, x, g)
    exact = _gelu_oracle(op, x.astype(np.float64))
    rtol = 2e-5 if dtype == np.float32 else 1e-12
    for a, b, e in zip(fast, slow, exact):
        assert np.array_equal(np.isnan(a), np.isnan(b)), (x, a, b)
        ok = np.isfinite(b) & np.isfinite(e)
        np.testing.assert_array_equal(a[~ok], b[~ok])            # the same NaN and ±Inf
        np.testing.assert_allclose(a[ok], e[ok], rtol=rtol, atol=1e-300)   # finite: as exact as float allows
    assert np.signbit(fast[0][3]) and fast[0][3] == 0          # gelu(-0.0) = -0.0, as torch
    assert np.isnan(fast[0][0]) and np.isnan(ty[0])


@needs_cc
@pytest.mark.parametrize("op", ["softmax", "log_softmax", "layer_norm", "rms_norm"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rows_with_special_values_behave_as_torch(op, dtype):
    """Rows holding NaN, +Inf, −Inf, all −Inf, huge and tiny values: NaN exactly where torch
    has NaN, and the finite entries close to torch's."""
    rows = np.array([[np.nan, 1.0, 2.0, 3.0], [np.inf, 1.0, 2.0, 3.0], [-np.inf, 1.0, 2.0, 3.0],
                     [-np.inf] * 4, [1e4, -1e4, 0.0, 1.0], [1e-40, -1e-40, 0.0, -0.0],
                     [1.0, 1.0, 1.0, 1.0], [3e38, 0.0, 0.0, 0.0]])
    if dtype == np.float64:
        rows[7, 0] = 1e300
    if op == "rms_norm":   # x² overflows there: torch's composite gives dx NaN, the NumPy form 0 (as the kernel)
        rows = rows[:7]
    x = rows.astype(dtype)
    g = np.random.default_rng(0).standard_normal(x.shape).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ours = _ours(op, x, g)
        theirs = _torch(op, x, g)
    for a, b in zip(ours, theirs):
        assert np.array_equal(np.isnan(a), np.isnan(b)), (op, x, a, b)
        ok = np.isfinite(b)
        np.testing.assert_allclose(a[ok], b[ok], rtol=1e-4, atol=1e-5)


@needs_cc
@pytest.mark.parametrize("op", sorted(OPS))
def test_non_contiguous_inputs(op):
    """A transposed input and a strided slice give what their contiguous copies give."""
    rng = np.random.default_rng(3)
    base = rng.standard_normal((40, 24))
    for x in (base.T, base[::2, ::3]):
        g = rng.standard_normal(x.shape)
        a = _ours(op, x, g)
        b = _ours(op, np.ascontiguousarray(x), g)
        for u, v in zip(a, b):
            np.testing.assert_array_equal(u, v)


@needs_cc
def test_softmax_along_a_middle_dim_and_0d():
    rng = np.random.default_rng(4)
    x, g = rng.standard_normal((3, 5, 4)), rng.standard_normal((3, 5, 4))
    for fn, tfn in ((F.softmax, torch.nn.functional.softmax), (F.log_softmax, torch.nn.functional.log_softmax)):
        X = tg.from_numpy(x.copy()).requires_grad_()
        T = torch.tensor(x, device=DEVICE, requires_grad=True)
        y, t = fn(X, 1), tfn(T, 1)
        np.testing.assert_allclose(y.detach().numpy(), t.detach().cpu().numpy(), rtol=1e-12)
        (dx,) = tg.autograd.grad(y, X, tg.from_numpy(g))
        (dt,) = torch.autograd.grad(t, T, torch.tensor(g, device=DEVICE))
        np.testing.assert_allclose(dx.numpy(), dt.cpu().numpy(), rtol=1e-10, atol=1e-14)
        z = fn(tg.tensor(2.5, requires_grad=True), 0)
        assert z.shape == () and float(z) == float(tfn(torch.tensor(2.5, device=DEVICE), 0).cpu())


@needs_cc
@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("shape", [(0, 4), (3, 0), (0,), ()], ids=str)
def test_empty_and_0d_shapes(op, shape):
    """Empty arrays (and 0-d ones, where the op takes them) go to the NumPy path and give torch's shapes."""
    if op in ("layer_norm", "rms_norm") and (len(shape) < 1 or shape[-1] == 0):
        pytest.skip("layer_norm over an empty dim: argument checking (before any kernel) refuses it")
    x = np.zeros(shape)
    g = np.ones(shape)
    try:
        theirs = _torch(op, x, g)
    except RuntimeError:
        with pytest.raises((RuntimeError, ValueError)):       # where torch raises, we raise
            _ours(op, x, g)
        return
    ours = _ours(op, x, g)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-12, equal_nan=True)


@needs_cc
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("op", sorted(OPS))
def test_thread_split_changes_nothing(op, threads):
    """Sizes across the thread split: 1 and 2 threads give identical results."""
    rng = np.random.default_rng(5)
    x, g = rng.standard_normal((1031, 129)).astype(np.float32), rng.standard_normal((1031, 129)).astype(np.float32)
    old = tg.get_num_threads()
    try:
        tg.set_num_threads(1)
        one = _ours(op, x, g)
        tg.set_num_threads(threads)
        many = _ours(op, x, g)
    finally:
        tg.set_num_threads(old)
    for a, b in zip(one, many):
        if op in ("layer_norm", "rms_norm"):   # dγ, dβ: per-thread double sums, added in another order
            np.testing.assert_allclose(a, b, rtol=1e-6)
        else:
            np.testing.assert_array_equal(a, b)


@needs_cc
def test_layer_norm_weight_and_bias_gradients_match_torch():
    rng = np.random.default_rng(6)
    x, w, b = rng.standard_normal((33, 17)), rng.standard_normal(17), rng.standard_normal(17)
    check_parity(lambda x, w, b: F.layer_norm(x, (17,), w, b, 1e-5),
                 lambda x, w, b: torch.nn.functional.layer_norm(x, (17,), w, b, 1e-5),
                 x, w, b, name="kernel layer_norm (x, w, b)")
    check_parity(lambda x: F.layer_norm(x, (17,)), lambda x: torch.nn.functional.layer_norm(x, (17,)),
                 x, name="kernel layer_norm (no affine)")


@needs_cc
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_kernel(dtype, reduction):
    """The row pass in C: the NumPy path's loss and gradient, and torch's (with ignored targets)."""
    rng = np.random.default_rng(8)
    z = (rng.standard_normal((37, 11)) * 3).astype(dtype)
    t = rng.integers(0, 11, 37)
    t[[3, 9]] = -100
    gz = rng.standard_normal(37).astype(dtype) if reduction == "none" else np.array(1.7, dtype)

    def ours():
        Z = tg.from_numpy(z.copy()).requires_grad_()
        loss = F.cross_entropy(Z, tg.from_numpy(t), reduction=reduction)
        (dz,) = tg.autograd.grad(loss, Z, tg.from_numpy(gz.astype(dtype)))
        return loss.detach().numpy(), dz.numpy()

    fast = ours()
    with numpy_path():
        slow = ours()
    for a, b in zip(fast, slow):
        assert _rel(a, b) <= (1e-12 if dtype == np.float64 else 1e-6)
    Z = torch.tensor(z, device=DEVICE, requires_grad=True)
    loss = torch.nn.functional.cross_entropy(Z, torch.tensor(t, device=DEVICE), reduction=reduction)
    (dz,) = torch.autograd.grad(loss, Z, torch.tensor(gz, device=DEVICE))
    tol = 1e-12 if dtype == np.float64 else 1e-5
    assert _rel(fast[0], loss.detach().cpu().numpy()) <= tol and _rel(fast[1], dz.cpu().numpy()) <= tol
    check_parity(lambda z: F.cross_entropy(z, tg.from_numpy(t)),
                 lambda z: torch.nn.functional.cross_entropy(z, torch.tensor(t, device=DEVICE)),
                 z.astype(np.float64), dtype=dtype, name="kernel cross_entropy")


@needs_cc
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("variant", ["plain", "l2", "decoupled", "amsgrad", "beta1 0.3"])
def test_adam_kernel_is_bit_identical_to_numpy(dtype, variant):
    """Adam's update in C performs the NumPy form's operations in its order and rounding: equal
    bit for bit over several steps (NaN gradients included), and torch's within float rounding."""
    from tinygrad_tx.optim import adam as adam_mod
    rng = np.random.default_rng(9)
    n = 1000
    hyper = dict(lr=1e-2, beta1=0.3 if variant == "beta1 0.3" else 0.9, beta2=0.999, eps=1e-8,
                 weight_decay=0.1 if variant in ("l2", "decoupled") else 0.0, decoupled=variant == "decoupled")
    grads = [(rng.standard_normal(n) * 10.0 ** rng.integers(-3, 3, n)).astype(dtype) for _ in range(4)]
    grads[2][5] = np.nan
    results = []
    for path in ("kernel", "numpy"):
        ctx = numpy_path() if path == "numpy" else contextlib.nullcontext()
        with ctx, np.errstate(invalid="ignore"):
            p = rng.standard_normal(n).astype(dtype) if not results else results[0][4].copy()
            p0 = p.copy()
            m, v = np.zeros(n, dtype), np.zeros(n, dtype)
            vmax = np.zeros(n, dtype) if variant == "amsgrad" else None
            for k, g in enumerate(grads, start=1):
                adam_mod.adam_update(p, g, m, v, vmax, float(k), **hyper)
            results.append((p, m, v, vmax, p0))
    for a, b in zip(results[0][:4], results[1][:4]):
        if a is not None:
            assert np.array_equal(a, b, equal_nan=True)
    assert np.isnan(results[0][0][5]) and not np.isnan(results[0][0][6])
    assert kernels.mode().startswith("c (")


@needs_cc
def test_adamw_steps_match_torch():
    """A few AdamW steps on a small model's parameters (the optimizer path the GPT step takes)."""
    rng = np.random.default_rng(10)
    w0 = rng.standard_normal((16, 8))
    grads = [rng.standard_normal((16, 8)) for _ in range(3)]
    W = tg.nn.Parameter(tg.from_numpy(w0.copy()))
    T = torch.nn.Parameter(torch.tensor(w0, device=DEVICE))
    ours = tg.optim.AdamW([W], lr=0.01, weight_decay=0.1)
    theirs = torch.optim.AdamW([T], lr=0.01, weight_decay=0.1)
    for g in grads:
        W.grad = tg.from_numpy(g.copy())
        T.grad = torch.tensor(g, device=DEVICE)
        ours.step()
        theirs.step()
    np.testing.assert_allclose(W.detach().numpy(), T.detach().cpu().numpy(), rtol=1e-12, atol=1e-15)
    assert np.max(np.abs(W.detach().numpy() - w0)) > 1e-3


# ------------------------------------------------------------------------------- the cache

@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("TINYGRAD_TX_KERNELS_QUIET", "1")
    monkeypatch.delenv("TINYGRAD_TX_KERNELS", raising=False)
    return tmp_path / "tinygrad_tx"


_PROBE = ("import numpy as np; from tinygrad_tx import kernels; m = kernels.mode(); "
          "y = kernels.softmax_forward(np.ones((2, 3))); "
          "print(m); print(kernels._state.get('build_s')); print(None if y is None else float(y.sum()))")


def _process():
    """A fresh process's (mode, build seconds, a softmax's sum): the cache is shared between
    processes, and a library loaded in this one must not be rewritten under it."""
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env,
                         cwd=root, timeout=300)
    assert out.returncode == 0, out.stderr
    mode, seconds, total = out.stdout.split("\n")[:3]
    return mode, float(seconds) if seconds != "None" else None, total


def _library(directory):
    (so,) = [p for p in directory.iterdir() if p.name.endswith(".so")]
    return so


@needs_cc
def test_cache_is_built_once_then_reused(cache):
    mode, seconds, total = _process()
    assert mode.startswith("c (") and seconds > 0 and float(total) == pytest.approx(2.0)
    so = _library(cache)
    first = so.stat()
    assert not first.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    assert (cache / (so.name + ".sha256")).exists()
    mode, seconds, _ = _process()
    assert mode.startswith("c (") and seconds == 0.0           # a second process reuses it
    assert _library(cache).stat().st_ino == first.st_ino


@needs_cc
def test_damaged_library_is_rebuilt(cache):
    _process()
    so = _library(cache)
    so.write_bytes(so.read_bytes()[:1000])                       # truncated
    mode, seconds, total = _process()
    assert mode.startswith("c (") and seconds > 0 and float(total) == pytest.approx(2.0)
    assert len(so.read_bytes()) > 1000


@needs_cc
def test_library_writable_by_others_is_refused(cache):
    _process()
    so = _library(cache)
    os.chmod(so, 0o775)
    assert not build.trusted(str(so))
    mode, seconds, _ = _process()
    assert mode.startswith("c (") and seconds > 0                # not loaded: rebuilt
    assert build.trusted(str(so))


@needs_cc
def test_cache_key_covers_source_flags_and_compiler():
    src = "int f(void) { return 1; }"
    k = build.cache_key(src, build.FLAGS, "gcc 1")
    assert k != build.cache_key(src + " ", build.FLAGS, "gcc 1")
    assert k != build.cache_key(src, build.PORTABLE_FLAGS, "gcc 1")
    assert k != build.cache_key(src, build.FLAGS, "gcc 2")
    assert "-ffast-math" not in build.FLAGS + build.PORTABLE_FLAGS


# ------------------------------------------------------------------------------- fallbacks

def test_kernels_off_runs_the_numpy_path(monkeypatch):
    monkeypatch.setenv("TINYGRAD_TX_KERNELS", "0")
    kernels.reset()
    assert kernels.mode() == "numpy: TINYGRAD_TX_KERNELS=0"
    x = np.random.default_rng(0).standard_normal((4, 8))
    assert kernels.softmax_forward(x) is None and kernels.gelu(x, "none", True) is None
    check_parity(OPS["softmax"][0], OPS["softmax"][1], x, name="softmax numpy path")


def test_missing_compiler_falls_back_with_one_warning(monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent")
    monkeypatch.delenv("TINYGRAD_TX_KERNELS", raising=False)
    kernels.reset()
    x = np.random.default_rng(1).standard_normal((4, 8))
    with pytest.warns(RuntimeWarning, match="CC='/nonexistent'"):
        y = F.gelu(tg.from_numpy(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")                        # once: not again
        F.softmax(tg.from_numpy(x), -1)
    assert kernels.mode().startswith("numpy: CC='/nonexistent'")
    np.testing.assert_allclose(y.numpy(), torch.nn.functional.gelu(torch.tensor(x, device=DEVICE)).cpu().numpy(), rtol=1e-12)


def test_required_kernels_without_compiler_raise(monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent")
    monkeypatch.setenv("TINYGRAD_TX_KERNELS", "1")
    kernels.reset()
    with pytest.raises(build.NoCompiler, match="nonexistent"):
        kernels.mode()


def test_failing_compiler_is_our_clear_error(monkeypatch, tmp_path):
    """A compiler that fails: a warning quoting it and the NumPy path; with =1, KernelBuildError."""
    fake = tmp_path / "badcc"
    fake.write_text("#!/bin/sh\necho 'badcc: error: no such thing' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CC", str(fake))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("TINYGRAD_TX_KERNELS_QUIET", "1")
    monkeypatch.delenv("TINYGRAD_TX_KERNELS", raising=False)
    kernels.reset()
    with pytest.warns(RuntimeWarning, match="no such thing"):
        assert kernels.mode().startswith("numpy: kernel build failed")
    monkeypatch.setenv("TINYGRAD_TX_KERNELS", "1")
    kernels.reset()
    with pytest.raises(build.KernelBuildError, match="no such thing"):
        kernels.mode()


def test_other_dtypes_use_the_numpy_path():
    x16 = np.ones((2, 3), np.float16)
    assert kernels.softmax_forward(x16) is None and kernels.gelu(x16, "none", False) is None
    y = F.softmax(tg.from_numpy(x16), -1)
    assert y.dtype == tg.float16


def test_explain_kernel_prints_the_c_source(capsys):
    """``tinygrad-tx explain OP --kernel``: the path that runs, then the C of the op's kernels."""
    from tinygrad_tx.cli import main
    assert main(["explain", "layer_norm", "--kernel"]) == 0
    out = capsys.readouterr().out
    assert "void layer_norm_fwd_f32(" in out and "void layer_norm_bwd_f32(" in out and "path now: " in out
    assert main(["explain", "matmul", "--kernel"]) == 0
    assert "runs no C kernel" in capsys.readouterr().out
    # log_softmax's two kernels both call the exp-floor helpers: each printed once, before them
    assert main(["explain", "log_softmax", "--kernel"]) == 0
    out = capsys.readouterr().out
    for helper in ("static inline float row_max_f32(", "static volatile const float exp_floor_f32",
                   "static inline int exp_fast_f32(", "static inline ACC exp_row_f32("):
        assert out.count(helper) == 1, helper
    assert out.index("static inline float row_max_f32(") < out.index("void log_softmax_fwd_f32(") \
        < out.index("void log_softmax_bwd_f32(")


@needs_cc
@pytest.mark.parametrize("shape", [(0,), (1,), (7, 9), (32, 16, 64), (1031, 129)], ids=str)
@pytest.mark.parametrize("p", [0.1, 0.5, 0.999])
def test_dropout_mask_is_bit_identical_to_the_numpy_path(shape, p):
    """The kernel builds dropout's keep mask from the same words of torch's stream: the same mask
    (and so torch's) for the same seed, and the generator left in the same state."""
    from tinygrad_tx.functional._util import keep_mask
    tg.manual_seed(11)
    fast = keep_mask(shape, p, None)
    after_fast = tg.rand(3).numpy()
    with numpy_path():
        tg.manual_seed(11)
        slow = keep_mask(shape, p, None)
        after_slow = tg.rand(3).numpy()
    assert fast.dtype == np.bool_ and fast.shape == shape
    np.testing.assert_array_equal(fast, slow)
    np.testing.assert_array_equal(after_fast, after_slow)


@needs_cc
def test_dropout_matches_torch_mask():
    x = np.ones((64, 33))
    tg.manual_seed(5)
    ours = F.dropout(tg.from_numpy(x), 0.3).numpy()
    torch.manual_seed(5)
    theirs = torch.nn.functional.dropout(torch.tensor(x, device=DEVICE), 0.3).cpu().numpy()
    np.testing.assert_array_equal(ours, theirs)


def _sdpa_case(kind, dtype):
    rng = np.random.default_rng(12)
    q, k, v = (rng.standard_normal((2, 3, 5, 8)).astype(dtype) for _ in range(3))
    mask = None
    if kind == "bool mask, a fully masked row":
        mask = rng.random((5, 5)) > 0.3
        mask[2] = False
    elif kind == "float mask":
        mask = rng.standard_normal((5, 5)).astype(dtype)
    return q, k, v, mask


@needs_cc
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind", ["plain", "causal", "bool mask, a fully masked row", "float mask", "dropout"])
def test_attention_softmax_kernel(kind, dtype):
    """scaled_dot_product_attention's in-place softmax and its backward in C: the NumPy path's
    output and gradients (fully masked rows zero, dropout's mask the same), and torch's."""
    q, k, v, mask = _sdpa_case(kind, dtype)
    g = np.random.default_rng(13).standard_normal((2, 3, 5, 8)).astype(dtype)

    def ours():
        tg.manual_seed(4)
        Q, K, V = (tg.from_numpy(a.copy()).requires_grad_() for a in (q, k, v))
        o = F.scaled_dot_product_attention(Q, K, V, attn_mask=None if mask is None else tg.from_numpy(mask),
                                           is_causal=kind == "causal", dropout_p=0.3 if kind == "dropout" else 0.0)
        grads = tg.autograd.grad(o, [Q, K, V], tg.from_numpy(g))
        return [o.detach().numpy()] + [d.numpy() for d in grads]

    fast = ours()
    with numpy_path():
        slow = ours()
    for a, b in zip(fast, slow):
        assert np.all(np.isfinite(a))
        assert _rel(a, b) <= (1e-12 if dtype == np.float64 else 1e-5), _rel(a, b)
    if kind != "dropout":
        check_parity(lambda q, k, v: F.scaled_dot_product_attention(
                         q, k, v, attn_mask=None if mask is None else tg.from_numpy(mask), is_causal=kind == "causal"),
                     lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(
                         q, k, v, attn_mask=None if mask is None else torch.tensor(mask, device=DEVICE),
                         is_causal=kind == "causal"),
                     q.astype(np.float64), k.astype(np.float64), v.astype(np.float64), dtype=dtype,
                     name=f"kernel sdpa {kind}")


@needs_cc
def test_attention_softmax_kernel_nan_and_dead_rows():
    """The kernel alone: an all -inf row gives zeros, a row of -inf and a NaN gives NaN, as the NumPy form."""
    s = np.array([[-np.inf] * 4, [-np.inf, np.nan, -np.inf, -np.inf], [np.nan, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0]])
    a = s.copy()
    assert kernels.attention_softmax_(a)
    np.testing.assert_array_equal(a[0], 0)
    assert np.isnan(a[1]).all() and np.isnan(a[2]).all()
    np.testing.assert_allclose(a[3], np.exp(s[3]) / np.exp(s[3]).sum(), rtol=1e-15)


def _masked_rows(dtype, D, rng):
    """Rows for the exp floor of the softmax kernels (source.exp_row): causal -inf masks (the
    clamped fast path), a finite spread just inside and just outside the floor, the floor's side
    with -inf lanes too (the plain path), NaN or +inf beside -inf, all -inf, and one -inf."""
    floor = 80.0 if dtype == np.float32 else 700.0
    rows = [rng.standard_normal(D) for _ in range(4)]
    for i, r in enumerate(rows):
        r[i + 1:] = -np.inf                                  # a causal mask's rows
    inside, outside = rng.standard_normal(D), rng.standard_normal(D)
    inside[1], outside[1] = inside.max() - floor * 0.99, outside.max() - floor * 1.01
    both = outside.copy()
    both[-2:] = -np.inf
    nan_inf = rng.standard_normal(D)
    nan_inf[0], nan_inf[2] = -np.inf, np.nan
    pinf = rng.standard_normal(D)
    pinf[0], pinf[1] = np.inf, -np.inf
    one = rng.standard_normal(D)
    one[-1] = -np.inf
    rows += [inside, outside, both, nan_inf, pinf, np.full(D, -np.inf), one]
    return np.stack(rows).astype(dtype)


@needs_cc
@pytest.mark.parametrize("op", ["softmax", "log_softmax", "cross_entropy", "sdpa_scores"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("D", [5, 16, 37])
def test_exp_floor_rows_match_the_numpy_path(op, dtype, D):
    """The softmax family's kernels clamp e^{x - m}'s argument at a floor where every finite
    x - m is above it (libmvec's fast path) and zero the -inf lanes: NaN exactly where the NumPy
    path has it, exact zeros where it has them, finite values within a few ulps, gradients too."""
    x = _masked_rows(dtype, D, np.random.default_rng(D))
    g = np.random.default_rng(D + 1).standard_normal(x.shape).astype(dtype)
    target = np.random.default_rng(D + 2).integers(0, 4, x.shape[0])      # a finite logit each row
    f = {"softmax": lambda t: F.softmax(t, -1), "log_softmax": lambda t: F.log_softmax(t, -1),
         "cross_entropy": lambda t: F.cross_entropy(t, tg.from_numpy(target), reduction="none"),
         "sdpa_scores": lambda t: t.softmax(-1)}[op]
    gg = g[:, 0].copy() if op == "cross_entropy" else g
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if op == "sdpa_scores":                                # the attention kernel alone, in place
            fast = x.copy()
            assert kernels.attention_softmax_(fast)
            with np.errstate(invalid="ignore"):
                e = np.exp(x - x.max(-1, keepdims=True))
                slow = e / e.sum(-1, keepdims=True)
            slow[np.isneginf(x).all(-1)] = 0                  # torch's dead rows
            pairs = [(fast, slow)]
        else:
            a = kernel_kit.ours(f, x, gg)
            with numpy_path():
                b = kernel_kit.ours(f, x, gg)
            pairs = list(zip(a, b))
    tol = 4e-7 if dtype == np.float32 else 1e-15
    for i, (a, b) in enumerate(pairs):
        assert np.array_equal(np.isnan(a), np.isnan(b)), (op, x, a, b)
        np.testing.assert_array_equal(a == 0, b == 0)
        np.testing.assert_array_equal(np.isinf(a) & (a > 0), np.isinf(b) & (b > 0))
        np.testing.assert_array_equal(np.isinf(a) & (a < 0), np.isinf(b) & (b < 0))
        ok = np.isfinite(b)
        # probabilities relative to themselves down to the subnormals (e^{-80.8} is not e^{-80});
        # gradients to their scale
        probs = i == 0 and op in ("softmax", "sdpa_scores")
        atol = np.finfo(dtype).tiny if probs else tol * np.abs(b[ok]).max()
        np.testing.assert_allclose(a[ok], b[ok], rtol=8 * tol, atol=atol)


@needs_cc
@pytest.mark.parametrize("dtype,below", [(np.float32, -85.0), (np.float64, -705.0)])
def test_log_softmax_backward_below_the_floor_is_exact(dtype, below):
    """log_softmax's backward forms e^y itself: a finite log-probability below the exp floor
    (-80 float, -700 double) must not be clamped. With a zero cotangent there, dx = -e^y Σg is
    that tiny value alone (a clamp would give e^{floor}: 150x and more off)."""
    x = np.array([[0.0, below, 1.0]], dtype)
    g = np.array([[1.0, 0.0, 0.5]], dtype)
    fast = kernel_kit.ours(lambda t: F.log_softmax(t, -1), x, g)[1]
    with numpy_path():
        slow = kernel_kit.ours(lambda t: F.log_softmax(t, -1), x, g)[1]
    assert slow[0, 1] != 0
    np.testing.assert_allclose(fast[0, 1], slow[0, 1], rtol=1e-5 if dtype == np.float32 else 1e-12)


# ---------------------------------------------------------------------------------- sigmoid family, RMSNorm

_POINTWISE_NEW = ["sigmoid", "silu", "softplus", "softplus_b2_t3"]


def _sigmoid_family_oracle(op, x, g):
    """(y, g dy/dx) in long double from cancellation-free forms: e = e^{-|z|}, σ(z) = 1/(1+e) or
    e/(1+e), σ(1-σ) = e/(1+e)², log(1 + e^z) = max(z, 0) + log1p(e)."""
    beta, threshold = (2.0, 3.0) if op == "softplus_b2_t3" else (1.0, 20.0)
    v = x.astype(np.longdouble)
    z = v * np.longdouble(beta) if op.startswith("softplus") else v
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(-np.abs(z))
        s = np.where(z >= 0, 1 / (1 + e), e / (1 + e))
        c = np.where(z >= 0, e / (1 + e), 1 / (1 + e))          # 1 - σ
        if op == "sigmoid":
            y, d = s, e / (1 + e) ** 2
        elif op == "silu":
            y, d = v * s, s * (1 + v * c)
        else:
            lin = z > np.longdouble(x.dtype.type(threshold))
            y = np.where(lin, v, (np.maximum(z, 0) + np.log1p(e)) / np.longdouble(beta))
            d = np.where(lin, 1, s)
        return y.astype(np.float64), (g.astype(np.longdouble) * d).astype(np.float64)


@needs_cc
@pytest.mark.parametrize("op", _POINTWISE_NEW)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_family_special_values(op, dtype):
    """NaN, ±Inf, −0.0, subnormals, huge values and both sides of softplus's threshold: NaN exactly
    where the NumPy path and torch have NaN, ±Inf where they have it, finite values as torch's."""
    x = np.concatenate([_SPECIAL, [1.4999, 1.5001, 20.0, 20.01, -88.0, -104.0, -745.0, 709.0]]).astype(dtype)
    g = np.random.default_rng(1).standard_normal(x.shape).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        fast = _ours(op, x, g)
        with numpy_path():
            slow = _ours(op, x, g)
        theirs = _torch(op, x, g)
    exact = _sigmoid_family_oracle(op, x, g)
    rtol = 2e-5 if dtype == np.float32 else 1e-12
    for k, (a, b, t, e) in enumerate(zip(fast, slow, theirs, exact)):
        assert np.array_equal(np.isnan(a), np.isnan(t)), (op, x, a, t)
        assert np.array_equal(np.isnan(a), np.isnan(b)), (op, x, a, b)
        ok = np.isfinite(t)
        np.testing.assert_array_equal(a[~ok], t[~ok])
        if op == "sigmoid" and k == 1:
            # g y (1 - y) from the saved y, as torch and the NumPy form: it cancels where y is near
            # 1 (float32 x = 20: 0, the exact value 2e-9), as theirs does
            np.testing.assert_allclose(a, b, rtol=rtol, atol=0, equal_nan=True)
            continue
        # finite values against the long-double oracle (silu's 1 - σ is formed without cancellation)
        np.testing.assert_allclose(a[ok], e[ok], rtol=rtol, atol=1e-300 if dtype == np.float64 else 1e-38)
    zero = fast[0][3]                                    # f(-0.0)
    assert zero == theirs[0][3] and (op != "silu" or np.signbit(zero) == np.signbit(theirs[0][3]))


@needs_cc
@pytest.mark.parametrize("op", _POINTWISE_NEW + ["rms_norm"])
@pytest.mark.parametrize("n", [1, 7, 8, 15, 16, 17, 63, 64, 65, 255, 4097, 70001])
def test_sizes_across_vector_widths_and_threads(op, n):
    """Lengths around the 4/8/16-lane vector widths, the 64-element chunk alignment and the
    thread split (2 threads): float32 kernel equals itself at 1 thread, float64 the NumPy path."""
    rng = np.random.default_rng(n)
    if op == "rms_norm" and n == 1:
        pytest.skip("a row of one: see test_kernel_matches_numpy_path_float64")
    shape = (n,) if op != "rms_norm" else (3, n)
    x, g = rng.standard_normal(shape) * 3, rng.standard_normal(shape)
    kernel_kit.check_sizes(lambda x, g: _ours(op, x, g), x, g, (op, n))


@needs_cc
@pytest.mark.parametrize("op", _POINTWISE_NEW)
def test_sigmoid_family_gradients_of_gradients(op):
    """create_graph=True: the saved kernel derivative is not read; the formula is differentiated
    (second derivative with a random cotangent, against torch)."""
    rng = np.random.default_rng(2)
    x, g, h = rng.standard_normal((6, 5)) * 2, rng.standard_normal((6, 5)), rng.standard_normal((6, 5))
    X = tg.from_numpy(x.copy()).requires_grad_()
    (dx,) = tg.autograd.grad(OPS[op][0](X), X, tg.from_numpy(g), create_graph=True)
    (ddx,) = tg.autograd.grad(dx, X, tg.from_numpy(h))
    T = torch.tensor(x, device=DEVICE, requires_grad=True)
    (dt,) = torch.autograd.grad(OPS[op][1](T), T, torch.tensor(g, device=DEVICE), create_graph=True)
    (ddt,) = torch.autograd.grad(dt, T, torch.tensor(h, device=DEVICE))
    np.testing.assert_allclose(dx.detach().numpy(), dt.detach().cpu().numpy(), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(ddx.numpy(), ddt.cpu().numpy(), rtol=1e-10, atol=1e-14)
    assert np.max(np.abs(ddt.cpu().numpy())) > 1e-3


@needs_cc
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weight", [True, False])
def test_rms_norm_kernel_weight_gradient_and_shapes(dtype, weight):
    """RMSNorm over two trailing dims, with and without weight, eps=None: x and w gradients
    against torch (check_parity) and the kernel against the NumPy path."""
    rng = np.random.default_rng(8)
    x, w = rng.standard_normal((3, 5, 4, 6)), rng.standard_normal((4, 6))
    if weight:
        args, ours, theirs = (x, w), (lambda x, w: F.rms_norm(x, (4, 6), w)), \
            (lambda x, w: torch.nn.functional.rms_norm(x, (4, 6), w))
    else:
        args, ours = (x,), (lambda x: F.rms_norm(x, (4, 6)))
        theirs = lambda x: torch.nn.functional.rms_norm(x, (4, 6))  # noqa: E731
    check_parity(ours, theirs, *args, dtype=dtype, name=f"kernel rms_norm weight={weight}")
    g = rng.standard_normal(x.shape)

    def grads():
        ts = [tg.from_numpy(a.copy()).requires_grad_() for a in args]
        return [r.numpy() for r in tg.autograd.grad(ours(*ts), ts, tg.from_numpy(g))]
    fast = grads()
    with numpy_path():
        slow = grads()
    for a, b in zip(fast, slow):
        assert _rel(a, b) <= 1e-12


def test_sigmoid_family_and_rms_norm_without_kernels():
    """TINYGRAD_TX_KERNELS=0: the NumPy forms run (no derivative saved) and match torch."""
    with numpy_path():
        assert kernels.mode().startswith("numpy")
        for op in _POINTWISE_NEW + ["rms_norm"]:
            x = np.random.default_rng(9).standard_normal((4, 9)) * 3
            check_parity(OPS[op][0], OPS[op][1], x, name=f"numpy path {op}")


@needs_cc
def test_sigmoid_family_and_rms_norm_run_their_kernels():
    """The ops' outputs are the kernels' own outputs, bit for bit (the kernel path is taken)."""
    x = np.random.default_rng(10).standard_normal((33, 20)).astype(np.float32) * 3
    X = tg.from_numpy(x)
    np.testing.assert_array_equal(X.sigmoid().numpy(), kernels.sigmoid(x))
    np.testing.assert_array_equal(F.silu(X).numpy(), kernels.silu(x))
    np.testing.assert_array_equal(F.softplus(X, 2.0, 3.0).numpy(), kernels.softplus(x, 2.0, 3.0))
    np.testing.assert_array_equal(F.rms_norm(X, (20,), eps=1e-6).numpy(), kernels.rms_norm_forward(x, None, 1e-6))
    g = np.random.default_rng(11).standard_normal(x.shape).astype(np.float32)
    for fn, bwd in ((lambda t: t.sigmoid(), lambda: kernels.sigmoid_backward(kernels.sigmoid(x), g)),
                    (F.silu, lambda: kernels.silu_backward(x, g)),
                    (lambda t: F.softplus(t, 2.0, 3.0), lambda: kernels.softplus_backward(x, g, 2.0, 3.0))):
        X = tg.from_numpy(x.copy()).requires_grad_()
        (dx,) = tg.autograd.grad(fn(X), X, tg.from_numpy(g))
        np.testing.assert_array_equal(dx.numpy(), bwd())


@needs_cc
@pytest.mark.parametrize("op", _POINTWISE_NEW)
def test_sigmoid_family_backward_reads_what_torch_saves(op):
    """A change made through ``.data`` between forward and backward (to y for sigmoid, to x for
    silu and softplus, what torch saves) moves the gradient as it does in torch."""
    results = []
    for lib in (torch, tg):
        x = lib.tensor([0.5, -1.0, 2.0], requires_grad=True) if lib is tg else \
            torch.tensor([0.5, -1.0, 2.0], requires_grad=True, device=DEVICE)
        y = OPS[op][0](x) if lib is tg else OPS[op][1](x)
        (y if op == "sigmoid" else x).data.mul_(2)
        y.backward(lib.tensor([1.0, 2.0, -1.0]) if lib is tg else torch.tensor([1.0, 2.0, -1.0], device=DEVICE))
        results.append(np.asarray(x.grad.detach().cpu() if lib is torch else x.grad))
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)


# ---------------------------------------------------------------------------------- SGD

_SGD_VARIANTS = {
    "plain": dict(lr=0.1),
    "momentum": dict(lr=0.1, momentum=0.9),
    "dampening": dict(lr=0.05, momentum=0.8, dampening=0.3),
    "nesterov + wd": dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    "wd": dict(lr=0.1, weight_decay=0.1),
    "maximize + momentum + wd": dict(lr=0.1, momentum=0.7, weight_decay=0.05, maximize=True),
}


def _sgd_run(dtype, kw, shapes, grads_seed=11, steps=4):
    rng = np.random.default_rng(grads_seed)
    ps = [tg.nn.Parameter(tg.from_numpy(np.asarray(rng.standard_normal(s), dtype))) for s in shapes]
    p0 = [p.detach().numpy().copy() for p in ps]
    opt = tg.optim.SGD(ps, **kw)
    for k in range(steps):
        for p in ps:
            g = np.asarray(rng.standard_normal(p.shape) * 10.0 ** rng.integers(-3, 3, p.shape), dtype)
            if k == 2 and g.size > 5:
                g.reshape(-1)[5] = np.nan
            p.grad = tg.from_numpy(g)
        with np.errstate(invalid="ignore"):
            opt.step()
    bufs = [opt.state[p].get("momentum_buffer") for p in ps]
    return [p.detach().numpy() for p in ps], bufs, p0


@needs_cc
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("variant", sorted(_SGD_VARIANTS))
def test_sgd_kernel_is_bit_identical_to_numpy(dtype, variant, monkeypatch):
    """SGD's update in C performs the NumPy form's operations in its order and rounding: equal
    bit for bit over several steps (a NaN gradient, a 0-d parameter, sizes across the vector
    width and the thread split included); the kernel ran at every step of every parameter."""
    shapes = [(), (7,), (64, 3), (4097,)]
    kw = _SGD_VARIANTS[variant]
    ran, real = [], kernels.sgd
    monkeypatch.setattr(kernels, "sgd", lambda *a, **k: ran.append(real(*a, **k)) or ran[-1])
    old = tg.get_num_threads()
    try:
        tg.set_num_threads(2)
        fast = _sgd_run(dtype, kw, shapes)
    finally:
        tg.set_num_threads(old)
    assert ran == [True] * 16
    with numpy_path():
        slow = _sgd_run(dtype, kw, shapes)
    for a, b in zip(fast[0] + [x for x in fast[1] if x is not None], slow[0] + [x for x in slow[1] if x is not None]):
        assert a.shape == b.shape and a.dtype == b.dtype
        assert np.array_equal(a, b, equal_nan=True)
    assert (fast[1][0] is None) == ("momentum" not in kw)
    assert np.isnan(fast[0][3][5]) and np.max(np.abs(np.nan_to_num(fast[0][3] - fast[2][3]))) > 1e-3


@needs_cc
@pytest.mark.parametrize("variant", sorted(_SGD_VARIANTS))
def test_sgd_steps_match_torch(variant):
    kw = _SGD_VARIANTS[variant]
    rng = np.random.default_rng(12)
    w0 = rng.standard_normal((16, 8))
    grads = [rng.standard_normal((16, 8)) for _ in range(3)]
    W = tg.nn.Parameter(tg.from_numpy(w0.copy()))
    T = torch.nn.Parameter(torch.tensor(w0, device=DEVICE))
    ours, theirs = tg.optim.SGD([W], **kw), torch.optim.SGD([T], **kw)
    for g in grads:
        W.grad = tg.from_numpy(g.copy())
        T.grad = torch.tensor(g, device=DEVICE)
        ours.step()
        theirs.step()
    np.testing.assert_allclose(W.detach().numpy(), T.detach().cpu().numpy(), rtol=1e-12, atol=1e-15)
    if "momentum" in kw:
        np.testing.assert_allclose(ours.state[W]["momentum_buffer"],
                                   theirs.state[T]["momentum_buffer"].cpu().numpy(), rtol=1e-12, atol=1e-15)
    assert np.max(np.abs(W.detach().numpy() - w0)) > 1e-3
