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
from .bigram import train_bigram
from .config import BigramConfig, EncoderConfig, GPTConfig, Seq2SeqConfig, TrainConfig, ViTConfig
from .encoder import EncoderTask, train_encoder
from .gpt import GPTTask, load_gpt, sample_names, train_gpt
from .loop import Task, fit
from .seq2seq import Seq2SeqTask, train_seq2seq
from .vit import ViTTask, train_vit

__all__ = [
    "BigramConfig", "EncoderConfig", "EncoderTask", "GPTConfig", "GPTTask", "Seq2SeqConfig", "Seq2SeqTask", "Task",
    "TrainConfig", "ViTConfig", "ViTTask", "fit", "load_gpt", "sample_names", "train_bigram", "train_encoder",
    "train_gpt", "train_seq2seq", "train_vit",
]
