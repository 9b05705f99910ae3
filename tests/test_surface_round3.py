"""Issue 35's API surface, against torch 2.13: the ``keepdims=`` alias and the names in argument
errors; ``nn.parallel``, ``backends.cudnn``, the ``is_*`` attributes and the memory formats;
``tensor == None`` and the other comparisons with non-tensors; ``select``,
``register_post_accumulate_grad_hook`` and ``is_anomaly_enabled``. (The in-place methods and
the deprecated overloads are in ``test_surface_round3_inplace.py``.) Every list of names is
computed from torch's own ``dir()`` and signatures, not written by hand."""
from __future__ import annotations

import inspect
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import tinygrad_tx as tg
from reference.testing import DEVICE, check_parity


def _values(out):
    """A result as nested lists of arrays (tuples and named tuples flattened in order)."""
    if isinstance(out, (tuple, list)):
        return [_values(o) for o in out]
    if isinstance(out, torch.Tensor):
        return out.detach().cpu().numpy()
    if isinstance(out, tg.Tensor):
        return out.detach().numpy()
    return out


def _assert_same(ours, theirs):
    ours, theirs = _values(ours), _values(theirs)
    if isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _assert_same(a, b)
        return
    a, b = np.asarray(ours), np.asarray(theirs)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=1e-12, atol=0)


# ============================================================================ 1. keepdims=

_FORMS = (((), {}), ((1,), {}), ((), {"dim": 1}))   # no dim, dim positional, dim by keyword


def _torch_keepdims_names(kind: str):
    """(name, args, kwargs) for every torch Tensor method (kind "method") or torch function
    (kind "function") that accepts ``keepdims=True`` in one of ``_FORMS`` on a (3, 4) float64
    tensor: torch's argument parser takes the alias wherever an op has ``keepdim``."""
    x = torch.randn(3, 4, dtype=torch.float64, device=DEVICE)
    names = sorted(n for n in (dir(torch.Tensor) if kind == "method" else dir(torch)) if not n.startswith("_"))
    found = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in names:
            try:
                f = getattr(x, name) if kind == "method" else getattr(torch, name)
            except Exception:
                continue
            if not callable(f) or isinstance(f, type):
                continue
            for args, kwargs in _FORMS:
                try:
                    kept, dropped = ((f(*args, keepdims=k, **kwargs) if kind == "method" else
                                      f(x, *args, keepdims=k, **kwargs)) for k in (True, False))
                except Exception:
                    continue
                if np.shape(_values(kept)[0] if isinstance(kept, tuple) else _values(kept)) != \
                        np.shape(_values(dropped)[0] if isinstance(dropped, tuple) else _values(dropped)):
                    found.append((name, args, kwargs))   # the alias reached keepdim (not swallowed by **kwargs)
                    break
    return found


# ops torch has that take keepdims but this engine lacks altogether (not an alias problem: the op is missing)
MISSING_OPS = {"nanmedian", "nanquantile", "quantile", "hash_tensor", "frobenius_norm", "nuclear_norm"}


@pytest.mark.parametrize("kind", ["method", "function"])
def test_keepdims_alias_wherever_torch_takes_it(kind):
    found = _torch_keepdims_names(kind)
    names = {n for n, _, _ in found}
    assert {"sum", "mean", "max", "min", "amax", "amin", "logsumexp", "std", "var", "prod", "any", "all"} <= names
    data = np.random.default_rng(0).standard_normal((3, 4))
    checked = 0
    for name, args, kwargs in found:
        ours_f = getattr(tg.Tensor, name, None) if kind == "method" else getattr(tg, name, None)
        if ours_f is None:
            assert name in MISSING_OPS, f"torch's {name} takes keepdims=, and this engine has no {name}"
            continue
        x, t = tg.tensor(data), torch.tensor(data, device=DEVICE)
        if kind == "method":
            ours, theirs = getattr(x, name)(*args, keepdims=True, **kwargs), getattr(t, name)(*args, keepdims=True, **kwargs)
            same = getattr(x, name)(*args, keepdim=True, **kwargs)
        else:
            ours, theirs = ours_f(x, *args, keepdims=True, **kwargs), getattr(torch, name)(t, *args, keepdims=True, **kwargs)
            same = ours_f(x, *args, keepdim=True, **kwargs)
        _assert_same(ours, theirs)
        _assert_same(same, theirs)
        checked += 1
    assert checked >= 20


