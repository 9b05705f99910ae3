"""The training loop shared by every gradient-trained task, and what a task must provide.

A :class:`Task` knows its data and its model; :func:`fit` knows how to train. One step is

1. the next mini-batch (``batch_stream``: seeded reshuffle every epoch; padding columns
   that no example of the batch uses are cut off, which changes nothing for a causal
   model with right padding and masked keys, and saves their compute);
2. ``optimizer.zero_grad()``, then ``loss = model.<method>(*args)`` as the task's
   :meth:`Task.batch_call` says (the same call runs the PyTorch twin in ``--compare-torch``);
3. ``loss.backward()``;
4. ``clip_grad_norm_`` of all gradients to ``grad_clip`` (skipped when 0);
5. ``optimizer.step()`` (AdamW; weight decay on matrices and embeddings only,
   :func:`~tinygrad_tx.optim.weight_decay_groups`), then ``scheduler.step()``
   (``LambdaLR`` with :func:`~tinygrad_tx.optim.warmup_cosine`: linear warmup for
   ``warmup_steps``, cosine decay to ``min_lr_ratio * lr`` at the last step).

Steps 2-5 but the scheduler are :func:`step_function`, which returns the loss and the norm as
tensors, read into Python after it; ``--compile`` runs it through ``tinygrad_tx.compile``
(:class:`CompiledStep`: recorded once per batch shape and replayed, fused C loops where the
kernels run).

Every ``eval_every`` steps, and after the last one, :meth:`Task.evaluate` measures the dev
split in eval mode without a graph. The history (per-step train loss, lr, and the
evaluations) comes back as a dict, ready for JSON and for :mod:`.plots`.

Run files (``fit(..., out=PATH)``, as every ``train_*`` passes): at every evaluation the
checkpoint ``PATH`` is written, and ``<stem>.best.safetensors`` when the dev loss is the
lowest so far (:mod:`.saving`). Each holds, besides the arrays, the history and the
resume state, so ``config.resume = PATH`` (``--resume PATH``) continues the run exactly:
model, AdamW moments, schedule position, the global generator (dropout), the task's own
generators (augmentation) and the position in the epoch's permutation are restored, and a
run interrupted at step k and resumed equals the uninterrupted run bit for bit.
"""
from __future__ import annotations

import contextlib
import copy
import json
import math
import os
import shutil
import sys
import time

import numpy as np

from .. import from_numpy, manual_seed, models, parallel
from ..core import seam as _seam
from ..core.grad_mode import no_grad
from ..checkpoint import atomic_write, check_regular_file
from ..data import ArrayDataset, DataLoader
from ..data.loader import _collate
from ..generator import get_rng_state, set_rng_state
from ..optim import AdamW, LambdaLR, clip_grad_norm_, warmup_cosine, weight_decay_groups
from . import signals
from .saving import best_path, prepare_out, read_checkpoint, save_run, write_plot


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

    def rngs(self) -> dict:
        """The task's own NumPy generators (the ViT's augmentation), by attribute name: their
        states go into every checkpoint so that ``--resume`` draws what the run would have."""
        return {k: v for k, v in sorted(vars(self).items()) if isinstance(v, np.random.Generator)}

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


class BatchStream:
    """Endless mini-batches that can say where they are and resume there: one permutation of
    the dataset per epoch, drawn from ``np.random.default_rng(seed)``, cut into batches; the
    last incomplete batch of an epoch is dropped unless the dataset is smaller than one batch.
    The batches are exactly those of ``DataLoader(dataset, batch_size, shuffle=True,
    seed=seed, drop_last=...)`` epoch after epoch. ``transform(batch)`` is applied to each.

    ``state_dict()`` is the generator's state before the current epoch's permutation was drawn
    and the number of batches of the epoch already given (JSON-able); ``load_state_dict``
    redraws that permutation and continues after them."""

    def __init__(self, dataset, batch_size: int, seed: int, transform=None):
        n = len(dataset)
        if n == 0:
            raise ValueError("the training set is empty: no batches to draw")
        self.dataset, self.batch_size, self.transform = dataset, int(batch_size), transform
        drop_last = n >= batch_size
        self.per_epoch = n // batch_size if drop_last else -(-n // batch_size)
        self.generator = np.random.default_rng(seed)
        self.order, self.pos, self.epoch_state = None, 0, None

    def __iter__(self):
        return self

    def __next__(self):
        if self.order is None or self.pos == self.per_epoch:
            self.epoch_state = self.generator.bit_generator.state
            self.order, self.pos = self.generator.permutation(len(self.dataset)), 0
        idx = self.order[self.pos * self.batch_size:(self.pos + 1) * self.batch_size]
        self.pos += 1
        if isinstance(self.dataset, ArrayDataset):
            batch = self.dataset[idx]
        else:
            batch = _collate([self.dataset[int(i)] for i in idx])
        return self.transform(batch) if self.transform is not None else batch

    def state_dict(self) -> dict:
        if self.order is None:
            return {"epoch_rng": None, "rng": self.generator.bit_generator.state, "pos": 0}
        return {"epoch_rng": self.epoch_state, "pos": self.pos}

    def load_state_dict(self, state: dict) -> None:
        if state["epoch_rng"] is None:
            self.generator.bit_generator.state = state["rng"]
            self.order, self.pos, self.epoch_state = None, 0, None
            return
        if not 0 <= int(state["pos"]) <= self.per_epoch:
            raise ValueError(f"data position {state['pos']} is outside an epoch of {self.per_epoch} batches")
        self.generator.bit_generator.state = state["epoch_rng"]
        self.epoch_state = state["epoch_rng"]
        self.order, self.pos = self.generator.permutation(len(self.dataset)), int(state["pos"])


