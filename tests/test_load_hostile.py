"""Loading hostile files: memory is bounded by the file, not by what it declares, and every corrupt
input is one :class:`LoadError` naming the file (never NumPy's or Python's own error). Each file is
built here -- with ``torch.save`` where torch can make it, then with its bytes patched."""
from __future__ import annotations

import io
import json
import os
import struct
import tracemalloc
import zipfile

import numpy as np
import pytest
import torch

import tinygrad_tx as tg
from tinygrad_tx.checkpoint import load_checkpoint
from tinygrad_tx.serialization import LoadError

pytestmark = pytest.mark.cpu_only(reason="files written by torch.save from CPU tensors, as a user's checkpoint is loaded")


def _peak(fn):
    """(result, peak bytes traced while ``fn`` ran): NumPy's buffers are traced too."""
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _bound(path) -> int:
    """The generous bound a load must stay within: 1 MiB plus 64 times the file's size."""
    return (1 << 20) + 64 * os.path.getsize(path)


# ---------------------------------------------------------------------------- memory bounded by the file

def test_an_expanded_tensor_loads_as_a_view_of_its_storage(tmp_path):
    """``torch.zeros(1).expand(4000, 3000)``: torch stores one element; the old loader copied it out
    to 48 MB. It is now a stride-0 view of that element, read-only like any expanded view."""
    path = tmp_path / "stride0.pt"
    torch.save({"w": torch.full((1,), 2.5).expand(4000, 3000)}, path)
    assert os.path.getsize(path) < 4096
    out, peak = _peak(lambda: tg.load(path))
    assert peak < _bound(path), peak
    w = out["w"]
    assert tuple(w.shape) == (4000, 3000) and w._data.strides == (0, 0)
    assert float(w[3999, 2999]) == 2.5 and float(w.sum()) == 2.5 * 4000 * 3000
    with pytest.raises(RuntimeError, match="in place"):
        w.add_(1)


def test_the_issues_stride0_file_is_a_few_bytes_in_memory(tmp_path):
    path = tmp_path / "big.pt"
    torch.save(torch.zeros(1).expand(20000, 15000), path)
    out, peak = _peak(lambda: tg.load(path))
    assert tuple(out.shape) == (20000, 15000) and peak < _bound(path)


def test_overlapping_as_strided_storage_is_a_view(tmp_path):
    base = torch.arange(10.0)
    t = torch.as_strided(base, (5, 6), (1, 1))
    path = tmp_path / "overlap.pt"
    torch.save({"t": t, "base": base}, path)
    out = tg.load(path)
    assert np.array_equal(out["t"].numpy(), t.numpy())
    assert np.shares_memory(out["t"]._data, out["base"]._data)


def test_views_of_one_storage_share_it_and_cost_it_once(tmp_path):
    """200 tensors viewing one 1 MB storage: torch keeps one storage; the old loader made 200 copies."""
    base = torch.arange(262144, dtype=torch.float32)
    views = {f"v{i}": base[i:] for i in range(200)}
    path = tmp_path / "views.pt"
    torch.save(views, path)
    out, peak = _peak(lambda: tg.load(path))
    assert peak < 4 * os.path.getsize(path), peak
    assert np.shares_memory(out["v0"]._data, out["v199"]._data)
    assert np.array_equal(out["v7"].numpy(), views["v7"].numpy())


def test_an_expanded_parameter_beyond_the_limit_is_refused(tmp_path):
    path = tmp_path / "param.pt"
    torch.save({"p": torch.nn.Parameter(torch.zeros(1).expand(20000, 15000))}, path)
    with pytest.raises(LoadError, match=str(path)):
        tg.load(path)
    small = tmp_path / "small.pt"
    torch.save({"p": torch.nn.Parameter(torch.ones(1).expand(3, 4))}, small)
    p = tg.load(small)["p"]
    assert isinstance(p, tg.nn.Parameter) and p._data.flags.writeable and float(p.sum()) == 12.0


def test_a_sparse_file_is_not_read_in_full(tmp_path):
    """A 256 MiB sparse file of zeros: the old loader read all of it into memory before any check."""
    path = tmp_path / "sparse.pt"
    with open(path, "wb") as f:
        f.truncate(256 << 20)
    with pytest.raises(LoadError, match=str(path)):
        tracemalloc.start()
        try:
            tg.load(path)
        finally:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
    assert peak < 16 << 20, peak


# ---------------------------------------------------------------------------- corrupt inputs: one LoadError