def test_keepdims_in_nn_functional_and_linalg():
    a, b = np.random.default_rng(5).standard_normal((2, 3, 4))
    check_parity(lambda x, y: tg.nn.functional.pairwise_distance(x, y, keepdims=True),
                 lambda x, y: torch.nn.functional.pairwise_distance(x, y, keepdims=True), a, b)
    for name, kwargs in (("vector_norm", {"dim": 1}), ("matrix_norm", {}), ("norm", {"dim": 0})):
        check_parity(lambda x: getattr(tg.linalg, name)(x, keepdims=True, **kwargs),
                     lambda x: getattr(torch.linalg, name)(x, keepdims=True, **kwargs), a)


def test_keepdims_gradient_and_refusals():
    check_parity(lambda x: x.sum(1, keepdims=True), lambda x: x.sum(1, keepdims=True),
                 np.random.default_rng(1).standard_normal((3, 4)))
    check_parity(lambda x: tg.logsumexp(x, 0, keepdims=True), lambda x: torch.logsumexp(x, 0, keepdims=True),
                 np.random.default_rng(2).standard_normal((3, 4)))
    check_parity(lambda x: x.std(dim=1, keepdims=True), lambda x: x.std(dim=1, keepdims=True),
                 np.random.default_rng(3).standard_normal((3, 4)))
    x = tg.randn(3, 4)
    with pytest.raises(TypeError, match=r"^sum\(\)"):
        x.sum(1, keepdim=True, keepdims=True)
    with pytest.raises(TypeError, match=r"^sum\(\) got an unexpected keyword argument 'keepdimz'"):
        x.sum(1, keepdimz=True)
    # torch.norm (a Python function in torch) does not take the alias: neither does ours
    with pytest.raises(TypeError):
        torch.norm(torch.randn(3, 4, device=DEVICE), dim=1, keepdims=True)
    with pytest.raises(TypeError):
        tg.norm(x, dim=1, keepdims=True)


def _public_methods():
    for name in sorted(dir(tg.Tensor)):
        if name.startswith("_"):
            continue
        attr = inspect.getattr_static(tg.Tensor, name)
        if isinstance(attr, (property, staticmethod, classmethod)) or not inspect.isfunction(attr):
            continue
        yield name


def test_argument_errors_name_the_method_called():
    """Every method and function: an unexpected keyword names the method the user called (not
    ``sum_``, ``_float_math.<locals>.method`` or, for ``add_``, ``add``)."""
    checked = 0
    for name in _public_methods():
        x = tg.randn(3, 4)
        try:
            getattr(x, name)(bogus_argument=1)
        except TypeError as e:
            if "unexpected keyword argument 'bogus_argument'" in str(e):
                assert str(e).startswith((f"{name}()", f"Tensor.{name}()")), (name, str(e))
                checked += 1
        except Exception:
            pass
    assert checked >= 300
    checked = 0
    for name in sorted(n for n in dir(tg) if not n.startswith("_") and n in dir(torch)):
        f = getattr(tg, name)
        if not inspect.isfunction(f):
            continue
        try:
            f(tg.randn(3, 4), bogus_argument=1)
        except TypeError as e:
            if "unexpected keyword argument 'bogus_argument'" in str(e):   # (a Tensor class method: Tensor.exp())
                assert str(e).startswith((f"{name}()", f"Tensor.{name}()")), (name, str(e))
                checked += 1
        except Exception:
            pass
    assert checked >= 150


