"""``tinygrad_tx.save`` / ``tinygrad_tx.load``: round trips of what teaching code saves, real
``torch.save`` files (zip and legacy layouts) loaded equal, hostile pickles refused before anything
runs (a side-effect file that would be created is not), and truncated or corrupt files giving one
clear error."""
from __future__ import annotations

import io
import math
import os
import pickle
import time
import zipfile
from collections import Counter, OrderedDict

import numpy as np
import pytest
import torch

import tinygrad_tx as tg
from tinygrad_tx import nn
from tinygrad_tx.serialization import LoadError, UnsafeLoadError, scan_pickle

pytestmark = pytest.mark.cpu_only(reason="torch.save/torch.load files: CPU tensors written and read, "
                                                "no computation compared on torch's device")


def same(a, b):
    """Deep equality of loaded values: Tensors/arrays by dtype, shape and bits; containers by type."""
    if isinstance(a, tg.Tensor):
        return isinstance(b, tg.Tensor) and type(a) is type(b) and a.requires_grad == b.requires_grad and \
            same(a.detach().numpy(), b.detach().numpy())
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and \
            np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    if isinstance(a, dict):
        return type(a) is type(b) and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return type(a) is type(b) and a == b


def as_numpy(t):
    return t.detach().numpy() if isinstance(t, tg.Tensor) else t.detach().cpu().numpy()


# ============================================================================ round trips (our format)

def test_round_trip_nested_values(tmp_path):
    rng = np.random.default_rng(0)
    w = tg.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    obj = {
        "model": OrderedDict(weight=rng.standard_normal((3, 2)).astype(np.float32), bias=np.arange(3)),
        "tensors": [w, tg.tensor([1, 2, 3]), tg.tensor(True), nn.Parameter(np.ones(2))],
        "numbers": (1, -2**70, 2.5, float("nan"), float("inf"), -0.0, True, None, 1 + 2j),
        "text": "naïve ✓", "dtype": tg.float64, "np_scalar": np.float32(1.5), "ints": {0: "a", 1: (2, 3)},
        "tuple_key": {("a", 1): [], (): {}}, "set": {1, 2, 3}, "empty": [[], (), {}],
    }
    path = tmp_path / "obj.pt"
    tg.save(obj, path)
    assert [p.name for p in tmp_path.iterdir()] == ["obj.pt"]     # atomic: no temporary left
    back = tg.load(path)
    assert same(obj["model"], back["model"]) and same(obj["tensors"], back["tensors"])
    assert same(obj["numbers"], back["numbers"])
    assert back["text"] == obj["text"] and back["dtype"] == tg.float64 and back["set"] == {1, 2, 3}
    assert type(back["np_scalar"]) is np.float32 and back["np_scalar"] == 1.5
    assert back["ints"] == {0: "a", 1: (2, 3)} and back["tuple_key"] == {("a", 1): [], (): {}}
    assert back["empty"] == [[], (), {}]
    assert isinstance(back["tensors"][3], nn.Parameter) and back["tensors"][3].requires_grad
    assert math.copysign(1, back["numbers"][5]) == -1
    # the format: a zip with a JSON structure and .npy arrays, no pickle anywhere
    with zipfile.ZipFile(path) as z:
        assert z.namelist()[0] == "tinygrad_tx.json" and all(n.endswith(".npy") for n in z.namelist()[1:])
        assert not any(z.read(n)[:1] == b"\x80" for n in z.namelist())


def test_round_trip_file_object_and_tied_weights():
    shared = tg.randn(2, 2)
    buf = io.BytesIO()
    tg.save({"a": shared, "b": shared, "c": [shared]}, buf)
    buf.seek(0)
    back = tg.load(buf)
    assert back["a"] is back["b"] is back["c"][0]       # a tied weight stays one object
    assert np.array_equal(back["a"].numpy(), shared.numpy())


