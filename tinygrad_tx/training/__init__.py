"""Training loops behind ``tinygrad-tx train ...``, callable from Python.

* :func:`train_gpt` -- the tutorial's GPT on names (``gpt``), :func:`sample_names`, :func:`load_gpt`;
* :func:`train_bigram` -- the count model (``bigram``);
* :func:`train_vit` -- the ViT on scikit-learn's 8x8 digits (``vit``);
* :func:`train_encoder` -- first-name gender with the BERT-style encoder (``encoder``);
* :func:`train_seq2seq` -- dates or reversed names with the encoder-decoder (``seq2seq``);
* :func:`fit` -- the shared loop (:mod:`.loop`); configs in :mod:`.config`.

Each returns a dict with the history and the held-out metrics. NumPy only: the PyTorch side
of ``--compare-torch`` lives in ``reference.train``.
"""
from .config import BigramConfig, EncoderConfig, GPTConfig, Seq2SeqConfig, TrainConfig, ViTConfig
from .gpt import GPTTask, load_gpt, sample_names, train_gpt
from .loop import Task, fit

__all__ = [
    "BigramConfig", "EncoderConfig", "GPTConfig", "GPTTask", "Seq2SeqConfig", "Task", "TrainConfig", "ViTConfig",
    "fit", "load_gpt", "sample_names", "train_gpt",
]
