"""Checkpoints in the safetensors format: model weights, optimizer state, metadata.

Why safetensors: the file is a JSON header followed by raw little-endian
array bytes. Loading it parses JSON and copies bytes; unlike a pickle it
cannot run code, so a checkpoint from an untrusted source is safe to open.
The same file opens in PyTorch with ``safetensors.torch.load_file``.

Layout of a file written by :func:`save_checkpoint`
---------------------------------------------------

* Model arrays under their own ``state_dict`` keys (``"blocks.0.attn.weight"``),
  so a weights-only checkpoint is an ordinary safetensors state dict that
  ``torch_model.load_state_dict(safetensors.torch.load_file(path))`` accepts.
* Optimizer arrays under ``"optimizer.state.<index>.<name>"``
  (``"optimizer.state.3.exp_avg"``; the index is the parameter's position in
  the optimizer's ``state_dict``). Model keys may not start with ``optimizer.state.``.
* The header's ``__metadata__`` (a str -> str map) holds the caller's
  ``metadata``, ``"step"`` when given, and under reserved ``tinygrad_tx.*``
  keys, JSON for the rest: the model keys in order, and the optimizer's
  class, param groups (hyperparameters) and non-array state values. JSON
  writes floats with ``repr``, so hyperparameters come back bit-exact.

Tied weights: a NumPy ``state_dict`` holds one entry per name, so a weight
shared by two modules is written once per name (``safetensors.torch`` refuses
shared tensors; NumPy arrays carry no sharing to refuse). Loading returns
separate, equal arrays; ``load_state_dict`` copies both into the one shared
parameter, which is consistent.

Writes are atomic (:func:`atomic_write`, which every run file -- checkpoint,
history, plot -- goes through): the file is written under a temporary name in the
same directory, ``.<name>.tmp-<pid>``, flushed to disk (``fsync``) and renamed over
the target with ``os.replace``, so a crash leaves either the old or the new file,
never half of one. The checkpoint's bytes are serialised in memory
(``safetensors.numpy.save``) and written by us: ``safetensors.numpy.save_file`` would
write through a temporary file of its own (``.tmpXXXXXX``) that a SIGKILL leaves behind.
A process killed mid-write cannot clean up after itself; its temporary file is named
after the target, so the next write of that target removes it (only temporaries of
processes that no longer run), together with any ``.tmpXXXXXX`` of safetensors' own
``save_file`` in the directory that no running process holds open (older versions
wrote through it). :func:`atomic_write_many` writes several files so that all their
bytes are on disk before the first rename, and the renames follow one another
directly. The new file gets the mode ``open()`` would give it: ``0o666`` less the
process's umask.

Integrity: the header stores ``tinygrad_tx.sha256``, the SHA-256 of the arrays (name,
dtype, shape and bytes of each, in name order); :func:`load_checkpoint` recomputes it
and a mismatch (bytes flipped on disk, an edited file) is a ``ValueError`` naming the
file. A checkpoint written before the digest existed loads without the check.

Reading opens regular files only: a directory, a FIFO (which would block) or a
device is a ``ValueError`` naming the path. A truncated or corrupt file, or one
whose header does not match its contents, raises ``ValueError`` naming the path.
"""
from __future__ import annotations

import hashlib
import json

import numpy as np
import safetensors.numpy
from safetensors import SafetensorError, safe_open

from .core.tensor import Tensor
from .files import (LoadError, atomic_write, atomic_write_many, check_regular_file, remove_stale_temps,  # noqa: F401
                    temp_path)

FORMAT_VERSION = "1"
OPTIMIZER_PREFIX = "optimizer.state."
_RESERVED = "tinygrad_tx."
_KEY_FORMAT = _RESERVED + "format"
_KEY_MODEL = _RESERVED + "model_keys"
_KEY_OPTIMIZER = _RESERVED + "optimizer"
_KEY_DIGEST = _RESERVED + "sha256"


def _json_default(x):
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"cannot store a {type(x).__name__} in checkpoint metadata (JSON)")


def _as_array(value, what: str) -> np.ndarray:
    arr = np.asarray(value._data if isinstance(value, Tensor) else value)
    if arr.dtype == object:
        raise TypeError(f"{what}: cannot save an object array (value of type {type(value).__name__})")
    return arr if arr.flags.c_contiguous else arr.copy(order="C")  # (ascontiguousarray makes 0-d 1-d)


