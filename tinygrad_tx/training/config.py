"""Hyperparameters of every ``tinygrad-tx train`` command, as dataclasses.

Each field is one command-line flag (``batch_size`` -> ``--batch-size``); its ``help``
metadata is the flag's help text, so the CLI and the Python API cannot drift apart. The
defaults are the ones the closing note's measurements used.

``TrainConfig`` holds what every gradient-trained model shares (optimiser, schedule, size,
evaluation, checkpoint); ``GPTConfig``, ``ViTConfig``, ``EncoderConfig`` and
``Seq2SeqConfig`` add their task's fields and change some defaults. ``BigramConfig`` is
separate: the count model has no gradient step.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

DTYPES = ("float32", "float64")
NAME_BASELINES = ("rnn", "gru", "lstm", "bow", "wavenet")   # causal LMs of models/recurrent_baselines.py
NAME_MODELS = ("transformer", "bigram", "mlp") + NAME_BASELINES   # train gpt --type
VIT_MODELS = ("vit", "cnn")   # train vit --type


def _f(default, help: str, **extra):
    """A dataclass field with CLI metadata (help text, choices, type for None defaults, metavar)."""
    return field(default=default, metadata={"help": help, **extra})


@dataclass
class TrainConfig:
    """What every gradient-trained task shares."""

    steps: int = _f(1000, "number of optimiser steps", min=1)
    batch_size: int = _f(64, "examples per step", min=1)
    lr: float = _f(3e-3, "peak learning rate (AdamW)", min=0.0)
    min_lr_ratio: float = _f(0.1, "final learning rate as a fraction of --lr (cosine decay)", min=0.0, max=1.0)
    warmup_steps: int = _f(100, "linear warmup steps before the cosine decay", min=0)
    weight_decay: float = _f(0.1, "AdamW weight decay of matrices and embeddings (not biases/LayerNorm)", min=0.0)
    beta1: float = _f(0.9, "AdamW beta1", min=0.0, max=0.999999)
    beta2: float = _f(0.99, "AdamW beta2", min=0.0, max=0.999999)
    eps: float = _f(1e-8, "AdamW epsilon", min=0.0)
    grad_clip: float = _f(1.0, "clip the global gradient norm to this value (0 = no clipping)", min=0.0)
    d_model: int = _f(64, "model width", min=1)
    n_heads: int = _f(4, "attention heads", min=1)
    n_layers: int = _f(4, "Transformer blocks", min=0)
    dropout: float = _f(0.0, "dropout probability (attention, residual and MLP)", min=0.0, max=0.99)
    attn_impl: str = _f("fused", "attention implementation", choices=("fused", "naive", "flash"))
    dtype: str = _f("float32", "parameter and compute dtype", choices=DTYPES)
    seed: int = _f(0, "seed of the initial weights, batch order, dropout and sampling", min=0)
    split_seed: int = _f(42, "seed of the train/dev/test split (80/10/10)", min=0)
    eval_every: int = _f(250, "evaluate on the dev split every N steps (0 = only at the end)", min=0)
    out: str = _f("", "checkpoint path (.safetensors), written at every evaluation, on SIGINT/SIGTERM and at the "
                      "end; <stem>.best.safetensors holds the lowest dev loss; default runs/<model>/model.safetensors",
                  metavar="PATH")
    resume: str = _f("", "continue the run saved in this checkpoint: model, optimizer, schedule, RNG states and data "
                         "order are restored, so the result equals an uninterrupted run; --steps may be larger",
                     metavar="CHECKPOINT")
    plot: str = _f("", "write the loss curves to this PNG; default beside the checkpoint (<stem>.loss.png; with "
                          "--compare-torch runs/<model>/compare_<dtype>.png)", metavar="PNG")
    progress: bool = _f(True, "show a progress bar on stderr")
    compare_torch: bool = _f(False, "also train the PyTorch twin from the same initial weights on the same "
                                    "batches, print both loss curves and plot them (dropout forced to 0)")
    compare_every: int = _f(10, "with --compare-torch: print the two losses every N steps", min=1)
    threads: int = _f(0, "threads for NumPy's BLAS and tinygrad_tx's elementwise pool while training "
                         "(0 = automatic: OMP_NUM_THREADS if set, else the CPUs less the load average, at least 1)",
                      min=0)
    compile: bool = _f(False, "record the training step (forward, backward, clip, AdamW) once with "
                              "tinygrad_tx.compile and replay it: fuse=True (elementwise chains as generated C "
                              "loops) where a C compiler is found, else plain compile; a model compile cannot "
                              "replay warns once and trains eagerly")

    def __post_init__(self):
        self.check()

    def check(self) -> None:
        """The checks that need no data (run when the config is made, so a bad combination of
        flags fails before any corpus is loaded): ``ValueError`` naming the flags."""
        if self.compile and self.compare_torch:
            raise ValueError("--compile does not combine with --compare-torch (the comparison runs both "
                             "frameworks' eager steps)")
        if getattr(self, "type", "transformer") in NAME_BASELINES and self.n_layers < 1:
            raise ValueError(f"--type {self.type} needs --n-layers >= 1, got {self.n_layers}")
        if getattr(self, "type", "transformer") not in ("transformer", "vit"):
            return
        if self.d_model % self.n_heads:
            raise ValueError(f"--d-model {self.d_model} is not divisible by --n-heads {self.n_heads} "
                             f"(each head gets d_model / n_heads dimensions)")
        if self.attn_impl == "flash" and self.dropout > 0 and not self.compare_torch:
            raise ValueError(f"--attn-impl flash has no attention dropout; got --dropout {self.dropout} "
                             "(use --dropout 0, or --attn-impl fused)")

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class GPTConfig(TrainConfig):
    """``tinygrad-tx train gpt`` (also ``train names``): the tutorial's GPT (section 7.3) on a names
    corpus, or with ``--type`` one of makemore's baselines on the same data and loop."""

    type: str = _f("transformer", "the model: 'transformer' = the tutorial's GPT; 'bigram' = NeuralBigram (a "
                                  "V x V logits table, trained); 'mlp' = FlattenMLP (embed the last --block-size "
                                  "characters, flatten, MLP with 4 * --d-model hidden units; trains on the prefix "
                                  "layout); 'rnn'/'gru'/'lstm' = RecurrentLM (--n-layers stacked layers, hidden "
                                  "--d-model); 'bow' = BagOfWordsLM (causal average of the past + MLP, --n-layers "
                                  "blocks); 'wavenet' = WaveNetLM (--n-layers Conv1d layers, kernel 2, dilations 1, 2, "
                                  "4, ...: receptive field 2**n_layers)", choices=NAME_MODELS)
    data: str | None = _f(None, "names file, one name per line (default: the offline US Census first names)",
                          type=str, metavar="PATH")
    dataset: str = _f("full", "training examples: 'full' = one row per name, every position scored "
                              "(FullSequenceDataset); 'prefix' = the tutorial's one row per character "
                              "(CharAutoregressiveDataset, left-padded, last position scored)",
                      choices=("full", "prefix"))
    block_size: int = _f(16, "context length (positions)", min=2)
    steps: int = _f(2000, "number of optimiser steps", min=1)
    dropout: float = _f(0.1, "dropout probability (attention, residual and MLP)", min=0.0, max=0.99)
    batch_size: int = _f(64, "names per step (with --dataset prefix: prefixes per step)", min=1)
    eval_every: int = _f(500, "evaluate on the dev split every N steps (0 = only at the end)", min=0)
    num_samples: int = _f(10, "names to generate at the end", min=0)
    temperature: float = _f(1.0, "sampling temperature of the generated names", min=0.0)
    top_k: int | None = _f(None, "sample from the k most likely characters only", type=int, min=1)
    top_p: float | None = _f(None, "nucleus sampling threshold in (0, 1]", type=float, min=1e-12, max=1.0)