def batch_stream(dataset, batch_size: int, seed: int, transform=None) -> BatchStream:
    """Endless mini-batches: one seeded permutation per epoch (:class:`BatchStream`)."""
    return BatchStream(dataset, batch_size, seed, transform)


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


@_seam.replayed
def clipped_norm(optimizer, max_norm: float) -> np.ndarray:
    """``clip_grad_norm_`` of the optimizer's parameters to ``max_norm``; the total norm before
    clipping (a 0-d array). A compiled step (``--compile``) records this as one call that each
    replay makes again on the gradients of that replay (the in-place scaling of ``.grad``
    is not a Function, so the recorder would otherwise refuse it)."""
    return clip_grad_norm_([p for g in optimizer.param_groups for p in g["params"]], max_norm)


def step_function(model, optimizer, method: str, grad_clip: float):
    """The step ``train_step`` runs, as a function of the batch's arrays that returns tensors
    only (what ``tinygrad_tx.compile`` records): ``zero_grad``, ``loss = model.<method>(...)``,
    ``backward``, the clip (when ``grad_clip > 0``), ``optimizer.step()``; returns ``(loss,
    gradient norm before clipping, or None)``. The gradients are cleared first, so that a
    parameter's ``.grad`` is the call's own work whatever it was before (a recorded program
    then holds for the first step and every later one alike)."""
    def training_step(*args, **kwargs):
        optimizer.zero_grad()
        _, loss = getattr(model, method)(*args, **kwargs)
        loss.backward()
        norm = from_numpy(clipped_norm(optimizer, grad_clip)) if grad_clip > 0 else None
        optimizer.step()
        return loss, norm
    training_step.__qualname__ = f"the training step of {type(model).__name__}"   # compile's warning names it
    return training_step


def train_step(model, optimizer, scheduler, spec, grad_clip: float, step=None) -> tuple[float, float]:
    """One optimiser step on one batch; returns ``(loss, gradient norm before clipping)``.
    ``step``: a :class:`CompiledStep` (``--compile``) runs it; by default it runs eagerly. The
    Python readouts of the loss and the norm happen here, after the step."""
    model.train()
    method, args, kwargs = spec
    if step is None:
        loss, norm = step_function(model, optimizer, method, grad_clip)(*args, **kwargs)
    else:
        loss, norm = step.run(method, args, kwargs)
    scheduler.step()
    return float(loss.item()), (float(norm.item()) if norm is not None else math.nan)


def _signature(x):
    """What of a step's arguments a recorded program is keyed on, as far as this loop can
    tell: arrays by shape and dtype, anything else by type and value (hashable)."""
    if isinstance(x, np.ndarray):
        return ("array", x.shape, x.dtype.str)
    if isinstance(x, (tuple, list)):
        return (type(x).__name__,) + tuple(map(_signature, x))
    if isinstance(x, dict):
        return ("dict",) + tuple((k, _signature(v)) for k, v in sorted(x.items()))
    return (type(x).__name__, repr(x))


