"""``tinygrad_tx.save`` / ``tinygrad_tx.load``: torch's two functions without pickle's danger.

Loading a pickle runs whatever the file says (``os.system``, ``eval``, any importable callable), so
neither function here ever unpickles with Python's ordinary unpickler.

What :func:`save` writes
------------------------
A zip file (entries stored, not compressed) holding

* ``tinygrad_tx.json``: ``{"format": "tinygrad_tx.save", "version": 1, "root": NODE}``, the saved
  object as a JSON tree. ``None``, bools, ints, strings and finite or non-finite floats are JSON
  values; everything else is a tagged node ``{"__t": tag, ...}``: ``list``, ``tuple``, ``set``,
  ``dict``/``odict`` (the keys are nodes too, so the int keys of an optimizer's state stay ints;
  a torch-style ``_metadata`` of an OrderedDict is kept), ``complex``, ``dtype``, ``tensor``
  (with ``requires_grad`` and whether it is a ``Parameter``), ``ndarray`` and ``npscalar``;
* ``data/<n>.npy``: the array of each tensor, NumPy array or NumPy scalar (``np.save`` with
  ``allow_pickle=False``). An object saved twice (a tied weight) is written once and comes back
  as one object.

A path is written atomically (``checkpoint.atomic_write``: a temporary file renamed into place);
a file object gets the bytes. Anything else (a whole module, a function, an object of your own
class) is a TypeError naming where it sits: save ``model.state_dict()`` instead of the model.

What :func:`load` reads
-----------------------
* files written by :func:`save` (the JSON is decoded node by node, the arrays with
  ``allow_pickle=False``);
* **PyTorch's** ``torch.save`` files: the zip layout (``<name>/data.pkl``, the storages in
  ``<name>/data/<key>``, ``<name>/byteorder``) and the legacy non-zip layout
  (``_use_new_zipfile_serialization=False``: magic number, protocol, system info, the pickle,
  the storage keys and each storage's bytes). Their pickle is read by :class:`RestrictedUnpickler`,
  which knows only torch's tensor-rebuilding functions (``torch._utils._rebuild_tensor_v2``,
  ``_rebuild_tensor``, ``_rebuild_parameter``, ``_rebuild_parameter_with_state``), the typed
  storages (``torch.FloatStorage``, ...), ``torch.Size``, ``torch.device``, torch's dtypes,
  ``collections.OrderedDict``, ``set``, ``frozenset`` and ``complex`` -- each replaced by our own
  function that builds plain data, never torch's. Before a single opcode runs, the whole pickle is
  scanned (``pickletools.genops``) and a file that names any other global -- ``os.system``,
  ``builtins.eval``, ``posix.system``, a class of the author's -- or uses an opcode that reaches
  outside (the extension registry) is refused with :class:`UnsafeLoadError`
  naming it; the unpickler's ``find_class`` and ``BUILD`` refuse again, so nothing outside the
  list can run even if the scan were fooled.

Tensors come back as tinygrad_tx Tensors (Parameters where torch saved a Parameter), views of their
storage as in torch: each storage is copied out of the file once, and tensors that shared a storage in
torch (views) share its memory here. An expanded tensor (stride 0: ``zeros(1).expand(20000, 15000)``,
one stored element) or one whose elements overlap stays such a view, read-only (in-place writes into
it raise, as torch's do); a Parameter is written in place, so an expanded one is copied, up to
:data:`MAX_EXPANDED_BYTES` (256 MiB) -- beyond that it is a LoadError.
bfloat16 (which NumPy lacks) becomes float32, exactly; complex tensors are refused (the engine has
none). ``map_location`` is accepted for compatibility: everything lands on the CPU, the only
device, so a checkpoint saved on CUDA loads without it; mapping to another device is an error.
``weights_only`` may be None (torch's default, meaning True), True or False; all read with the
restricted unpickler, since running the file's code is never an option here.

Memory is bounded by the file, not by what it declares: a path is mapped (``mmap``), not read, so
only the bytes a load reaches are touched (a sparse 8 GiB file of zeros is refused after reading a
few bytes of it); every declared size -- a zip entry's, a ``.npy`` header's shape and dtype, a
storage's element count, a tensor's extent in its storage -- is checked against the bytes actually
there before anything is allocated.

A truncated or corrupt file (a bad zip, a broken pickle, a storage shorter than its tensors, a CRC
mismatch, a ``.npy`` header NumPy cannot parse or that declares more than follows it, a non-numeric
dtype, a size NumPy cannot index) is one :class:`LoadError` naming the file and what is wrong; so is
a zip with a compressed entry (both writers store entries uncompressed; a compressed one could expand
without bound), a path that is a directory, a device, a symlink loop, or a file the system cannot read
(``/proc/self/mem``). A missing file is ``FileNotFoundError``, a forbidden one ``PermissionError``, as
in torch.
"""
from __future__ import annotations

import _compat_pickle
import io
import json
import math
import mmap as _mmap
import numbers
import os
import pickle
import pickletools
import stat
import struct
import zipfile
import zlib
from collections import OrderedDict