def test_state_dict_and_optimizer_round_trip_continue_training(tmp_path):
    tg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.GELU(), nn.Linear(4, 2)).double()
    opt = tg.optim.AdamW(model.parameters(), lr=0.01)
    x = tg.randn(5, 3, dtype=tg.float64)

    def step(m, o):
        o.zero_grad()
        m(x).pow(2).mean().backward()
        o.step()
    for _ in range(3):
        step(model, opt)
    tg.save({"model": model.state_dict(), "opt": opt.state_dict(), "epoch": 3}, tmp_path / "ck.pt")
    ck = tg.load(tmp_path / "ck.pt")
    model2 = nn.Sequential(nn.Linear(3, 4), nn.GELU(), nn.Linear(4, 2)).double()
    model2.load_state_dict(ck["model"])
    opt2 = tg.optim.AdamW(model2.parameters(), lr=0.01)
    opt2.load_state_dict(ck["opt"])
    assert ck["epoch"] == 3
    for _ in range(2):
        step(model, opt)
        step(model2, opt2)
    for (k, a), b in zip(model.state_dict().items(), model2.state_dict().values()):
        assert np.array_equal(a, b), k


def test_save_refuses_what_it_cannot_write_safely(tmp_path):
    model = nn.Linear(2, 2)
    with pytest.raises(TypeError, match=r"obj\['m'\].*Linear.*state_dict"):
        tg.save({"m": model}, tmp_path / "x.pt")
    with pytest.raises(TypeError, match=r"obj\[0\].*function"):
        tg.save([lambda: 1], tmp_path / "x.pt")
    cyclic = []
    cyclic.append(cyclic)
    with pytest.raises(ValueError, match="cycle"):
        tg.save(cyclic, tmp_path / "x.pt")
    with pytest.raises(TypeError, match="object"):
        tg.save(np.array([object()]), tmp_path / "x.pt")
    with pytest.raises(TypeError, match="f must be a path"):
        tg.save({}, 3)
    assert not os.listdir(tmp_path)          # nothing half-written


# ============================================================================ real torch.save files

def torch_objects():
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.LayerNorm(4), torch.nn.Linear(4, 2)).double()
    opt = torch.optim.Adam(module.parameters(), lr=0.01)
    for _ in range(2):
        opt.zero_grad()
        module(torch.randn(5, 3, dtype=torch.float64)).pow(2).sum().backward()
        opt.step()
    base = torch.arange(24, dtype=torch.float64).reshape(4, 6)
    dtypes = {str(d): (torch.randn(3, 2) * 10).to(d) for d in
              (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.int16, torch.int32,
               torch.int64, torch.uint8, torch.bool)}
    views = {"t": base.t(), "row": base[1], "step": base[::2, 1::3], "expand": torch.ones(1, 3).expand(4, 3),
             "scalar": torch.tensor(3.5), "empty": torch.zeros(0, 3), "base": base}
    nested = {"list": [torch.ones(2), (torch.zeros(1), "x", 3)], "n": None, "f": 1.5, "i": -7, "b": False,
              "size": torch.Size([2, 3]), "dtype": torch.float64, "device": torch.device("cpu"), "set": {1, 2},
              "param": torch.nn.Parameter(torch.ones(2)), "grad": torch.ones(2).requires_grad_()}
    return module, opt, {"state_dict": module.state_dict(), "optimizer": opt.state_dict(), "dtypes": dtypes,
                         "views": views, "nested": nested}


@pytest.fixture(scope="module", params=["zip", "legacy", "zip_protocol5"])
def torch_file(request, tmp_path_factory):
    module, opt, obj = torch_objects()
    path = tmp_path_factory.mktemp("torch") / f"saved_{request.param}.pt"
    torch.save(obj, path, _use_new_zipfile_serialization=request.param != "legacy",
               pickle_protocol=5 if request.param == "zip_protocol5" else 2)   # 5: STACK_GLOBAL, memoised names
    return module, opt, obj, tg.load(path)


def test_torch_file_state_dict_loads_equal_and_runs(torch_file):
    module, _, obj, back = torch_file
    sd = back["state_dict"]
    assert isinstance(sd, OrderedDict) and list(sd) == list(obj["state_dict"])
    assert sd._metadata == obj["state_dict"]._metadata        # torch's OrderedDict attribute, kept
    for k, v in obj["state_dict"].items():
        assert sd[k].dtype == tg.float64 and np.array_equal(as_numpy(sd[k]), as_numpy(v))
    ours = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4), nn.Linear(4, 2)).double()
    ours.load_state_dict(sd)
    x = np.random.default_rng(1).standard_normal((2, 3))
    assert np.allclose(as_numpy(ours(tg.tensor(x))), as_numpy(module(torch.tensor(x))), rtol=1e-12, atol=1e-14)


