"""torch's type promotion, from one place (``dtypes.result_np``): ``tinygrad_tx.result_type``,
``promote_types`` and ``can_cast`` against torch's over every pair of dtypes, and the dtype
(and values) of the binary operators over every pair × (tensor, 0-d tensor, Python scalar)."""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import torch

import tinygrad_tx as tt
from reference.testing import DEVICE

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
PAIRS = list(itertools.product(NAMES, NAMES))
# (left kind, right kind): t a tensor with dimensions, 0 a 0-d tensor, s a Python scalar
KINDS = [("t", "t"), ("t", "0"), ("0", "t"), ("t", "s"), ("s", "t"), ("0", "0"), ("0", "s"), ("s", "0")]


def _operands(name, kind, side):
    """(ours, torch's) operand of dtype ``name`` (for a scalar: a Python number of its category)."""
    values = np.array([1, 2], dtype=name) if side == 0 else np.array([2, 1], dtype=name)
    if kind == "s":
        v = {"b": True, "u": 3, "i": 3, "f": 2.5}[np.dtype(name).kind]
        return v, v
    arr = values if kind == "t" else np.array(values[0])
    return tt.from_numpy(arr.copy()), torch.from_numpy(arr.copy()).to(DEVICE)


def _torch_name(d) -> str:
    return str(d).removeprefix("torch.")


def _our_name(d) -> str:
    return repr(d).removeprefix("tinygrad_tx.")


@pytest.mark.parametrize("a,b", PAIRS)
def test_promote_types_and_can_cast_match_torch(a, b):
    assert _our_name(tt.promote_types(getattr(tt, a), getattr(tt, b))) == \
        _torch_name(torch.promote_types(getattr(torch, a), getattr(torch, b)))
    assert tt.can_cast(getattr(tt, a), getattr(tt, b)) == torch.can_cast(getattr(torch, a), getattr(torch, b))


def _scalar_kind(name):
    return {"b": "bool", "u": "int", "i": "int", "f": "float"}[np.dtype(name).kind]


def _cases():
    seen = set()
    for (a, b), (ka, kb) in itertools.product(PAIRS, KINDS):
        key = (a if ka != "s" else _scalar_kind(a), ka, b if kb != "s" else _scalar_kind(b), kb)
        if key not in seen:   # a scalar only has its category: one case per category
            seen.add(key)
            yield pytest.param(a, ka, b, kb, id=f"{key[0]}{ka}-{key[2]}{kb}")


CASES = list(_cases())


@pytest.mark.parametrize("a,ka,b,kb", CASES)
def test_result_type_and_operators_match_torch(a, ka, b, kb):
    """result_type, then + * / == and maximum: same dtype, same values (or both refuse)."""
    oa, ta = _operands(a, ka, 0)
    ob, tb = _operands(b, kb, 1)
    assert _our_name(tt.result_type(oa, ob)) == _torch_name(torch.result_type(ta, tb))
    ops = [lambda x, y: x + y, lambda x, y: x * y, lambda x, y: x / y, lambda x, y: x == y,
           lambda x, y: x < y]
    if ka != "s" and kb != "s":
        ops.append(lambda x, y: x.maximum(y) if hasattr(x, "maximum") else None)
    for op in ops:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = op(ta, tb)
            got = op(oa, ob)
        assert _our_name(got.dtype) == _torch_name(want.dtype), (a, ka, b, kb)
        assert got.shape == tuple(want.shape)
        np.testing.assert_array_equal(got.numpy(), want.cpu().numpy())


@pytest.mark.parametrize("a,ka,b,kb", [c for c in CASES if "bool" in c.id])
def test_subtraction_with_a_bool_operand_refused_as_torch(a, ka, b, kb):
    oa, ta = _operands(a, ka, 0)
    ob, tb = _operands(b, kb, 1)
    try:
        want = ta - tb
    except RuntimeError as e:
        with pytest.raises(RuntimeError, match="Subtraction, the `-` operator"):
            oa - ob
        assert "Subtraction" in str(e)
    else:
        got = oa - ob
        assert _our_name(got.dtype) == _torch_name(want.dtype)
        np.testing.assert_array_equal(got.numpy(), want.cpu().numpy())