class CompiledStep:
    """``--compile``: the training step (:func:`step_function`: forward, backward, clip,
    AdamW step) through ``tinygrad_tx.compile`` -- ``fuse=True`` where the C kernels run for
    the run's dtype (the elementwise chains of the recorded program become generated C loops;
    losses, gradients and parameters within torch's float32 error, float64 to ~1e-10), else
    plain compile (a replay bit-identical to eager). The scheduler's step and the readouts of
    the loss and the norm stay outside (compile refuses a value read into Python).

    Each batch shape is its own program (``trim`` cuts padding columns: up to ``block_size``
    widths), so up to ``max_programs`` are kept. The call that records a program runs eagerly,
    and so differs from a replay in the last bits: to keep every step a replay -- and so a run
    interrupted at step k and resumed equal to the uninterrupted one bit for bit -- the state a
    step changes (parameters, buffers, optimizer state, the global generator) is saved before
    a call that may record, put back when it did, and the step replayed. A function compile
    refuses (a model that reads a value into Python) warns once and runs eagerly."""

    def __init__(self, model, optimizer, grad_clip: float, dtype, max_programs: int = 64):
        from .. import kernels
        from ..compile import CompiledFunction
        self.model, self.optimizer, self.grad_clip = model, optimizer, grad_clip
        self.fuse = kernels.available(np.dtype(dtype))
        self.max_programs = max_programs
        self._compiled = CompiledFunction
        self.functions = {}
        self.replayed = set()    # the batch signatures of steps that ran a replay
        self.replays = 0         # the steps that ran a recorded program (not eagerly)

    @property
    def mode(self) -> str:
        return "compile(fuse=True): fused C kernels" if self.fuse else "compile: replay (no C kernels)"

    def function(self, method: str):
        fn = self.functions.get(method)
        if fn is None:
            fn = self.functions[method] = self._compiled(
                step_function(self.model, self.optimizer, method, self.grad_clip),
                fuse=self.fuse, max_programs=self.max_programs)
        return fn

    def run(self, method: str, args, kwargs):
        """The compiled step of ``model.<method>`` on these arguments, a replay wherever compile
        can make it one; ``(loss, norm)`` tensors."""
        fn = self.function(method)
        signature = (id(fn), _signature(args), _signature(kwargs))
        saved = None if fn.eager_reason is not None or signature in self.replayed else self._save()
        before = self._count(fn)
        result = fn(*args, **kwargs)
        if saved is not None and self._count(fn)[0] > before[0]:   # recorded: an eager step; undo it, replay
            self._restore(saved)
            before = self._count(fn)
            result = fn(*args, **kwargs)
        if fn.eager_reason is None and self._count(fn) == before:
            self.replayed.add(signature)
            self.replays += 1
        return result

    @staticmethod
    def _count(fn) -> tuple:
        """(programs recorded, refusals) of a compiled function: unchanged by a call that replayed."""
        return sum(map(len, fn.programs.values())), fn.refusals

    def _tensors(self):
        return list(self.model.parameters()) + [b for b in self.model.buffers() if b._data.flags.writeable]

    def _save(self):
        return ([t._data.copy() for t in self._tensors()], copy.deepcopy(self.optimizer.state_dict()),
                get_rng_state())

    def _restore(self, saved):
        arrays, opt_state, rng = saved
        self.optimizer.load_state_dict(opt_state)
        for t, a in zip(self._tensors(), arrays):
            np.copyto(t._data, a)
        set_rng_state(rng)


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

    def __init__(self, total: int, enabled: bool, unit: str, desc: str, initial: int = 0):
        self.bar = None
        if enabled:
            from tqdm import tqdm
            self.bar = tqdm(total=total, desc=desc, unit="step", file=sys.stderr, dynamic_ncols=True,
                            mininterval=0.5, initial=initial)
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


def automatic_threads() -> tuple:
    """``--threads 0`` (the default): ``(n, why)`` with n the CPUs this process may use less the
    load already on them (the 1-minute load average), at least 1; ``OMP_NUM_THREADS``, when set,
    wins. Why: threads that wait for a busy core are worse than none -- at load 3.6 on 2 cores a
    tutorial GPT step took 68-159 ms with 2 BLAS threads and 23 ms with 1 (torch: 32-49 vs 15);
    on an idle machine every core is used."""
    env = parallel.omp_num_threads()
    if env is not None:
        return env, f"OMP_NUM_THREADS={env}"
    cpus = parallel.available_cpus()
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - no load average
        return max(1, cpus), f"{cpus} CPUs"
    return max(1, min(cpus, int(cpus - load + 0.5))), f"{cpus} CPUs, load average {load:.1f}"