@pytest.mark.parametrize("call, message", [
    (lambda x: x.add_(1, 2, 3), r"^add_\(\)"),
    (lambda x: x.add_(None), r"^add_\(\): argument 'other' \(position 1\) must be Tensor, not NoneType"),
    (lambda x: x.add(None), r"^add\(\): argument 'other' \(position 1\) must be Tensor, not NoneType"),
    (lambda x: x.clamp_(foo=1), r"^clamp_\(\)"),
    (lambda x: x.clip(foo=1), r"^clip\(\)"),
    (lambda x: x.sub_(x, x), r"^sub_\(\)"),
    (lambda x: x.unsqueeze_(1, 2), r"^unsqueeze_\(\)"),
    (lambda x: tg.sum(x, foo=1), r"^sum\(\)"),
])
def test_in_place_and_alias_errors_name_the_call(call, message):
    with pytest.raises(TypeError, match=message):
        call(tg.randn(3, 4))


def test_torch_names_the_in_place_method_too():
    t = torch.randn(3, device=DEVICE)
    with pytest.raises(TypeError, match=r"^add_\(\): argument 'other' \(position 1\) must be Tensor, not NoneType"):
        t.add_(None)


# ============================================================================ 2. nn.parallel, cudnn, is_*, formats

@pytest.mark.cpu_only(reason="DataParallel as torch behaves without an accelerator")
def test_data_parallel_as_torch_without_gpus():
    import tinygrad_tx.nn.parallel as P
    assert P.DataParallel is tg.nn.DataParallel
    torch.manual_seed(0)
    ref = torch.nn.Linear(4, 3).double()
    ours = tg.nn.Linear(4, 3).double()
    ours.load_state_dict({k: tg.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    dr, do = torch.nn.DataParallel(ref), tg.nn.DataParallel(ours)
    assert repr(do) == repr(dr)
    assert list(do.state_dict()) == list(dr.state_dict()) == ["module.weight", "module.bias"]
    assert do.device_ids == dr.device_ids == [] and do.module is ours
    x = np.random.default_rng(0).standard_normal((5, 4))
    out_r, out_o = dr(torch.tensor(x)), do(tg.tensor(x))
    g = np.random.default_rng(1).standard_normal((5, 3))
    out_r.backward(torch.tensor(g))
    out_o.backward(tg.tensor(g))
    np.testing.assert_allclose(out_o.detach().numpy(), out_r.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours.weight.grad.numpy(), ref.weight.grad.numpy(), rtol=1e-12)
    assert len(list(do.parameters())) == len(list(dr.parameters())) == 2
    for lib, mod in ((torch.nn.parallel, ref), (P, ours)):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            lib.DistributedDataParallel(mod)
        with pytest.raises(RuntimeError, match="device type could not be determined"):
            lib.data_parallel(mod, torch.zeros(2, 4) if lib is torch.nn.parallel else tg.zeros(2, 4))


def test_cudnn_flags_have_torchs_defaults():
    """Compared with a fresh torch process (this test process's reference kit turns TF32 off)."""
    code = ("import torch, json; c = torch.backends.cudnn; print(json.dumps([c.enabled, c.benchmark, "
            "c.deterministic, c.allow_tf32, c.is_available(), c.version(), c.benchmark_limit]))")
    import json
    torch_flags = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                            check=True).stdout)
    out = subprocess.run([sys.executable, "-c", code.replace("import torch", "import tinygrad_tx as torch")],
                         capture_output=True, text=True, check=True, env=None).stdout
    assert json.loads(out) == torch_flags
    import tinygrad_tx.backends.cudnn as cudnn
    assert cudnn is tg.backends.cudnn
    before = (cudnn.enabled, cudnn.benchmark, cudnn.deterministic)
    with cudnn.flags(enabled=False, benchmark=True, deterministic=True):
        assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (False, True, True)
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == before
    old = cudnn.benchmark
    try:
        cudnn.benchmark = True        # what teaching code does
        assert tg.backends.cudnn.benchmark is True
    finally:
        cudnn.benchmark = old
    assert cudnn.is_acceptable(tg.zeros(2)) is False