import numpy as np

from .core import dtypes as _dtypes
from .core.tensor import Tensor
from .files import LoadError

FORMAT = "tinygrad_tx.save"
VERSION = 1
_STRUCTURE = "tinygrad_tx.json"
_TORCH_MAGIC = 0x1950A86A20F9469CFC6C   # torch's legacy (non-zip) format starts with this pickled int


class UnsafeLoadError(pickle.UnpicklingError):
    """A PyTorch file whose pickle would import or call something outside the allowed list."""


# ============================================================================ save

def _check_key(key, where: str):
    if key is None or isinstance(key, (str, bool, numbers.Integral, float, tuple)):
        return
    raise TypeError(f"save: the dict key {key!r} at {where} is a {type(key).__name__}; keys must be strings, "
                    "numbers, None or tuples of them")


class _Writer:
    """Turns an object into the JSON tree and the list of arrays (``data/<n>.npy``)."""

    def __init__(self):
        self.arrays: list[np.ndarray] = []
        self.memo: dict[int, int] = {}     # id(obj) -> blob index (a tied weight is written once)
        self.keep: list = []               # the memoised objects, so their ids stay unique
        self.active: set[int] = set()      # containers being encoded (a cycle is an error)

    def blob(self, obj, array: np.ndarray) -> int:
        if id(obj) not in self.memo:
            self.memo[id(obj)] = len(self.arrays)
            self.keep.append(obj)
            self.arrays.append(np.asarray(array, order="C"))   # (ascontiguousarray makes 0-d 1-d)
        return self.memo[id(obj)]

    def encode(self, obj, where: str):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, numbers.Integral) and not isinstance(obj, np.generic):
            return int(obj)
        if isinstance(obj, float):
            return obj if math.isfinite(obj) else {"__t": "float", "v": repr(obj)}
        if isinstance(obj, complex):
            return {"__t": "complex", "re": self.encode(obj.real, where), "im": self.encode(obj.imag, where)}
        if isinstance(obj, _dtypes.dtype):
            return {"__t": "dtype", "name": obj._name}
        if isinstance(obj, Tensor):
            from .nn.parameter import Parameter
            return {"__t": "tensor", "blob": self.blob(obj, obj._data), "requires_grad": bool(obj.requires_grad),
                    "parameter": isinstance(obj, Parameter)}
        if isinstance(obj, np.ndarray):
            self._check_array(obj, where)
            return {"__t": "ndarray", "blob": self.blob(obj, obj)}
        if isinstance(obj, np.generic):
            self._check_array(np.asarray(obj), where)
            return {"__t": "npscalar", "blob": self.blob(obj, np.asarray(obj))}
        if isinstance(obj, (list, tuple, set, frozenset, dict)):
            if id(obj) in self.active:
                raise ValueError(f"save: {where} contains itself (a cycle); only trees of containers can be saved")
            self.active.add(id(obj))
            try:
                return self._container(obj, where)
            finally:
                self.active.discard(id(obj))
        hint = (" (save its state_dict(): tinygrad_tx.save(model.state_dict(), f))"
                if hasattr(obj, "state_dict") else "")
        raise TypeError(f"save: cannot save {where}, a {type(obj).__module__}.{type(obj).__qualname__}{hint}; "
                        "tinygrad_tx.save writes tensors, NumPy arrays, numbers, strings, None, dtypes and "
                        "dicts/lists/tuples/sets of them (no pickle)")

    @staticmethod
    def _check_array(a: np.ndarray, where: str):
        if a.dtype.hasobject or a.dtype.kind not in "biufc":
            raise TypeError(f"save: {where} is an array of dtype {a.dtype}; only numeric and bool arrays can be saved")

    def _container(self, obj, where: str):
        if isinstance(obj, dict):
            items = []
            for k, v in obj.items():
                _check_key(k, where)
                items.append([self.encode(k, where), self.encode(v, f"{where}[{k!r}]")])
            node = {"__t": "odict" if isinstance(obj, OrderedDict) else "dict", "items": items}
            meta = getattr(obj, "_metadata", None)
            if isinstance(obj, OrderedDict) and isinstance(meta, dict):
                node["metadata"] = self.encode(meta, f"{where}._metadata")
            return node
        tag = "list" if isinstance(obj, list) else "tuple" if isinstance(obj, tuple) else "set"
        return {"__t": tag, "v": [self.encode(v, f"{where}[{i}]") for i, v in enumerate(obj)]}


