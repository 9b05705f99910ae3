"""The files of a training run: checkpoint, best checkpoint, history; reading them back.

The checkpoint is a :func:`tinygrad_tx.checkpoint.save_checkpoint` safetensors file: the
model's state dict, the AdamW state, and metadata strings:

* ``"train"``: JSON ``{"task", "model", "model_kwargs", "dtype", "config", ...}``: the
  class name in ``tinygrad_tx.models`` and its constructor arguments rebuild the model;
  the task adds what it needs to use it (the names model: ``vocab`` and ``layout``);
* ``"scheduler"``: JSON of the ``LambdaLR`` state (its step count and the warmup/cosine
  settings);
* ``"history"``: JSON of the run's history up to the checkpoint's step (per-step loss, lr,
  gradient norm, the evaluations);
* ``"resume"``: JSON of what ``--resume`` needs besides the arrays: the global generator's
  state, the task's own generators (ViT augmentation), the position in the data order.

Files, all written atomically (:func:`tinygrad_tx.checkpoint.atomic_write`: a temporary
``.<name>.tmp-<pid>`` in the same directory, fsync, ``os.replace``; the umask's mode):

* ``<out>`` (default ``runs/<model>/model.safetensors``): written at every evaluation, when
  training is interrupted (SIGINT/SIGTERM under the CLI), and at the end (with the metrics);
* ``<stem>.best.safetensors``: the checkpoint of the evaluation with the lowest dev loss so far;
* ``<stem>.history.json``: the history, a copy of the checkpoint's own ``"history"``.

The history is written *inside* the checkpoint, so the two cannot disagree; the JSON copy is
written with it in one :func:`tinygrad_tx.checkpoint.atomic_write_many`: both files are
serialised and fsynced under their temporary names first, then the two renames follow one
another directly. (Before, the copy was serialised and fsynced only after the checkpoint's
rename, and a SIGKILL in those milliseconds left a copy one checkpoint behind: 2 of 25 kills.)
A kill between two consecutive ``rename`` calls is still possible in principle, and the
reader stays authoritative: :func:`load_history` reads the checkpoint's history and rewrites
a missing or stale copy.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np

from .. import models
from ..checkpoint import (atomic_write, atomic_write_many, check_regular_file, checkpoint_bytes, load_checkpoint,
                          write_bytes)
from ..nn import Module


def _json_default(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"cannot write a {type(x).__name__} to JSON")


def to_json(value) -> str:
    return json.dumps(value, default=_json_default)


def _text_writer(text: str):
    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
    return write


def write_text_atomic(path, text: str) -> Path:
    """``path.write_text(text)``, atomically (a killed process leaves the old file or the new one)."""
    atomic_write(path, _text_writer(text))
    return Path(path)


def best_path(path) -> Path:
    """``<stem>.best.safetensors`` beside the checkpoint: the lowest dev loss of the run so far."""
    path = Path(path)
    return path.with_name(path.stem + ".best" + (path.suffix or ".safetensors"))


def history_path(path) -> Path:
    path = Path(path)
    return path.with_name(path.stem + ".history.json")


def save_run(path, model, optimizer, scheduler, info: dict, history: dict | None = None, step=None,
             resume: dict | None = None, write_history: bool = True) -> Path:
    """Write the checkpoint (the history inside it, ``resume`` state when given) and
    ``<stem>.history.json`` together (:func:`~tinygrad_tx.checkpoint.atomic_write_many`: both
    on disk before either is renamed); creates the directory. Returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sched = scheduler.state_dict() if scheduler is not None else {}
    metadata = {"train": to_json(info), "scheduler": to_json(sched)}
    if history is not None:
        metadata["history"] = to_json(history)
    if resume is not None:
        metadata["resume"] = to_json(resume)
    data = checkpoint_bytes(model.state_dict(), optimizer, metadata=metadata, step=step)
    files = [(path, lambda tmp: write_bytes(tmp, data))]
    if history is not None and write_history:
        files.append((history_path(path), _text_writer(metadata["history"])))
    atomic_write_many(files)
    return path