def _cpu_tensors():
    """Pairs (ours, torch CPU) of the kinds the is_* answers depend on."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4))
    out = []
    for arr in (a, a.astype(np.float32), (a * 10).astype(np.int64), (a * 10).astype(np.int32), np.abs(a * 10).astype(np.uint8),
                a > 0, np.array(0.0), np.array([2.5]), np.zeros((0, 3))):
        out.append((tg.tensor(arr), torch.tensor(arr, device=DEVICE).cpu()))
    return out


@pytest.mark.cpu_only(reason="is_cpu/is_cuda & co. describe where the tensor lives: compared with torch's CPU tensors")
def test_is_attributes_from_torchs_list():
    names = [n for n in dir(torch.Tensor) if n.startswith("is_")]
    assert len(names) >= 25
    probe = torch.zeros(2)
    for name in names:
        assert hasattr(tg.Tensor, name), name
        theirs_callable = callable(getattr(probe, name))
        assert callable(getattr(tg.zeros(2), name)) == theirs_callable, name
    for ours, theirs in _cpu_tensors():
        for name in names:
            t_attr, o_attr = getattr(theirs, name), getattr(ours, name)
            if not callable(t_attr):
                assert o_attr == t_attr, (name, theirs.dtype)
                continue
            if name in ("is_same_size", "is_set_to"):
                continue
            try:
                expected = t_attr()
            except Exception as e:   # is_coalesced on a dense tensor, is_nonzero of several values
                with pytest.raises(type(e), match=str(e).split(".")[0][:40]):
                    o_attr()
                continue
            assert o_attr() == expected, (name, theirs.dtype, theirs.shape)


@pytest.mark.cpu_only(reason="memory sharing and shared memory of CPU tensors")
def test_is_same_size_is_set_to_and_shared():
    x, t = tg.randn(4, 3), torch.randn(4, 3, device=DEVICE).cpu()
    cases = [lambda v: (v, v), lambda v: (v, v[:2]), lambda v: (v, v.reshape(3, 4)), lambda v: (v, v.clone()),
             lambda v: (v[1:], v[1:]), lambda v: (v, v.detach()), lambda v: (v.t(), v.t())]
    for make in cases:
        a, b = make(x)
        ta, tb = make(t)
        assert a.is_same_size(b) == ta.is_same_size(tb)
        assert a.is_set_to(b) == ta.is_set_to(tb)
    assert not x.is_shared() and not t.is_shared()
    assert x.share_memory_() is x and t.share_memory_() is t
    assert x.is_shared() and t.is_shared() and x[1:].is_shared() and t[1:].is_shared()
    with pytest.raises(TypeError, match="is_same_size"):
        x.is_same_size(3)
    ours, ref = tg.nn.Linear(2, 3), torch.nn.Linear(2, 3)
    assert ours.share_memory() is ours and ref.share_memory() is ref
    assert all(p.is_shared() for p in ours.parameters()) and all(p.is_shared() for p in ref.parameters())


def test_top_level_is_functions():
    for name in [n for n in dir(torch) if n.startswith("is_") and n in ("is_complex", "is_conj", "is_nonzero",
                                                                         "is_same_size", "is_signed", "is_floating_point",
                                                                         "is_tensor", "is_inference")]:
        assert callable(getattr(tg, name)), name
    for ours, theirs in _cpu_tensors():
        for name in ("is_complex", "is_conj", "is_signed", "is_floating_point", "is_inference"):
            assert getattr(tg, name)(ours) == getattr(torch, name)(theirs), name
    for name in ("is_complex", "is_floating_point", "is_signed", "is_conj"):
        with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'input' \(position 1\) must be Tensor, not int"):
            getattr(tg, name)(3)
        with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'input' \(position 1\) must be Tensor, not int"):
            getattr(torch, name)(3)
    assert tg.is_nonzero(tg.tensor([1.5])) is True and tg.is_nonzero(tg.tensor(0)) is False


def test_memory_format_names():
    for name in ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format"):
        ours, theirs = getattr(tg, name), getattr(torch, name)
        assert isinstance(ours, tg.memory_format) and isinstance(theirs, torch.memory_format)
        assert repr(ours) == repr(theirs).replace("torch", "tinygrad_tx") == f"tinygrad_tx.{name}"
    import pickle
    assert pickle.loads(pickle.dumps(tg.channels_last)) is tg.channels_last


def _strides(t):
    """The strides of the dims longer than 1 (the only ones that say where an element lies)."""
    return tuple(s for s, n in zip(t.stride(), t.shape) if n > 1)


@pytest.mark.cpu_only(reason="strides of the memory layout, compared with torch's CPU tensors")
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (1, 3, 1, 2), (2, 1, 3, 3), (3, 2, 2, 4, 5)])
def test_memory_formats_give_torchs_strides(shape):
    rng = np.random.default_rng(len(shape))
    a = rng.standard_normal(shape)
    x, t = tg.tensor(a), torch.tensor(a, device=DEVICE).cpu()
    fmt = "channels_last" if len(shape) == 4 else "channels_last_3d"
    ours, theirs = x.contiguous(memory_format=getattr(tg, fmt)), t.contiguous(memory_format=getattr(torch, fmt))
    assert ours.stride() == theirs.stride()
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    for f in ("contiguous_format", fmt, "preserve_format"):
        assert ours.is_contiguous(memory_format=getattr(tg, f)) == theirs.is_contiguous(memory_format=getattr(torch, f))
        assert x.is_contiguous(memory_format=getattr(tg, f)) == t.is_contiguous(memory_format=getattr(torch, f))
    assert ours.is_contiguous() == theirs.is_contiguous()
    # an elementwise result's strides of size-1 dims are arbitrary (NumPy's and torch's iterators differ)
    assert _strides(ours + 1) == _strides(theirs + 1)
    assert _strides(tg.zeros_like(ours)) == _strides(torch.zeros_like(theirs))
    assert tg.ones_like(x, memory_format=getattr(tg, fmt)).stride() == \
        torch.ones_like(t, memory_format=getattr(torch, fmt)).stride()
    assert ours.clone(memory_format=tg.contiguous_format).stride() == \
        theirs.clone(memory_format=torch.contiguous_format).stride()
    assert x.clone(memory_format=getattr(tg, fmt)).stride() == t.clone(memory_format=getattr(torch, fmt)).stride()
    assert x.to(memory_format=getattr(tg, fmt)).stride() == t.to(memory_format=getattr(torch, fmt)).stride()
    assert ours.contiguous().stride() == theirs.contiguous().stride()
    assert tg.empty(*shape, memory_format=getattr(tg, fmt)).stride() == \
        torch.empty(*shape, memory_format=getattr(torch, fmt), device=DEVICE).cpu().stride()


@pytest.mark.cpu_only(reason="strides of a module's parameters, compared with torch's CPU module")
def test_module_to_memory_format_as_torch():
    ours, ref = tg.nn.Conv2d(3, 4, 3), torch.nn.Conv2d(3, 4, 3)
    ours.to(memory_format=tg.channels_last)
    ref.to(memory_format=torch.channels_last)
    assert ours.weight.stride() == ref.weight.stride() and ours.bias.stride() == ref.bias.stride()
    assert ours.weight.is_contiguous(memory_format=tg.channels_last)
    with pytest.raises(TypeError, match="memory_format"):
        ours.to(memory_format="channels_last")


def test_memory_format_gradient_and_errors():
    check_parity(lambda x: x.contiguous(memory_format=tg.channels_last) * 3,
                 lambda x: x.contiguous(memory_format=torch.channels_last) * 3,
                 np.random.default_rng(4).standard_normal((2, 3, 2, 2)))
    x, t = tg.randn(3, 4), torch.randn(3, 4, device=DEVICE)
    for lib, v in ((tg, x), (torch, t)):
        with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
            v.contiguous(memory_format=lib.channels_last)
        with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d format"):
            v.clone(memory_format=lib.channels_last_3d)
        with pytest.raises(TypeError, match=r"^contiguous\(\): argument 'memory_format' must be"):
            v.contiguous(memory_format="channels_last")
        assert v.is_contiguous(memory_format=lib.channels_last) is False


# ============================================================================ 5. comparisons with non-tensors

_OBJECTS = [None, "a", object(), [1.0, 2.0, 3.0], (1.0, 2.0, 3.0), {}, {"a": 1}]
_OPS = ["==", "!=", "<", "<=", ">", ">="]


def _outcome(expr, x, o):
    try:
        r = eval(expr, {"x": x, "o": o})
    except Exception as e:
        return ("raises", type(e).__name__, str(e).replace("Tensor", "T"))
    if isinstance(r, (torch.Tensor, tg.Tensor)):
        return ("tensor", _values(r).tolist())
    return ("value", r)


@pytest.mark.parametrize("op", _OPS)
def test_comparisons_with_non_tensors_as_torch(op):
    a = np.array([1.0, 2.0, 5.0])
    x, t = tg.tensor(a), torch.tensor(a, device=DEVICE)
    for o in _OBJECTS:
        for expr in (f"x {op} o", f"o {op} x"):
            assert _outcome(expr, x, o) == _outcome(expr, t, o), (expr, o)
    for o in (2.0, 2, True, np.float64(2.0), np.int64(2)):
        for expr in (f"x {op} o", f"o {op} x"):
            assert _outcome(expr, x, o) == _outcome(expr, t, o), (expr, o)


def test_eq_none_in_teaching_code():
    """A book's generate(): ``if idx_next == eos_id: break`` with ``eos_id=None``."""
    idx_next = tg.tensor([[3]])
    assert (idx_next == None) is False and (idx_next != None) is True   # noqa: E711
    assert not (idx_next == None)   # noqa: E711
    assert tg.tensor([1.0]) in [None, tg.tensor([1.0])]   # list membership compares with ==


