"""The torch-shaped surface of Tensor: dtype objects, devices, casts, grad/data as Tensors,
the Python protocol, grad-mode switches, and the ``torch`` -> ``tinygrad_tx`` import shim."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import tinygrad_tx as tg
from tinygrad_tx import torch_shim
from reference.testing import DEVICE


# ============================================================================ dtypes and devices

@pytest.mark.parametrize("name", ["float16", "float32", "float64", "int32", "int64", "bool", "uint8", "int8",
                                  "int16"])
def test_dtype_objects_mirror_torchs_and_equal_numpy(name):
    ours, theirs = getattr(tg, name), getattr(torch, name)
    assert ours == np.dtype(name) and str(ours) == str(theirs).replace("torch", "tinygrad_tx")
    assert ours.is_floating_point == theirs.is_floating_point and ours.itemsize == theirs.itemsize
    assert tg.zeros(2, dtype=ours).dtype is ours
    assert np.zeros(2).astype(ours).dtype == np.dtype(name)
    assert {np.dtype(name): 1}[ours] == 1


def test_dtype_aliases_and_resolution():
    assert tg.long is tg.int64 and tg.float is tg.float32 and tg.double is tg.float64 and tg.half is tg.float16
    assert tg.dtypes.resolve(float) == np.float64 and tg.dtypes.resolve("long") == np.int64
    with pytest.raises(TypeError, match="unknown dtype name 'floot32'"):
        tg.dtypes.resolve("floot32")
    with pytest.raises(TypeError, match="dtype"):
        tg.dtypes.resolve(object())


def test_devices_cpu_only_with_a_clear_error():
    x = tg.ones(2)
    assert x.device == tg.device("cpu") == "cpu" and str(x.device) == "cpu" and not x.is_cuda
    assert x.to("cpu") is x and x.cpu() is x and x.to(tg.device("cpu:0")) is x
    for bad in ("cuda", "cuda:0", "mps"):
        with pytest.raises(RuntimeError, match="CPU only"):
            x.to(bad)
    with pytest.raises(RuntimeError, match="CPU only"):
        x.cuda()
    with pytest.raises(RuntimeError, match="CPU only"):
        tg.Tensor([1.0], device="cuda")


def test_to_forms_and_casts_follow_torch():
    x = tg.tensor([1.5, -2.0])
    t = torch.tensor([1.5, -2.0], device=DEVICE)
    for args in [(tg.float64,), ("cpu", tg.int64), (tg.tensor([1], dtype=tg.int32),)]:
        targs = tuple(getattr(torch, str(a).split(".")[-1]) if isinstance(a, tg.dtype) else
                      (torch.tensor([1], dtype=torch.int32, device=DEVICE) if isinstance(a, tg.Tensor) else a) for a in args)
        ours, theirs = x.to(*args), t.to(*targs)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        np.testing.assert_array_equal(ours.numpy(), theirs.cpu().numpy())
    assert x.to(dtype=tg.float64, copy=True).dtype == tg.float64
    assert x.to(tg.float32) is x and x.to(tg.float32, copy=True) is not x
    assert x.long().dtype == tg.int64 and x.int().dtype == tg.int32 and x.bool().dtype == tg.bool
    assert x.double().dtype == tg.float64 and x.half().dtype == tg.float16 and x.float() is x
    assert x.type() == "tinygrad_tx.FloatTensor" and x.type(tg.float64).dtype == tg.float64
    assert x.type("torch.LongTensor").dtype == tg.int64 and x.type_as(tg.tensor([1])).dtype == tg.int64


def test_cast_is_differentiable():
    x = tg.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = x.to(tg.float32) * 3
    y.sum().backward()
    assert x.grad.dtype == tg.float64
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


# ============================================================================ grad and data are Tensors

def test_grad_is_a_tensor_and_checked_on_assignment():
    x = tg.Tensor(np.ones(3), requires_grad=True)
    (x * x).sum().backward()
    assert isinstance(x.grad, tg.Tensor) and not x.grad.requires_grad
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])
    g = x.grad
    (x * x).sum().backward()
    assert x.grad is g and g.numpy().tolist() == [4.0, 4.0, 4.0]   # accumulated into the same Tensor
    with pytest.raises(TypeError, match="Tensor or None"):
        x.grad = np.ones(3)
    with pytest.raises(RuntimeError, match="different size"):
        x.grad = tg.ones(4, dtype=tg.float64)
    with pytest.raises(RuntimeError, match="different type"):
        x.grad = tg.ones(3)
    x.grad = None
    assert x.grad is None


def test_data_is_a_tensor_sharing_storage():
    x = tg.Tensor(np.arange(3.0), requires_grad=True)
    d = x.data
    assert isinstance(d, tg.Tensor) and not d.requires_grad and np.shares_memory(d.numpy(), x.detach().numpy())
    d[0] = 10.0
    assert x.detach()[0].item() == 10.0
    x.data = tg.zeros(3, dtype=tg.float64)
    assert x.detach().numpy().tolist() == [0.0, 0.0, 0.0] and x.requires_grad
    with pytest.raises(TypeError, match="Tensor"):
        x.data = np.ones(3)


# ============================================================================ Python protocol

def test_python_protocol_matches_torch():
    for T in (torch, tg):
        s = T.tensor(2.5)
        assert f"{s:.3f}" == "2.500" and float(s) == 2.5 and int(s) == 2 and bool(s)
        i = T.tensor(3)
        assert [10, 20, 30, 40][i] == 40 and range(10)[i] == 3 and i.item() == 3
        v = T.tensor([1.0, 2.0, 3.0])
        assert len(v) == 3 and [float(e) for e in v] == [1.0, 2.0, 3.0] and 2.0 in v and 5.0 not in v
        assert v.tolist() == [1.0, 2.0, 3.0] and np.asarray(v).tolist() == [1.0, 2.0, 3.0]
        with pytest.raises(RuntimeError):
            bool(v)
        with pytest.raises((RuntimeError, ValueError)):
            float(v)
        with pytest.raises(TypeError):
            [1, 2][T.tensor(1.0)]
        with pytest.raises(TypeError):
            len(T.tensor(1.0))
    assert "tensor(" in f"{tg.tensor([1.0, 2.0])}"
    with pytest.raises(TypeError, match="format"):
        f"{tg.tensor([1.0, 2.0]):.2f}"


def test_size_stride_and_introspection():
    x = tg.zeros(2, 3, 4)
    t = torch.zeros(2, 3, 4, device=DEVICE)
    assert x.size() == tuple(t.size()) and x.size(-1) == t.size(-1) and x.stride() == t.stride()
    assert x.numel() == tg.numel(x) == t.numel() and x.dim() == x.ndimension() == 3
    assert x.element_size() == t.element_size() and x.is_contiguous() and tg.is_tensor(x)
    assert not tg.is_tensor(np.zeros(2)) and tg.is_floating_point(x)


# ============================================================================ grad modes

def test_grad_mode_switches_as_torch():
    x = tg.ones(2, requires_grad=True)

    @tg.no_grad
    def bare(y):
        return y * 2

    @tg.inference_mode()
    def called(y):
        return y * 2

    @tg.inference_mode
    def bare_inference(y):
        return y * 2

    assert not bare(x).requires_grad and not called(x).requires_grad and not bare_inference(x).requires_grad
    with tg.inference_mode(False):
        assert (x * 2).requires_grad
    with tg.set_grad_enabled(False):
        assert not tg.is_grad_enabled()
    assert tg.is_grad_enabled()
    tg.set_grad_enabled(False)
    assert not tg.is_grad_enabled()
    tg.set_grad_enabled(True)

    @tg.set_grad_enabled(False)
    def decorated(y):
        return y * 2
    assert tg.is_grad_enabled() and not decorated(x).requires_grad and tg.is_grad_enabled()
    with tg.no_grad():
        with tg.enable_grad():
            assert (x * 2).requires_grad


# ============================================================================ torch -> tinygrad_tx

SCRIPT = textwrap.dedent("""
    import sys
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    x = torch.randn(8, 3)
    y = torch.randint(0, 2, (8,))
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for xb, yb in DataLoader(TensorDataset(x, y), batch_size=4):
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(type(loss).__module__, sys.argv[1:], f"{loss.item():.3f}" != "")
""")


def test_torch_imports_resolve_to_tinygrad_tx_and_are_restored(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    before = sys.modules.get("torch")
    code = subprocess.run([sys.executable, "-c", "import sys; from tinygrad_tx.torch_shim import run_file; "
                           f"sys.exit(run_file({str(script)!r}, ['--epochs', '1']))"],
                          capture_output=True, text=True, timeout=120)
    assert code.returncode == 0, code.stderr
    assert code.stdout.split() == ["tinygrad_tx", "['--epochs',", "'1']", "True"]   # torch's: "torch"
    with torch_shim.torch_as_tinygrad_tx():
        import torch as aliased
        import torch.nn.functional as aliased_f
        assert aliased.Tensor is tg.Tensor and aliased_f is tg.nn.functional is tg.functional   # torch reads
        # through to tinygrad_tx (all but __version__: tests/test_default_dtype.py)
    assert sys.modules.get("torch") is before   # the real torch is back


def test_missing_name_is_named(tmp_path, capsys):
    script = tmp_path / "uses_missing.py"
    script.write_text("import torch\ntorch.no_such_op_xyz(1)\n")
    with pytest.raises(AttributeError):
        torch_shim.run_file(str(script))
    assert "uses torch.no_such_op_xyz, which tinygrad_tx does not have" in capsys.readouterr().err
    script.write_text("from torch.nn import NoSuchLayerXyz\n")
    with pytest.raises(ImportError):
        torch_shim.run_file(str(script))
    assert "torch.nn.NoSuchLayerXyz" in capsys.readouterr().err
    script.write_text("import torch.no_such_module_xyz\n")
    with pytest.raises(ModuleNotFoundError, match="tinygrad_tx has no module 'tinygrad_tx.no_such_module_xyz'"):
        torch_shim.run_file(str(script))
    with pytest.raises(FileNotFoundError, match="no such file"):
        torch_shim.run_file(str(tmp_path / "absent.py"))


def test_engine_never_imports_torch():
    code = subprocess.run([sys.executable, "-c", "import sys, tinygrad_tx, tinygrad_tx.torch_shim; "
                           "print('torch' in sys.modules)"], capture_output=True, text=True, timeout=60)
    assert code.stdout.strip() == "False", code.stderr


def test_cli_run_executes_a_pytorch_script(tmp_path):
    script = tmp_path / "tiny.py"
    script.write_text("import sys\nimport torch\nx = torch.arange(4.0, requires_grad=True)\n"
                      "(x * x).sum().backward()\nprint(x.grad.tolist(), sys.argv[1:])\nsys.exit(3)\n")
    done = subprocess.run([sys.executable, "-m", "tinygrad_tx", "run", str(script), "--flag", "v"],
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "[0.0, 2.0, 4.0, 6.0] ['--flag', 'v']", done.stderr
    assert done.returncode == 3   # the script's exit status is the command's


# ============================================================================ edges of a hostile pass (issue 23)

def test_zero_dim_results_are_zero_dim_arrays_as_torchs():
    """np.asarray(t.argmax(0)) of a 1-D tensor raised "object __array__ method not producing an array":
    np.argmax gives a NumPy scalar, which the Tensor held. torch gives a 0-d array."""
    x = tg.tensor([1.0, 3.0, 2.0])
    for t, twin in [(x.argmax(0), torch.tensor([1.0, 3.0, 2.0], device=DEVICE).argmax(0)), (x.argmax(), None), (x.sum(), None),
                    (x.max(), None), (x[1], None)]:
        for got in (t.numpy(), np.asarray(t), np.array(t)):
            assert type(got) is np.ndarray and got.shape == () and got.dtype == t.dtype
    assert np.asarray(x.argmax(0)) == np.asarray(torch.tensor([1.0, 3.0, 2.0], device=DEVICE).argmax(0).cpu()) == 1


@pytest.mark.parametrize("first", [True, False])
def test_cat_with_a_legacy_empty_tensor_that_requires_grad_requires_grad(first):
    """torch skips a legacy empty (0,) tensor in cat but keeps it an input of CatBackward: the result
    requires grad and the empty tensor's gradient is empty; ours dropped requires_grad."""
    results = []
    for lib in (tg, torch):
        e = lib.zeros(0, requires_grad=True)
        x = lib.ones(2, 3)
        out = lib.cat([e, x] if first else [x, e], dim=0 if first else 1)
        assert out.requires_grad and tuple(out.shape) == (2, 3)
        out.sum().backward()
        results.append(tuple(e.grad.shape))
    assert results[0] == results[1] == (0,)
    y = tg.ones(2, 3, requires_grad=True)
    out = tg.cat([tg.zeros(0, requires_grad=True), y, tg.tensor([])])
    out.backward(tg.full((2, 3), 2.0))
    assert np.array_equal(y.grad.numpy(), np.full((2, 3), 2.0))