def test_torch_file_optimizer_state_continues_like_torch(torch_file):
    module, opt, obj, back = torch_file
    saved = back["optimizer"]
    assert set(saved["state"]) == {0, 1, 2, 3, 4, 5} and saved["param_groups"][0]["betas"] == (0.9, 0.999)
    ours = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4), nn.Linear(4, 2)).double()
    ours.load_state_dict(back["state_dict"])
    ours_opt = tg.optim.Adam(ours.parameters(), lr=0.01)
    ours_opt.load_state_dict(saved)
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.LayerNorm(4), torch.nn.Linear(4, 2)).double()
    theirs.load_state_dict(obj["state_dict"])
    theirs_opt = torch.optim.Adam(theirs.parameters(), lr=0.01)
    theirs_opt.load_state_dict(obj["optimizer"])
    x = np.random.default_rng(2).standard_normal((5, 3))
    for m, o, t in ((ours, ours_opt, tg.tensor(x)), (theirs, theirs_opt, torch.tensor(x))):
        o.zero_grad()
        m(t).pow(2).sum().backward()
        o.step()
    for (k, a), b in zip(ours.state_dict().items(), theirs.state_dict().values()):
        assert np.allclose(as_numpy(a) if isinstance(a, tg.Tensor) else a, as_numpy(b), rtol=1e-12, atol=1e-15), k


def test_torch_file_dtypes_views_and_containers(torch_file):
    _, _, obj, back = torch_file
    for name, t in obj["dtypes"].items():
        ours = back["dtypes"][name]
        want = t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()   # bfloat16 → float32, exactly
        assert ours.dtype == want.dtype and np.array_equal(ours.numpy(), want), name
    for name, t in obj["views"].items():
        assert back["views"][name].shape == tuple(t.shape) and np.array_equal(back["views"][name].numpy(), t.numpy())
    n = back["nested"]
    assert n["list"][1][1:] == ("x", 3) and isinstance(n["list"][1], tuple)
    assert np.array_equal(n["list"][0].numpy(), np.ones(2)) and n["n"] is None and n["f"] == 1.5 and n["i"] == -7
    assert n["b"] is False and n["size"] == (2, 3) and n["dtype"] == tg.float64 and n["device"] == "cpu"
    assert n["set"] == {1, 2}
    assert isinstance(n["param"], nn.Parameter) and n["param"].requires_grad
    assert n["grad"].requires_grad and not isinstance(n["grad"], nn.Parameter)


def test_torch_module_state_dict_file_object_and_map_location(tmp_path):
    m = torch.nn.Linear(3, 2)
    buf = io.BytesIO()
    torch.save(m.state_dict(), buf)
    buf.seek(0)
    back = tg.load(buf, map_location="cpu", weights_only=True)
    assert np.array_equal(back["weight"].numpy(), m.weight.detach().numpy())
    buf.seek(0)
    assert tg.load(buf, map_location=lambda storage, loc: storage)["bias"].shape == (2,)
    buf.seek(0)
    with pytest.raises(RuntimeError, match="only the CPU"):
        tg.load(buf, map_location="cuda:0")


def test_torch_load_reads_nothing_of_ours_but_torch_files_we_read_equal_torchs():
    """The same bytes through torch.load and ours give the same values (the reference)."""
    _, _, obj = torch_objects()
    buf = io.BytesIO()
    torch.save(obj["views"], buf)
    ref = torch.load(io.BytesIO(buf.getvalue()), weights_only=True)
    ours = tg.load(io.BytesIO(buf.getvalue()))
    assert all(np.array_equal(ours[k].numpy(), ref[k].numpy()) for k in ref)


# ============================================================================ hostile files

class RunsCode:
    """Unpickling this runs ``fn(arg)`` (the classic pickle payload)."""

    def __init__(self, fn, arg):
        self.fn, self.arg = fn, arg

    def __reduce__(self):
        return self.fn, (self.arg,)


def hostile_payloads(side):
    write = f"open({str(side)!r}, 'w').write('ran')"
    return {
        "os.system": RunsCode(os.system, f"touch {side}"),
        "builtins.eval": RunsCode(eval, write),
        "builtins.exec": RunsCode(exec, write),
        "outside the allowlist": RunsCode(Counter, str(side)),   # harmless, still refused
    }