def _flatten_optimizer(optimizer) -> tuple[dict[str, np.ndarray], dict]:
    """Split an optimizer state_dict into arrays (tensors of the file) and a JSON-able description."""
    sd = optimizer.state_dict() if hasattr(optimizer, "state_dict") else optimizer
    if not isinstance(sd, dict) or "state" not in sd or "param_groups" not in sd:
        raise TypeError("optimizer must be an Optimizer or its state_dict() "
                        "(a dict with 'state' and 'param_groups')")
    arrays: dict[str, np.ndarray] = {}
    values: dict[str, dict] = {}
    array_keys: dict[str, list[str]] = {}
    for idx, entries in sd["state"].items():
        idx = int(idx)
        for name, value in entries.items():
            if "." in str(name):
                raise ValueError(f"optimizer state name {name!r} of parameter {idx} contains '.'")
            if isinstance(value, np.ndarray) or (hasattr(value, "__array__") and not np.isscalar(value)):
                arrays[f"{OPTIMIZER_PREFIX}{idx}.{name}"] = _as_array(value, f"optimizer state {idx}.{name}")
                array_keys.setdefault(str(idx), []).append(name)
            else:
                values.setdefault(str(idx), {})[name] = value
    description = {
        "class": type(optimizer).__name__ if hasattr(optimizer, "state_dict") else None,
        "param_groups": sd["param_groups"],
        "state_arrays": array_keys,
        "state_values": values,
    }
    return arrays, description


def digest(tensors: dict) -> str:
    """SHA-256 (hex) of the arrays: for each name in sorted order, the name, the little-endian
    dtype, the shape and the bytes (C order) -- what :func:`load_checkpoint` verifies."""
    h = hashlib.sha256()
    for key in sorted(tensors):
        a = np.asarray(tensors[key])
        if a.dtype.byteorder == ">":
            a = a.astype(a.dtype.newbyteorder("<"))
        h.update(f"{key}\0{a.dtype.str}\0{tuple(a.shape)}\0".encode())
        h.update(np.ascontiguousarray(a.reshape(-1)).view(np.uint8))
    return h.hexdigest()


def write_bytes(tmp, data: bytes) -> None:
    """Fill the file ``tmp`` with ``data`` (an :func:`atomic_write` writer)."""
    with open(tmp, "wb") as f:
        f.write(data)


def save_checkpoint(path, model_state: dict, optimizer=None, metadata: dict | None = None,
                    step: int | None = None) -> None:
    """Write ``model_state`` (name -> array), optionally an optimizer's state, to ``path`` atomically.

    ``optimizer``: an :class:`~tinygrad_tx.optim.Optimizer` or its ``state_dict()``.
    ``metadata``: extra strings to store (e.g. ``json.dumps(scheduler.state_dict())``
    or a config); keys ``"step"`` and ``"tinygrad_tx.*"`` are reserved.
    ``step``: the training step, stored as ``metadata["step"]``.
    """
    data = checkpoint_bytes(model_state, optimizer, metadata, step)
    atomic_write(path, lambda tmp: write_bytes(tmp, data))


def checkpoint_bytes(model_state: dict, optimizer=None, metadata: dict | None = None,
                     step: int | None = None) -> bytes:
    """The bytes :func:`save_checkpoint` writes (the same arguments), with the arrays' digest
    in the header; serialised in memory, so no temporary file of safetensors' own is made."""
    tensors: dict[str, np.ndarray] = {}
    for key, value in model_state.items():
        if not isinstance(key, str):
            raise TypeError(f"model_state keys must be strings, got {key!r}")
        if key.startswith(OPTIMIZER_PREFIX):
            raise ValueError(f"model_state key {key!r} uses the prefix {OPTIMIZER_PREFIX!r} reserved for "
                             f"optimizer state")
        tensors[key] = _as_array(value, f"model_state[{key!r}]")

    meta: dict[str, str] = {}
    for key, value in (metadata or {}).items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"metadata must map str to str, got {key!r}: {type(value).__name__}")
        if key.startswith(_RESERVED) or (key == "step" and step is not None):
            raise ValueError(f"metadata key {key!r} is reserved")
        meta[key] = value
    if step is not None:
        meta["step"] = str(int(step))
    meta[_KEY_FORMAT] = FORMAT_VERSION
    meta[_KEY_MODEL] = json.dumps(list(tensors))
    if optimizer is not None:
        arrays, description = _flatten_optimizer(optimizer)
        tensors.update(arrays)
        meta[_KEY_OPTIMIZER] = json.dumps(description, default=_json_default)
    meta[_KEY_DIGEST] = digest(tensors)
    return safetensors.numpy.save(tensors, metadata=meta)