@pytest.mark.parametrize("name", ["eq", "ne", "lt", "le", "gt", "ge", "greater", "less", "not_equal",
                                  "greater_equal", "less_equal"])
def test_comparison_methods_refuse_non_tensors(name):
    for o in (None, "a", [1.0, 2.0, 3.0]):
        with pytest.raises(TypeError):
            getattr(torch.zeros(3, device=DEVICE), name)(o)
        with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'other'"):
            getattr(tg.zeros(3), name)(o)
        with pytest.raises(TypeError, match=rf"^{name}_\(\): argument 'other'"):
            getattr(tg.zeros(3), name + "_")(o)
        with pytest.raises(TypeError):
            getattr(torch, name)(torch.zeros(3, device=DEVICE), o)
        with pytest.raises(TypeError, match=rf"^{name}\(\)"):
            getattr(tg, name)(tg.zeros(3), o)


# ============================================================================ 6. select, post-accumulate hooks, anomaly

@pytest.mark.parametrize("shape, dim, index", [((3, 4), 0, 1), ((3, 4), 1, -1), ((2, 3, 4), -2, 2), ((5,), 0, 4),
                                               ((2, 3, 4), 2, 0)])
def test_select_values_and_gradient(shape, dim, index):
    a = np.random.default_rng(sum(shape)).standard_normal(shape)
    check_parity(lambda x: x.select(dim, index) * 2, lambda x: x.select(dim, index) * 2, a)
    check_parity(lambda x: tg.select(x, dim, index), lambda x: torch.select(x, dim, index), a)
    y, t = tg.tensor(a, requires_grad=True) * 1, torch.tensor(a, requires_grad=True, device=DEVICE) * 1
    assert y.select(dim, index).grad_fn.name() == t.select(dim, index).grad_fn.name() == "SelectBackward0"


