"""Checkpoints of trained models that ``tinygrad-tx sample`` (or any script) can rebuild.

The file is a :func:`tinygrad_tx.checkpoint.save_checkpoint` safetensors file: the model's
state dict, the AdamW state, and two metadata strings:

* ``"train"``: JSON ``{"task", "model", "model_kwargs", "dtype", "config", ...}``: the
  class name in ``tinygrad_tx.models`` and its constructor arguments rebuild the model;
  the task adds what it needs to use it (the names model: ``vocab`` and ``layout``);
* ``"scheduler"``: JSON of the ``LambdaLR`` state (its step count and the warmup/cosine
  settings).

A history of the run (per-step loss, evaluations) is written next to it as
``<name>.history.json``.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from .. import models
from ..checkpoint import load_checkpoint, save_checkpoint


def _json_default(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"cannot write a {type(x).__name__} to JSON")


def save_run(path, model, optimizer, scheduler, info: dict, history: dict | None = None, step=None) -> Path:
    """Write the checkpoint (and ``<stem>.history.json``); creates the directory. Returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sched = scheduler.state_dict() if scheduler is not None else {}
    metadata = {"train": json.dumps(info, default=_json_default),
                "scheduler": json.dumps(sched, default=_json_default)}
    save_checkpoint(path, model.state_dict(), optimizer, metadata=metadata, step=step)
    if history is not None:
        history_path(path).write_text(json.dumps(history, default=_json_default))
    return path


def history_path(path) -> Path:
    path = Path(path)
    return path.with_name(path.stem + ".history.json")


def load_run(path):
    """``(model, info)`` from a checkpoint written by :func:`save_run` (model in eval mode)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"checkpoint not found: {path}")
    state, _, metadata = load_checkpoint(path)
    if "train" not in metadata:
        raise ValueError(f"{path}: not a tinygrad-tx training checkpoint (no 'train' metadata); "
                         "it holds only arrays")
    try:
        info = json.loads(metadata["train"])
        cls = getattr(models, info["model"])
        kwargs = info["model_kwargs"]
    except (json.JSONDecodeError, KeyError, AttributeError, TypeError) as e:
        raise ValueError(f"{path}: corrupt training metadata: {e!r}") from None
    model = cls(**kwargs)
    if info.get("dtype") == "float64":
        model.double()
    model.load_state_dict(state)
    model.eval()
    return model, info


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
