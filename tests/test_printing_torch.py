"""What the package prints is what torch prints, with ``tinygrad_tx`` in place of ``torch``
(issue 35, "output that prints as torch's"): ``repr``/``str`` of tensors over random shapes
(0-d, empty, summarised), dtypes, values (nan, inf, -0.0, magnitudes that switch scientific
notation, integer-valued floats) and print options (``set_printoptions``: precision,
threshold, edgeitems, linewidth, sci_mode, profiles); and of ``Size``, dtypes, devices,
``Parameter``, Modules and ``grad_fn`` nodes.

The printed text is the thing compared: torch runs on the CPU here (a CUDA tensor would add
``device='cuda:0'``, which the engine has no counterpart for).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

import tinygrad_tx as tg

pytestmark = pytest.mark.cpu_only(reason="printed text: a CUDA tensor's repr adds a device suffix")

DTYPES = ["float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"]


def as_ours(text: str) -> str:
    """torch's printed text with the package's name in place of ``torch``."""
    return text.replace("torch.", "tinygrad_tx.")


@pytest.fixture(autouse=True)
def _print_options_restored(monkeypatch):
    """Every test leaves both libraries' print options at their defaults.

    torch decides whether a suffix (``dtype=torch.int32``) still fits the line by its length;
    ``tinygrad_tx.int32`` is longer, so torch's rule runs here on the renamed suffixes (its own
    ``_add_suffixes``, given the names the package prints)."""
    import torch._tensor_str as torch_str
    original = torch_str._add_suffixes

    def renamed(tensor_str, suffixes, indent, force_newline):
        return original(tensor_str, [as_ours(s) for s in suffixes], indent, force_newline)

    monkeypatch.setattr(torch_str, "_add_suffixes", renamed)
    yield
    tg.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")


# ----------------------------------------------------------------------------- strategies

@st.composite
def shapes(draw):
    kind = draw(st.sampled_from(["scalar", "small", "small", "small", "empty", "large"]))
    if kind == "scalar":
        return ()
    if kind == "empty":
        dims = draw(st.lists(st.integers(0, 3), min_size=1, max_size=3))
        i = draw(st.integers(0, len(dims) - 1))
        dims[i] = 0
        return tuple(dims)
    if kind == "large":   # past the default threshold of 1000 elements: summarised
        return draw(st.sampled_from([(1001,), (1500,), (40, 30), (3, 400), (400, 3), (11, 10, 10), (2, 3, 7, 25)]))
    return tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=4)))


@st.composite
def arrays(draw, dtype=None, shape=None):
    """A NumPy array of a drawn dtype and shape whose values come from one drawn family."""
    dtype = dtype or draw(st.sampled_from(DTYPES))
    shape = draw(shapes()) if shape is None else shape
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = int(np.prod(shape))
    if dtype == "bool":
        return (rng.random(n) < draw(st.floats(0, 1))).reshape(shape)
    if dtype in ("int64", "int32", "int16", "int8", "uint8"):
        info = np.iinfo(dtype)
        hi = draw(st.sampled_from([1, 9, 100, 10**5, int(info.max)]))
        lo = 0 if dtype == "uint8" else -draw(st.sampled_from([0, 1, 9, 100, 10**5, int(-(info.min + 1))]))
        lo, hi = max(lo, int(info.min)), min(hi, int(info.max))
        return rng.integers(lo, hi, size=n, endpoint=True).astype(dtype).reshape(shape)
    family = draw(st.sampled_from(["normal", "integers", "wide", "tiny", "huge", "constant"]))
    scale = 10.0 ** draw(st.integers(-6, 9 if dtype != "float16" else 4))
    if family == "normal":
        x = rng.standard_normal(n) * scale
    elif family == "integers":
        x = np.round(rng.standard_normal(n) * scale)
    elif family == "wide":     # magnitudes over many decades: scientific notation
        x = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 9, size=n)
    elif family == "tiny":
        x = rng.standard_normal(n) * 1e-5
    elif family == "huge":
        x = rng.standard_normal(n) * 1e9
    else:
        x = np.full(n, draw(st.sampled_from([0.0, -0.0, 1.0, 0.5, -2.0, 1e-3, 123456.0])))
    specials = draw(st.sampled_from([0.0, 0.0, 0.1, 0.5]))
    if specials and n:
        pick = rng.random(n) < specials
        x[pick] = rng.choice([np.nan, np.inf, -np.inf, -0.0, 0.0], size=int(pick.sum()))
    with np.errstate(over="ignore"):
        return x.astype(dtype).reshape(shape)


print_options = st.fixed_dictionaries({}, optional={
    "precision": st.integers(0, 8),
    "threshold": st.sampled_from([0, 5, 20, 1000, math.inf]),
    "edgeitems": st.integers(0, 4),
    "linewidth": st.integers(10, 160),
    "sci_mode": st.sampled_from([None, True, False]),
    "profile": st.sampled_from(["default", "short", "full"]),
})


def both(a: np.ndarray, requires_grad=False):
    ours = tg.from_numpy(a.copy())
    ref = torch.from_numpy(a.copy())
    if requires_grad:
        ours.requires_grad_()
        ref.requires_grad_()
    return ours, ref


# ----------------------------------------------------------------------------- tensors

@given(a=arrays(), requires_grad=st.booleans())
def test_repr_matches_torch_default_options(a, requires_grad):
    ours, ref = both(a, requires_grad and a.dtype.kind == "f")
    assert repr(ours) == as_ours(repr(ref))
    assert str(ours) == as_ours(str(ref))


@given(a=arrays(), options=print_options)
def test_repr_matches_torch_under_print_options(a, options):
    tg.set_printoptions(**options)
    torch.set_printoptions(**options)
    ours, ref = both(a)
    assert repr(ours) == as_ours(repr(ref))


@given(a=arrays(dtype="float64"), options=print_options)
def test_repr_with_float64_default_dtype(a, options):
    """Under set_default_dtype(float64), float64 loses its dtype suffix and float32 gains one."""
    tg.set_default_dtype(tg.float64)
    torch.set_default_dtype(torch.float64)
    tg.set_printoptions(**options)
    torch.set_printoptions(**options)
    for arr in (a, a.astype(np.float32)):
        ours, ref = both(arr)
        assert repr(ours) == as_ours(repr(ref))


@pytest.mark.parametrize("values, dtype", [
    ([0.637, 1.0, 2.5], "float32"), (0.637, "float32"), (3.0, "float32"), (-0.0, "float32"),
    ([math.nan, math.inf, -math.inf], "float32"), ([math.nan, 1.0, -0.0], "float32"),
    ([1e-5, 1.0, 100.0], "float32"), ([1e9, 1.0], "float64"), ([123456789.0, 1.0], "float32"),
    ([[1, 2], [3, 4]], "int64"), ([[1, 2], [3, 4]], "int32"), ([True, False], "bool"), (7, "int64"),
    ([], "float32"), ([], "int64"), ([], "bool"), ([0.1, 0.2], "float16"), ([65504.0, 1e-3], "float16"),
])
def test_repr_fixed_cases(values, dtype):
    ours = tg.tensor(values, dtype=getattr(tg, dtype))
    ref = torch.tensor(values, dtype=getattr(torch, dtype))
    assert repr(ours) == as_ours(repr(ref))


def test_repr_examples_from_the_issue():
    """The outputs a learner compares with a tutorial's (issue 35)."""
    assert repr(tg.tensor([0.637, 1.5])) == "tensor([0.6370, 1.5000])"
    assert repr(tg.zeros(0, 3)) == "tensor([], size=(0, 3))"
    assert repr(tg.tensor(3.0)) == "tensor(3.)"
    assert repr(tg.tensor([1, 2], dtype=tg.int32)) == "tensor([1, 2], dtype=tinygrad_tx.int32)"
    x = tg.tensor([0.5, -1.0], requires_grad=True)
    assert repr(x) == "tensor([ 0.5000, -1.0000], requires_grad=True)"
    assert repr(x.tanh()) == "tensor([ 0.4621, -0.7616], grad_fn=<TanhBackward0>)"