def test_select_is_a_view():
    a = np.arange(12.0).reshape(3, 4)
    for lib in (tg, torch):
        x = lib.tensor(a, device=DEVICE) if lib is torch else lib.tensor(a)
        s = x.select(1, 2)
        s.mul_(10)                     # writes through to x
        x[0, 2] = -1.0                 # and x's writes show in s
        got = _values(x)
        if lib is tg:
            ours_x, ours_s = got, _values(s)
        else:
            np.testing.assert_array_equal(ours_x, got)
            np.testing.assert_array_equal(ours_s, _values(s))
    assert ours_s.tolist() == [-1.0, 60.0, 100.0]


def test_select_errors_as_torch():
    for lib in (tg, torch):
        x = lib.zeros(3, 4) if lib is tg else torch.zeros(3, 4, device=DEVICE)
        with pytest.raises(IndexError):
            x.select(1, 4)
        with pytest.raises(IndexError):
            x.select(2, 0)
        with pytest.raises(IndexError):
            (lib.tensor(1.0) if lib is tg else torch.tensor(1.0, device=DEVICE)).select(0, 0)
        with pytest.raises(TypeError):
            x.select(0, 1.5)


def _hook_run(lib):
    make = (lambda a: tg.tensor(a, requires_grad=True)) if lib is tg else \
        (lambda a: torch.tensor(a, requires_grad=True, device=DEVICE))
    rng = np.random.default_rng(5)
    w, b = make(rng.standard_normal(3)), make(rng.standard_normal(3))
    log = []
    handle = w.register_post_accumulate_grad_hook(lambda t: log.append(("w", t is w, _values(t.grad).tolist())))
    b.register_post_accumulate_grad_hook(lambda t: log.append(("b", t is b, _values(t.grad).tolist())))
    (w * b).sum().backward()
    (w * 3 + b).sum().backward()
    lib.autograd.grad((w * b).sum(), [w])          # accumulates nothing: no hook
    (w * b).sum().backward(inputs=[w])            # only w accumulates
    handle.remove()
    (w * 2).sum().backward()
    def scale(t):
        t.grad.mul_(0.5)                          # the hook sees the accumulated .grad and may edit it
    c = make(rng.standard_normal(2))
    c.register_hook(lambda g: g * 10)
    c.register_post_accumulate_grad_hook(scale)
    (c * 2).sum().backward()
    log.append(("c", _values(c.grad).tolist()))
    return log


