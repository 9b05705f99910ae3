"""Two of the tutorial's model-comparison claims, measured (``tinygrad-tx plot name-models`` and
``tinygrad-tx plot digits-data``).

* :func:`learning_curves` -- makemore's ladder of names models (bigram, MLP, bag of words, RNN,
  GRU, LSTM, WaveNet, the tutorial's Transformer), each built and trained exactly as
  ``train gpt --type KIND`` builds and trains it by default (its sizes, AdamW, lr 3e-3, batch
  64, warmup + cosine over the steps run, dropout 0.1 for the Transformer, the only one that has
  dropout), but for a fixed, small number of steps; the dev loss is measured on the whole dev
  split every ``eval_every`` steps and recorded against the step and against the seconds of
  training so far (wall clock and CPU, the evaluations not counted).
* :func:`digits_data_curve` -- section 10.3's claim that a CNN's inductive bias (local kernels,
  weight sharing, pooling) learns from fewer images than a ViT, which needs more data: the test
  accuracy of ``train vit --type cnn`` and ``train vit`` (their default sizes and settings) on
  nested, class-balanced subsets of the digits' training split (:func:`balanced_order`), several
  seeds each, every run the same number of optimiser steps whatever the subset's size.
"""
from __future__ import annotations

import statistics
import time

import numpy as np

NAME_KINDS = ("bigram", "mlp", "bow", "rnn", "gru", "lstm", "wavenet", "transformer")
NAME_TITLES = {"bigram": "bigram (neural)", "mlp": "MLP", "bow": "bag of words", "rnn": "RNN", "gru": "GRU",
               "lstm": "LSTM", "wavenet": "WaveNet", "transformer": "Transformer"}
DIGIT_KINDS = ("cnn", "vit")
DIGIT_TITLES = {"cnn": "CNN", "vit": "ViT"}
DIGIT_SIZES = (50, 100, 200, 500, 0)     # training images; 0 = the whole training split


# --------------------------------------------------------------------------- names: learning curves

def learning_curves(kinds=NAME_KINDS, data=None, steps: int = 300, eval_every: int = 50, seed: int = 0,
                    log=print) -> dict:
    """Train each ``train gpt --type KIND`` model (its CLI defaults, ``steps`` steps) on ``data``
    and record the dev loss at step 0 and every ``eval_every`` steps. Returns ``{"kinds",
    "steps", "corpus", "bigram_counts" (the dev NLL of the smoothed count model), "params",
    "batch_size", "lr", "curves": {kind: {"step", "wall", "cpu", "dev"}}}``; ``wall`` and ``cpu``
    are the seconds of training before each evaluation (the evaluations excluded)."""
    from ..training.config import GPTConfig
    from ..training.gpt import GPTTask, bigram_nll, corpus_name, load_split
    from ..training.loop import batch_stream, make_optimizer, train_step
    if steps < 1 or eval_every < 1:
        raise ValueError(f"steps and eval_every must be >= 1, got {steps}, {eval_every}")
    split = load_split(data, GPTConfig().split_seed)
    out = {"kinds": list(kinds), "steps": steps, "eval_every": eval_every, "corpus": corpus_name(data),
           "params": {}, "batch_size": {}, "lr": {}, "curves": {}}
    for k in kinds:
        cfg = GPTConfig(type=k, data=data, steps=steps, seed=seed, num_samples=0, progress=False)
        task = GPTTask(cfg, names=split)
        if "bigram_counts" not in out:
            out["bigram_counts"] = bigram_nll(task)
        model = task.build_model()
        optimizer, scheduler, _ = make_optimizer(model, cfg)
        stream = batch_stream(task.train_dataset(), cfg.batch_size, cfg.seed, task.train_batch)
        out["params"][k], out["batch_size"][k], out["lr"][k] = model.num_parameters(), cfg.batch_size, cfg.lr
        curve = {"step": [0], "wall": [0.0], "cpu": [0.0], "dev": [task.evaluate(model, "dev")["dev_loss"]]}
        wall = cpu = 0.0
        for step in range(1, steps + 1):
            t0, c0 = time.perf_counter(), time.process_time()
            train_step(model, optimizer, scheduler, task.batch_call(next(stream)), cfg.grad_clip)
            wall += time.perf_counter() - t0
            cpu += time.process_time() - c0
            if step % eval_every == 0 or step == steps:
                for key, value in (("step", step), ("wall", wall), ("cpu", cpu),
                                   ("dev", task.evaluate(model, "dev")["dev_loss"])):
                    curve[key].append(value)
        out["curves"][k] = curve
        if log:
            log(f"{NAME_TITLES[k]}: {out['params'][k]:,} parameters, dev loss {curve['dev'][0]:.4f} -> "
                f"{curve['dev'][-1]:.4f} in {steps} steps, {wall:.1f} s wall ({cpu:.1f} s CPU)")
    return out


