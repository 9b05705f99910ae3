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


# ----------------------------------------------------------------------------- Size, dtype, device

def test_size_dtype_device_print_as_torch():
    t, r = tg.zeros(256, 784), torch.zeros(256, 784)
    for ours, theirs in [(t.shape, r.shape), (t.size(), r.size()), (tg.Size([]), torch.Size([])), (t.shape[1:], r.shape[1:])]:
        assert repr(ours) == str(ours) == f"{ours}" == as_ours(repr(theirs)) == as_ours(str(theirs))
    assert str(t.shape) == "tinygrad_tx.Size([256, 784])"
    for name in ["float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"]:
        ours, theirs = getattr(tg, name), getattr(torch, name)
        assert repr(ours) == str(ours) == as_ours(repr(theirs)) == as_ours(str(theirs))
    assert repr(tg.float) == "tinygrad_tx.float32" and repr(tg.long) == "tinygrad_tx.int64"
    for ours, theirs in [(tg.device("cpu"), torch.device("cpu")), (tg.device("cpu:0"), torch.device("cpu:0")),
                         (tg.device("cpu", 0), torch.device("cpu", 0))]:
        assert repr(ours) == repr(theirs) and str(ours) == str(theirs)
    assert repr(t.dtype) == "tinygrad_tx.float32" and str(t.device) == "cpu"


# ----------------------------------------------------------------------------- Parameter, modules

@given(a=arrays(dtype="float32"))
def test_parameter_repr_matches_torch(a):
    ours, ref = tg.nn.Parameter(tg.from_numpy(a.copy())), torch.nn.Parameter(torch.from_numpy(a.copy()))
    assert repr(ours) == as_ours(repr(ref))
    assert repr(tg.nn.Parameter(tg.from_numpy(a.copy()), requires_grad=False)) == \
        as_ours(repr(torch.nn.Parameter(torch.from_numpy(a.copy()), requires_grad=False)))


def _modules(nn, zeros):
    return [
        nn.Linear(3, 4), nn.Linear(3, 4, bias=False), nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.Conv1d(3, 8, 3),
        nn.ReLU(), nn.ReLU(inplace=True), nn.GELU(), nn.GELU(approximate="tanh"), nn.Tanh(), nn.Sigmoid(),
        nn.Dropout(0.1), nn.LayerNorm(8), nn.Embedding(10, 4), nn.Embedding(10, 4, padding_idx=0), nn.BatchNorm2d(8),
        nn.BatchNorm1d(8), nn.MaxPool2d(2), nn.AvgPool2d(2), nn.Flatten(), nn.Softmax(dim=-1), nn.LogSoftmax(dim=1),
        nn.LeakyReLU(0.2), nn.Identity(), nn.SiLU(), nn.ELU(), nn.Hardtanh(), nn.MaxPool1d(3, stride=2),
        nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10)),
        nn.Sequential(*[nn.Linear(4, 4) for _ in range(3)], nn.ReLU()),
        nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)]), nn.ModuleDict({"a": nn.ReLU(), "b": nn.Linear(2, 3)}),
        nn.LSTM(4, 8, num_layers=2, batch_first=True), nn.GRU(4, 8), nn.RNN(4, 8), nn.MultiheadAttention(8, 2),
        nn.TransformerEncoderLayer(8, 2, 16), nn.CrossEntropyLoss(), nn.MSELoss(), nn.Upsample(scale_factor=2),
        nn.AdaptiveAvgPool2d((1, 1)), nn.ConvTranspose2d(3, 4, 2, stride=2), nn.GroupNorm(2, 8), nn.Unflatten(1, (2, 3)),
        nn.RMSNorm(8), nn.ZeroPad2d(1),
        nn.ParameterList([]), nn.ParameterList([nn.Parameter(zeros(2))]),
        nn.ParameterList([nn.Parameter(zeros(2)), nn.Parameter(zeros(3, 2))]),
        nn.ParameterDict({"w": nn.Parameter(zeros(2, 3).double())}),
        nn.ParameterDict({"w": nn.Parameter(zeros(2, 3)), "b": nn.Parameter(zeros(3).half())}),
    ]


def test_module_reprs_match_torch():
    ours, theirs = _modules(tg.nn, tg.zeros), _modules(torch.nn, torch.zeros)
    for m, r in zip(ours, theirs):
        assert repr(m) == as_ours(repr(r)), repr(r)
        assert str(m) == repr(m)


# ----------------------------------------------------------------------------- grad_fn

rng0 = np.random.default_rng(0)
_A, _B, _V, _C3 = (rng0.standard_normal(s) for s in [(3, 4), (4, 5), (4,), (2, 3, 4)])
_IMG = rng0.standard_normal((1, 2, 4, 4))


