"""``--compare-torch``: train a tinygrad_tx model and its PyTorch twin side by side.

Both start from the same weights (the twin loads our initial ``state_dict``), see the same
batches (one stream from our ``DataLoader``, each batch handed to both), and take the same
optimiser steps: ``torch.optim.AdamW`` with the same two parameter groups (weight decay on
tensors with >= 2 dimensions), ``torch.optim.lr_scheduler.LambdaLR`` with the very same
``warmup_cosine`` multiplier object, and ``torch.nn.utils.clip_grad_norm_``. Dropout must be
0: the two frameworks draw different masks (the caller forces it). The per-step training
losses are returned (and printed every ``compare_every`` steps) with their relative
difference; in float64 they agree to ~1e-12 over hundreds of steps, in float32 to ~1e-5.

This is the only training code that imports torch; ``tinygrad_tx.cli`` imports it lazily.
"""
from __future__ import annotations

import math
import time

import numpy as np
import torch

import reference
from tinygrad_tx.training.loop import batch_stream, make_optimizer, train_step


def torch_args(spec, dtype: torch.dtype, device=None):
    """``(method, args, kwargs)`` of NumPy arrays -> the same call with torch tensors (floats in ``dtype``,
    on ``device`` when given)."""
    def conv(a):
        if isinstance(a, np.ndarray):
            t = torch.from_numpy(np.ascontiguousarray(a)).to(device)
            return t.to(dtype) if t.is_floating_point() else t
        return a
    method, args, kwargs = spec
    return method, tuple(conv(a) for a in args), {k: conv(v) for k, v in kwargs.items()}


def build_twin(task, ours):
    """The reference model of ``task.model_spec()`` holding ``ours``' weights, in the config's dtype."""
    name, kwargs = task.model_spec()
    twin = getattr(reference, name)(**kwargs)
    if task.config.dtype == "float64":
        twin.double()
    twin.load_state_dict(ours.state_dict())
    return twin


def torch_optimizer(twin, config, schedule):
    decay = [p for _, p in twin.named_parameters() if p.requires_grad and p.ndim >= 2]
    other = [p for _, p in twin.named_parameters() if p.requires_grad and p.ndim < 2]
    groups = [g for g in ({"params": decay, "weight_decay": config.weight_decay},
                          {"params": other, "weight_decay": 0.0}) if g["params"]]
    opt = torch.optim.AdamW(groups, lr=config.lr, betas=(config.beta1, config.beta2), eps=config.eps)
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, schedule)


def torch_step(twin, opt, sched, spec, dtype: torch.dtype, grad_clip: float, device=None) -> float:
    """The twin's side of :func:`tinygrad_tx.training.loop.train_step`: loss of ``spec``, backward,
    ``clip_grad_norm_`` (skipped when ``grad_clip`` is 0), optimiser and scheduler steps; returns the loss."""
    twin.train()
    method, args, kwargs = torch_args(spec, dtype, device)
    _, loss = getattr(twin, method)(*args, **kwargs)
    opt.zero_grad()
    loss.backward()
    if grad_clip > 0:
        torch.nn.utils.clip_grad_norm_(twin.parameters(), grad_clip)
    opt.step()
    sched.step()
    return float(loss.item())


def lockstep(task, device=None):
    """What both sides of a comparison start from: ``(ours, twin, (opt, sched), (t_opt, t_sched),
    stream)`` -- ``task.build_model()``, its twin with the same weights (on ``device`` when given),
    the loop's AdamW + schedule for each, and the task's training batches."""
    cfg = task.config
    ours = task.build_model()
    twin = build_twin(task, ours).to(device)
    opt, sched, schedule = make_optimizer(ours, cfg)
    t_opt, t_sched = torch_optimizer(twin, cfg, schedule)
    return ours, twin, (opt, sched), (t_opt, t_sched), batch_stream(task.train_dataset(), cfg.batch_size, cfg.seed,
                                                                    task.train_batch)


def compare(task, log=print, torch_threads: int | None = 1) -> dict:
    """Train ``task.build_model()`` and its twin for ``task.config.steps`` steps on identical
    batches; returns ``{"step", "ours", "torch", "rel_diff", "max_rel_diff", "seconds_ours",
    "seconds_torch"}``.

    ``torch_threads``: torch's intra-op threads while comparing (default 1; None leaves
    torch's setting). The two frameworks take turns in one process, and torch's OpenMP
    pool spinning next to NumPy's BLAS pool made tiny steps ~40x slower on a busy machine.
    """
    cfg = task.config
    if torch_threads is not None:
        previous = torch.get_num_threads()
        torch.set_num_threads(torch_threads)
        try:
            return compare(task, log, torch_threads=None)
        finally:
            torch.set_num_threads(previous)
    if cfg.dropout != 0:
        raise ValueError(f"--compare-torch needs dropout 0 (the frameworks draw different masks), got {cfg.dropout}")
    dtype = torch.float64 if cfg.dtype == "float64" else torch.float32
    ours, twin, (opt, sched), (t_opt, t_sched), stream = lockstep(task)
    out = {"step": [], "ours": [], "torch": [], "rel_diff": []}
    secs = {"ours": 0.0, "torch": 0.0}
    every = max(cfg.compare_every, 1)
    log(f"{'step':>6}  {'tinygrad_tx':>20}  {'torch':>20}  {'rel diff':>9}")
    for step in range(1, cfg.steps + 1):
        spec = task.batch_call(next(stream))
        t0 = time.perf_counter()
        loss_ours, _ = train_step(ours, opt, sched, spec, cfg.grad_clip)
        t1 = time.perf_counter()
        loss_torch = torch_step(twin, t_opt, t_sched, spec, dtype, cfg.grad_clip)
        t2 = time.perf_counter()
        secs["ours"] += t1 - t0
        secs["torch"] += t2 - t1
        rel = abs(loss_ours - loss_torch) / abs(loss_torch) if loss_torch else math.inf
        for k, v in (("step", step), ("ours", loss_ours), ("torch", loss_torch), ("rel_diff", rel)):
            out[k].append(v)
        if step == 1 or step % every == 0 or step == cfg.steps:
            log(f"{step:>6}  {loss_ours:>20.15f}  {loss_torch:>20.15f}  {rel:>9.2e}")
    out["max_rel_diff"] = max(out["rel_diff"])
    out["seconds_ours"], out["seconds_torch"] = secs["ours"], secs["torch"]
    return out