def _save_bytes(obj) -> bytes:
    writer = _Writer()
    try:
        root = writer.encode(obj, "obj")
    except RecursionError:
        raise ValueError("save: obj's containers are nested too deeply to save") from None
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr(_STRUCTURE, json.dumps({"format": FORMAT, "version": VERSION, "root": root}, allow_nan=False))
        for i, a in enumerate(writer.arrays):
            npy = io.BytesIO()
            np.save(npy, a, allow_pickle=False)
            z.writestr(f"data/{i}.npy", npy.getvalue())
    return buf.getvalue()


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False) -> None:
    """Save ``obj`` (a state_dict, an optimizer's state_dict, nested dicts/lists/tuples of tensors,
    numbers, strings, None) to ``f``, a path (written atomically) or a binary file object, in the
    safe zip + JSON + ``.npy`` format described in this module's docstring (no pickle).
    ``pickle_module``/``pickle_protocol`` and the other keywords are torch's; they are accepted and
    have no effect (nothing is pickled)."""
    data = _save_bytes(obj)
    if isinstance(f, (str, bytes, os.PathLike)):
        from .files import atomic_write

        def write(tmp):
            with open(tmp, "wb") as out:
                out.write(data)
        atomic_write(os.fsdecode(f), write)
        return
    if not hasattr(f, "write"):
        raise TypeError(f"save: f must be a path or a binary file object with write(), got {type(f).__name__}")
    f.write(data)


# ============================================================================ load: our format

def _decode(node, arrays: dict, memo: dict, where: str):
    if node is None or isinstance(node, (bool, str, int, float)):
        return node
    if isinstance(node, list) or not isinstance(node, dict) or "__t" not in node:
        raise LoadError(f"unexpected JSON value at {where}: {str(node)[:80]}")
    tag = node["__t"]
    if tag == "float":
        return float(node["v"])
    if tag == "complex":
        return complex(node["re"], node["im"])
    if tag == "dtype":
        return _dtypes._by_name(node["name"])
    if tag in ("tensor", "ndarray", "npscalar"):
        i = node["blob"]
        if i in memo:
            return memo[i]
        a = arrays(i)
        if tag == "tensor":
            if node.get("parameter"):
                from .nn.parameter import Parameter
                out = Parameter(a, requires_grad=bool(node.get("requires_grad")))
            else:
                out = Tensor(a, requires_grad=bool(node.get("requires_grad")))
        else:
            out = a if tag == "ndarray" else a[()]
        memo[i] = out
        return out
    if tag in ("list", "tuple", "set"):
        items = [_decode(v, arrays, memo, f"{where}[{i}]") for i, v in enumerate(node["v"])]
        return {"list": list, "tuple": tuple, "set": set}[tag](items)
    if tag in ("dict", "odict"):
        out = OrderedDict() if tag == "odict" else {}
        for k, v in node["items"]:
            key = _decode(k, arrays, memo, where)
            out[key] = _decode(v, arrays, memo, f"{where}[{key!r}]")
        if "metadata" in node:
            out._metadata = _decode(node["metadata"], arrays, memo, f"{where}._metadata")
        return out
    raise LoadError(f"unknown node type {tag!r} at {where}")


