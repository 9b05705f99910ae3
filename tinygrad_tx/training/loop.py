"""The training loop shared by every gradient-trained task, and what a task must provide.

A :class:`Task` knows its data and its model; :func:`fit` knows how to train. One step is

1. the next mini-batch (``batch_stream``: seeded reshuffle every epoch; padding columns
   that no example of the batch uses are cut off, which changes nothing for a causal
   model with right padding and masked keys, and saves their compute);
2. ``loss = model.<method>(*args)`` as the task's :meth:`Task.batch_call` says (the
   same call runs the PyTorch twin in ``--compare-torch``);
3. ``optimizer.zero_grad(); loss.backward()``;
4. ``clip_grad_norm_`` of all gradients to ``grad_clip`` (skipped when 0);
5. ``optimizer.step()`` (AdamW; weight decay on matrices and embeddings only,
   :func:`~tinygrad_tx.optim.weight_decay_groups`), then ``scheduler.step()``
   (``LambdaLR`` with :func:`~tinygrad_tx.optim.warmup_cosine`: linear warmup for
   ``warmup_steps``, cosine decay to ``min_lr_ratio * lr`` at the last step).

Every ``eval_every`` steps, and after the last one, :meth:`Task.evaluate` measures the dev
split in eval mode without a graph. The history (per-step train loss, lr, and the
evaluations) comes back as a dict, ready for JSON and for :mod:`.plots`.
"""
from __future__ import annotations

import contextlib
import math
import sys
import time

import numpy as np

from .. import manual_seed, models, parallel
from ..autograd import no_grad
from ..data import DataLoader
from ..optim import AdamW, LambdaLR, clip_grad_norm_, warmup_cosine, weight_decay_groups


class Task:
    """What :func:`fit` needs from a task. Subclasses set ``config`` and implement the methods.

    * ``model_spec()`` -> ``(class name, kwargs)``: the class in ``tinygrad_tx.models``
      (and, under the same name, in ``reference``), and its constructor arguments;
    * ``train_dataset()`` -> an ``ArrayDataset`` of NumPy arrays;
    * ``trim(batch)`` -> the batch without all-padding columns (default: unchanged);
    * ``train_batch(batch)`` -> what a training step sees (default ``trim``; the ViT
      adds its augmentation here, so ``--compare-torch`` feeds both models the same images);
    * ``batch_call(batch)`` -> ``(method, args, kwargs)``: ``getattr(model, method)(*args,
      **kwargs)`` returns ``(output, loss)``; arrays only, so the twin can run the same call;
    * ``count(batch)`` -> how many units (``unit``: tokens, images, names) the batch scores;
    * ``evaluate(model, split)`` -> a dict of metrics on ``'dev'`` or ``'test'``; its
      ``metric`` key is the one shown during training.
    """

    unit = "tok"
    metric = "dev_loss"
    config = None

    def model_spec(self) -> tuple[str, dict]:
        raise NotImplementedError

    def train_dataset(self):
        raise NotImplementedError

    def trim(self, batch):
        return batch

    def train_batch(self, batch):
        return self.trim(batch)

    def batch_call(self, batch):
        raise NotImplementedError

    def count(self, batch) -> int:
        return len(batch[0])

    def evaluate(self, model, split: str) -> dict:
        raise NotImplementedError

    # ------------------------------------------------------------------ shared helpers
    def build_model(self):
        """Seed the global generator with ``config.seed`` and build the model in ``config.dtype``."""
        manual_seed(self.config.seed)
        name, kwargs = self.model_spec()
        model = getattr(models, name)(**kwargs)
        if self.config.dtype == "float64":
            model.double()
        return model

    @property
    def float_dtype(self):
        return np.dtype(self.config.dtype)


def trailing_columns(mask: np.ndarray) -> int:
    """1 + the index of the last column of a (B, T) mask with any real (True) entry, at least 1:
    every column after it is padding in every row, so a batch can be cut there."""
    used = np.flatnonzero(mask.any(axis=0))
    return int(used[-1]) + 1 if used.size else 1


def batch_stream(dataset, batch_size: int, seed: int, transform=None):
    """Endless mini-batches: one seeded permutation per epoch (``DataLoader``); the last
    incomplete batch of an epoch is dropped unless the dataset is smaller than one batch.
    ``transform(batch)`` is applied to each."""
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, seed=seed,
                        drop_last=len(dataset) >= batch_size)
    while True:
        for batch in loader:
            yield transform(batch) if transform is not None else batch


def call(model, spec):
    """Run ``(method, args, kwargs)`` on a model; returns its ``(output, loss)``."""
    method, args, kwargs = spec
    return getattr(model, method)(*args, **kwargs)