@dataclass
class ViTConfig(TrainConfig):
    """``tinygrad-tx train vit``: the section-10 ViT on scikit-learn's bundled 8x8 digits (``--type cnn``:
    a LeNet-style CNN on the same split and loop)."""

    type: str = _f("vit", "the model: 'vit' = the section-10 ViT; 'cnn' = CNN (LeNet-style: conv 3x3 with "
                          "--d-model // 2 channels (at least 1), ReLU, max pool 2, conv 3x3 with --d-model "
                          "channels, ReLU, max pool 2, dropout, linear head; --patch-size, --n-heads, --n-layers "
                          "and --attn-impl unused)",
                   choices=VIT_MODELS)
    patch_size: int = _f(2, "patch size P (8x8 images: 2 -> 16 patches, 4 -> 4 patches)", choices=(2, 4))
    augment: bool = _f(True, "random +-1 pixel shifts of the training images")
    steps: int = _f(2000, "number of optimiser steps", min=1)
    lr: float = _f(2e-3, "peak learning rate (AdamW)", min=0.0)
    n_layers: int = _f(3, "Transformer blocks", min=0)
    dropout: float = _f(0.1, "dropout probability (attention, residual and MLP)", min=0.0, max=0.99)
    eval_every: int = _f(250, "evaluate on the dev split every N steps (0 = only at the end)", min=0)


@dataclass
class EncoderConfig(TrainConfig):
    """``tinygrad-tx train encoder``: first-name gender (US Census lists) with the BERT-style encoder."""

    steps: int = _f(2000, "number of optimiser steps", min=1)
    n_layers: int = _f(3, "Transformer blocks", min=0)
    dropout: float = _f(0.1, "dropout probability (attention, residual and MLP)", min=0.0, max=0.99)
    lr: float = _f(2e-3, "peak learning rate (AdamW)", min=0.0)


@dataclass
class Seq2SeqConfig(TrainConfig):
    """``tinygrad-tx train seq2seq``: an encoder-decoder with cross-attention."""

    task: str = _f("dates", "'dates' = spelled-out dates -> YYYY-MM-DD; 'reverse' = a name -> its reversal",
                   choices=("dates", "reverse"))
    data: str | None = _f(None, "names file for --task reverse (default: the offline US Census first names)",
                          type=str, metavar="PATH")
    num_examples: int = _f(20000, "dates to draw for --task dates (distinct; split 80/10/10)", min=3)
    n_layers: int = _f(2, "encoder blocks and decoder blocks (each)", min=0)
    steps: int = _f(600, "number of optimiser steps", min=1)
    eval_every: int = _f(100, "evaluate on the dev split every N steps (0 = only at the end)", min=0)
    lr: float = _f(2e-3, "peak learning rate (AdamW)", min=0.0)


@dataclass
class BigramConfig:
    """``tinygrad-tx train bigram``: the section-3.2 count model."""

    data: str | None = _f(None, "names file, one name per line (default: the offline US Census first names)",
                          type=str, metavar="PATH")
    alpha: float = _f(1.0, "Laplace smoothing added to every count", min=0.0)
    split_seed: int = _f(42, "seed of the train/dev/test split (80/10/10)", min=0)
    num_samples: int = _f(10, "names to sample from the fitted table", min=0)
    seed: int = _f(0, "seed of the sampled names", min=0)

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)