def _load_ours(z: zipfile.ZipFile):
    try:
        doc = json.loads(z.read(_STRUCTURE).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise LoadError(f"its {_STRUCTURE} is not valid JSON ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise LoadError(f"its {_STRUCTURE} is not a {FORMAT} structure")
    if doc.get("version") != VERSION:
        raise LoadError(f"format version {doc.get('version')!r}; this tinygrad_tx reads version {VERSION}")

    def array(i):
        if not isinstance(i, int) or isinstance(i, bool):
            raise LoadError(f"bad array reference {i!r}")
        try:
            raw = z.read(f"data/{i}.npy")
        except KeyError:
            raise LoadError(f"array data/{i}.npy is missing") from None
        return _read_npy(raw, f"data/{i}.npy")
    try:
        return _decode(doc.get("root"), array, {}, "obj")
    except (KeyError, TypeError) as e:
        raise LoadError(f"its structure is malformed ({type(e).__name__}: {e})") from None


def _read_npy(raw: bytes, where: str) -> np.ndarray:
    """An array from the bytes of a ``.npy`` file, checked before anything is allocated: the header
    must parse (NumPy's own parser, whose errors -- a tokenizer's, a syntax error, a recursion --
    become one LoadError), the dtype be a number or bool, and the declared size fit in the bytes that
    follow (``shape=(2**40,)`` in a 100-byte file is refused, not allocated)."""
    fmt = np.lib.format
    stream = io.BytesIO(raw)
    try:
        version = fmt.read_magic(stream)
        header = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
        shape, fortran, dtype = header(stream) if version in ((1, 0), (2, 0)) else (None, None, None)
    except Exception as e:      # noqa: BLE001 -- whatever NumPy's header parser raises on garbage
        raise LoadError(f"array {where} is not a valid .npy file ({type(e).__name__}: {str(e)[:200]})") from None
    if shape is None:
        raise LoadError(f"array {where} is a .npy file of version {version}, which is not read here")
    if dtype.hasobject or dtype.kind not in "biufc" or dtype.fields is not None or dtype.subdtype is not None:
        raise LoadError(f"array {where} has dtype {dtype}; only numeric and bool arrays are read")
    count = math.prod(shape)
    offset = stream.tell()
    if count * dtype.itemsize != len(raw) - offset:
        raise LoadError(f"array {where} declares shape {shape} of {dtype} ({count * dtype.itemsize} bytes), but "
                        f"{len(raw) - offset} bytes follow its header")
    a = np.frombuffer(raw, dtype=dtype, count=count, offset=offset)
    return np.array(a.reshape(shape[::-1]).T if fortran else a.reshape(shape), dtype=dtype.newbyteorder("="))


# ============================================================================ load: PyTorch's formats

_STORAGE_DTYPES = {
    "FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
    "BFloat16Storage": "bfloat16", "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16,
    "CharStorage": np.int8, "ByteStorage": np.uint8, "BoolStorage": np.bool_,
    "ComplexFloatStorage": np.complex64, "ComplexDoubleStorage": np.complex128, "UntypedStorage": np.uint8,
}
_TORCH_DTYPES = {"float32": "float32", "float": "float32", "float64": "float64", "double": "float64",
                 "float16": "float16", "half": "float16", "bfloat16": "float32", "int64": "int64", "long": "int64",
                 "int32": "int32", "int": "int32", "int16": "int16", "short": "int16", "int8": "int8",
                 "uint8": "uint8", "bool": "bool"}


class _StorageType:
    """What ``torch.FloatStorage`` & co. become: a marker carrying the element type."""

    def __init__(self, name: str):
        self.name = name
        self.bfloat16 = _STORAGE_DTYPES[name] == "bfloat16"
        self.dtype = np.dtype(np.uint16 if self.bfloat16 else _STORAGE_DTYPES[name])


class _Storage:
    """A storage named by the pickle; its bytes are attached after unpickling (``data``)."""

    def __init__(self, key: str, stype: _StorageType, numel: int, root=None, offset: int = 0):
        self.key, self.stype, self.numel, self.root, self.offset = key, stype, numel, root, offset
        self.data: np.ndarray | None = None

    def array(self) -> np.ndarray:
        if self.root is not None:
            base = self.root.array()
            if self.offset + self.numel > base.size:
                raise LoadError(f"storage view {self.key!r} lies outside its storage {self.root.key!r}")
            return base[self.offset:self.offset + self.numel]
        if self.data is None:
            raise LoadError(f"the data of storage {self.key!r} is missing")
        return self.data


class _PendingTensor:
    """A tensor named by the pickle, built once the storages are read (:func:`_materialize`)."""

    def __init__(self, storage, offset, size, stride, requires_grad=False):
        if not isinstance(storage, _Storage):
            raise LoadError(f"a tensor is rebuilt from {type(storage).__name__}, not from a storage")
        for name, v in (("size", size), ("stride", stride)):
            if not isinstance(v, tuple) or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                                                   for s in v):
                raise LoadError(f"a tensor's {name} is {v!r}, not a tuple of non-negative ints")
        if len(size) != len(stride) or not isinstance(offset, int) or offset < 0:
            raise LoadError(f"a tensor's layout is inconsistent: size {size}, stride {stride}, offset {offset!r}")
        self.storage, self.offset, self.size, self.stride = storage, offset, size, stride
        self.requires_grad = bool(requires_grad)
        self.parameter = False

    def build(self) -> Tensor:
        """The tensor as torch has it: a view of its storage (``as_strided``), so that tensors
        sharing a storage share memory here too, and an expanded tensor (stride 0: a
        ``(20000, 15000)`` tensor over one element) costs its storage, not its size. A view whose
        elements overlap is read-only (the engine refuses in-place writes into it, as torch does)."""
        flat = self.storage.array()
        if flat.dtype.kind == "c":
            raise LoadError(f"a complex tensor ({flat.dtype}) cannot be loaded: tinygrad_tx has no complex tensors")
        numel = math.prod(self.size)
        last = self.offset + sum((n - 1) * s for n, s in zip(self.size, self.stride)) if numel else -1
        if last >= flat.size or numel == 0 and self.offset > flat.size:
            raise LoadError(f"a tensor of size {self.size} (stride {self.stride}, offset {self.offset}) reaches "
                            f"element {last} of storage {self.storage.key!r}, which has {flat.size}")
        overlaps = _overlaps(self.size, self.stride)
        try:
            a = np.lib.stride_tricks.as_strided(flat[self.offset:], shape=self.size,
                                                strides=[s * flat.itemsize for s in self.stride],
                                                writeable=not overlaps)
        except ValueError as e:     # "array is too big": more elements than NumPy can index
            raise LoadError(f"a tensor of size {self.size} cannot be represented ({e})") from None
        if self.parameter:
            from .nn.parameter import Parameter
            if overlaps and a.nbytes > MAX_EXPANDED_BYTES:   # a Parameter is written in place: it gets a copy
                raise LoadError(f"a Parameter of size {self.size} is an expanded view (stride {self.stride}) "
                                f"of {flat.size} stored elements; its writable copy would take {a.nbytes} bytes, "
                                f"more than the {MAX_EXPANDED_BYTES} a load may expand a file to")
            return Parameter(Tensor._from_op(a, None), requires_grad=self.requires_grad)
        t = Tensor._from_op(a, None)
        t.requires_grad = self.requires_grad and a.dtype.kind == "f"
        return t


MAX_EXPANDED_BYTES = 1 << 28     # 256 MiB: the most a load copies out of an expanded (stride-0) Parameter


def _overlaps(size, stride) -> bool:
    """Whether two index tuples of a strided layout reach the same element (a stride-0 or an
    overlapping ``as_strided`` view): dims of size > 1 sorted by stride must each step past the
    whole extent of the smaller ones."""
    extent = 1
    for n, st in sorted(((n, st) for n, st in zip(size, stride) if n > 1), key=lambda d: d[1]):
        if st < extent:
            return True
        extent = st * n
    return False


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                       metadata=None):
    return _PendingTensor(storage, storage_offset, size, stride, requires_grad)


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _PendingTensor(storage, storage_offset, size, stride)