def make_optimizer(model, config):
    """AdamW over two parameter groups (decayed matrices/embeddings, undecayed vectors) and
    ``LambdaLR(warmup_cosine)``."""
    groups = weight_decay_groups(model.named_parameters(), config.weight_decay)
    groups = [g for g in groups if g["params"]]
    optimizer = AdamW(groups, lr=config.lr, betas=(config.beta1, config.beta2), eps=config.eps)
    schedule = warmup_cosine(min(config.warmup_steps, config.steps), config.steps, config.min_lr_ratio)
    return optimizer, LambdaLR(optimizer, schedule), schedule


def train_step(model, optimizer, scheduler, spec, grad_clip: float) -> tuple[float, float]:
    """One optimiser step on one batch; returns ``(loss, gradient norm before clipping)``."""
    model.train()
    _, loss = call(model, spec)
    optimizer.zero_grad()
    loss.backward()
    params = [p for g in optimizer.param_groups for p in g["params"]]
    norm = float(clip_grad_norm_(params, grad_clip)) if grad_clip > 0 else math.nan
    optimizer.step()
    scheduler.step()
    return float(loss.item()), norm


@no_grad()
def evaluate_batches(model, batches, task, keep_outputs: bool = False):
    """``(sum of the per-unit losses, number of units, outputs)`` over ``batches`` in eval
    mode: each batch's mean loss times the units it scores. ``outputs`` is the models'
    first return values concatenated along the batch (``keep_outputs``), else None."""
    model.eval()
    total, n, outputs = 0.0, 0, []
    for batch in batches:
        batch = task.trim(batch)
        out, loss = call(model, task.batch_call(batch))
        k = task.count(batch)
        total += float(loss.item()) * k
        n += k
        if keep_outputs:
            outputs.append(out._data)
    return total, n, (np.concatenate(outputs) if keep_outputs else None)


def summed_loss(model, batches, task) -> tuple[float, int]:
    """``(sum of the per-unit losses, number of units)``: :func:`evaluate_batches` without outputs."""
    total, n, _ = evaluate_batches(model, batches, task)
    return total, n


def balanced_accuracy(pred: np.ndarray, labels: np.ndarray) -> float:
    """The mean over the classes present in ``labels`` of the fraction of that class predicted right."""
    return float(np.mean([(pred[labels == c] == c).mean() for c in np.unique(labels)]))


def classification_metrics(model, dataset, task, split: str) -> dict:
    """Mean loss, accuracy and balanced accuracy of a classifier whose dataset's last array
    holds the labels."""
    total, n, logits = evaluate_batches(model, eval_batches(dataset), task, keep_outputs=True)
    labels, pred = dataset.arrays[-1], logits.argmax(-1)
    return {f"{split}_loss": total / n, f"{split}_acc": float((pred == labels).mean()),
            f"{split}_balanced_acc": balanced_accuracy(pred, labels)}


def eval_batches(dataset, batch_size: int = 512):
    """The dataset in order, in batches (no shuffling, nothing dropped)."""
    return DataLoader(dataset, batch_size=batch_size, shuffle=False)


class Progress:
    """A tqdm bar on stderr (loss, lr, units/s; tqdm's ETA), or nothing; ``write`` prints
    above it (or plainly, to stdout)."""

    def __init__(self, total: int, enabled: bool, unit: str, desc: str):
        self.bar = None
        if enabled:
            from tqdm import tqdm
            self.bar = tqdm(total=total, desc=desc, unit="step", file=sys.stderr, dynamic_ncols=True,
                            mininterval=0.5)
        self.unit = unit
        self.units = 0
        self.start = time.perf_counter()

    def update(self, loss: float, lr: float, units: int, extra: dict | None = None):
        self.units += units
        if self.bar is None:
            return
        rate = self.units / max(time.perf_counter() - self.start, 1e-9)
        postfix = {"loss": f"{loss:.4f}", "lr": f"{lr:.2e}", f"{self.unit}/s": f"{rate:,.0f}"}
        postfix.update(extra or {})
        self.bar.set_postfix(postfix, refresh=False)
        self.bar.update(1)

    def write(self, line: str):
        if self.bar is None:
            print(line, flush=True)
        else:
            self.bar.write(line, file=sys.stdout)

    def close(self):
        if self.bar is not None:
            self.bar.close()


@contextlib.contextmanager
def thread_limit(threads: int):
    """``--threads N``: inside the block NumPy's BLAS runs N threads (threadpoolctl, when
    installed) and tinygrad_tx's elementwise pool N (``set_num_threads``); both are restored
    on exit. 0 changes nothing."""
    if not threads:
        yield
        return
    previous = parallel.get_num_threads()
    parallel.set_num_threads(threads)
    try:
        try:
            from threadpoolctl import threadpool_limits
        except ModuleNotFoundError:
            import warnings
            warnings.warn(f"--threads {threads}: threadpoolctl is not installed, so NumPy's BLAS keeps its "
                          "threads (pip install threadpoolctl, or set OPENBLAS_NUM_THREADS before starting)")
            yield
            return
        with threadpool_limits(limits=threads, user_api="blas"):
            yield
    finally:
        parallel.set_num_threads(previous)