def test_the_three_reported_promotions():
    u8 = np.array([200, 100], dtype=np.uint8)
    assert tt.from_numpy(u8).sum().dtype == tt.int64 == np.int64
    assert tt.from_numpy(u8).sum().item() == torch.from_numpy(u8).to(DEVICE).sum().item() == 300
    h = np.array([2.0, 4.0], dtype=np.float16)
    assert (tt.from_numpy(u8) / tt.from_numpy(h)).dtype == tt.float16
    i32 = tt.from_numpy(np.array([1, 2], dtype=np.int32))
    assert (i32 + tt.from_numpy(np.array(5, dtype=np.int64))).dtype == tt.int32
    assert (i32 + tt.from_numpy(np.array(5.5))).dtype == tt.float64   # a higher category promotes
    assert (i32 + 5.5).dtype == tt.float32                            # to the default dtype
    assert tt.result_type(i32, 5) == tt.int32


def test_int_scalar_wraps_into_uint8_as_torch():
    u8 = np.array([250, 1], dtype=np.uint8)
    np.testing.assert_array_equal((tt.from_numpy(u8) + 300).numpy(), (torch.from_numpy(u8).to(DEVICE) + 300).cpu().numpy())


def test_cat_and_where_promote_as_torch():
    i64 = np.array([1, 2])
    h = np.array([0.5, 1.5], dtype=np.float16)
    got = tt.cat([tt.from_numpy(i64), tt.from_numpy(h)])
    want = torch.cat([torch.from_numpy(i64).to(DEVICE), torch.from_numpy(h).to(DEVICE)])
    assert _our_name(got.dtype) == _torch_name(want.dtype) == "float16"   # NumPy would say float64
    c = np.array([True, False])
    got = tt.where(tt.from_numpy(c), tt.from_numpy(i64.astype(np.int32)), 2.5)
    want = torch.where(torch.from_numpy(c).to(DEVICE), torch.from_numpy(i64.astype(np.int32)).to(DEVICE), 2.5)
    assert _our_name(got.dtype) == _torch_name(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.cpu().numpy())


def test_result_type_refuses_what_is_not_a_number():
    with pytest.raises(TypeError, match="result_type"):
        tt.result_type(tt.ones(2), "a")
    with pytest.raises(TypeError, match="complex"):
        tt.result_type(tt.ones(2), 1j)


REFLECTED = {"%": lambda x, y: x % y, "//": lambda x, y: x // y, "&": lambda x, y: x & y,
             "|": lambda x, y: x | y, "^": lambda x, y: x ^ y, "divmod": lambda x, y: divmod(x, y)[1]}


@pytest.mark.parametrize("op", REFLECTED)
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "int64", "float16", "float32", "float64"])
def test_a_number_on_the_left_of_a_reflected_operator_ranks_below_a_0d_tensor(op, dtype):
    """Regression (fuzz, dev profile): 0 % t, 0 ^ t, 0 & t, 0 | t, 0 // t with a 0-d uint8 t gave
    int64 (the number became a 0-d int64 tensor, which won the promotion), 2.0 % t with a float16
    t float32; torch keeps the tensor's dtype. Same dtype and values as torch, or both raise."""
    fn = REFLECTED[op]
    if op == "divmod":   # torch's Tensor has no divmod: its __rmod__ is the reference
        fn = lambda x, y: divmod(x, y)[1] if isinstance(y, tt.Tensor) else x % y  # noqa: E731
    for shape in [(), (3,)]:
        data = np.array([3, 1, 2][:shape[0]] if shape else 3).astype(dtype)
        for number in (0, 5, -3, 2.0, True):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    want = fn(number, torch.from_numpy(data.copy()).to(DEVICE))
                except (RuntimeError, TypeError):
                    with pytest.raises((RuntimeError, TypeError)):
                        fn(number, tt.from_numpy(data.copy()))
                    continue
                got = fn(number, tt.from_numpy(data.copy()))
            case = (number, op, dtype, shape)
            assert _our_name(got.dtype) == _torch_name(want.dtype), case
            np.testing.assert_array_equal(got.numpy(), want.cpu().numpy(), err_msg=str(case))