@pytest.mark.parametrize("index", [
    lambda lib: lib.zeros(0, dtype=lib.bool),
    lambda lib: lib.zeros(3, dtype=lib.bool),
    lambda lib: lib.zeros(2, 2, dtype=lib.bool),
    lambda lib: (slice(None), lib.zeros(2, dtype=lib.bool)),
    lambda lib: (Ellipsis, lib.zeros(3, dtype=lib.bool)),
    lambda lib: (None, lib.zeros(3, dtype=lib.bool)),
    lambda lib: (0, lib.zeros(0, dtype=lib.bool)),
])
def test_a_mask_of_the_wrong_shape_is_torchs_index_error(index):
    """An empty boolean mask of the wrong shape was accepted (NumPy reads it as an empty integer index)."""
    x, tx = tg.zeros(2, 3, 4), torch.zeros(2, 3, 4, device=DEVICE)
    with pytest.raises(IndexError) as theirs:
        tx[index(torch)]
    with pytest.raises(IndexError) as ours:
        x[index(tg)]
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(IndexError, match="The shape of the mask"):
        x[index(tg)] = 1.0
    assert tuple(x[tg.ones(2, 3, dtype=tg.bool)].shape) == (6, 4) and tuple(x[tg.tensor(True)].shape) == (1, 2, 3, 4)
