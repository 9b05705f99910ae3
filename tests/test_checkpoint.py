"""Checkpoints: safetensors round trips, atomic writes, corrupt files, and moving to/from PyTorch."""
from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
import tempfile

import numpy as np
import pytest
import safetensors.numpy
import safetensors.torch
import torch
from hypothesis import given, strategies as st

import tinygrad_tx as tg
from tinygrad_tx import checkpoint, optim
from tinygrad_tx.checkpoint import OPTIMIZER_PREFIX, load_checkpoint, save_checkpoint
from reference.testing import rel_err
from tinygrad_tx.testing.strategies import seeds, shapes

pytestmark = pytest.mark.cpu_only(reason="checkpoints and state dicts move between the engines through "
                                  "safetensors and NumPy, on the CPU")

# ----------------------------------------------------------------------------- helpers

names = st.text(alphabet="abcdefghij._0123456789", min_size=1, max_size=12).filter(
    lambda s: not s.startswith(OPTIMIZER_PREFIX))
dtypes = st.sampled_from([np.float32, np.float64, np.int64, np.bool_])


def random_array(shape, dtype, rng):
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype == np.int64:
        return rng.integers(-10**12, 10**12, size=shape, dtype=np.int64)
    return np.asarray(rng.standard_normal(shape), dtype=dtype)


def trained_optimizer(shapes_, dtype, kind, rng, steps=3):
    params = [tg.Tensor(np.asarray(rng.standard_normal(s), dtype=dtype), requires_grad=True) for s in shapes_]
    groups = [{"params": params[:1], "lr": 0.01, "weight_decay": 0.0}, {"params": params[1:]}] \
        if len(params) > 1 else params
    opt = {"SGD": lambda: optim.SGD(groups, lr=0.1, momentum=0.9, nesterov=True),
           "Adam": lambda: optim.Adam(groups, lr=1e-3, betas=(0.8, 0.95), amsgrad=True),
           "AdamW": lambda: optim.AdamW(groups, lr=0.1 / 3)}[kind]()
    for _ in range(steps):
        for p in params:
            p.grad = tg.Tensor(np.asarray(rng.standard_normal(p.shape), dtype=dtype))
        opt.step()
    return params, opt


def assert_optimizer_states_identical(a, b):
    assert a["param_groups"] == b["param_groups"]
    assert list(a["state"]) == list(b["state"])
    for i in a["state"]:
        assert list(a["state"][i]) == list(b["state"][i])
        for k, v in a["state"][i].items():
            w = b["state"][i][k]
            if isinstance(v, np.ndarray):
                assert v.dtype == w.dtype and v.shape == w.shape and np.array_equal(v, w), f"state {i}.{k}"
            else:
                assert v == w


def to_torch_optimizer_state(sd):
    state = {i: {k: (torch.from_numpy(np.array(v)) if isinstance(v, np.ndarray) else v) for k, v in s.items()}
             for i, s in sd["state"].items()}
    return {"state": state, "param_groups": copy.deepcopy(sd["param_groups"])}


def from_torch_optimizer_state(sd):
    state = {i: {k: (v.numpy().copy() if isinstance(v, torch.Tensor) else v) for k, v in s.items()}
             for i, s in sd["state"].items()}
    return {"state": state, "param_groups": copy.deepcopy(sd["param_groups"])}


# ----------------------------------------------------------------------------- round trip

@given(entries=st.dictionaries(names, st.tuples(shapes(0, 3, min_side=0, max_side=4), dtypes),
                               min_size=1, max_size=6),
       opt_kind=st.sampled_from([None, "SGD", "Adam", "AdamW"]),
       opt_dtype=st.sampled_from([np.float32, np.float64]),
       opt_shapes=st.lists(shapes(0, 2, max_side=3), min_size=1, max_size=3),
       step=st.one_of(st.none(), st.integers(0, 10**9)),
       user_meta=st.dictionaries(st.text(min_size=1, max_size=8).filter(lambda k: k != "step"
                                                                        and not k.startswith("tinygrad_tx.")),
                                 st.text(max_size=20), max_size=3),
       seed=seeds)