def test_no_module_constant_is_a_numpy_float64_scalar():
    """Under NumPy 2's promotion a NumPy float64 scalar times a float32 array is a float64 array:
    a module-level constant such as ``np.sqrt(2 / np.pi)`` silently ran the float32 tanh-GELU in
    float64 (14x torch's time). The engine's constants are Python floats (weak: they take the
    array's dtype); this scan of every engine module keeps it so."""
    import importlib
    import pkgutil
    found = []
    for pkg in ("tinygrad_tx.ops", "tinygrad_tx.functional", "tinygrad_tx.nn", "tinygrad_tx.optim",
                "tinygrad_tx.autograd"):
        for info in pkgutil.iter_modules(importlib.import_module(pkg).__path__):
            module = importlib.import_module(f"{pkg}.{info.name}")
            for name, value in vars(module).items():
                values = value if isinstance(value, tuple) else (value,)
                if any(isinstance(v, np.floating) and v.dtype == np.float64 for v in values):
                    found.append(f"{module.__name__}.{name}")
    assert not found, f"NumPy float64 scalars as module constants (make them Python floats): {found}"


@pytest.mark.parametrize("op", ["__mul__", "__truediv__", "__floordiv__", "__add__", "__sub__", "__mod__", "__pow__",
                                "__rmul__", "__rtruediv__", "__rfloordiv__", "__radd__", "__rsub__", "__rmod__",
                                "__rpow__"])
def test_float16_with_a_number_or_wider_0d_tensor_is_torchs_bit_for_bit(op):
    """torch's CPU float16 kernels take a Python number (or a 0-d float32 tensor) at float32
    precision for *, / and // (and n / x16 is reciprocal(x) * n), but round it to float16 first
    for +, - and %: the thorough profile met x16 // 0.69 off by a whole unit. Every value of
    1,000 equals torch's, as do the dtypes."""
    a = np.random.default_rng(0).uniform(-3, 3, 1000).astype(np.float16)
    for number in (0.1, 3, 0.69, True, np.float32(0.69), "0-d float32", "0-d int64"):
        if isinstance(number, str):
            value = np.asarray(0.69, np.float32) if "float32" in number else np.asarray(2, np.int64)
            ours_arg, torch_arg = tt.tensor(value), torch.tensor(value, device=DEVICE)
        else:
            ours_arg = torch_arg = number
        try:
            want = getattr(torch.tensor(a, device=DEVICE), op)(torch_arg)
        except RuntimeError:
            with pytest.raises(RuntimeError):
                getattr(tt.tensor(a), op)(ours_arg)
            continue
        got = getattr(tt.tensor(a), op)(ours_arg)
        assert str(got.dtype).rsplit(".", 1)[-1] == str(want.dtype).rsplit(".", 1)[-1], (op, number)
        np.testing.assert_array_equal(got.numpy(), want.cpu().numpy(), err_msg=f"{op} {number!r}")


@pytest.mark.parametrize("mode", ["floor", "trunc"])
def test_float16_rounded_division_with_a_number_or_wider_0d_tensor_is_torchs(mode):
    """div(x16, s, rounding_mode=) with s a number or a 0-d float32/64 tensor on the right: torch
    computes ⌊x / s⌋ (or trunc) in float32 from s's own value, as for //. The thorough profile met
    float16 [0.69, 1.64, 0.66] 'floor' 0-d float32 0.69 = 1 (ours, s rounded to 0.68994) vs 0."""
    a = np.random.default_rng(1).uniform(-3, 3, 1000).astype(np.float16)
    a[:3] = [0.69, 1.64, 0.66]
    for s in (0.69, -1.3, np.asarray(0.69, np.float32), np.asarray(-2.7, np.float64)):
        ours_s, torch_s = (tt.tensor(s), torch.tensor(s, device=DEVICE)) if isinstance(s, np.ndarray) else (s, s)
        want = torch.div(torch.tensor(a, device=DEVICE), torch_s, rounding_mode=mode).cpu().numpy()
        got = tt.div(tt.tensor(a), ours_s, rounding_mode=mode).numpy()
        np.testing.assert_array_equal(got, want, err_msg=f"{mode} {s!r}")


