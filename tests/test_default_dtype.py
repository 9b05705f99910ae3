"""``set_default_dtype`` / ``get_default_dtype`` against torch 2.13, and ``torch.__version__`` under
``tinygrad-tx run``.

Every case is a function of the library (``torch`` is its parameter), run once with tinygrad_tx
and once with torch under the same default: the dtypes of what it builds must be equal, for the
defaults float64, float16 and float32 and back. tests/conftest.py restores both defaults after
every test.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import torch

import tinygrad_tx as tg
from tinygrad_tx import torch_shim
from reference.testing import DEVICE

DEFAULTS = ("float64", "float16", "float32")


def _name(dt) -> str:
    return str(dt).rsplit(".", 1)[-1]


def _both(default: str):
    tg.set_default_dtype(getattr(tg, default))
    torch.set_default_dtype(getattr(torch, default))


# ============================================================================ what the default decides

def _quietly(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # torch.range's deprecation
        return fn(*args)


F32, F64 = np.float32, np.float64

FACTORIES = {
    "tensor(1.5)": lambda torch: torch.tensor(1.5),
    "tensor([1, 2.0])": lambda torch: torch.tensor([1, 2.0]),
    "tensor([[0.5], [2]])": lambda torch: torch.tensor([[0.5], [2]]),
    "tensor([])": lambda torch: torch.tensor([]),
    "as_tensor([1.0])": lambda torch: torch.as_tensor([1.0]),
    "zeros(2)": lambda torch: torch.zeros(2),
    "ones(2, 3)": lambda torch: torch.ones(2, 3),
    "empty(2)": lambda torch: torch.empty(2),
    "full((2,), 1.5)": lambda torch: torch.full((2,), 1.5),
    "rand(2)": lambda torch: torch.rand(2),
    "randn(2)": lambda torch: torch.randn(2),
    "normal(0., 1., (2,))": lambda torch: torch.normal(0.0, 1.0, (2,)),
    "linspace(0, 1, 3)": lambda torch: torch.linspace(0, 1, 3),
    "logspace(0, 1, 3)": lambda torch: torch.logspace(0, 1, 3),
    "arange(0, 1, 0.25)": lambda torch: torch.arange(0, 1, 0.25),
    "arange(3.0)": lambda torch: torch.arange(3.0),
    "eye(2)": lambda torch: torch.eye(2),
    # integer results promoted to a float: true division, float math, a Python float operand
    "int / 2": lambda torch: torch.tensor([1, 2]) / 2,
    "int.sqrt()": lambda torch: torch.tensor([1, 4]).sqrt(),
    "int.exp()": lambda torch: torch.tensor([1, 2]).exp(),
    "int + 2.5": lambda torch: torch.tensor([1, 2]) + 2.5,
    "2.5 * bool": lambda torch: 2.5 * torch.tensor([True, False]),
    "int.clamp(0.5)": lambda torch: torch.tensor([0, 2]).clamp(0.5),
    "result_type(int, 2.5)": lambda torch: torch.result_type(torch.tensor([1]), 2.5),
    "int.true_divide(2)": lambda torch: torch.tensor([1]).true_divide(2),
    "atan2(int, int)": lambda torch: torch.atan2(torch.tensor([1]), torch.tensor([2])),
    "sigmoid(int)": lambda torch: torch.sigmoid(torch.tensor([1])),
    "int ** 0.5": lambda torch: torch.tensor([4]) ** 0.5,
    "2.5 ** int": lambda torch: 2.5 ** torch.tensor([2]),
    "int.mul(1.5)": lambda torch: torch.tensor([2]).mul(1.5),
    "clamp(int, min=0.5)": lambda torch: torch.clamp(torch.tensor([1, 2]), min=0.5),
    "where(c, int, 1.5)": lambda torch: torch.where(torch.tensor([True, False]), torch.tensor([1, 2]), 1.5),
    "tensor([tensor(1), 1.5])": lambda torch: torch.tensor([torch.tensor(1), 1.5]),
    "full((2,), np.float32(1.5))": lambda torch: torch.full((2,), np.float32(1.5)),
    "arange(0, 5, 2.0)": lambda torch: torch.arange(0, 5, 2.0),
    "logspace(0, 2, 3, base=2)": lambda torch: torch.logspace(0, 2, 3, base=2),
    "range(0, 2) (legacy)": lambda torch: _quietly(torch.range, 0, 2),
    "autograd.Variable()": lambda torch: torch.autograd.Variable(),
    "nn.Parameter()": lambda torch: torch.nn.Parameter(),
    "clip_grad_norm_ of no gradients": lambda torch: torch.nn.utils.clip_grad_norm_(
        [torch.nn.Parameter(torch.ones(2))], 1.0),
}

KEEPS = {   # what the default does not decide alone (equal to torch's, not always the default)
    "tensor(1)": lambda torch: torch.tensor(1),
    "tensor([True])": lambda torch: torch.tensor([True]),
    "arange(3)": lambda torch: torch.arange(3),
    "full((2,), 7)": lambda torch: torch.full((2,), 7),
    "randint(0, 3, (2,))": lambda torch: torch.randint(0, 3, (2,)),
    "tensor(np float32 array)": lambda torch: torch.tensor(np.array([1.0], dtype=F32)),
    "tensor(np float64 array)": lambda torch: torch.tensor(np.array([1.0], dtype=F64)),
    "tensor(np.float32(1))": lambda torch: torch.tensor(np.float32(1.0)),
    "tensor(np.float64(2.5))": lambda torch: torch.tensor(np.float64(2.5)),
    "as_tensor(np float32 array)": lambda torch: torch.as_tensor(np.ones(2, dtype=F32)),
    "from_numpy(float32)": lambda torch: torch.from_numpy(np.ones(2, dtype=F32)),
    "zeros_like(float32)": lambda torch: torch.zeros_like(torch.ones(2, dtype=torch.float32)),
    "ones_like(float64)": lambda torch: torch.ones_like(torch.ones(2, dtype=torch.float64)),
    "empty_like(float32)": lambda torch: torch.empty_like(torch.ones(2, dtype=torch.float32)),
    "rand_like(float32)": lambda torch: torch.rand_like(torch.ones(2, dtype=torch.float32)),
    "randn_like(float64)": lambda torch: torch.randn_like(torch.ones(2, dtype=torch.float64)),
    "float32 + 2.5": lambda torch: torch.ones(2, dtype=torch.float32) + 2.5,
    "float32 tensor / int": lambda torch: torch.ones(2, dtype=torch.float32) / 3,
    "int.float()": lambda torch: torch.tensor([1, 2]).float(),
    "int.double()": lambda torch: torch.tensor([1, 2]).double(),
    "zeros(2, dtype=float32)": lambda torch: torch.zeros(2, dtype=torch.float32),
    "full_like(int, 2.5)": lambda torch: torch.full_like(torch.tensor([1, 2]), 2.5),
    "int + 0-d float32": lambda torch: torch.tensor([2]) + torch.tensor(1.5, dtype=torch.float32),
    "F.pad(int, value=0.5)": lambda torch: torch.nn.functional.pad(torch.tensor([1, 2]), (1, 1), value=0.5),
    "one_hot": lambda torch: torch.nn.functional.one_hot(torch.tensor([0, 1])),
    "multinomial": lambda torch: torch.multinomial(torch.ones(2), 1),
    "randint_like(float32)": lambda torch: torch.randint_like(torch.ones(2, dtype=torch.float32), 3),
    # a NumPy float32 among Python floats: promoted with the default (float32 under float16)
    "tensor([np.float32(1.5), 2.0])": lambda torch: torch.tensor([np.float32(1.5), 2.0]),
}


@pytest.mark.parametrize("default", DEFAULTS)
@pytest.mark.parametrize("case", sorted({**FACTORIES, **KEEPS}))
def test_factory_dtype_follows_torch(default, case):
    make = FACTORIES.get(case) or KEEPS[case]
    _both(default)
    ours, theirs = make(tg), make(torch)
    assert _name(getattr(ours, "dtype", ours)) == _name(getattr(theirs, "dtype", theirs)), (default, case)
    if case in FACTORIES:
        assert _name(getattr(ours, "dtype", ours)) == default   # the case really follows the default


MODULES = {
    "Linear": lambda torch: torch.nn.Linear(3, 2),
    "Embedding": lambda torch: torch.nn.Embedding(5, 3),
    "LayerNorm": lambda torch: torch.nn.LayerNorm(4),
    "BatchNorm1d": lambda torch: torch.nn.BatchNorm1d(3),
    "GroupNorm": lambda torch: torch.nn.GroupNorm(2, 4),
    "Conv1d": lambda torch: torch.nn.Conv1d(2, 3, 3),
    "Conv2d": lambda torch: torch.nn.Conv2d(2, 3, 3),
    "ConvTranspose2d": lambda torch: torch.nn.ConvTranspose2d(2, 3, 3),
    "RNN": lambda torch: torch.nn.RNN(3, 4),
    "LSTM": lambda torch: torch.nn.LSTM(3, 4, num_layers=2),
    "GRU": lambda torch: torch.nn.GRU(3, 4, bidirectional=True),
    "MultiheadAttention": lambda torch: torch.nn.MultiheadAttention(4, 2),
    "TransformerEncoderLayer": lambda torch: torch.nn.TransformerEncoderLayer(4, 2, 8),
    "PReLU": lambda torch: torch.nn.PReLU(),
}


@pytest.mark.parametrize("default", DEFAULTS)
@pytest.mark.parametrize("layer", sorted(MODULES))
def test_new_layers_take_the_default(default, layer):
    """Parameters and buffers of a layer built after the call are in the default dtype (integer
    buffers such as num_batches_tracked stay int64); built before, they keep theirs."""
    before = MODULES[layer](tg)
    _both(default)
    ours, theirs = MODULES[layer](tg), MODULES[layer](torch)
    got = {k: _name(v.dtype) for k, v in ours.state_dict().items()}
    assert got == {k: _name(v.dtype) for k, v in theirs.state_dict().items()}
    assert any(v == default for v in got.values())
    assert {_name(v.dtype) for v in before.state_dict().values()} <= {"float32", "int64"}


@pytest.mark.parametrize("default", DEFAULTS)
def test_get_default_dtype_and_repr(default):
    _both(default)
    assert tg.get_default_dtype() is getattr(tg, default) and tg.dtypes.default_float() == np.dtype(default)
    # the repr names a dtype only where it is not the default, as torch's does
    for dt in ("float32", "float64"):
        assert ("dtype=" in repr(tg.ones(2, dtype=getattr(tg, dt)))) == \
               ("dtype=" in repr(torch.ones(2, dtype=getattr(torch, dt), device=DEVICE))), (default, dt)


@pytest.mark.parametrize("value", ["int64", "int32", "bool", "uint8", "complex64", "float64 name", "python float",
                                   "numpy float64", "None"])
def test_refused_as_torch_refuses(value):
    def arg(torch):
        others = {"float64 name": "float64", "python float": float, "numpy float64": np.float64, "None": None}
        return others[value] if value in others else getattr(torch, value)
    with pytest.raises(TypeError) as theirs:
        torch.set_default_dtype(arg(torch))
    with pytest.raises(TypeError) as ours:
        tg.set_default_dtype(arg(tg))
    assert str(theirs.value) in str(ours.value) and "set_default_dtype()" in str(ours.value)
    assert tg.get_default_dtype() is tg.float32   # nothing changed
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        tg.set_default_dtype()


def test_the_suite_restores_the_defaults():
    """tests/conftest.py's autouse fixture runs every test inside ``default_dtypes_kept``."""
    from conftest import default_dtypes_kept
    assert tg.get_default_dtype() is tg.float32 and torch.get_default_dtype() is torch.float32
    with default_dtypes_kept():
        _both("float64")
        assert tg.tensor(1.5).dtype == tg.float64 and torch.tensor(1.5, device=DEVICE).dtype == torch.float64
    assert tg.get_default_dtype() is tg.float32 and torch.get_default_dtype() is torch.float32
    assert tg.tensor(1.5).dtype == tg.float32 and tg.zeros(1).dtype == tg.float32