def _graph_cases(L, F):
    def x(a=_A):
        return L.tensor(a, requires_grad=True)
    return {
        "x[0]": lambda: x()[0], "x[0, 1]": lambda: x()[0, 1], "x[1:]": lambda: x()[1:], "x[:, 1:]": lambda: x()[:, 1:],
        "x[[0, 2]]": lambda: x()[[0, 2]], "x[mask]": lambda: x()[x().detach() > 0], "x[None]": lambda: x()[None],
        "x[..., 0]": lambda: x()[..., 0], "x[0, 1:]": lambda: x()[0, 1:], "x[0, None]": lambda: x()[0, None],
        "cross_entropy": lambda: F.cross_entropy(x(), L.tensor([0, 1, 2])),
        "cross_entropy 3-d": lambda: F.cross_entropy(x(_C3), L.zeros(2, 4, dtype=L.long)),
        "cross_entropy smoothing": lambda: F.cross_entropy(x(), L.tensor([0, 1, 2]), label_smoothing=0.1),
        "nll_loss": lambda: F.nll_loss(x(), L.tensor([0, 1, 2])),
        "mm": lambda: x() @ x(_B), "mv": lambda: x() @ x(_V), "dot": lambda: x(_V) @ x(_V), "vm": lambda: x(_V) @ x(_B),
        "batched matmul": lambda: x(_C3) @ x(_B), "bmm": lambda: L.bmm(x(_C3), x(_C3).transpose(1, 2)),
        "linear": lambda: F.linear(x(), x(_B.T), x(_B[0])), "linear no bias": lambda: F.linear(x(), x(_B.T)),
        "linear 3-d": lambda: F.linear(x(_C3), x(_B.T), x(_B[0])), "linear 3-d no bias": lambda: F.linear(x(_C3), x(_B.T)),
        "addmm": lambda: L.addmm(x(_A[:, :1]), x(), x(_B)),
        "tanh": lambda: x().tanh(), "add": lambda: x() + x(), "1 - x": lambda: 1 - x(), "2 ** x": lambda: 2 ** x(),
        "sum": lambda: x().sum(), "sum(1)": lambda: x().sum(1), "sum((0, 1))": lambda: x().sum((0, 1)),
        "mean": lambda: x().mean(), "mean(0)": lambda: x().mean(0), "max": lambda: x().max(), "min": lambda: x().min(),
        "max(1)": lambda: x().max(1)[0], "min(0)": lambda: x().min(0)[0], "sort": lambda: x().sort(1)[0],
        "topk": lambda: x().topk(2)[0], "median(1)": lambda: x().median(1)[0], "kthvalue": lambda: x().kthvalue(2, 1)[0],
        "cummax": lambda: x().cummax(1)[0], "cummin": lambda: x().cummin(1)[0], "cumsum": lambda: x().cumsum(1),
        "view": lambda: x().view(12), "reshape": lambda: x().reshape(12), "reshape of a transpose": lambda: x().t().reshape(12),
        "flatten": lambda: x(_C3).flatten(1), "unsqueeze": lambda: x().unsqueeze(0), "squeeze()": lambda: x()[None].squeeze(),
        "squeeze(0)": lambda: x()[None].squeeze(0), "squeeze((0,))": lambda: x()[None].squeeze((0,)),
        "t": lambda: x().t(), "T": lambda: x().T, "mT": lambda: x(_C3).mT, "transpose": lambda: x(_C3).transpose(0, 1),
        "permute": lambda: x(_C3).permute(2, 0, 1), "split": lambda: x().split(2)[1], "chunk": lambda: x().chunk(2)[0],
        "unbind": lambda: x().unbind(0)[1], "float": lambda: x().float(), "to": lambda: x().to(L.float32),
        "softmax": lambda: F.softmax(x(), -1), "log_softmax": lambda: F.log_softmax(x(), -1), "layer_norm": lambda: F.layer_norm(x(), (4,)),
        "conv2d": lambda: F.conv2d(x(_IMG), x(rng0.standard_normal((3, 2, 3, 3)))), "max_pool2d": lambda: F.max_pool2d(x(_IMG), 2),
        "avg_pool2d": lambda: F.avg_pool2d(x(_IMG), 2), "batch_norm": lambda: F.batch_norm(x(), None, None, training=True),
        "pad": lambda: F.pad(x(), (1, 1)), "clamp": lambda: x().clamp(-1, 1), "norm": lambda: x().norm(),
        "logsumexp": lambda: x().logsumexp(1), "log1p": lambda: x().abs().log1p(), "square": lambda: x().square(),
        "tril": lambda: x().tril(), "triu": lambda: x().triu(), "embedding": lambda: F.embedding(L.tensor([0, 1]), x()),
        "nn.Linear": lambda: L.nn.Linear(4, 5).double()(x()),
        **{f"{loss} {reduction}": (lambda loss=loss, reduction=reduction: getattr(F, loss)(
            x().sigmoid() if loss == "binary_cross_entropy" else x(), L.tensor(_A).sigmoid(), reduction=reduction))
           for loss in ["mse_loss", "l1_loss", "huber_loss", "smooth_l1_loss", "binary_cross_entropy",
                        "binary_cross_entropy_with_logits"] for reduction in ["mean", "sum", "none"]},
        "mse_loss weighted": lambda: F.mse_loss(x(), L.tensor(_A), weight=L.tensor(_A).abs()),
        "2 / x": lambda: 2 / x(), "diag of a matrix": lambda: L.diag(x(_A[:3, :3])), "diag of a vector": lambda: L.diag(x(_V)),
        "group_norm": lambda: F.group_norm(x(_C3), 1), "instance_norm": lambda: F.instance_norm(x(_C3)),
    }


@pytest.mark.parametrize("case", list(_graph_cases(torch, torch.nn.functional)))
def test_grad_fn_names_match_torch(case):
    ours = _graph_cases(tg, tg.nn.functional)[case]()
    theirs = _graph_cases(torch, torch.nn.functional)[case]()
    name = type(theirs.grad_fn).__name__
    assert ours.grad_fn.name() == name
    assert repr(ours.grad_fn).startswith(f"<{name} object at 0x")
    assert f"grad_fn=<{name}>" in repr(ours)


def test_grad_fn_keeps_its_name_after_backward():
    x = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x[0]
    loss = tg.nn.functional.cross_entropy(x, tg.tensor([0, 1]))
    (y.sum() + loss).backward()
    assert y.grad_fn.name() == "SelectBackward0" and loss.grad_fn.name() == "NllLossBackward0"
    assert repr(y) == "tensor([1., 2.], grad_fn=<SelectBackward0>)"
