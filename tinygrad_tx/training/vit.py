"""``tinygrad-tx train vit``: the section-10 ViT on scikit-learn's bundled 8x8 digits.

Data: ``sklearn.datasets.load_digits`` (1,797 grey-scale 8x8 images of the digits 0-9,
pixel values 0..16, shipped inside scikit-learn: no download). Pixels are divided by 16
and standardised with the mean and standard deviation of the training pixels; the images
are split 80/10/10 (train/dev/test, seeded like the names). With ``augment`` each training
image is shifted by a random -1, 0 or +1 pixels in each direction (the uncovered border
takes the background value), drawn from a generator seeded with ``seed``.

Model: ``ViT(image_size=8, patch_size=P, in_channels=1, num_classes=10)``; P = 2 gives 16
patch tokens of 4 pixels (+ [CLS]), P = 4 gives 4 tokens of 16 pixels. ``--type cnn``:
``CNN(image_size=8, in_channels=1, num_classes=10, conv1_channels=max(1, d_model // 2),
conv2_channels=d_model)`` (:mod:`tinygrad_tx.models.cnn`, 3 x 3 kernels: 8 x 8 -> 4 x 4 -> 2 x 2),
same split, augmentation, loop and checkpoint format; its default checkpoint is
``runs/vit/cnn.safetensors``, so it does not overwrite the ViT's. Metric: accuracy.
"""
from __future__ import annotations

import numpy as np

from ..data import ArrayDataset, split_names
from .config import ViTConfig
from .loop import Task, classification_metrics, save_and_plot, train_and_test

DEFAULT_OUT = "runs/vit/model.safetensors"
DEFAULT_OUTS = {"vit": DEFAULT_OUT, "cnn": "runs/vit/cnn.safetensors"}


def load_digits_split(split_seed: int):
    """``(train, dev, test)`` ArrayDatasets of ((N, 1, 8, 8) float64 images, (N,) int64 labels), and
    the background value (a 0 pixel after standardisation)."""
    try:
        from sklearn.datasets import load_digits
    except ModuleNotFoundError:
        raise ModuleNotFoundError("train vit needs scikit-learn for its bundled digits "
                                  "(pip install scikit-learn)") from None
    digits = load_digits()
    images = digits.images.astype(np.float64)[:, None] / 16.0
    labels = digits.target.astype(np.int64)
    parts = split_names(list(range(len(labels))), seed=split_seed)
    train_idx = np.array(parts[0])
    mean, std = images[train_idx].mean(), images[train_idx].std()
    images = (images - mean) / std
    datasets = tuple(ArrayDataset(images[np.array(p)], labels[np.array(p)]) for p in parts)
    return datasets, (0.0 - mean) / std


def random_shift(images: np.ndarray, rng: np.random.Generator, background: float, max_shift: int = 1):
    """Shift each (C, H, W) image by its own random (dy, dx) in [-max_shift, max_shift]."""
    B, C, H, W = images.shape
    m = max_shift
    padded = np.full((B, C, H + 2 * m, W + 2 * m), background, dtype=images.dtype)
    padded[:, :, m:m + H, m:m + W] = images
    dy = rng.integers(-m, m + 1, size=B)
    dx = rng.integers(-m, m + 1, size=B)
    rows = (m - dy)[:, None] + np.arange(H)[None, :]          # (B, H): source row of each output row
    cols = (m - dx)[:, None] + np.arange(W)[None, :]
    return padded[np.arange(B)[:, None, None, None], np.arange(C)[None, :, None, None],
                  rows[:, None, :, None], cols[:, None, None, :]]


class ViTTask(Task):
    unit = "img"
    metric = "dev_acc"

    def __init__(self, config: ViTConfig):
        if config.patch_size not in (2, 4):
            raise ValueError(f"--patch-size must be 2 or 4 for 8x8 images, got {config.patch_size}")
        self.config = config
        (self.train, self.dev, self.test), self.background = load_digits_split(config.split_seed)
        self.rng = np.random.default_rng(config.seed)

    def model_spec(self):
        c = self.config
        if c.type == "cnn":
            return "CNN", dict(image_size=8, in_channels=1, num_classes=10, conv1_channels=max(1, c.d_model // 2),
                               conv2_channels=c.d_model, kernel_size=3, dropout=c.dropout)
        return "ViT", dict(image_size=8, patch_size=c.patch_size, in_channels=1, num_classes=10,
                           d_model=c.d_model, n_heads=c.n_heads, n_layers=c.n_layers, dropout=c.dropout,
                           attn_impl=c.attn_impl)

    def train_dataset(self):
        return self.train

    def train_batch(self, batch):
        images, labels = batch
        if self.config.augment:
            images = random_shift(images, self.rng, self.background)
        return images, labels

    def batch_call(self, batch):
        images, labels = batch
        return "__call__", (images.astype(self.float_dtype), labels), {}

    def evaluate(self, model, split: str) -> dict:
        return classification_metrics(model, {"dev": self.dev, "test": self.test}[split], self, split)

    def info(self) -> dict:
        name, kwargs = self.model_spec()
        return {"task": "vit", "model": name, "model_kwargs": kwargs, "dtype": self.config.dtype,
                "config": self.config.to_dict()}


def train_vit(config: ViTConfig | None = None, log=print, **overrides) -> dict:
    """Train the ViT (``type='cnn'``: the CNN); returns ``{"history", "dev_acc", "test_acc", "test_loss",
    "checkpoint", "num_parameters", ...}``."""
    config = (config or ViTConfig()).replace(**overrides)
    task = ViTTask(config)
    model_line = (f"patch {config.patch_size} -> {(8 // config.patch_size) ** 2} patches" if config.type == "vit"
                  else "CNN: 8x8 -> 4x4 -> 2x2")
    log(f"digits: {len(task.train)} train, {len(task.dev)} dev, {len(task.test)} test images (8x8), "
        f"{model_line}{', random 1-pixel shifts' if config.augment else ''}")
    default_out = DEFAULT_OUTS[config.type]
    run = train_and_test(task, log, default_out)
    dev, test = run["history"]["evals"][-1], run["test"]
    log(f"done in {run['train_seconds']:.1f} s: dev accuracy {dev['dev_acc']:.2%}, "
        f"test accuracy {test['test_acc']:.2%} ({round(test['test_acc'] * len(task.test))}/{len(task.test)}), "
        f"test loss {test['test_loss']:.4f}")
    title = f"ViT (patch {config.patch_size})" if config.type == "vit" else f"CNN ({config.d_model} channels)"
    path = save_and_plot(task, run, default_out, f"{title} on the 8x8 digits", {**dev, **test}, log,
                         metric="dev_acc")
    return {"history": run["history"], "dev_acc": dev["dev_acc"], "test_acc": test["test_acc"],
            "num_parameters": run["model"].num_parameters(), "test_loss": test["test_loss"], "checkpoint": str(path), "train_seconds": run["train_seconds"],
            "model": run["model"], "task": task}