def _rebuild_parameter(data, requires_grad=True, backward_hooks=None):
    if not isinstance(data, _PendingTensor):
        raise LoadError(f"a Parameter is rebuilt from {type(data).__name__}, not from a tensor")
    data.parameter, data.requires_grad = True, bool(requires_grad)
    return data


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return _rebuild_parameter(data, requires_grad, backward_hooks)


def _torch_size(dims=()):
    if not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
        raise LoadError(f"torch.Size of {dims!r}")
    return tuple(dims)


def _torch_device(kind, index=None):
    if not isinstance(kind, str) or not (index is None or isinstance(index, int)):
        raise LoadError(f"torch.device of {kind!r}, {index!r}")
    return kind if index is None else f"{kind}:{index}"


def _allowed_globals() -> dict:
    table = {("collections", "OrderedDict"): OrderedDict,
             ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
             ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
             ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
             ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter_with_state,
             ("torch", "Size"): _torch_size, ("torch", "device"): _torch_device}
    for builtins_name in ("builtins", "__builtin__"):
        table.update({(builtins_name, "set"): set, (builtins_name, "frozenset"): frozenset,
                      (builtins_name, "complex"): complex})
    for name in _STORAGE_DTYPES:
        table[("torch", name)] = _StorageType(name)
    for name, ours in _TORCH_DTYPES.items():
        table[("torch", name)] = getattr(_dtypes, ours)
    return table


_ALLOWED = _allowed_globals()
_STRING_OPS = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "SHORT_BINSTRING", "BINSTRING",
               "STRING"}
_MEMO_PUTS = {"PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE"}
_NO_STACK_OPS = {"FRAME", "PROTO"}
_MEMO_GETS = {"GET", "BINGET", "LONG_BINGET"}
_REFUSED_OPS = {"EXT1", "EXT2", "EXT4"}


def _refuse(module, name):
    py3 = _compat_pickle.NAME_MAPPING.get((module, name),
                                          (_compat_pickle.IMPORT_MAPPING.get(module, module), name))
    shown = f"{module}.{name}" + (f" (= {py3[0]}.{py3[1]})" if py3 != (module, name) else "")
    raise UnsafeLoadError(
        f"refused to load: the pickle names the global {shown}, which is not a tensor, a storage or a plain "
        "container; loading it could run code, so nothing was loaded (tinygrad_tx.load rebuilds only tensors, "
        "OrderedDict, lists, tuples, sets, dicts, numbers and strings)")


class _MappedReader(io.RawIOBase):
    """A seekable binary file over a mapped file's bytes, without copying them (a BytesIO would)."""

    def __init__(self, mapped):
        super().__init__()
        self.mapped, self.pos = mapped, 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def readinto(self, b):
        n = max(0, min(len(b), len(self.mapped) - self.pos))
        b[:n] = self.mapped[self.pos:self.pos + n]
        self.pos += n
        return n

    def read(self, n=-1):
        """At most what the file holds: a pickle declaring 2**40 bytes gets the few there are
        (RawIOBase.read would allocate the declared size first)."""
        end = len(self.mapped) if n is None or n < 0 else min(len(self.mapped), self.pos + n)
        out = self.mapped[self.pos:end]
        self.pos = max(self.pos, end)
        return out

    def readline(self, limit=-1):
        end = self.mapped.find(b"\n", self.pos)
        end = len(self.mapped) if end < 0 else end + 1
        if limit is not None and limit >= 0:
            end = min(end, self.pos + limit)
        out = self.mapped[self.pos:end]
        self.pos = max(self.pos, end)
        return out

    def seek(self, offset, whence=0):
        self.pos = max(0, [0, self.pos, len(self.mapped)][whence] + offset)
        return self.pos

    def tell(self):
        return self.pos


def _stream(data, start: int = 0):
    """A file-like reader of ``data`` (bytes, or a mapped file) from ``start``."""
    stream = _MappedReader(data) if isinstance(data, _mmap.mmap) else io.BytesIO(data)
    stream.seek(start)
    return stream