def test_round_trip_is_bit_exact(entries, opt_kind, opt_dtype, opt_shapes, step, user_meta, seed):
    rng = np.random.default_rng(seed)
    model_state = {k: random_array(s, dt, rng) for k, (s, dt) in entries.items()}
    opt = trained_optimizer(opt_shapes, opt_dtype, opt_kind, rng)[1] if opt_kind else None
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "ckpt.safetensors")
        save_checkpoint(path, model_state, opt, metadata=user_meta, step=step)
        assert os.listdir(d) == ["ckpt.safetensors"]  # no temporary file left behind
        loaded, opt_state, meta = load_checkpoint(path)
    assert list(loaded) == list(model_state)  # same keys, same order
    for k, v in model_state.items():
        w = loaded[k]
        assert w.dtype == v.dtype and w.shape == v.shape and np.array_equal(w, v), k
        assert w.flags.writeable
    expected_meta = dict(user_meta, **({"step": str(step)} if step is not None else {}))
    assert meta == expected_meta
    if opt is None:
        assert opt_state is None
    else:
        assert_optimizer_states_identical(opt_state, opt.state_dict())


def test_resume_from_checkpoint_is_exact(tmp_path):
    """8 uninterrupted AdamW steps == 4 steps, save, load into fresh objects, 4 more steps (bitwise)."""
    nn = pytest.importorskip("tinygrad_tx.nn")

    def model():
        tg.manual_seed(0)
        return nn.Sequential(nn.Linear(3, 4, dtype=np.float64), nn.LayerNorm(4, dtype=np.float64),
                             nn.Linear(4, 2, dtype=np.float64))

    x = tg.Tensor(np.random.default_rng(1).standard_normal((5, 3)))

    def train(m, opt, sched, steps):
        for _ in range(steps):
            opt.zero_grad()
            (m(x) ** 2).mean().backward()
            optim.clip_grad_norm_(m.parameters(), 0.5)
            opt.step()
            sched.step()

    def make(m):
        opt = optim.AdamW(optim.weight_decay_groups(m.named_parameters(), 0.1), lr=0.05)
        return opt, optim.LambdaLR(opt, optim.warmup_cosine(2, 8, 0.1))

    full = model()
    train(full, *make(full), 8)

    first = model()
    opt, sched = make(first)
    train(first, opt, sched, 4)
    path = tmp_path / "run.safetensors"
    save_checkpoint(path, first.state_dict(), opt, step=4)

    resumed = model()
    for p in resumed.parameters():  # make sure the weights really come from the file
        p._data[...] = 0
    state, opt_state, meta = load_checkpoint(path)
    resumed.load_state_dict(state)
    opt2, _ = make(resumed)
    opt2.load_state_dict(opt_state)
    sched2 = optim.LambdaLR(opt2, optim.warmup_cosine(2, 8, 0.1), last_epoch=int(meta["step"]) - 1)
    assert sched2.get_last_lr() == sched.get_last_lr()
    train(resumed, opt2, sched2, 4)
    for (k, a), b in zip(full.state_dict().items(), resumed.state_dict().values()):
        assert np.array_equal(a, b), k


# ----------------------------------------------------------------------------- bad files

def small_checkpoint(path):
    rng = np.random.default_rng(0)
    params, opt = trained_optimizer([(3, 2), (2,)], np.float64, "Adam", rng)
    save_checkpoint(path, {"w": params[0]._data, "b": params[1]._data}, opt, step=3)
    return path.read_bytes()


@pytest.mark.parametrize("keep", [0, 5, 8, 9, 40, 0.5, 0.9, -1])
def test_truncated_file_raises_value_error_naming_the_path(tmp_path, keep):
    path = tmp_path / "ckpt.safetensors"
    data = small_checkpoint(path)
    n = int(len(data) * keep) if isinstance(keep, float) else (len(data) + keep if keep < 0 else keep)
    path.write_bytes(data[:n])
    with pytest.raises(ValueError, match="ckpt.safetensors.*(truncated or corrupt)"):
        load_checkpoint(path)