def curves_table(result: dict) -> str:
    """Markdown, one row per model: its parameters, the dev loss at step 0, at the end and at its
    best evaluation, the steps, and the training seconds (wall clock, CPU, ms per step)."""
    lines = ["| model | parameters | dev loss, step 0 | final dev loss | best dev loss | steps | "
             "train s (wall) | train s (CPU) | ms/step (wall) |", "|---" * 9 + "|"]
    for k in result["kinds"]:
        c = result["curves"][k]
        lines.append(f"| {NAME_TITLES[k]} | {result['params'][k]:,} | {c['dev'][0]:.4f} | {c['dev'][-1]:.4f} | "
                     f"{min(c['dev']):.4f} | {c['step'][-1]} | {c['wall'][-1]:.1f} | {c['cpu'][-1]:.1f} | "
                     f"{1e3 * c['wall'][-1] / c['step'][-1]:.1f} |")
    return "\n".join(lines)


def plot_curves(result: dict, path, title: str = ""):
    """Two panels: dev loss against the training step and against the seconds of training (log
    scale), one line per model, the smoothed bigram count model's dev NLL dashed."""
    from ..viz.pictures import _save, pyplot
    plt = pyplot()
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.8), sharey=True)
    for i, k in enumerate(result["kinds"]):
        c = result["curves"][k]
        label = f"{NAME_TITLES[k]} ({result['params'][k]:,})"
        ax.plot(c["step"], c["dev"], "o-", ms=3, color=f"C{i}", label=label)
        ax2.plot(c["wall"][1:], c["dev"][1:], "o-", ms=3, color=f"C{i}", label=label)
    for a in (ax, ax2):
        a.axhline(result["bigram_counts"], color="k", ls="--", lw=1,
                  label=f"bigram counts ({result['bigram_counts']:.3f})")
        a.grid(True, which="both", alpha=0.3)
    ax.set_xlabel("training step (batch 64)")
    ax.set_ylabel("dev loss (nats per character)")
    devs = [v for c in result["curves"].values() for v in c["dev"]]
    ax.set_ylim(min(devs + [result["bigram_counts"]]) - 0.05, min(3.5, max(devs) + 0.05))   # BoW starts at ~16
    ax.set_title("dev loss against steps")
    ax2.set_xscale("log")
    ax2.set_xlabel("seconds of training, wall clock (evaluations excluded; a shared machine)")
    ax2.set_title("dev loss against time")
    ax.legend(fontsize=8, title="model (parameters)", title_fontsize=8)
    fig.suptitle(title or f"names models, {result['steps']} steps each, {result['corpus']}")
    fig.tight_layout()
    return _save(fig, path)


# --------------------------------------------------------------------------- digits: data efficiency

def balanced_order(labels, seed: int) -> np.ndarray:
    """A seeded order of the indices of ``labels`` whose every prefix is class-balanced (the class
    counts of any first n differ by at most one): the first image of each class, in a random
    order, then the second of each, and so on. The subsets of one seed are nested."""
    labels = np.asarray(labels)
    perm = np.random.default_rng(seed).permutation(len(labels))
    rank = np.empty(len(labels), dtype=np.int64)
    for c in np.unique(labels):
        members = perm[labels[perm] == c]
        rank[members] = np.arange(len(members))
    position = np.empty(len(labels), dtype=np.int64)
    position[perm] = np.arange(len(perm))
    return np.lexsort((position, rank))


