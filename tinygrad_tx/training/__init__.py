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
import importlib

# Loaded on first use (PEP 562), so ``tinygrad_tx.training.signals`` -- which every CLI command
# imports -- does not pull in the models, checkpoints (safetensors) and plots: ``tinygrad-tx
# explain softmax`` runs where the training stack's dependencies are missing.
_HOME = {
    "train_bigram": "bigram", "BigramConfig": "config", "EncoderConfig": "config", "GPTConfig": "config",
    "Seq2SeqConfig": "config", "TrainConfig": "config", "ViTConfig": "config", "EncoderTask": "encoder",
    "train_encoder": "encoder", "GPTTask": "gpt", "load_gpt": "gpt", "sample_names": "gpt", "train_gpt": "gpt",
    "Task": "loop", "fit": "loop", "Seq2SeqTask": "seq2seq", "train_seq2seq": "seq2seq", "ViTTask": "vit",
    "train_vit": "vit",
}


def __getattr__(name):
    if name in _HOME:
        value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_HOME))


__all__ = [
    "BigramConfig", "EncoderConfig", "EncoderTask", "GPTConfig", "GPTTask", "Seq2SeqConfig", "Seq2SeqTask", "Task",
    "TrainConfig", "ViTConfig", "ViTTask", "fit", "load_gpt", "sample_names", "train_bigram", "train_encoder",
    "train_gpt", "train_seq2seq", "train_vit",
]