def test_post_accumulate_grad_hook_as_torch():
    ours, theirs = _hook_run(tg), _hook_run(torch)
    assert len(theirs) == 6
    for a, b in zip(ours, theirs):
        assert a[:-1] == b[:-1]
        np.testing.assert_allclose(a[-1], b[-1], rtol=1e-12)
    assert len(ours) == len(theirs)


def test_post_accumulate_grad_hook_refusals_as_torch():
    for lib in (tg, torch):
        leaf = lib.ones(2, requires_grad=True) if lib is tg else torch.ones(2, requires_grad=True, device=DEVICE)
        with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"):
            (leaf * 2).register_post_accumulate_grad_hook(lambda t: None)
        with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
            (lib.ones(2) if lib is tg else torch.ones(2, device=DEVICE)).register_post_accumulate_grad_hook(lambda t: None)
        leaf.register_post_accumulate_grad_hook(lambda t: t.grad * 1)
        with pytest.raises(RuntimeError, match="Tensor post accumulate grad hooks should return None"):
            (leaf * 2).sum().backward()
        other = lib.ones(2, requires_grad=True) if lib is tg else torch.ones(2, requires_grad=True, device=DEVICE)
        other.register_post_accumulate_grad_hook(lambda t: 5)
        with pytest.raises(TypeError, match="expected Variable, but hook returned 'int'"):
            (other * 2).sum().backward()


def test_anomaly_flags_as_torch():
    for lib in (tg, torch):
        assert lib.is_anomaly_enabled() is False and lib.is_anomaly_check_nan_enabled() is True
        with lib.autograd.detect_anomaly(check_nan=False):
            assert lib.is_anomaly_enabled() is True and lib.is_anomaly_check_nan_enabled() is False
        assert lib.is_anomaly_enabled() is False and lib.is_anomaly_check_nan_enabled() is True
        lib.set_anomaly_enabled(True)
        try:
            assert lib.is_anomaly_enabled() is True
        finally:
            lib.set_anomaly_enabled(False)
        assert lib.is_anomaly_enabled() is False