def digits_data_curve(kinds=DIGIT_KINDS, sizes=DIGIT_SIZES, seeds=(0, 1, 2), steps: int = 600,
                      log=print) -> dict:
    """Test accuracy of ``train vit --type KIND`` (its defaults but ``steps``) trained on the first
    n images of :func:`balanced_order` of the training split (n = 0: all of it), for each seed
    (the subset, the initial weights, the batch order, dropout and the augmentation's shifts).
    Returns ``{"kinds", "sizes" (n, all resolved), "seeds", "steps", "params", "test_images",
    "acc": {kind: {n: [accuracy per seed]}}, "seconds": {kind: wall seconds of all its runs}}``."""
    from ..data import ArrayDataset
    from ..training.config import ViTConfig
    from ..training.loop import fit
    from ..training.vit import ViTTask
    if steps < 1 or not seeds or not sizes:
        raise ValueError(f"steps must be >= 1 and sizes, seeds non-empty, got {steps}, {sizes}, {seeds}")
    out = {"kinds": list(kinds), "seeds": list(seeds), "steps": steps, "params": {}, "acc": {}, "seconds": {}}
    for k in kinds:
        out["acc"][k], t0 = {}, time.perf_counter()
        for seed in seeds:
            cfg = ViTConfig(type=k, steps=steps, seed=seed, eval_every=0, progress=False)
            full = ViTTask(cfg).train
            order = balanced_order(full.arrays[-1], seed)
            if min(sizes) < 0:
                raise ValueError(f"sizes must be >= 0 (0 = all), got {list(sizes)}")
            resolved = sorted({n if 0 < n <= len(order) else len(order) for n in sizes})
            out["sizes"] = resolved
            for n in resolved:
                task = ViTTask(cfg)                 # fresh generators: every run starts alike
                task.train = ArrayDataset(*(a[order[:n]] for a in full.arrays))
                run = fit(task, log=lambda line: None)
                out["params"][k] = run["model"].num_parameters()
                test = task.evaluate(run["model"], "test")
                out["test_images"] = len(task.test)
                out["acc"][k].setdefault(n, []).append(test["test_acc"])
                if log:
                    log(f"{DIGIT_TITLES[k]}, seed {seed}, {n} training images: test accuracy "
                        f"{test['test_acc']:.2%}")
        out["seconds"][k] = time.perf_counter() - t0
    return out


def _spread(values) -> tuple[float, float]:
    """(mean, sample standard deviation; 0 for one value)."""
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def digits_table(result: dict) -> str:
    """Markdown: per training-set size, each model's mean test accuracy ± the standard deviation
    over the seeds, and the lowest and highest; then the parameters."""
    kinds = result["kinds"]
    lines = ["| training images | " + " | ".join(f"{DIGIT_TITLES[k]}: mean ± sd (min–max)" for k in kinds) + " |",
             "|---" * (len(kinds) + 1) + "|"]
    for n in result["sizes"]:
        cells = []
        for k in kinds:
            acc = result["acc"][k][n]
            mean, sd = _spread(acc)
            cells.append(f"{mean:.1%} ± {sd:.1%} ({min(acc):.1%}–{max(acc):.1%})")
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    lines.append("| parameters | " + " | ".join(f"{result['params'][k]:,}" for k in kinds) + " |")
    return "\n".join(lines)


def plot_digits(result: dict, path, title: str = ""):
    """Test accuracy against the number of training images (log scale): each model's mean over
    the seeds, the range as error bars, every run a faint dot."""
    from ..viz.pictures import _save, pyplot
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.8))
    sizes = np.array(result["sizes"])
    for i, k in enumerate(result["kinds"]):
        runs = [np.array(result["acc"][k][n]) * 100 for n in result["sizes"]]
        mean = np.array([r.mean() for r in runs])
        low, high = mean - np.array([r.min() for r in runs]), np.array([r.max() for r in runs]) - mean
        ax.errorbar(sizes, mean, yerr=[low, high], fmt="os"[i % 2] + "-", color=f"C{i}", capsize=3,
                    label=f"{DIGIT_TITLES[k]} ({result['params'][k]:,} params)")
        for n, r in zip(sizes, runs):
            ax.plot([n] * len(r), r, ".", color=f"C{i}", alpha=0.35)
    ax.set_xscale("log")
    ax.set_xticks(sizes, [str(n) for n in sizes])
    ax.set_xlabel("training images (class-balanced subsets of the training split)")
    ax.set_ylabel(f"test accuracy, % ({result['test_images']} images)")
    ax.set_title(title or f"8x8 digits: {result['steps']} steps of 64 per run, "
                          f"mean and range of {len(result['seeds'])} seeds")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return _save(fig, path)


# --------------------------------------------------------------------------- the commands