def test_float16_floor_division_of_tensors_is_torchs():
    """x16 // y16 as torch's kernel computes it, each step rounded to float16
    (``_floor_div_half``); NumPy's float16 floor_divide rounds once and was a whole unit off
    on 38 of 1,000 quotients between 300 and 2,000. Zeros, infinities and NaN included."""
    rng = np.random.default_rng(3)
    for scale in (0.01, 1.0, 100.0):
        a = (rng.standard_normal(3000) * 3).astype(np.float16)
        b = (rng.standard_normal(3000) * scale).astype(np.float16)
        b[:3], a[3:5], b[5], a[6], a[7] = 0, 0, np.inf, np.inf, np.nan
        ta, tb = torch.tensor(a, device=DEVICE), torch.tensor(b, device=DEVICE)
        for got, want in ((tt.tensor(a) // tt.tensor(b), ta // tb),
                          (tt.div(tt.tensor(a), tt.tensor(b), rounding_mode="floor"),
                           torch.div(ta, tb, rounding_mode="floor"))):
            np.testing.assert_array_equal(got.numpy(), want.cpu().numpy(), err_msg=f"scale {scale}")


def test_float16_with_the_wider_operand_first_is_torchs_bit_for_bit():
    """torch's float32 precision for a number or a 0-d tensor is for its *second* operand: with a
    0-d float32 tensor first (s * x16, s / x16, s // x16, div(s, x16, rounding_mode=)) or a number
    first in a function call (mul(0.69, x16), floor_divide(0.69, x16)), it is rounded to float16
    first. A fresh run met 1.82 // float16 [0.25, -0.26, 1.28]: ours -7, torch -8. Operators
    with a number on the left stay torch's reflected forms (x16.__rmul__, reciprocal(x16) * n)."""
    rng = np.random.default_rng(5)
    a = rng.uniform(-2, 2, 1000).astype(np.float16)
    a[:3] = [0.25, -0.26, 1.28]
    ta = torch.tensor(a, device=DEVICE)
    for s in (1.82, -0.69, 2.7):
        s32 = np.asarray(s, np.float32)
        ours_s, torch_s = tt.tensor(s32), torch.tensor(s32, device=DEVICE)
        cases = [(lambda x, y: x * y, ours_s, torch_s), (lambda x, y: x / y, ours_s, torch_s),
                 (lambda x, y: x // y, ours_s, torch_s), (lambda x, y: x // y, s, s), (lambda x, y: x * y, s, s),
                 (lambda x, y: x / y, s, s)]
        for mode in ("floor", "trunc"):
            cases.append((lambda x, y, m=mode: (tt if isinstance(y, tt.Tensor) else torch).div(x, y, rounding_mode=m),
                          ours_s, torch_s))
        for lib in (tt, torch):
            cases.append((lambda x, y, lib=lib: (tt if isinstance(y, tt.Tensor) else torch).mul(x, y), s, s))
            cases.append((lambda x, y: (tt if isinstance(y, tt.Tensor) else torch).floor_divide(x, y), s, s))
        for k, (op, o, t) in enumerate(cases):
            want = op(t, ta).cpu().numpy()
            got = op(o, tt.tensor(a)).numpy()
            assert got.dtype == want.dtype == np.float16, (k, s)
            np.testing.assert_array_equal(got, want, err_msg=f"case {k}, s = {s}")


UNARY = ["erf", "erfc", "erfinv", "sinc", "expm1", "log1p", "exp2", "log2",
         "sigmoid", "tanh", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
         "atanh", "sqrt", "rsqrt", "reciprocal", "exp", "log", "log10", "abs", "neg", "sign", "trunc", "frac",
         "round", "floor", "ceil", "deg2rad", "rad2deg", "logit", "square", "relu"]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_unary_ops_keep_a_float_dtype_as_torch(dtype):
    """A float tensor's unary op keeps its dtype, as torch's. erfc and erfinv of float16 were
    float64 and float32 here (SciPy's ufuncs widen float16) until 2026-12-07."""
    x = np.array([0.5, 0.25, -0.125], dtype=dtype)
    wrong = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name in UNARY:
            ours = getattr(tt.from_numpy(x.copy()), name)()
            theirs = getattr(torch.from_numpy(x.copy()).to(DEVICE), name)()
            if str(ours.dtype).split(".")[-1] != str(theirs.dtype).split(".")[-1]:
                wrong.append((name, ours.dtype, theirs.dtype))
    assert not wrong