@contextlib.contextmanager
def thread_limit(threads: int):
    """``--threads N``: inside the block NumPy's BLAS runs N threads (threadpoolctl, when
    installed) and tinygrad_tx's elementwise pool N (``set_num_threads``); both are restored
    on exit. 0: N from :func:`automatic_threads` (no warning when threadpoolctl is missing)."""
    automatic = not threads
    if automatic:
        threads = automatic_threads()[0]
    previous = parallel.get_num_threads()
    parallel.set_num_threads(threads)
    try:
        try:
            from threadpoolctl import threadpool_limits
        except ModuleNotFoundError:
            if not automatic:
                import warnings
                warnings.warn(f"--threads {threads}: threadpoolctl is not installed, so NumPy's BLAS keeps "
                              "its threads (pip install threadpoolctl, or set OPENBLAS_NUM_THREADS before starting)")
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


def fit(task: Task, model=None, log=None, out=None, stop=None) -> dict:
    """Train ``model`` (default: ``task.build_model()``) with ``task.config``; returns
    ``{"model", "optimizer", "scheduler", "history": {"step", "loss", "lr", "grad_norm",
    "evals": [{"step", ...metrics}]}, "resume" (the state to continue from), "step",
    "train_seconds" (wall clock of this call, evaluations included), "cpu_seconds" (CPU time
    of this process, all its threads), "eval_seconds", "units_per_second"}``.

    ``out``: the checkpoint path written at every evaluation (and ``<stem>.best.safetensors``
    at a new lowest dev loss); None writes nothing. ``config.resume``: a checkpoint to continue
    from (same model; ``config.steps`` may be larger than its step). ``stop``: a
    :class:`~.signals.StopSignals` (default: the CLI's active one, if any); when it reports a
    signal the step is finished, the checkpoint written and :class:`~.signals.TrainingInterrupted`
    raised."""
    cfg = task.config
    if cfg.steps < 1:
        raise ValueError(f"--steps must be >= 1, got {cfg.steps}")
    stop = signals.current() if stop is None else stop
    with thread_limit(getattr(cfg, "threads", 0)):
        return _fit(task, cfg, task.build_model() if model is None else model, log, out, stop)


def thread_report(threads: int = 0) -> str:
    """One line: the threads a run uses — ``--threads N`` for both, else the automatic count
    (:func:`automatic_threads`) and why; without threadpoolctl, which alone can limit NumPy's BLAS,
    BLAS's own count (the environment variable that sets it, else its default)."""
    if threads:
        return f"threads: {threads} for elementwise work and BLAS (--threads {threads})"
    n, why = automatic_threads()
    try:
        import threadpoolctl  # noqa: F401
    except ModuleNotFoundError:
        pass
    else:
        return f"threads: {n} for elementwise work and BLAS (automatic: {why}; --threads N sets both)"
    env = next((f"{v}={os.environ[v]}" for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
                if os.environ.get(v)), None)
    blas = env or "its default (all CPUs)"
    return f"threads: {n} for elementwise work (automatic: {why}), BLAS {blas} (--threads N sets both)"


def resume_state(task: Task, stream: BatchStream) -> dict:
    """What a checkpoint needs besides the arrays to continue exactly (JSON-able)."""
    return {"global_rng": get_rng_state().numpy().tobytes().hex(),
            "rngs": {k: g.bit_generator.state for k, g in task.rngs().items()},
            "stream": stream.state_dict()}


def _model_description(spec, dtype) -> dict:
    name, kwargs = spec
    return json.loads(json.dumps({"model": name, "model_kwargs": kwargs, "dtype": dtype}))


IGNORED_ON_RESUME = ("steps", "resume", "out", "plot", "progress", "threads", "compare_every", "num_samples",
                     "temperature", "top_k", "top_p")