def format_metrics(metrics: dict) -> str:
    parts = []
    for k, v in metrics.items():
        if isinstance(v, float):
            parts.append(f"{k} {v:.4f}")
        else:
            parts.append(f"{k} {v}")
    return ", ".join(parts)


def fit(task: Task, model=None, log=None) -> dict:
    """Train ``model`` (default: ``task.build_model()``) with ``task.config``; returns
    ``{"model", "optimizer", "scheduler", "history": {"step", "loss", "lr", "grad_norm",
    "evals": [{"step", ...metrics}]}, "train_seconds" (wall clock, evaluations included),
    "cpu_seconds" (CPU time of this process, all its threads), "eval_seconds",
    "units_per_second"}``."""
    cfg = task.config
    if cfg.steps < 1:
        raise ValueError(f"--steps must be >= 1, got {cfg.steps}")
    with thread_limit(getattr(cfg, "threads", 0)):
        return _fit(task, cfg, task.build_model() if model is None else model, log)


def _fit(task: Task, cfg, model, log) -> dict:
    optimizer, scheduler, _ = make_optimizer(model, cfg)
    stream = batch_stream(task.train_dataset(), cfg.batch_size, cfg.seed, task.train_batch)
    history = {"step": [], "loss": [], "lr": [], "grad_norm": [], "evals": []}
    bar = Progress(cfg.steps, cfg.progress, task.unit, desc=type(task).__name__.replace("Task", "").lower())
    write = log or bar.write
    last_metric = {}
    t0, c0 = time.perf_counter(), time.process_time()
    eval_seconds = 0.0
    try:
        for step in range(1, cfg.steps + 1):
            batch = next(stream)
            lr = optimizer.param_groups[0]["lr"]
            loss, norm = train_step(model, optimizer, scheduler, task.batch_call(batch), cfg.grad_clip)
            if not math.isfinite(loss):
                raise FloatingPointError(f"the training loss became {loss} at step {step}; "
                                         f"lower --lr (now {cfg.lr}) or keep --grad-clip on")
            history["step"].append(step)
            history["loss"].append(loss)
            history["lr"].append(lr)
            history["grad_norm"].append(norm)
            bar.update(loss, lr, task.count(batch), last_metric)
            if step == cfg.steps or (cfg.eval_every and step % cfg.eval_every == 0):
                e0 = time.perf_counter()
                metrics = task.evaluate(model, "dev")
                eval_seconds += time.perf_counter() - e0
                history["evals"].append({"step": step, **metrics})
                last_metric = {task.metric: f"{metrics[task.metric]:.4f}"}
                write(f"step {step:>6}/{cfg.steps}: train loss {loss:.4f}, {format_metrics(metrics)}")
    finally:
        bar.close()
    seconds = time.perf_counter() - t0
    return {"model": model, "optimizer": optimizer, "scheduler": scheduler, "history": history,
            "train_seconds": seconds, "cpu_seconds": time.process_time() - c0, "eval_seconds": eval_seconds,
            "units_per_second": bar.units / max(seconds - eval_seconds, 1e-9)}


def train_and_test(task: Task, log=print) -> dict:
    """Build the task's model, log its size, :func:`fit` it, and add ``run["test"]`` (the
    metrics of the test split)."""
    cfg = task.config
    model = task.build_model()
    log(f"model: {task.model_spec()[0]}, {model.num_parameters():,} parameters ({cfg.dtype}); "
        f"{cfg.steps} steps of {cfg.batch_size}, AdamW lr {cfg.lr}")
    run = fit(task, model, log=None if cfg.progress else log)
    run["test"] = task.evaluate(model, "test")
    return run


def save_and_plot(task: Task, run: dict, default_out: str, title: str, metrics: dict, log=print,
                  metric=None, reference=None):
    """Write the checkpoint (``config.out`` or ``default_out``) with ``task.info()`` and
    ``metrics``, and the loss plot; returns the checkpoint path."""
    from .saving import save_run, write_plot
    cfg = task.config
    path = save_run(cfg.out or default_out, run["model"], run["optimizer"], run["scheduler"],
                    {**task.info(), "metrics": metrics, "train_seconds": run["train_seconds"],
                     "cpu_seconds": run["cpu_seconds"]}, run["history"], step=cfg.steps)
    log(f"checkpoint: {path}")
    write_plot(cfg, path, run["history"], title, metric=metric, reference=reference, log=log)
    return path