def test_garbage_and_appended_bytes_raise(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    data = small_checkpoint(path)
    path.write_bytes(data + b"extra")
    with pytest.raises(ValueError, match="truncated or corrupt"):
        load_checkpoint(path)
    path.write_bytes(b"\xff" * 64)
    with pytest.raises(ValueError, match="truncated or corrupt"):
        load_checkpoint(path)
    with pytest.raises(FileNotFoundError):
        load_checkpoint(tmp_path / "missing.safetensors")


def test_pickle_is_refused_and_never_executed(tmp_path):
    """A pickle whose loading would run code is rejected as not-safetensors; the code never runs."""
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):
            return (open, (str(marker), "w"))
    path = tmp_path / "evil.safetensors"
    path.write_bytes(pickle.dumps({"w": Exploit()}))
    with pytest.raises(ValueError, match="evil.safetensors"):
        load_checkpoint(path)
    assert not marker.exists()


def test_header_that_does_not_match_contents_raises(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    small_checkpoint(path)
    with safetensors.safe_open(str(path), "np") as f:
        meta = dict(f.metadata())
        tensors = {k: f.get_tensor(k) for k in f.keys()}

    def rewrite(tensors_, meta_):   # without the digest, which would refuse any of these first
        meta_ = {k: v for k, v in meta_.items() if k != "tinygrad_tx.sha256"}
        safetensors.numpy.save_file(tensors_, str(path), metadata=meta_)

    rewrite({k: v for k, v in tensors.items() if k != "w"}, meta)
    with pytest.raises(ValueError, match=r"missing \['w'\]"):
        load_checkpoint(path)
    rewrite(dict(tensors, extra=np.zeros(1)), meta)
    with pytest.raises(ValueError, match=r"unexpected \['extra'\]"):
        load_checkpoint(path)
    rewrite({k: v for k, v in tensors.items() if k != "optimizer.state.0.exp_avg"}, meta)
    with pytest.raises(ValueError, match="optimizer.state.0.exp_avg"):
        load_checkpoint(path)
    rewrite(dict(tensors, **{"optimizer.state.9.exp_avg": np.zeros(2)}), meta)
    with pytest.raises(ValueError, match="not described"):
        load_checkpoint(path)
    rewrite(tensors, dict(meta, **{"tinygrad_tx.optimizer": "{not json"}))
    with pytest.raises(ValueError, match="corrupt checkpoint header"):
        load_checkpoint(path)
    rewrite(tensors, dict(meta, **{"tinygrad_tx.format": "99"}))
    with pytest.raises(ValueError, match="format version '99'"):
        load_checkpoint(path)


def test_mismatched_model_and_optimizer_raise_clear_errors(tmp_path):
    nn = pytest.importorskip("tinygrad_tx.nn")
    src = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    opt = optim.Adam(src.parameters(), lr=0.01)
    for p in src.parameters():
        p.grad = tg.Tensor(np.ones(p.shape, dtype=p.dtype))
    opt.step()
    path = tmp_path / "a.safetensors"
    save_checkpoint(path, src.state_dict(), opt)
    state, opt_state, _ = load_checkpoint(path)

    wider = nn.Sequential(nn.Linear(3, 5), nn.Linear(5, 2))
    with pytest.raises(ValueError, match=r"size mismatch for 0\.weight"):
        wider.load_state_dict(state)
    with pytest.raises(ValueError, match="shape"):
        optim.Adam(wider.parameters(), lr=0.01).load_state_dict(opt_state)
    deeper = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2), nn.Linear(2, 2))
    with pytest.raises(ValueError, match=r"Missing key\(s\).*2\.weight"):
        deeper.load_state_dict(state)
    with pytest.raises(ValueError, match="size of optimizer's group"):
        optim.Adam(deeper.parameters(), lr=0.01).load_state_dict(opt_state)


