"""The public testing kit: ``tinygrad_tx.testing`` (NumPy side) and ``reference.testing`` (torch side).

Each check of the kit is shown to fail where it must (a wrong backward, a mutated input, a blind
all-zero reference gradient, a wrong module), since a harness that cannot fail proves nothing;
the README's "Test your own op" block is extracted and run, and broken on purpose.
"""
from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import Phase, given, settings

import reference.testing as kit
import tinygrad_tx as tg
import tinygrad_tx.testing as T
from reference.testing import DEVICE, check_module_parity, check_parity, parity_property
from tinygrad_tx.testing import strategies as S

ROOT = Path(__file__).resolve().parents[1]
NO_SHRINK = settings(max_examples=4, database=None, phases=[Phase.generate], derandomize=True, deadline=None)


class Softplus(tg.autograd.ArrayFunction):
    """y = log(1 + eˣ); dL/dx = g σ(x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.logaddexp(0.0, x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g / (1.0 + np.exp(-x))


class WrongSoftplus(Softplus):
    """The same forward, a backward off by a factor (1 + 1e-6): only a tight check sees it."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g / (1.0 + np.exp(-x)) * (1 + 1e-6)


class MutatingDouble(tg.autograd.ArrayFunction):
    """y = 2x, computed by doubling the input array in place (the bug check_parity refuses)."""

    @staticmethod
    def forward(ctx, x):
        np.multiply(x, 2.0, out=x)
        return x.copy()

    @staticmethod
    def backward(ctx, g):
        return 2.0 * g