def load_resume(task: Task, cfg, model, path: str, log):
    """Read ``--resume PATH`` and load its model state into ``model``; returns ``(step, history,
    optimizer state, scheduler state, resume state)``. A different model (class, shape, dtype),
    task, or a checkpoint past ``--steps`` is a ``ValueError``; other changed settings are noted."""
    state, opt_state, metadata, info = read_checkpoint(path)
    what = f"--resume {path}"
    if "resume" not in metadata or "history" not in metadata or opt_state is None or "step" not in metadata:
        raise ValueError(f"{what}: the checkpoint holds no resume state (written by 'sample'-only tools or "
                         "an older tinygrad-tx); it can be sampled from, not resumed")
    ours = {"task": task.info()["task"], **_model_description(task.model_spec(), cfg.dtype)}
    theirs = {"task": info.get("task"), "model": info.get("model"), "model_kwargs": info.get("model_kwargs"),
              "dtype": info.get("dtype")}
    if ours != theirs:
        def show(d):
            kw = ", ".join(f"{k}={v!r}" for k, v in (d["model_kwargs"] or {}).items())
            return f"{d['task']}: {d['model']}({kw}), {d['dtype']}"
        raise ValueError(f"{what}: the checkpoint's model is {show(theirs)}, this run's is {show(ours)}; "
                         "pass the flags of the run being resumed")
    step = int(metadata["step"])
    if step > cfg.steps:
        raise ValueError(f"{what}: the checkpoint is at step {step}, past --steps {cfg.steps}; "
                         f"pass --steps {step} or more")
    saved_cfg = info.get("config") or {}
    changed = sorted(k for k, v in cfg.to_dict().items()
                     if k not in IGNORED_ON_RESUME and k in saved_cfg and saved_cfg[k] != v)
    if changed:
        (log or print)(f"note: --resume: {', '.join(f'{k} {saved_cfg[k]!r} -> {getattr(cfg, k)!r}' for k in changed)} "
                       "differ from the checkpoint's run; the result will not equal an uninterrupted run")
    model.load_state_dict(state)
    return step, json.loads(metadata["history"]), opt_state, json.loads(metadata["scheduler"]), \
        json.loads(metadata["resume"])


def restore_training_state(task, optimizer, scheduler, stream, opt_state, sched_state, resume):
    """Put the optimizer, scheduler, generators and data position back where the checkpoint was.
    The schedule itself is this run's (a larger ``--steps`` stretches the cosine); its position
    (``last_epoch``) is the checkpoint's, and the current lr is recomputed from it."""
    optimizer.load_state_dict(opt_state)
    sched_state = {k: v for k, v in sched_state.items() if k != "lr_lambdas"}
    scheduler.load_state_dict({**sched_state, "lr_lambdas": [None] * len(scheduler.lr_lambdas)})
    scheduler._write(scheduler.get_lr())
    set_rng_state(np.frombuffer(bytes.fromhex(resume["global_rng"]), dtype=np.uint8).copy())
    rngs = task.rngs()
    if set(rngs) != set(resume["rngs"]):
        raise ValueError(f"--resume: the checkpoint's task generators {sorted(resume['rngs'])} are not this "
                         f"task's {sorted(rngs)}")
    for name, g in rngs.items():
        g.bit_generator.state = resume["rngs"][name]
    stream.load_state_dict(resume["stream"])


class RunFiles:
    """The checkpoint at ``out`` and ``<stem>.best.safetensors``, written during training."""

    def __init__(self, task: Task, out):
        self.task, self.out, self.best = task, out, best_path(out)

    def save(self, model, optimizer, scheduler, history, step, resume, best: bool = False):
        save_run(self.out, model, optimizer, scheduler, self.task.info(), history, step=step, resume=resume)
        if best:   # the same bytes: a copy, not a second serialisation
            atomic_write(self.best, lambda tmp: shutil.copyfile(self.out, tmp))
        return self.out


def best_loss(evals) -> float:
    """The lowest ``dev_loss`` of the evaluations (inf when none)."""
    return min((e["dev_loss"] for e in evals if "dev_loss" in e), default=math.inf)