def _tuples(group: dict) -> dict:
    """JSON turned tuples (``betas``) into lists; torch's param groups hold tuples."""
    return {k: (tuple(v) if isinstance(v, list) and k not in ("params", "param_names") else v)
            for k, v in group.items()}


def _rebuild_optimizer(path: str, description: dict, tensors: dict[str, np.ndarray]) -> dict:
    """The optimizer state_dict from its JSON description and the ``optimizer.state.*`` arrays."""
    state: dict[int, dict] = {}
    expected = set()
    for idx, names in description["state_arrays"].items():
        for name in names:
            key = f"{OPTIMIZER_PREFIX}{idx}.{name}"
            if key not in tensors:
                raise ValueError(f"{path}: checkpoint header lists optimizer array {key!r} but the file "
                                 f"does not contain it")
            expected.add(key)
            state.setdefault(int(idx), {})[name] = tensors[key]
    for idx, entries in description["state_values"].items():
        state.setdefault(int(idx), {}).update(entries)
    extra = sorted(k for k in tensors if k.startswith(OPTIMIZER_PREFIX) and k not in expected)
    if extra:
        raise ValueError(f"{path}: optimizer arrays {extra} are not described in the checkpoint header")
    indices = {i for g in description["param_groups"] for i in g["params"]}
    unknown = sorted(set(state) - indices)
    if unknown:
        raise ValueError(f"{path}: optimizer state for parameter indices {unknown} that no param group lists")
    state = {i: state[i] for i in sorted(state)}
    return {"state": state, "param_groups": [_tuples(g) for g in description["param_groups"]]}


def load_checkpoint(path) -> tuple[dict[str, np.ndarray], dict | None, dict[str, str]]:
    """Read a checkpoint: ``(model_state, optimizer_state or None, metadata)``.

    ``model_state`` maps names to arrays in the saved order; feed it to
    ``model.load_state_dict``. ``optimizer_state`` has torch's structure
    (``{"state": {index: {...}}, "param_groups": [...]}``) for
    ``optimizer.load_state_dict``. ``metadata`` holds the caller's strings and
    ``"step"`` (as a string) if one was saved. Any safetensors file opens: one
    not written here (e.g. by ``safetensors.torch.save_file``) yields all its
    arrays as the model state and no optimizer state.
    """
    path = check_regular_file(path)
    try:
        with safe_open(path, framework="np") as f:
            meta = dict(f.metadata() or {})
            tensors = {k: f.get_tensor(k) for k in f.keys()}
    except SafetensorError as e:
        raise ValueError(f"{path}: not a readable safetensors checkpoint (truncated or corrupt?): {e}") from e
    except (TypeError, ValueError) as e:  # e.g. a dtype NumPy lacks (bfloat16)
        raise ValueError(f"{path}: cannot load its arrays with NumPy: {e}") from e
    except OSError as e:                  # a file the system cannot map or read (/proc/self/mem)
        raise LoadError(f"{path}: cannot read this checkpoint: {e}") from None
    if _KEY_DIGEST in meta and digest(tensors) != meta[_KEY_DIGEST]:
        raise ValueError(f"{path}: corrupt checkpoint: the SHA-256 of its arrays does not match the one stored "
                         f"when it was written (changed on disk after saving); use another copy")

    if _KEY_FORMAT not in meta:
        return tensors, None, meta
    if meta[_KEY_FORMAT] != FORMAT_VERSION:
        raise ValueError(f"{path}: checkpoint format version {meta[_KEY_FORMAT]!r}, this code reads "
                         f"{FORMAT_VERSION!r}")
    try:
        model_keys = json.loads(meta[_KEY_MODEL])
        description = json.loads(meta[_KEY_OPTIMIZER]) if _KEY_OPTIMIZER in meta else None
    except (KeyError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: corrupt checkpoint header: {e!r}") from e

    stored = [k for k in tensors if not k.startswith(OPTIMIZER_PREFIX)]
    if set(stored) != set(model_keys):
        missing = sorted(set(model_keys) - set(stored))
        extra = sorted(set(stored) - set(model_keys))
        raise ValueError(f"{path}: the model arrays do not match the checkpoint header: "
                         f"missing {missing}, unexpected {extra}")
    model_state = {k: tensors[k] for k in model_keys}
    optimizer_state = _rebuild_optimizer(path, description, tensors) if description is not None else None
    if description is None and any(k.startswith(OPTIMIZER_PREFIX) for k in tensors):
        raise ValueError(f"{path}: optimizer arrays present but no optimizer description in the header")
    metadata = {k: v for k, v in meta.items() if not k.startswith(_RESERVED)}
    return model_state, optimizer_state, metadata