def _x(shape=(3, 4), seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# ------------------------------------------------------------------------------ NumPy side

def test_kit_imports_without_hypothesis_and_without_torch():
    code = textwrap.dedent("""
        import sys
        sys.modules["hypothesis"] = None              # as if the extra were not installed
        import numpy as np
        import tinygrad_tx.testing as T
        assert "torch" not in sys.modules
        assert T.values((2, 3), 0, "positive").min() >= 0.5
        T.gradcheck(lambda x: x.exp(), [np.ones(3)])
        T.assert_close(np.ones(2), np.ones(2))
        for use in (lambda: T.shapes(), lambda: T.seeds, lambda: T.strategies.matmul_shapes()):
            try:
                use()
            except ImportError as e:
                assert "tinygrad_tx[testing]" in str(e), e
            else:
                raise SystemExit("no ImportError")
        try:
            from tinygrad_tx.testing.strategies import float_dtypes
        except ImportError as e:
            assert "tinygrad_tx[testing]" in str(e), e
        else:
            raise SystemExit("no ImportError")
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_one_harness():
    import parity
    import strategies
    assert parity is kit and strategies is S                  # tests/parity.py, tests/strategies.py: aliases
    assert T.gradcheck is tg.gradcheck and T.GradcheckError is tg.GradcheckError
    assert kit.rel_err is T.rel_err and kit.F32_RATIO == T.F32_RATIO == 4.0


def test_rel_err_and_assert_close():
    ref = np.array([1.0, -4.0, np.inf, np.nan])
    assert T.rel_err(ref, ref) == 0.0
    assert T.rel_err(np.array([1.0, -4.004, np.inf, np.nan]), ref) == pytest.approx(1e-3)
    assert T.rel_err(np.array([1.0, -4.0, -np.inf, np.nan]), ref) == float("inf")   # inf sign differs
    assert T.rel_err(np.array([1.0, -4.0, np.inf, 0.0]), ref) == float("inf")       # nan lost
    assert T.rel_err(np.zeros(3), np.zeros(3)) == 0.0 and T.rel_err(np.full(2, 1e-3), np.zeros(2)) == 1e-3
    assert T.assert_close(tg.Tensor(np.ones(3)), np.ones(3)) == 0.0              # Tensors are read too
    with pytest.raises(AssertionError, match=r"w: relative error 1e-09 > 1e-10"):
        T.assert_close(np.array([1.0 + 1e-9, 1.0]), np.ones(2), name="w")
    T.assert_close(np.array([1.0 + 1e-9]), np.ones(1), rtol=1e-8)
    with pytest.raises(AssertionError, match=r"shape mismatch: ours \(2,\) vs reference \(3,\)"):
        T.assert_close(np.ones(2), np.ones(3))
    with pytest.raises(AssertionError, match="dtype float32 vs expected float64"):
        T.assert_close(np.ones(2, np.float32), np.ones(2))
    with pytest.raises(ValueError, match="rtol must be >= 0, got -1"):
        T.assert_close(np.ones(2), np.ones(2), rtol=-1)


def test_float32_rule_and_vacuous_guard():
    T.check_f32("op", 4e-7, 1e-7)                                   # within 4x torch's own error
    T.check_f32("op", T.F32_FLOOR, 0.0)                             # exact in torch: a few ulps allowed
    T.check_f32("op", 4e-7 + T.F32_FLOOR, 1e-7)
    with pytest.raises(AssertionError, match="op output float32: our error 2e-06 vs the reference float32's 1e-07"):
        T.check_f32("op output", 2e-6, 1e-7)
    # an ill-conditioned result (the oracle moves 1e-4 under one ulp): 4x that is allowed
    T.check_f32("op", 3.9e-4, 1e-6, cond=1e-4)
    with pytest.raises(AssertionError, match="conditioning 0.0001"):
        T.check_f32("op", 5e-4, 1e-6, cond=1e-4)
    T.assert_nontrivial(np.array([0.0, 1e-300]))
    with pytest.raises(AssertionError, match="blind"):
        T.assert_nontrivial(np.zeros(3), "grad")


def test_float32_rule_measures_conditioning():
    """A one-element float32 sum of cancelling terms (|sum| ~ Σ|terms| / 900): its result moves by
    ~1e-4 when the inputs move by one ulp, so any summation order is right to ~1e-4 — torch's may
    be 20x closer by luck. check_parity measures that and passes; a result 1% off still fails."""
    a = np.array([-0.46294304728507996, -0.10483153164386749, -0.1530228853225708, -1.563550353050232,
                  -0.48183903098106384])
    b = np.array([[-0.3890460729598999], [-0.2887992560863495], [0.808481752872467], [0.1202118769288063],
                  [-0.20882676541805267]])
    check_parity(lambda x, y: x @ y, lambda x, y: x @ y, a, b, dtype=np.float32, name="dot")
    with pytest.raises(AssertionError, match="wrong dot output float32: our error"):
        check_parity(lambda x, y: (x @ y) * 1.01, lambda x, y: x @ y, a, b, dtype=np.float32, name="wrong dot")


def test_float32_conditioning_keeps_constant_inputs_exact():
    """The one-ulp moves that measure a result's conditioning move the differentiated inputs and
    the cotangent only: a target of exactly 1 (cosine_embedding_loss's y) moved off ±1 would match
    neither branch and make every result 'jump', which measured nothing (a fresh run met such a
    case: two nearly anti-parallel 2-vectors, whose gradient is a cancellation)."""
    a = np.array([-1.384900660463471, -0.5875623511690307])
    b = np.array([1.7311163155599066, 0.6301228280005413])
    cos = lambda lib: lambda x1, x2, y: lib.nn.functional.cosine_embedding_loss(x1, x2, y, reduction="sum")  # noqa: E731
    check_parity(cos(tg), cos(torch), a, b, np.asarray(1.0), dtype=np.float32, grad=(0, 1), seed=524289,
                 name="cosine_embedding_loss")


def test_float32_rule_uses_neighbouring_problems_for_heavy_tailed_errors(monkeypatch):
    """One query, two keys: the key gradient is a cancellation, p1·p2·g·(v1 − v2) q. Its float32
    error is heavy-tailed: on this draw (the thorough profile's seed 827) torch's is 3.3e-7 and the
    composite's 3.6e-6, while over 64 neighbouring problems (inputs moved by up to two ulps)
    torch's ranged from 9.0e-8 to 3.0e-6, median 5.8e-7, and the composite's median was 1.6e-6.
    The single draw fails even with the conditioning; the medians over the drawn problem and its
    neighbours pass. A backward that reads v 16 ulps off (a cancellation amplified 16x) still
    fails on the medians."""
    rng = np.random.default_rng(828)
    q, k, v = np.random.default_rng(827).standard_normal((2, 1, 5)), rng.standard_normal((2, 2, 5)), \
        rng.standard_normal((2, 2, 6))
    sdpa = tg.nn.functional.scaled_dot_product_attention_composite
    theirs = lambda *a: torch.nn.functional.scaled_dot_product_attention(*a)  # noqa: E731
    cot_seed = (827 * 7919 + 12345) % 2**32
    reached = []
    medians = kit._neighbourhood_medians
    monkeypatch.setattr(kit, "_neighbourhood_medians", lambda *a: reached.append(1) or medians(*a))
    check_parity(sdpa, theirs, q, k, v, dtype=np.float32, seed=cot_seed, name="sdpa")
    assert reached, "the drawn problem alone should have failed the rule"

    class SixteenUlpsOff(tg.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v):
            ctx.save_for_backward(q, k, v)
            return sdpa(q, k, v)

        @staticmethod
        def backward(ctx, g):
            q, k, v = (t.detach() for t in ctx.saved_tensors)
            sign = np.where(np.arange(v.numel()).reshape(v.shape) % 2, 1.0, -1.0)
            v = tg.tensor((v.numpy().astype(np.float64) * (1 + 16 * T.F32_FLOOR / 8 * sign)).astype(np.float32))
            with tg.enable_grad():
                xs = [t.requires_grad_() for t in (q, k, v)]
                return tg.autograd.grad(sdpa(*xs), xs, g)

    with pytest.raises(AssertionError, match=r"off grad\[0\] \(median over the drawn problem and 8 neighbours\)"):
        check_parity(SixteenUlpsOff.apply, theirs, q, k, v, dtype=np.float32, seed=cot_seed, name="off")


def test_float32_rule_excuses_no_discontinuity():
    """floor at 3: a move down by any amount crosses 3, so a one-ulp and a quarter-ulp move jump
    equally far — not a smooth response, no conditioning measured (counted, it would excuse an
    error of 2/9): a wrong floor there (2 instead of 3) fails on torch's error alone."""
    x = np.array([3.0] * 8 + [1.5])
    floor_then_scale = lambda lib: (lambda t: lib.floor(t) * 2 + t)  # noqa: E731 (non-zero gradient)
    check_parity(floor_then_scale(tg), floor_then_scale(torch), x, dtype=np.float32, name="floor")
    wrong = lambda t: tg.floor(t - 1e-6) * 2 + t  # noqa: E731
    with pytest.raises(AssertionError, match="wrong floor output float32: our error"):
        check_parity(wrong, floor_then_scale(torch), x, dtype=np.float32, name="wrong floor", seed=3)


def test_values_domains_and_layout():
    assert T.values((), 1).shape == () and isinstance(T.values((), 1), np.ndarray)
    assert np.all(np.abs(T.values((50,), 2, "away_from_zero")) >= 0.1)
    d = T.values((4, 5), 3, "distinct")
    assert len(np.unique(d)) == 20
    v = T.non_contiguous(d)
    assert np.array_equal(v, d) and not v.flags.c_contiguous
    with pytest.raises(ValueError, match="domain must be one of real, positive, distinct, away_from_zero, got 'x'"):
        T.values((2,), 0, "x")


@given(pair=S.matmul_shapes(), dk=S.shapes(1, 3).flatmap(lambda s: S.dims_and_keepdim(len(s)).map(lambda d: (s, d))))
def test_strategies_draw_what_numpy_accepts(pair, dk):
    a, b = pair
    np.matmul(np.zeros(a), np.zeros(b))                             # torch.matmul's shape rules
    shape, (dim, keepdim) = dk
    np.sum(np.zeros(shape), axis=dim, keepdims=keepdim)


# ------------------------------------------------------------------------------ torch side

def test_check_parity_both_spellings_both_dtypes():
    x = _x()
    for dtype in (np.float64, np.float32, torch.float32):
        new = check_parity(Softplus.apply, torch.nn.functional.softplus, x, dtype=dtype)
        old = check_parity("softplus", Softplus.apply, torch.nn.functional.softplus, [x], dtype)
        assert new == old
    assert check_parity(Softplus.apply, torch.nn.functional.softplus, x)["ours"] <= 1e-15
    assert kit.ERROR_REPORT[("Softplus", "float64")]["calls"] >= 2     # named after the Function
    # integer inputs pass through; only float arrays are differentiated
    idx = np.array([2, 0])
    check_parity(lambda t, i: t[i], lambda t, i: t[i], x, idx, name="index rows")


def test_check_parity_fails_where_it_must():
    x = _x()
    with pytest.raises(AssertionError, match=r"wrong float64 grad\[0\]: relative error 1e-06 > 1e-10"):
        check_parity(WrongSoftplus.apply, torch.nn.functional.softplus, x, name="wrong")
    with pytest.raises(AssertionError, match="an input was mutated"):
        check_parity(MutatingDouble.apply, lambda t: 2 * t, x, name="mutating")
    with pytest.raises(AssertionError, match="reference gradient is all zero"):      # d floor = 0
        check_parity(lambda t: t.floor(), torch.floor, x, name="blind")
    check_parity(lambda t: t.floor(), torch.floor, x, allow_zero_grad=(0,))
    with pytest.raises(AssertionError, match="output dtype float64 vs torch float32"):
        check_parity(lambda t: t.double(), lambda t: t * 1, x, dtype=np.float32, name="dtype")


def test_check_parity_refuses_bad_arguments():
    x = _x()
    with pytest.raises(ValueError, match="dtype must be float32 or float64, got <class 'numpy.int64'>"):
        check_parity(Softplus.apply, torch.nn.functional.softplus, x, dtype=np.int64)
    with pytest.raises(TypeError, match="theirs must be callable, got ndarray"):
        check_parity(Softplus.apply, x)
    with pytest.raises(TypeError, match="give the two functions and the inputs as one list"):
        check_parity("softplus", Softplus.apply, torch.nn.functional.softplus, x)
    with pytest.raises(ValueError, match="at least one float array input"):
        check_parity(lambda i: i, lambda i: i, np.arange(3))


def test_check_module_parity_runs_pytorch_style_code_on_both_engines():
    def mlp(torch):                    # PyTorch-style code; called with tinygrad_tx and with torch
        return torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))

    x = _x((4, 3))
    for dtype in (np.float64, np.float32):
        r = check_module_parity(mlp, x, dtype=dtype)
        assert r["ours"] < (1e-10 if dtype == np.float64 else 1e-5)
    check_module_parity(mlp, x, inputs_grad=False)
    wrong = (mlp(tg), torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Sigmoid(), torch.nn.Linear(5, 2)).to(DEVICE))
    with pytest.raises(AssertionError, match="float64 output: relative error"):
        check_module_parity(wrong, x)


def test_parity_property_passes_and_fails():
    seen = []

    @NO_SHRINK
    @parity_property(Softplus.apply, torch.nn.functional.softplus, shapes=S.shapes(1, 3))
    def test_right(x):
        seen.append(x.shape)

    @NO_SHRINK
    @parity_property(WrongSoftplus.apply, torch.nn.functional.softplus, shapes=S.shapes(1, 3), dtypes=[np.float64])
    def test_wrong():
        """never reached"""

    @NO_SHRINK
    @parity_property(lambda a, b: a * b, torch.mul, shapes=S.broadcastable_pair(3, 3),
                     domain=["real", "positive"])
    def test_two_inputs(a, b):
        assert b.min() >= 0.5

    test_right()
    test_two_inputs()
    assert len(seen) == 4 and test_right.__name__ == "test_right"
    with pytest.raises(AssertionError, match=r"WrongSoftplus float64 grad\[0\]"):
        test_wrong()
    with pytest.raises(TypeError, match="shapes must be a hypothesis strategy"):
        parity_property(Softplus.apply, torch.nn.functional.softplus, shapes=(2, 3))


def test_parity_property_has_no_deadline():
    """Regression: the README's block copied verbatim (hypothesis's default profile, 200 ms per
    example) failed once on a loaded machine with DeadlineExceeded; parity_property turns the
    deadline off, and a @settings stacked above is still accepted."""
    import time

    def slow_softplus(t):
        time.sleep(0.25)
        return Softplus.apply(t)

    previous = settings._current_profile
    settings.register_profile("kit-200ms", max_examples=2, deadline=200, database=None, derandomize=True,
                              phases=[Phase.generate])
    settings.load_profile("kit-200ms")
    try:
        @parity_property(slow_softplus, torch.nn.functional.softplus, shapes=S.shapes(1, 2), dtypes=[np.float64])
        def test_slow():
            """two examples of over 200 ms each"""

        @NO_SHRINK
        @parity_property(slow_softplus, torch.nn.functional.softplus, shapes=S.shapes(1, 2), dtypes=[np.float64])
        def test_slow_stacked():
            """NO_SHRINK's own deadline=None"""
    finally:
        settings.load_profile(previous)
    assert test_slow._hypothesis_internal_use_settings.deadline is None
    test_slow()


def _readme_block():
    text = (ROOT / "README.md").read_text()
    section = text.split("## Test your own op", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    return code


def _run_block(code):
    ns = {"__name__": "readme_example"}
    exec(compile(code, "README.md", "exec"), ns)
    tests = [v for k, v in ns.items() if k.startswith("test_") and callable(v)]
    assert len(tests) == 2
    for t in tests:
        t()


def test_readme_example_runs_and_can_fail():
    code = _readme_block()
    assert len(code.strip().splitlines()) < 30
    _run_block(code)
    broken = code.replace("g / (1.0 + np.exp(-x))", "g / (1.0 + np.exp(x))")   # σ(−x): a wrong backward
    assert broken != code
    with pytest.raises(Exception):
        _run_block(broken)