def scan_pickle(data: bytes, start: int = 0) -> int:
    """Check every global one pickle (from ``start``) names against the allowed list without running
    any of it; return the offset just after its STOP. The module and name of a STACK_GLOBAL are the
    two strings pushed just before it (directly or from the memo), as every pickler writes them; a
    STACK_GLOBAL built any other way is refused, as are the extension-registry opcodes."""
    memo: dict = {}
    pushed: list = []        # the values of the latest pushes when known strings (None: something else)
    stream = _stream(data, start)
    try:
        for op, arg, pos in pickletools.genops(stream):
            name = op.name
            if name in _REFUSED_OPS:
                raise UnsafeLoadError(f"refused to load: the pickle uses the opcode {name} at byte {pos}, which "
                                      "can import objects outside the allowed list")
            if name in ("GLOBAL", "INST"):
                module, _, attr = str(arg).partition(" ")
                if (module, attr) not in _ALLOWED:
                    _refuse(module, attr)
            elif name == "STACK_GLOBAL":
                if len(pushed) < 2 or not isinstance(pushed[-1], str) or not isinstance(pushed[-2], str):
                    raise UnsafeLoadError(f"refused to load: a STACK_GLOBAL at byte {pos} whose module and name "
                                          "are not plain strings")
                if (pushed[-2], pushed[-1]) not in _ALLOWED:
                    _refuse(pushed[-2], pushed[-1])
            if name in _MEMO_PUTS:
                memo[len(memo) if name == "MEMOIZE" else arg] = pushed[-1] if pushed else None
                continue
            if name in _NO_STACK_OPS:
                continue
            if name in _STRING_OPS:
                pushed.append(arg if isinstance(arg, str) else arg.decode("latin-1"))
            elif name in _MEMO_GETS:
                pushed.append(memo.get(arg))
            else:
                pushed.append(None)
            del pushed[:-2]
            if name == "STOP":
                return stream.tell()
    except (ValueError, EOFError) as e:   # pickletools' words for a truncated or malformed pickle
        raise LoadError(f"the pickle is truncated or corrupt ({e})") from None
    raise LoadError("the pickle has no STOP opcode (truncated)")


class RestrictedUnpickler(pickle._Unpickler):
    """Python's pure-Python unpickler with ``find_class`` limited to the allowed list (mapped to our
    own functions), ``BUILD`` limited to setting attributes of a fresh OrderedDict (torch's
    ``state_dict._metadata``) and persistent ids limited to torch's storage tuples."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, file, persistent_load):
        super().__init__(file)
        self._persistent = persistent_load

    def find_class(self, module, name):
        try:
            return _ALLOWED[(module, name)]
        except (KeyError, TypeError):
            _refuse(module, name)

    def persistent_load(self, pid):
        return self._persistent(pid)

    def _load_build(self):
        state = self.stack.pop()
        inst = self.stack[-1]
        if not (type(inst) is OrderedDict and isinstance(state, dict)
                and all(isinstance(k, str) and not k.startswith("__") for k in state)):
            raise UnsafeLoadError(f"refused to load: the pickle sets the state of a {type(inst).__name__}; only "
                                  "an OrderedDict's attributes (torch's _metadata) may be set")
        for k, v in state.items():
            setattr(inst, k, v)

    dispatch[pickle.BUILD[0]] = _load_build
    for _op in (pickle.EXT1, pickle.EXT2, pickle.EXT4):
        dispatch.pop(_op[0], None)
    del _op


def _unpickle(data: bytes, start: int, persistent_load):
    scan_pickle(data, start)
    stream = _stream(data, start)
    try:
        obj = RestrictedUnpickler(stream, persistent_load).load()
    except (UnsafeLoadError, LoadError):
        raise
    except (pickle.UnpicklingError, EOFError, KeyError, IndexError, TypeError, ValueError, AttributeError,
            struct.error) as e:
        raise LoadError(f"the pickle is corrupt ({type(e).__name__}: {e})") from None
    return obj, stream.tell()


def _storage_pid(pid, legacy: bool, storages: dict) -> _Storage:
    """torch's persistent id ``('storage', storage_type, key, location, numel[, view_metadata])``."""
    if not isinstance(pid, tuple) or not pid or pid[0] != "storage" or len(pid) != (6 if legacy else 5):
        raise UnsafeLoadError(f"refused to load: unknown persistent id {str(pid)[:80]}")
    _, stype, key, _location, numel = pid[:5]
    if not isinstance(stype, _StorageType) or not isinstance(key, str) or not isinstance(numel, int) or numel < 0:
        raise LoadError(f"malformed storage reference {str(pid)[:80]}")
    root = storages.get(key)
    if root is None:
        root = storages[key] = _Storage(key, stype, numel)
    elif root.stype.dtype != stype.dtype:
        raise LoadError(f"storage {key!r} is named with two element types")
    view = pid[5] if legacy else None
    if view is None:
        return root
    view_key, offset, size = view
    return storages.setdefault(("view", view_key), _Storage(view_key, stype, size, root=root, offset=offset))