def test_invalid_arguments_to_save(tmp_path):
    path = tmp_path / "x.safetensors"
    with pytest.raises(ValueError, match="reserved for optimizer state"):
        save_checkpoint(path, {"optimizer.state.0.w": np.zeros(2)})
    with pytest.raises(TypeError, match="str to str"):
        save_checkpoint(path, {"w": np.zeros(2)}, metadata={"lr": 0.1})
    with pytest.raises(ValueError, match="reserved"):
        save_checkpoint(path, {"w": np.zeros(2)}, metadata={"step": "3"}, step=4)
    with pytest.raises(ValueError, match="reserved"):
        save_checkpoint(path, {"w": np.zeros(2)}, metadata={"tinygrad_tx.format": "1"})
    with pytest.raises(TypeError, match="object array"):
        save_checkpoint(path, {"w": np.array([None, 1])})
    with pytest.raises(TypeError, match="'state' and 'param_groups'"):
        save_checkpoint(path, {"w": np.zeros(2)}, optimizer={"lr": 0.1})
    assert not path.exists() and os.listdir(tmp_path) == []


# ----------------------------------------------------------------------------- atomic writes

def test_failed_write_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.safetensors"
    good = small_checkpoint(path)

    def crash_midway(filename, data):
        with open(filename, "wb") as f:
            f.write(data[:7])
        raise OSError("disk full")
    monkeypatch.setattr(checkpoint, "write_bytes", crash_midway)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(path, {"w": np.zeros(3)})
    assert path.read_bytes() == good
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]
    state, _, meta = load_checkpoint(path)
    assert meta["step"] == "3" and state["w"].shape == (3, 2)


def test_overwrite_replaces_the_file(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    save_checkpoint(path, {"w": np.zeros(2)}, step=1)
    save_checkpoint(str(path), {"v": np.ones(3, dtype=np.float32)}, step=2)
    state, opt_state, meta = load_checkpoint(path)
    assert list(state) == ["v"] and opt_state is None and meta == {"step": "2"}


# ----------------------------------------------------------------------------- PyTorch interoperability

def twin_models():
    """Our Sequential(Linear, LayerNorm, GELU, Linear) and torch's, same keys (weights not yet equal)."""
    nn = pytest.importorskip("tinygrad_tx.nn")
    ours = nn.Sequential(nn.Linear(3, 4, dtype=np.float64), nn.LayerNorm(4, dtype=np.float64), nn.GELU(),
                         nn.Linear(4, 2, dtype=np.float64))
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.LayerNorm(4), torch.nn.GELU(),
                                 torch.nn.Linear(4, 2)).double()
    return ours, theirs


def set_random_grads(ours, theirs, rng):
    for p, t in zip(ours.parameters(), theirs.parameters()):
        g = rng.standard_normal(p.shape)
        p.grad, t.grad = tg.Tensor(g), torch.from_numpy(g.copy())


def assert_same_outputs(ours, theirs):
    x = np.random.default_rng(1).standard_normal((5, 3))
    assert rel_err(ours(tg.Tensor(x))._data, theirs(torch.from_numpy(x)).detach().numpy()) <= 1e-12


def continue_both(ours, theirs, opt, topt, rng, steps):
    """Step both optimizers with the same gradients; then every weight must agree."""
    for _ in range(steps):
        set_random_grads(ours, theirs, rng)
        opt.step()
        topt.step()
    for (k, a), b in zip(ours.state_dict().items(), theirs.state_dict().values()):
        assert rel_err(a, b.numpy()) <= 1e-12, k


def test_our_checkpoint_loads_into_torch_and_training_continues(tmp_path):
    ours, theirs = twin_models()
    rng = np.random.default_rng(0)
    opt = optim.AdamW(optim.weight_decay_groups(ours.named_parameters(), 0.1), lr=0.01, amsgrad=True)
    for _ in range(3):
        set_random_grads(ours, theirs, rng)
        opt.step()
    path = tmp_path / "ours.safetensors"
    save_checkpoint(path, ours.state_dict(), opt, step=3)

    # torch side: weights straight from safetensors.torch, optimizer state via our loader
    tensors = safetensors.torch.load_file(str(path))
    theirs.load_state_dict({k: v for k, v in tensors.items() if not k.startswith(OPTIMIZER_PREFIX)})
    assert_same_outputs(ours, theirs)
    _, opt_state, _ = load_checkpoint(path)
    tparams = dict(theirs.named_parameters())
    tgroups = [{"params": [tparams[n] for n, p in ours.named_parameters() if any(p is q for q in g["params"])],
                "weight_decay": g["weight_decay"]} for g in opt.param_groups]
    topt = torch.optim.AdamW(tgroups, lr=0.01, amsgrad=True)
    topt.load_state_dict(to_torch_optimizer_state(opt_state))
    continue_both(ours, theirs, opt, topt, rng, steps=3)


