"""``tinygrad-tx train gpt --type rnn | gru | lstm | bow | wavenet``: which model of
:mod:`tinygrad_tx.models.recurrent_baselines` each type builds from the config, and its title.

All of them are causal language models over the whole sequence, so they train in the GPT's
layout (``--dataset``, default ``full``), loop, checkpoint, resume and sampling unchanged. Sizes
come from the shared flags: width ``--d-model`` (the RNNs' hidden state too; BoW's MLP has
4 * d_model hidden units), depth ``--n-layers`` (stacked recurrent layers, BoW blocks, or
convolution layers: with kernel 2 the WaveNet sees 2**n_layers tokens), and ``--block-size``
(BoW's position embeddings; the window ``generate`` keeps for the others).
"""
from __future__ import annotations

from ..models.recurrent_baselines import receptive_field
from .config import NAME_BASELINES

WAVENET_KERNEL = 2


def baseline_spec(config, vocab_size: int):
    """``(class name in tinygrad_tx.models, constructor kwargs)`` of ``config.type``."""
    c = config
    common = dict(vocab_size=vocab_size, block_size=c.block_size, d_model=c.d_model, n_layers=c.n_layers)
    if c.type in ("rnn", "gru", "lstm"):
        return "RecurrentLM", dict(common, hidden=c.d_model, cell=c.type)
    if c.type == "bow":
        return "BagOfWordsLM", dict(common, hidden=4 * c.d_model)
    if c.type == "wavenet":
        return "WaveNetLM", dict(common, kernel_size=WAVENET_KERNEL)
    raise ValueError(f"--type must be one of {', '.join(NAME_BASELINES)} here, got {c.type!r}")


TITLES = {
    "RecurrentLM": lambda kw: f"{kw['cell'].upper()} ({kw['n_layers']} layers, d_model {kw['d_model']}, "
                              f"hidden {kw['hidden']})",
    "BagOfWordsLM": lambda kw: f"BagOfWordsLM ({kw['n_layers']} blocks, d_model {kw['d_model']}, "
                               f"hidden {kw['hidden']})",
    "WaveNetLM": lambda kw: f"WaveNetLM ({kw['n_layers']} dilated conv layers, d_model {kw['d_model']}, "
                            f"receptive field {receptive_field(kw['n_layers'], kw['kernel_size'])})",
}