def test_linewidth_wrapping_and_summary_match_torch():
    rng = np.random.default_rng(0)
    for shape in [(30,), (5, 30), (2000,), (50, 50), (3, 4, 100)]:
        a = rng.standard_normal(shape).astype(np.float32)
        ours, ref = both(a, requires_grad=True)
        assert repr(ours * 2) == as_ours(repr(ref * 2)).replace("MulBackward0", "MulBackward0")
        assert repr(ours) == as_ours(repr(ref))


def test_subclass_prefix_and_format():
    class MyTensor(tg.Tensor):
        pass

    class TorchTensor(torch.Tensor):
        pass

    a = np.array([1.5, 2.0], dtype=np.float32)
    ours = MyTensor(a)
    ref = torch.from_numpy(a).as_subclass(TorchTensor)
    assert repr(ours) == as_ours(repr(ref)).replace("TorchTensor", "MyTensor")
    assert f"{tg.tensor(2.5)}" == f"{torch.tensor(2.5)}"
    assert f"{tg.tensor([2.5, 1.0])}" == f"{torch.tensor([2.5, 1.0])}"


# ----------------------------------------------------------------------------- print options

def test_get_printoptions_and_profiles_match_torch():
    from torch._tensor_str import get_printoptions as torch_get
    assert tg.get_printoptions() == torch_get()
    for profile in ("short", "full", "default"):
        tg.set_printoptions(profile=profile)
        torch.set_printoptions(profile=profile)
        assert tg.get_printoptions() == torch_get()
    tg.set_printoptions(precision=2, sci_mode=True)
    torch.set_printoptions(precision=2, sci_mode=True)
    assert tg.get_printoptions() == torch_get()
    tg.set_printoptions(linewidth=40)          # sci_mode is reset to None by every call, as torch's
    torch.set_printoptions(linewidth=40)
    assert tg.get_printoptions() == torch_get()