def test_torch_checkpoint_loads_into_ours(tmp_path):
    ours, theirs = twin_models()
    rng = np.random.default_rng(2)
    topt = torch.optim.SGD(theirs.parameters(), lr=0.1, momentum=0.9)
    set_random_grads(ours, theirs, rng)
    topt.step()
    path = tmp_path / "torch.safetensors"
    safetensors.torch.save_file(theirs.state_dict(), str(path))  # a plain torch safetensors file
    state, opt_state, meta = load_checkpoint(path)
    assert opt_state is None and meta == {}
    ours.load_state_dict(state)
    assert_same_outputs(ours, theirs)

    # the torch optimizer's state, saved through our format, resumes in ours
    save_checkpoint(path, state, from_torch_optimizer_state(topt.state_dict()))
    _, opt_state, _ = load_checkpoint(path)
    opt = optim.SGD(ours.parameters(), lr=0.1, momentum=0.9)
    opt.load_state_dict(opt_state)
    continue_both(ours, theirs, opt, topt, rng, steps=2)


def test_tied_weights_are_saved_under_both_names(tmp_path):
    nn = pytest.importorskip("tinygrad_tx.nn")

    def tied():
        m = nn.Sequential(nn.Embedding(5, 3), nn.Linear(3, 5, bias=False))
        m[1].weight = m[0].weight
        return m
    src = tied()
    path = tmp_path / "tied.safetensors"
    save_checkpoint(path, src.state_dict())
    state, _, _ = load_checkpoint(path)
    assert sorted(state) == ["0.weight", "1.weight"]
    assert np.array_equal(state["0.weight"], state["1.weight"])
    dst = tied()
    dst.load_state_dict(state)
    assert dst[0].weight is dst[1].weight and np.array_equal(dst[0].weight._data, src[0].weight._data)

    twin = torch.nn.Sequential(torch.nn.Embedding(5, 3), torch.nn.Linear(3, 5, bias=False))
    twin[1].weight = twin[0].weight
    twin.load_state_dict(safetensors.torch.load_file(str(path)))
    assert twin[0].weight is twin[1].weight
    assert np.array_equal(twin[0].weight.detach().numpy(), src[0].weight._data)


# ----------------------------------------------------------------------------- run-file hygiene

def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_temporary_files_of_the_target_are_removed_by_the_next_save(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    stale = tmp_path / f".ckpt.safetensors.tmp-{_dead_pid()}"        # left by a SIGKILLed writer
    live = tmp_path / f".ckpt.safetensors.tmp-{os.getppid()}"        # a writer still running
    other = tmp_path / f".other.safetensors.tmp-{_dead_pid()}"       # another target's
    for p in (stale, live, other):
        p.write_bytes(b"half a checkpoint")
    assert checkpoint.temp_path(path) == str(tmp_path / f".ckpt.safetensors.tmp-{os.getpid()}")
    save_checkpoint(path, {"w": np.zeros(2)})
    assert not stale.exists() and live.exists() and other.exists()
    assert load_checkpoint(path)[0]["w"].shape == (2,)


def test_no_temporary_file_of_safetensors_own_is_made(tmp_path, monkeypatch):
    """save_file writes through a .tmpXXXXXX of its own, which a SIGKILL left behind (7 of 25 kills):
    the bytes are serialised in memory and written through our temporary file only."""
    def refuse(*args, **kwargs):
        raise AssertionError("safetensors.numpy.save_file must not be used")
    monkeypatch.setattr(safetensors.numpy, "save_file", refuse)
    path = tmp_path / "ckpt.safetensors"
    small_checkpoint(path)
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]