def _materialize(obj, memo: dict):
    """Replace every pending tensor in the unpickled graph by its Tensor. Each object is visited once
    (``memo``, by id): an object the pickle shares stays shared, a cycle through a list or dict is
    kept, and a pickle that nests shared tuples ("billion laughs") costs its size, not its unfolding."""
    if id(obj) in memo:
        return memo[id(obj)][1]
    if isinstance(obj, _PendingTensor):
        out = obj.build()
    elif isinstance(obj, dict):
        memo[id(obj)] = (obj, obj)                   # before the recursion: a cycle finds it
        items = [(_materialize(k, memo), _materialize(v, memo)) for k, v in obj.items()]
        obj.clear()
        obj.update(items)
        return obj
    elif isinstance(obj, list):
        memo[id(obj)] = (obj, obj)
        obj[:] = [_materialize(v, memo) for v in obj]
        return obj
    elif isinstance(obj, (tuple, set, frozenset)):
        out = type(obj)(_materialize(v, memo) for v in obj)
    elif isinstance(obj, (_Storage, _StorageType)):
        raise LoadError("the file holds a bare storage, not a tensor; tinygrad_tx.load rebuilds tensors only")
    else:
        return obj
    memo[id(obj)] = (obj, out)   # the original is kept alive, so its id is not reused
    return out


def _byteorder(dtype: np.dtype, little: bool) -> np.dtype:
    return dtype.newbyteorder("<" if little else ">")


def _storage_array(buffer, offset: int, s: _Storage, little: bool) -> np.ndarray:
    """A storage's elements copied out of the file's bytes into native order (the one copy a load
    makes: its tensors are views of it); bfloat16, the top half of a float32, widened exactly."""
    a = np.frombuffer(buffer, dtype=_byteorder(s.stype.dtype, little), count=s.numel, offset=offset)
    if s.stype.bfloat16:
        return (a.astype(np.uint32) << 16).view(np.float32)
    return a.astype(s.stype.dtype)