@pytest.mark.parametrize("layout", ["zip", "legacy", "raw pickle p2", "raw pickle p5"])
@pytest.mark.parametrize("payload", ["os.system", "builtins.eval", "builtins.exec", "outside the allowlist"])
def test_hostile_pickles_are_refused_before_anything_runs(tmp_path, layout, payload):
    side = tmp_path / "side_effect"
    evil = hostile_payloads(side)[payload]
    obj = {"weight": torch.ones(2), "x": [evil], "after": torch.zeros(1)}
    path = tmp_path / "evil.pt"
    if layout in ("zip", "legacy"):
        torch.save(obj, path, _use_new_zipfile_serialization=layout == "zip")
    else:
        path.write_bytes(pickle.dumps({"x": [evil]}, protocol=2 if layout.endswith("p2") else 5))
    with pytest.raises(UnsafeLoadError) as e:
        tg.load(path)
    assert isinstance(e.value, pickle.UnpicklingError)
    named = {"os.system": ("posix.system", "os.system", "nt.system"), "builtins.eval": ("builtins.eval",),
             "builtins.exec": ("builtins.exec",), "outside the allowlist": ("collections.Counter",)}[payload]
    assert any(n in str(e.value) for n in named), str(e.value)
    assert str(path) in str(e.value)
    assert not side.exists()
    if payload != "outside the allowlist" and layout.startswith("raw"):   # the file really is hostile
        pickle.loads(path.read_bytes())
        assert side.exists()


def test_torch_module_pickled_whole_is_refused(tmp_path):
    path = tmp_path / "model.pt"
    torch.save(torch.nn.Linear(2, 2), path)
    with pytest.raises(UnsafeLoadError, match=r"torch\.nn\.modules\.linear\.Linear"):
        tg.load(path)


def _crafted(*ops: bytes) -> bytes:
    return b"\x80\x04" + b"".join(ops) + b"."


def _s(text: str) -> bytes:    # SHORT_BINUNICODE
    return b"\x8c" + bytes([len(text)]) + text.encode()


def test_crafted_pickles_refused(tmp_path):
    side = tmp_path / "side"
    cmd = _s(f"touch {side}")
    cases = {
        # STACK_GLOBAL from memoised strings (as picklers write it)
        "memo": _crafted(_s("os"), b"\x94", _s("system"), b"\x94", b"h\x00h\x01\x93", cmd, b"\x85R"),
        # STACK_GLOBAL whose operands are not the two strings just pushed
        "hidden": _crafted(_s("posix"), _s("system"), b"(0\x93", cmd, b"\x85R"),
        # GLOBAL (protocol 0 style)
        "global": _crafted(b"cposix\nsystem\n", cmd, b"\x85R"),
        # INST
        "inst": b"(" + b"S'" + f"touch {side}".encode() + b"'\nios\nsystem\n.",
        # the extension registry
        "ext": _crafted(b"\x82\x01", cmd, b"\x85R"),
        # BUILD on something that is not an OrderedDict
        "build": _crafted(_s("collections"), _s("OrderedDict"), b"\x93)R", b"(l", b"}", _s("__class__"), b"N", b"s",
                          b"b", b"0"),
    }
    for name, data in cases.items():
        path = tmp_path / f"{name}.pt"
        path.write_bytes(data)
        with pytest.raises(UnsafeLoadError):
            tg.load(path)
        assert not side.exists(), name
    with pytest.raises(UnsafeLoadError, match="posix.system"):
        scan_pickle(cases["global"])


def test_shared_and_cyclic_structures_load_in_linear_time():
    """A pickle that nests one shared tuple 60 levels deep (2^60 leaves unfolded) loads at once, still
    shared; a list that contains itself stays a cycle."""
    nested = (1,)
    for _ in range(60):
        nested = (nested, nested)
    start = time.perf_counter()
    back = tg.load(io.BytesIO(_torch_zip_with_pickle(pickle.dumps(nested, protocol=2))))
    assert time.perf_counter() - start < 2 and back[0] is back[1]
    cyclic = []
    cyclic.append(cyclic)
    back = tg.load(io.BytesIO(_torch_zip_with_pickle(pickle.dumps({"a": cyclic}, protocol=2))))
    assert back["a"][0] is back["a"]