def test_stale_temporaries_of_safetensors_save_file_are_removed(tmp_path):
    """A .tmpXXXXXX that no running process holds open is a killed save_file's: removed by the next
    save in the directory; one held open (a writer still at work) and other names are kept."""
    stale, held, other = tmp_path / ".tmpAb3xY9", tmp_path / ".tmpQw12Er", tmp_path / ".tmpfile"
    for p in (stale, held, other):
        p.write_bytes(b"half a checkpoint")
    with open(held, "rb"):
        removed = checkpoint.remove_stale_temps(tmp_path / "ckpt.safetensors")
        assert removed == [str(stale)]
        save_checkpoint(tmp_path / "ckpt.safetensors", {"w": np.zeros(2)})
    assert sorted(os.listdir(tmp_path)) == [".tmpQw12Er", ".tmpfile", "ckpt.safetensors"]


def test_atomic_write_many_renames_only_when_every_file_is_written(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("old a")

    def fail(tmp):
        raise OSError("disk full")
    with pytest.raises(OSError, match="disk full"):
        checkpoint.atomic_write_many([(a, lambda tmp: open(tmp, "w").write("new a")), (b, fail)])
    assert a.read_text() == "old a" and os.listdir(tmp_path) == ["a.txt"]
    checkpoint.atomic_write_many([(a, lambda tmp: open(tmp, "w").write("new a")),
                                  (b, lambda tmp: open(tmp, "w").write("new b"))])
    assert a.read_text() == "new a" and b.read_text() == "new b"


# ----------------------------------------------------------------------------- integrity

@pytest.mark.parametrize("where", ["last data bytes", "first data byte", "header dtype"])
def test_changed_bytes_are_refused_naming_the_file(tmp_path, where):
    """safetensors has no checksum: flipped data bytes loaded silently. The header's SHA-256 of the
    arrays is verified on load."""
    path = tmp_path / "ckpt.safetensors"
    data = bytearray(small_checkpoint(path))
    n = int.from_bytes(data[:8], "little")
    if where == "last data bytes":
        data[-200:] = bytes(255 - x for x in data[-200:])
    elif where == "first data byte":
        data[8 + n] ^= 1
    else:   # an F64 array read as I64: the same length, other values
        header = data[8:8 + n].decode()
        data[8:8 + n] = header.replace('"F64"', '"I64"', 1).encode()
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=f"^{path}: corrupt checkpoint: the SHA-256 of its arrays") as e:
        load_checkpoint(path)
    assert "\n" not in str(e.value)


def test_checkpoint_without_a_digest_still_loads(tmp_path):
    """Checkpoints written before the digest existed load as before (no check possible)."""
    path = tmp_path / "old.safetensors"
    small_checkpoint(path)
    tensors, meta = {}, None
    from safetensors import safe_open
    with safe_open(str(path), framework="np") as f:
        meta = {k: v for k, v in f.metadata().items() if k != "tinygrad_tx.sha256"}
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    safetensors.numpy.save_file(tensors, str(path), metadata=meta)
    state, opt, metadata = load_checkpoint(path)
    assert state["w"].shape == (3, 2) and opt is not None and metadata["step"] == "3"


def test_digest_covers_names_dtypes_and_shapes():
    a = np.arange(6.0)
    assert checkpoint.digest({"w": a}) == checkpoint.digest({"w": a.astype(">f8")})
    assert len({checkpoint.digest(d) for d in ({"w": a}, {"v": a}, {"w": a.reshape(2, 3)}, {"w": a.view(np.int64)})}) == 4


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_checkpoint_mode_follows_the_umask(tmp_path, mask, mode):
    old = os.umask(mask)
    try:
        save_checkpoint(tmp_path / "c.safetensors", {"w": np.zeros(2)})
    finally:
        os.umask(old)
    assert os.stat(tmp_path / "c.safetensors").st_mode & 0o777 == mode


def test_saving_over_a_directory_names_the_directory(tmp_path):
    target = tmp_path / "adir"
    target.mkdir()
    with pytest.raises(IsADirectoryError) as e:
        save_checkpoint(target, {"w": np.zeros(2)})
    assert e.value.filename == str(target) and ".tmp" not in str(e.value)
    assert os.listdir(tmp_path) == ["adir"] and os.listdir(target) == []


def test_loading_a_directory_or_a_fifo_raises_at_once(tmp_path):
    with pytest.raises(ValueError, match="is a directory, not a checkpoint file"):
        load_checkpoint(tmp_path)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(ValueError, match="is a FIFO"):
        load_checkpoint(tmp_path / "fifo")