def register_model_plots(pictures, debug_flag) -> None:
    """Add ``plot name-models`` and ``plot digits-data`` to the ``plot`` sub-commands."""
    from .._argtypes import number
    nm = pictures.add_parser("name-models", help="dev loss against steps and seconds of the train gpt --type "
                                                 "models (bigram ... Transformer) on a names corpus",
                             description="Trains each names model with train gpt's defaults for --steps steps, "
                                         "evaluates the dev loss every --eval-every steps, prints a Markdown "
                                         "table and draws the dev loss against steps and against seconds.")
    nm.add_argument("--models", nargs="+", choices=list(NAME_KINDS), default=list(NAME_KINDS),
                    help="(default: all)")
    nm.add_argument("--data", default=None, metavar="PATH", help="names file (default: the offline census names)")
    nm.add_argument("--steps", type=number(int, 1), default=300, help="(default: %(default)s)")
    nm.add_argument("--eval-every", type=number(int, 1), default=50, help="(default: %(default)s)")
    nm.add_argument("--seed", type=int, default=0, help="(default: %(default)s)")
    _output_flags(nm, "runs/plots/name_models.png", debug_flag, cmd_plot_name_models)

    dd = pictures.add_parser("digits-data", help="section 10.3: test accuracy of the CNN and the ViT against "
                                                 "the number of training images, several seeds",
                             description="Trains train vit --type cnn and train vit (their defaults, --steps "
                                         "steps each run) on nested class-balanced subsets of the digits' "
                                         "training split; prints a Markdown table and draws accuracy against "
                                         "the number of images.")
    dd.add_argument("--models", nargs="+", choices=list(DIGIT_KINDS), default=list(DIGIT_KINDS),
                    help="(default: cnn vit)")
    dd.add_argument("--sizes", nargs="+", type=number(int, 0), default=list(DIGIT_SIZES),
                    help="training images; 0 = all (default: %(default)s)")
    dd.add_argument("--seeds", type=number(int, 1), default=3, help="seeds 0 .. N-1 (default: %(default)s)")
    dd.add_argument("--steps", type=number(int, 1), default=600, help="optimiser steps of every run "
                    "(default: %(default)s)")
    _output_flags(dd, "runs/plots/digits_data.png", debug_flag, cmd_plot_digits_data)


def _output_flags(parser, out: str, debug_flag, func) -> None:
    """``--threads``, ``-o/--out`` and the debug flag of both commands, and their function."""
    from .._argtypes import number
    parser.add_argument("--threads", type=number(int, 1), default=1, help="(default: %(default)s)")
    parser.add_argument("-o", "--out", default=out, metavar="PNG",
                        help="(default: %(default)s; the table goes beside it as .md)")
    debug_flag(parser)
    parser.set_defaults(func=func)


def _report(table: str, path, head: str) -> None:
    """Print ``head`` and the table, and write both beside the PNG (``.md``)."""
    from pathlib import Path
    print(head)
    print(table)
    md = Path(path).with_suffix(".md")
    md.write_text(head + "\n\n" + table + "\n")
    print(f"wrote {path} and {md}")


def cmd_plot_name_models(args) -> int:
    from ..training.gpt import corpus_name
    from ..training.loop import thread_limit
    from .experiments import load_line
    print(f"before: {load_line()}; threads {args.threads}; corpus {corpus_name(args.data)}")
    start = time.perf_counter()
    with thread_limit(args.threads):
        result = learning_curves(args.models, args.data, args.steps, args.eval_every, args.seed)
    print(f"after: {load_line()}; {time.perf_counter() - start:.0f} s for the command")
    path = plot_curves(result, args.out)
    _report(curves_table(result), path,
            f"dev loss (nats per character) of {result['corpus']}, {args.steps} steps of batch 64, AdamW "
            f"lr 3e-3, evaluated every {args.eval_every} steps; bigram count model: dev "
            f"{result['bigram_counts']:.4f}")
    return 0


def cmd_plot_digits_data(args) -> int:
    from ..training.loop import thread_limit
    from .experiments import load_line
    print(f"before: {load_line()}; threads {args.threads}")
    start = time.perf_counter()
    with thread_limit(args.threads):
        result = digits_data_curve(args.models, args.sizes, tuple(range(args.seeds)), args.steps)
    print(f"after: {load_line()}; {time.perf_counter() - start:.0f} s for the command")
    path = plot_digits(result, args.out)
    _report(digits_table(result), path,
            f"test accuracy on the {result['test_images']} test digits, {args.steps} steps of 64 per run, "
            f"seeds 0-{args.seeds - 1}")
    return 0