def _fit(task: Task, cfg, model, log, out, stop) -> dict:
    history = {"step": [], "loss": [], "lr": [], "grad_norm": [], "evals": []}
    start, restored = 0, None
    if getattr(cfg, "resume", ""):
        start, history, *restored = load_resume(task, cfg, model, cfg.resume, log)
    optimizer, scheduler, _ = make_optimizer(model, cfg)
    stream = batch_stream(task.train_dataset(), cfg.batch_size, cfg.seed, task.train_batch)
    if restored is not None:
        restore_training_state(task, optimizer, scheduler, stream, *restored)
    files = RunFiles(task, out) if out is not None else None
    compiled = CompiledStep(model, optimizer, cfg.grad_clip, cfg.dtype) if getattr(cfg, "compile", False) else None
    best = best_loss(history["evals"])
    bar = Progress(cfg.steps, cfg.progress, task.unit, desc=type(task).__name__.replace("Task", "").lower(),
                   initial=start)
    write = log or bar.write
    if compiled is not None:
        write(f"--compile: the training step runs as {compiled.mode}")
    if start:
        write(f"resumed from {cfg.resume} at step {start}/{cfg.steps}")
    last_metric = {}
    t0, c0 = time.perf_counter(), time.process_time()
    eval_seconds = 0.0
    steps_context = stop.during_steps() if stop is not None else contextlib.nullcontext()
    try:
        with steps_context:
            for step in range(start + 1, cfg.steps + 1):
                batch = next(stream)
                lr = optimizer.param_groups[0]["lr"]
                loss, norm = train_step(model, optimizer, scheduler, task.batch_call(batch), cfg.grad_clip,
                                        compiled)
                if not math.isfinite(loss):
                    raise FloatingPointError(f"the training loss became {loss} at step {step}; "
                                             f"lower --lr (now {cfg.lr}) or keep --grad-clip on")
                history["step"].append(step)
                history["loss"].append(loss)
                history["lr"].append(lr)
                history["grad_norm"].append(norm)
                bar.update(loss, lr, task.count(batch), last_metric)
                saved = False
                if step == cfg.steps or (cfg.eval_every and step % cfg.eval_every == 0):
                    e0 = time.perf_counter()
                    metrics = task.evaluate(model, "dev")
                    eval_seconds += time.perf_counter() - e0
                    history["evals"].append({"step": step, **metrics})
                    last_metric = {task.metric: f"{metrics[task.metric]:.4f}"}
                    write(f"step {step:>6}/{cfg.steps}: train loss {loss:.4f}, {format_metrics(metrics)}")
                    improved = metrics.get("dev_loss", math.inf) < best
                    best = min(best, metrics.get("dev_loss", math.inf))
                    if files is not None:
                        files.save(model, optimizer, scheduler, history, step, resume_state(task, stream), improved)
                        saved = True
                if stop is not None and stop.requested:
                    path = None
                    if files is not None and not saved:
                        files.save(model, optimizer, scheduler, history, step, resume_state(task, stream))
                    if files is not None:
                        path = files.out
                    raise signals.TrainingInterrupted(stop.signum, step, cfg.steps, path)
    finally:
        bar.close()
    seconds = time.perf_counter() - t0
    return {"model": model, "optimizer": optimizer, "scheduler": scheduler, "history": history,
            "resume": resume_state(task, stream),
            "train_seconds": seconds, "cpu_seconds": time.process_time() - c0, "eval_seconds": eval_seconds,
            "units_per_second": bar.units / max(seconds - eval_seconds, 1e-9)}


def train_and_test(task: Task, log=print, default_out=None) -> dict:
    """Build the task's model, log its size, check that the run's files can be written
    (``config.out`` or ``default_out``, and ``config.plot``) before any step, :func:`fit` it
    (checkpoints at every evaluation), and add ``run["test"]`` (the metrics of the test split)."""
    cfg = task.config
    out = cfg.out or default_out
    if getattr(cfg, "resume", ""):
        check_regular_file(cfg.resume)          # a missing --resume fails before anything is built
    if out:
        prepare_out(out)
        if cfg.plot:
            prepare_out(cfg.plot, "--plot")
    model = task.build_model()
    log(f"model: {task.model_spec()[0]}, {model.num_parameters():,} parameters ({cfg.dtype}); "
        f"{cfg.steps} steps of {cfg.batch_size}, AdamW lr {cfg.lr}")
    log(thread_report(getattr(cfg, "threads", 0)))
    run = fit(task, model, log=None if cfg.progress else log, out=out)
    run["test"] = task.evaluate(model, "test")
    return run


def save_and_plot(task: Task, run: dict, default_out: str, title: str, metrics: dict, log=print,
                  metric=None, reference=None):
    """Write the final checkpoint (``config.out`` or ``default_out``) with ``task.info()``,
    ``metrics``, the history and the resume state (a larger ``--steps`` can continue it), and
    the loss plot; returns the checkpoint path."""
    cfg = task.config
    path = save_run(cfg.out or default_out, run["model"], run["optimizer"], run["scheduler"],
                    {**task.info(), "metrics": metrics, "train_seconds": run["train_seconds"],
                     "cpu_seconds": run["cpu_seconds"]}, run["history"], step=cfg.steps, resume=run.get("resume"))
    log(f"checkpoint: {path}" + (f" (lowest dev loss: {best_path(path)})" if best_path(path).exists() else ""))
    write_plot(cfg, path, run["history"], title, metric=metric, reference=reference, log=log)
    return path