def _load_torch_zip(z: zipfile.ZipFile):
    pkl = [n for n in z.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
    if len(pkl) != 1:
        raise LoadError("a zip file that is neither a tinygrad_tx.save file nor a PyTorch one (no <name>/data.pkl)")
    prefix = pkl[0][:-len("data.pkl")]
    names = set(z.namelist())
    little = True
    if prefix + "byteorder" in names:
        order = z.read(prefix + "byteorder").decode("ascii", "replace").strip()
        if order not in ("little", "big"):
            raise LoadError(f"unknown byte order {order!r}")
        little = order == "little"
    storages: dict = {}
    obj, _ = _unpickle(z.read(pkl[0]), 0, lambda pid: _storage_pid(pid, False, storages))
    for s in storages.values():
        if s.root is not None:
            continue
        try:
            raw = z.read(f"{prefix}data/{s.key}")
        except KeyError:
            raise LoadError(f"storage {prefix}data/{s.key} is missing") from None
        need = s.numel * s.stype.dtype.itemsize
        if len(raw) < need:
            raise LoadError(f"storage {prefix}data/{s.key} has {len(raw)} bytes, its tensors need {need}")
        s.data = _storage_array(raw, 0, s, little)
    return _materialize(obj, {})


def _load_torch_legacy(data: bytes):
    def small(start):   # magic number, protocol version, system info: plain values only
        return _unpickle(data, start, lambda pid: _storage_pid(pid, True, {}))

    try:
        magic, pos = small(0)
    except LoadError as e:
        raise LoadError(f"not a tinygrad_tx.save or PyTorch file: neither a zip archive nor a pickle ({e})") from None
    if magic != _TORCH_MAGIC:
        raise LoadError("not a PyTorch file (no magic number at its start) and not a zip file")
    protocol, pos = small(pos)
    if protocol != 1001:
        raise LoadError(f"unsupported legacy PyTorch protocol version {protocol!r}")
    sys_info, pos = small(pos)
    little = bool(sys_info.get("little_endian", True)) if isinstance(sys_info, dict) else True
    storages: dict = {}
    obj, pos = _unpickle(data, pos, lambda pid: _storage_pid(pid, True, storages))
    keys, pos = small(pos)
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise LoadError("the list of storage keys is malformed")
    for key in keys:
        s = storages.get(key)
        if s is None:
            raise LoadError(f"storage {key!r} is listed but no tensor names it")
        if pos + 8 > len(data):
            raise LoadError(f"the file ends before storage {key!r} (truncated)")
        (numel,) = struct.unpack("<q" if little else ">q", data[pos:pos + 8])
        pos += 8
        nbytes = numel * s.stype.dtype.itemsize
        if numel != s.numel or pos + nbytes > len(data):
            raise LoadError(f"storage {key!r} is truncated or does not match its tensors "
                            f"({numel} elements recorded, {s.numel} expected)")
        s.data = _storage_array(data, pos, s, little)
        pos += nbytes
    return _materialize(obj, {})


# ============================================================================ load

def _check_map_location(map_location):
    """Everything loads onto the CPU; a mapping to another device is an error."""
    from .core.device import device as _device
    targets = []
    if map_location is None or callable(map_location) and not isinstance(map_location, (str, _device)):
        return
    if isinstance(map_location, dict):
        targets = list(map_location.values())
    elif isinstance(map_location, (str, _device)):
        targets = [map_location]
    else:
        raise TypeError(f"load: map_location must be None, a device, a string, a dict or a callable, "
                        f"got {map_location!r}")
    for t in targets:
        kind = str(getattr(t, "type", t)).split(":")[0]
        if kind != "cpu":
            raise RuntimeError(f"load: map_location={map_location!r} asks for device {t!r}; tinygrad_tx has only "
                               "the CPU (map_location='cpu' or None loads there)")


def _map_file(path: str):
    """The file's bytes mapped read-only (``mmap``), not read: only the pages a load touches are
    read, so a file that declares more than it holds (a sparse 8 GiB file) costs nothing until a
    check refuses it. Errors other than a missing or forbidden file (a symlink loop, a device that
    cannot be read such as ``/proc/self/mem``) are one LoadError naming the path."""
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise LoadError(f"load: cannot read {path}: it is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise LoadError(f"load: cannot read {path}: it is not a regular file (a FIFO, a socket or a device)")
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size == 0:
                return b""
            return _mmap.mmap(fh.fileno(), 0, access=_mmap.ACCESS_READ)
    except (FileNotFoundError, PermissionError):
        raise
    except OSError as e:
        raise LoadError(f"load: cannot read {path}: {e.strerror or e}") from None


def _read_all(f):
    """``(buffer, name)``: a path's bytes mapped (:func:`_map_file`), a file object's read."""
    if isinstance(f, (str, bytes, os.PathLike)):
        path = os.fsdecode(f)
        return _map_file(path), path
    if not hasattr(f, "read"):
        raise TypeError(f"load: f must be a path or a binary file object with read(), got {type(f).__name__}")
    if isinstance(f, (io.BufferedReader, io.FileIO)) and f.seekable() and f.tell() == 0 \
            and stat.S_ISREG(os.fstat(f.fileno()).st_mode) and os.fstat(f.fileno()).st_size > 0:
        mapped = _mmap.mmap(f.fileno(), 0, access=_mmap.ACCESS_READ)   # an open file: mapped as a path is
        f.seek(0, os.SEEK_END)
        return mapped, getattr(f, "name", "<file object>")
    data = f.read()
    if isinstance(data, str):
        raise TypeError("load: the file object was opened in text mode; open it with 'rb'")
    return bytes(data), getattr(f, "name", "<file object>")


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Load what :func:`save` wrote, or a PyTorch ``.pt``/``.pth`` file (zip or legacy layout), without
    ever running code from the file (see the module's docstring). Tensors come back as tinygrad_tx
    Tensors on the CPU. A refused pickle is an :class:`UnsafeLoadError` (a ``pickle.UnpicklingError``,
    as torch's ``weights_only`` refusal) naming the global; a truncated or corrupt file a
    :class:`LoadError` naming the file."""
    if pickle_module is not None:
        raise TypeError("load: pickle_module is not supported: tinygrad_tx.load reads pickles only with its own "
                        "restricted unpickler")
    if weights_only not in (True, False, None):
        raise TypeError(f"load: weights_only must be a bool, got {weights_only!r}")
    unknown = set(pickle_load_args) - {"encoding", "errors"}
    if unknown:
        raise TypeError(f"load() got an unexpected keyword argument {sorted(unknown)[0]!r}")
    _check_map_location(map_location)
    data, name = _read_all(f)
    try:
        return _load_buffer(data, name)
    finally:
        if isinstance(data, _mmap.mmap):
            try:
                data.close()
            except BufferError:      # a view of it still lives (an error's traceback): the GC closes it
                pass


def _load_buffer(data, name: str):
    stream = _stream(data)
    try:
        if zipfile.is_zipfile(stream):
            try:
                with zipfile.ZipFile(stream) as z:
                    packed = [i.filename for i in z.infolist() if i.compress_type != zipfile.ZIP_STORED]
                    if packed:   # a compressed entry could expand without bound (a zip bomb)
                        raise LoadError(f"its entry {packed[0]!r} is compressed; torch.save and tinygrad_tx.save "
                                        "store entries uncompressed, and compressed ones are not read")
                    beyond = [i.filename for i in z.infolist() if i.header_offset + i.file_size > len(data)]
                    if beyond:   # checked before any entry is read
                        raise LoadError(f"its entry {beyond[0]!r} declares more bytes than the file holds")
                    if _STRUCTURE in z.namelist():
                        return _load_ours(z)
                    return _load_torch_zip(z)
            except (zipfile.BadZipFile, zlib.error, EOFError, OSError, UnicodeDecodeError) as e:
                raise LoadError(f"a damaged zip archive ({e})") from None
        if not data:
            raise LoadError("the file is empty")
        if data[:2] == b"PK":
            raise LoadError("a truncated or damaged zip archive (its central directory is missing)")
        return _load_torch_legacy(data)
    except RecursionError:
        raise LoadError(f"load: cannot read {name}: its containers are nested too deeply") from None
    except MemoryError:
        raise LoadError(f"load: cannot read {name}: what it declares does not fit in memory") from None
    except LoadError as e:
        raise LoadError(f"load: cannot read {name}: {e}") from None
    except UnsafeLoadError as e:
        raise UnsafeLoadError(f"load: {name}: {e}") from None