def _ours(npy: bytes, path) -> str:
    """A tinygrad_tx.save file (valid zip, valid CRCs) whose one array is the given .npy bytes."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr("tinygrad_tx.json", json.dumps({"format": "tinygrad_tx.save", "version": 1,
                                                   "root": {"__t": "ndarray", "blob": 0}}))
        z.writestr("data/0.npy", npy)
    path.write_bytes(buf.getvalue())
    return str(path)


def _npy(header: str, body: bytes = b"\0" * 12) -> bytes:
    h = header.encode("latin1")
    h += b" " * ((64 - (10 + len(h) + 1) % 64) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h + body


NPY_HEADERS = {
    "unterminated header (tokenize.TokenError)": "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), ",
    "2**40 declared elements (MemoryError)": "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }",
    "a size past NumPy's (MemoryError)": "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999), }",
    "a structured dtype (loaded as is)": "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }",
    "a string dtype (loaded as is)": "{'descr': '<U3', 'fortran_order': False, 'shape': (1,), }",
    "fewer bytes than declared (loaded short)": "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }",
}


@pytest.mark.parametrize("what", sorted(NPY_HEADERS))
def test_a_corrupt_npy_header_is_a_load_error_naming_the_file(tmp_path, what):
    path = _ours(_npy(NPY_HEADERS[what]), tmp_path / "bad.tt")
    with pytest.raises(LoadError, match="bad.tt"):
        tg.load(path)


def test_a_good_npy_still_loads(tmp_path):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    for order in ("C", "F"):
        buf = io.BytesIO()
        np.save(buf, np.asarray(a, order=order))
        assert np.array_equal(tg.load(_ours(buf.getvalue(), tmp_path / f"{order}.tt")), a)


def _patch_ints(raw: bytes, old: int, new: int) -> bytes:
    """``raw`` with each pickled BININT ``old`` (opcode J) made ``new``."""
    a, b = b"J" + struct.pack("<i", old), b"J" + struct.pack("<i", new)
    assert a in raw
    return raw.replace(a, b)


def test_a_torch_tensor_too_big_to_index_is_a_load_error(tmp_path):
    """An expanded tensor whose declared size NumPy cannot represent ("array is too big")."""
    path = tmp_path / "huge.pt"
    torch.save(torch.zeros(1).expand(777777, 777777), path)
    path.write_bytes(_patch_ints(path.read_bytes(), 777777, 2 ** 31 - 1))
    with pytest.raises(LoadError, match="huge.pt"):
        tg.load(path)


def test_a_torch_storage_declaring_2_to_the_40_elements_is_a_load_error(tmp_path):
    path = tmp_path / "numel.pt"
    torch.save(torch.zeros(123457), path)
    raw = path.read_bytes()
    path.write_bytes(_patch_ints(raw, 123457, 2 ** 31 - 1))
    with pytest.raises(LoadError, match="numel.pt"):
        tg.load(path)


def test_a_symlink_loop_is_a_load_error(tmp_path):
    a, b = tmp_path / "a.pt", tmp_path / "b.pt"
    os.symlink(b, a)
    os.symlink(a, b)
    with pytest.raises(LoadError, match="a.pt"):
        tg.load(a)
    with pytest.raises(LoadError, match="a.pt"):
        load_checkpoint(a)


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="Linux's /proc")
def test_proc_self_mem_is_a_load_error():
    with pytest.raises(LoadError, match="/proc/self/mem"):
        tg.load("/proc/self/mem")
    with pytest.raises(LoadError, match="/proc/self/mem"):
        load_checkpoint("/proc/self/mem")


def test_a_directory_is_a_load_error(tmp_path):
    with pytest.raises(LoadError, match="directory"):
        tg.load(tmp_path)


def test_a_missing_file_is_still_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        tg.load(tmp_path / "nope.pt")


def test_an_open_file_is_mapped_too(tmp_path):
    path = tmp_path / "sparse.pt"
    with open(path, "wb") as f:
        f.truncate(256 << 20)
    with open(path, "rb") as f:
        tracemalloc.start()
        try:
            with pytest.raises(LoadError, match="sparse.pt"):
                tg.load(f)
        finally:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
    assert peak < 16 << 20, peak
    torch.save({"w": torch.arange(3.0)}, tmp_path / "ok.pt")
    with open(tmp_path / "ok.pt", "rb") as f:
        assert np.array_equal(tg.load(f)["w"].numpy(), [0.0, 1.0, 2.0])


def test_a_pickle_declaring_8_gib_of_bytes_reads_only_what_is_there(tmp_path):
    """BINBYTES8 with a length of 2**33 in a 16-byte file: one LoadError, nothing of that size allocated."""
    path = tmp_path / "bytes8.pt"
    path.write_bytes(b"\x80\x02\x8e" + struct.pack("<Q", 2 ** 33) + b"abc.")
    out = _peak(lambda: pytest.raises(LoadError, tg.load, path))
    assert out[1] < 1 << 20