def test_set_default_dtype_is_public_and_import_changes_nothing():
    assert tg.set_default_dtype is tg.dtypes.set_default_dtype and "set_default_dtype" in tg.__all__
    done = subprocess.run([sys.executable, "-c", "import numpy as np; import tinygrad_tx as t; "
                           "print(t.get_default_dtype(), t.tensor(1.5).dtype, t.zeros(1).dtype)"],
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["tinygrad_tx.float32"] * 3, done.stderr


# ============================================================================ training under float64

def _train(torch, weights, x, y, opt_name, steps=3):
    """A 3-4-2 MLP built under the current default, given ``weights``, trained ``steps`` steps:
    (the dtypes of its parameters, the losses, the final parameters, the optimizer's step dtypes)."""
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    dtypes = [_name(p.dtype) for p in model.parameters()]
    model.load_state_dict({k: torch.tensor(v) for k, v in weights.items()})
    opt = getattr(torch.optim, opt_name)(model.parameters(), lr=0.1)
    inputs, targets = torch.tensor(x), torch.tensor(y)   # nested Python floats: the default dtype
    losses = []
    for _ in range(steps):
        loss = torch.nn.functional.cross_entropy(model(inputs), targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    params = {k: np.array(v.tolist()) for k, v in model.state_dict().items()}
    state = {k: _name(v.dtype) for s in opt.state.values() for k, v in s.items() if v.ndim == 0}
    return dtypes, losses, params, state


@pytest.mark.parametrize("opt_name", ["SGD", "Adam", "NAdam"])
def test_a_float64_model_trains_as_torchs(opt_name):
    """Under a float64 default a model built from the default dtype trains in float64: losses and
    parameters after three steps equal torch's to 1e-12. (NAdam keeps ``mu_product`` in the
    step dtype: had it stayed float32, the parameters would differ at ~1e-8.)"""
    rng = np.random.default_rng(0)
    weights = {"0.weight": rng.standard_normal((4, 3)), "0.bias": rng.standard_normal(4),
               "2.weight": rng.standard_normal((2, 4)), "2.bias": rng.standard_normal(2)}
    x = rng.standard_normal((5, 3)).tolist()
    y = [0, 1, 1, 0, 1]
    _both("float64")
    ours, theirs = _train(tg, weights, x, y, opt_name), _train(torch, weights, x, y, opt_name)
    assert ours[0] == theirs[0] == ["float64"] * 4
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12, atol=0)
    for k in theirs[2]:
        np.testing.assert_allclose(ours[2][k], theirs[2][k], rtol=1e-12, atol=1e-14, err_msg=k)
    assert ours[3] == theirs[3]   # step (and mu_product): float64, as torch's _get_scalar_dtype
    assert opt_name == "SGD" or set(ours[3].values()) == {"float64"}
    _both("float32")
    assert _train(tg, weights, x, y, opt_name)[0] == ["float32"] * 4   # and back


# ============================================================================ torch.__version__ under run

def test_torch_version_under_run(tmp_path):
    pytest.importorskip("packaging")
    script = tmp_path / "versions.py"
    script.write_text(textwrap.dedent("""
        import torch
        from packaging import version
        v = torch.__version__
        assert version.parse(v) >= version.parse("1.8") and version.parse(v) >= version.parse("2.0")
        assert not (version.parse(v) < version.parse("2.5"))
        assert int(v.split(".")[0]) >= 2 and int(v.split(".")[1]) >= 12
        major, minor = map(int, v.split(".")[:2])
        assert v >= "2.4" and v >= (2, 0) and not v < "2.4"
        torch.set_default_dtype(torch.float64)
        assert torch.tensor([1.5]).dtype == torch.float64 and torch.get_default_dtype() == torch.float64
        import tinygrad_tx
        print(v, major, minor, tinygrad_tx.__version__, torch.Tensor is tinygrad_tx.Tensor)
    """))
    done = subprocess.run([sys.executable, "-m", "tinygrad_tx", "run", str(script)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [f"2.13.0+tinygradtx.{tg.__version__}", "2", "13", tg.__version__, "True"]
    assert tg.__version__ == "0.1.0"


OPERANDS = ["2.4", "2.13", "2.13.0", "2.13.0+cpu", "2.13.0+zz", "2.13.0+tinygradtx.0.1.1", "2.13.1", "2.14",
            "1.12.1", "3", "v2.0", (2, 0), (2, 13), (2, 13, 0), (2, 14), [1, 8], "parrot"]


@pytest.mark.parametrize("other", OPERANDS, ids=str)
def test_version_compares_as_torchs_version(other):
    """Our ``torch.__version__`` against torch's own ``TorchVersion`` of the same string: equal
    answers for <, <=, >, >= with release strings (local labels too) and tuples."""
    from torch.torch_version import TorchVersion as TheirVersion
    ours = torch_shim.torch_version()
    theirs = TheirVersion(str(ours))
    for op in ("__lt__", "__le__", "__gt__", "__ge__"):
        assert getattr(ours, op)(other) == getattr(theirs, op)(other), (op, other)


def test_version_compares_a_pre_release_as_a_str():
    """What ours does not parse (a pre-release) it compares as a str, as its docstring says."""
    ours = torch_shim.torch_version()
    for other in ("2.0.0a0", "2.13.0rc1", "10.0.dev1"):
        assert (ours < other) == (str(ours) < other) and (ours >= other) == (str(ours) >= other)


def test_torch_alias_reads_through_and_is_restored():
    before = sys.modules.get("torch")
    with torch_shim.torch_as_tinygrad_tx():
        import torch as aliased
        from torch import nn
        assert aliased is not tg and aliased.Tensor is tg.Tensor and nn is tg.nn
        assert aliased.set_default_dtype is tg.set_default_dtype and "Tensor" in dir(aliased)
        assert aliased.__version__ == torch_shim.torch_version() and tg.__version__ == "0.1.0"
    assert sys.modules.get("torch") is before