def prepare_out(path, flag: str = "--out") -> Path:
    """Check, before any training, that ``path`` can be written: its directory is created (a
    parent that is a file is named), ``path`` is not a directory, and a probe file can be
    created and removed there. ``ValueError`` (a directory, a parent that is a file) or the
    ``OSError`` of the probe, naming ``flag`` and the path."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{flag} {path} is a directory; give a file path such as {path / 'model.safetensors'}")
    parent = path.parent
    for p in [parent, *parent.parents]:
        if p.exists() and not p.is_dir():
            raise ValueError(f"{flag} {path}: {p} is a file, not a directory")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        probe = parent / f".{path.name}.probe-{os.getpid()}"
        with open(probe, "w") as f:
            f.write("")
        os.unlink(probe)
    except OSError as e:
        raise type(e)(f"{flag} {path}: cannot write to {parent} ({e.strerror or e})") from None
    return path


def read_checkpoint(path):
    """``(state, optimizer_state, metadata, info)`` of a training checkpoint; ``ValueError`` naming
    the path for anything that is not one (no ``"train"`` metadata, corrupt JSON)."""
    path = check_regular_file(path)
    state, opt_state, metadata = load_checkpoint(path)
    if "train" not in metadata:
        raise ValueError(f"{path}: not a tinygrad-tx training checkpoint (no 'train' metadata); "
                         "it holds only arrays")
    try:
        info = json.loads(metadata["train"])
        if not isinstance(info, dict):
            raise TypeError(f"'train' metadata is a {type(info).__name__}, not an object")
        info["model"], info["model_kwargs"]
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: corrupt training metadata: {e!r}") from None
    return state, opt_state, metadata, info


def model_class(path, name):
    """The ``Module`` subclass ``tinygrad_tx.models.<name>``; anything else (a submodule such as
    ``'gpt'``, a function, a missing name) is a ``ValueError`` naming the checkpoint."""
    cls = getattr(models, name, None) if isinstance(name, str) and name in models.__all__ else None
    if not (isinstance(cls, type) and issubclass(cls, Module)):
        raise ValueError(f"{path}: metadata names the model {name!r}, which is not a model class of "
                         f"tinygrad_tx.models (one of {', '.join(n for n in models.__all__ if n[0].isupper())})")
    return cls


def check_model_kwargs(path, kwargs, state: dict) -> dict:
    """Bound the constructor arguments by the arrays they must describe, before anything is built:
    every number must be finite, and every integer in [0, the largest array dimension or number of
    arrays]. (A model's sizes -- vocab_size, d_model, block_size, hidden -- are dimensions of
    its weights, its counts -- layers, heads -- at most one per array or per dimension.) An
    edited ``vocab_size=1e9`` is then a ``ValueError``, not a MemoryError while building."""
    if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
        raise ValueError(f"{path}: metadata model_kwargs must be an object of named arguments, got {kwargs!r}")
    dims = [int(d) for a in state.values() if getattr(a, "size", 0) for d in np.shape(a)]
    bound = max(dims + [len(state)])
    for key, value in kwargs.items():
        if value is None or isinstance(value, (bool, str)):
            continue
        if not isinstance(value, (int, float)):
            raise ValueError(f"{path}: metadata model_kwargs[{key!r}] = {value!r} is not a number, string or bool")
        if not math.isfinite(value) or (isinstance(value, int) and not 0 <= value <= bound) or \
                (isinstance(value, float) and abs(value) > bound):
            raise ValueError(f"{path}: metadata model_kwargs[{key!r}] = {value!r} does not fit the checkpoint's "
                             f"arrays (largest dimension {bound})")
    return kwargs


def build_model(path, info: dict, state: dict):
    """The model the checkpoint's metadata describes, its arrays loaded (train mode)."""
    cls = model_class(path, info["model"])
    kwargs = check_model_kwargs(path, info["model_kwargs"], state)
    try:
        model = cls(**kwargs)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{path}: metadata model_kwargs do not build a {cls.__name__}: {e}") from None
    if info.get("dtype") == "float64":
        model.double()
    try:
        model.load_state_dict(state)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{path}: the arrays do not fit {cls.__name__}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())}): "
                         f"{' '.join(str(e).split())}") from None
    return model


def check_vocab(path, info: dict) -> None:
    """A names checkpoint's ``vocab`` must be a :class:`~tinygrad_tx.data.CharVocab` (the sentinel
    '$' first, single unique characters) of exactly the model's ``vocab_size`` symbols: a shorter
    one lets ``sample`` draw ids it cannot decode, a longer one encodes ids the model lacks.
    ``ValueError`` naming the file."""
    if "vocab" not in info:
        return
    from ..data import CharVocab
    vocab = info["vocab"]
    if not isinstance(vocab, str):
        raise ValueError(f"{path}: metadata vocab must be a string of characters, got {vocab!r}")
    try:
        CharVocab(list(vocab))
    except ValueError as e:
        raise ValueError(f"{path}: metadata vocab {vocab!r} is not a character vocabulary: {e}") from None
    size = info["model_kwargs"].get("vocab_size")
    if size is not None and size != len(vocab):
        raise ValueError(f"{path}: metadata vocab has {len(vocab)} characters ({vocab!r}) but the model has "
                         f"vocab_size {size}")


def load_run(path):
    """``(model, info)`` from a checkpoint written by :func:`save_run` (model in eval mode); a
    ``vocab`` in the metadata is checked against the model (:func:`check_vocab`)."""
    state, _, _, info = read_checkpoint(path)
    model = build_model(os.fspath(path), info, state)
    check_vocab(os.fspath(path), info)
    model.eval()
    return model, info


def load_history(path) -> dict | None:
    """The history stored in the checkpoint (None for one written without); a missing or stale
    ``<stem>.history.json`` (a process killed between the two writes) is rewritten from it."""
    _, _, metadata = load_checkpoint(check_regular_file(path))
    if "history" not in metadata:
        return None
    history = json.loads(metadata["history"])
    copy = history_path(path)
    try:
        stale = json.loads(copy.read_text()) != history
    except (OSError, ValueError):
        stale = True
    if stale:
        write_text_atomic(copy, metadata["history"])
    return history


def plot_path(config, checkpoint) -> Path:
    """``config.plot``, or ``<checkpoint stem>.loss.png`` beside the checkpoint."""
    if config.plot:
        return Path(config.plot)
    checkpoint = Path(checkpoint)
    return checkpoint.with_name(checkpoint.stem + ".loss.png")


def write_plot(config, checkpoint, history: dict, title: str, metric=None, reference=None, log=print):
    """Plot the run's curves (``plots.plot_history``) and log where."""
    from .plots import plot_history
    path = plot_history(history, plot_path(config, checkpoint), title, metric=metric, reference=reference)
    log(f"loss plot: {path}")
    return path