def _torch_zip_with_pickle(pkl: bytes) -> bytes:
    """A real torch.save zip whose data.pkl is replaced by ``pkl``."""
    buf = io.BytesIO()
    torch.save({"x": 1}, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        files = {n: z.read(n) for n in z.namelist()}
    files[next(n for n in files if n.endswith("/data.pkl"))] = pkl
    return _zip(files)


# ============================================================================ truncated and corrupt files

def test_truncated_and_corrupt_files_give_one_clear_error(tmp_path):
    torch_zip, torch_legacy, ours = tmp_path / "t.pt", tmp_path / "l.pt", tmp_path / "o.pt"
    obj = {"w": torch.arange(40.0).reshape(8, 5), "b": torch.ones(3, dtype=torch.int64)}
    torch.save(obj, torch_zip)
    torch.save(obj, torch_legacy, _use_new_zipfile_serialization=False)
    tg.save({"w": tg.arange(40.0, dtype=tg.float32), "k": [1, 2]}, ours)
    bad = {}
    for src in (torch_zip, torch_legacy, ours):
        data = src.read_bytes()
        for cut in (0, 1, 7, len(data) // 3, len(data) // 2, len(data) - 30, len(data) - 1):
            bad[f"{src.stem}_cut{cut}"] = data[:cut]
        # a flipped byte: in a zip, inside an array's bytes (the CRC catches it; torch's alignment padding
        # is not checked by anyone); in the legacy layout, which has no checksum, inside the pickle
        flipped = bytearray(data)
        at = data.find(np.arange(40.0, dtype=np.float32).tobytes()) + 20 if src != torch_legacy else 60
        flipped[at] ^= 0xFF
        bad[f"{src.stem}_flipped"] = bytes(flipped)
    bad["random"] = np.random.default_rng(0).bytes(500)
    bad["text"] = b"hello, I am not a checkpoint\n"
    bad["zip_of_other"] = _zip({"readme.txt": b"hi"})
    bad["npy_pickle"] = _zip({"tinygrad_tx.json": b'{"format": "tinygrad_tx.save", "version": 1, '
                              b'"root": {"__t": "ndarray", "blob": 0}}', "data/0.npy": _npy_object()})
    bad["short_storage"] = _zip_torch_with_storage(obj, b"\x00" * 8)
    deflated = io.BytesIO()   # a compressed entry (a zip bomb's tool) is refused, not expanded
    with zipfile.ZipFile(deflated, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("archive/data.pkl", b"\x80\x02N." + b" " * 10**6)
    bad["deflated"] = deflated.getvalue()
    for name, data in bad.items():
        path = tmp_path / f"bad_{name}.pt"
        path.write_bytes(data)
        with pytest.raises(LoadError) as e:
            tg.load(path)
        assert str(path) in str(e.value), name
        assert e.value.__cause__ is None and e.value.__suppress_context__, name   # one error, not a chain
    with pytest.raises(FileNotFoundError):
        tg.load(tmp_path / "missing.pt")


def _zip(files: dict) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for k, v in files.items():
            z.writestr(k, v)
    return buf.getvalue()


def _npy_object() -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.array([None, 1], dtype=object), allow_pickle=True)
    return buf.getvalue()


def _zip_torch_with_storage(obj, storage_bytes: bytes) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        files = {n: z.read(n) for n in z.namelist()}
    key = next(n for n in files if "/data/" in n and len(files[n]) == 40 * 4)
    files[key] = storage_bytes
    return _zip(files)


def test_load_arguments():
    import inspect
    ours, theirs = inspect.signature(tg.load), inspect.signature(torch.load)
    assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == \
        [(p.name, p.kind, p.default) for p in theirs.parameters.values()]
    assert list(inspect.signature(tg.save).parameters) == list(inspect.signature(torch.save).parameters)
    buf = io.BytesIO()
    tg.save([1], buf)
    with pytest.raises(TypeError, match="pickle_module"):
        tg.load(io.BytesIO(buf.getvalue()), pickle_module=pickle)
    with pytest.raises(TypeError, match="weights_only"):
        tg.load(io.BytesIO(buf.getvalue()), weights_only="yes")
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        tg.load(io.BytesIO(buf.getvalue()), bogus=1)
    assert tg.load(io.BytesIO(buf.getvalue()), weights_only=False) == [1]
    with pytest.raises(TypeError, match="text mode"):
        tg.load(io.StringIO("x"))
