"""The tutorial's architectures on tinygrad_tx, each with a PyTorch twin of the same name in
``reference/`` (same attribute names and state-dict keys).

* ``gpt``: ``CausalSelfAttention``, ``FeedForward``, ``TransformerBlock``, ``GPTLanguageModel``
  (section 7.3);
* ``transformer``: ``MultiHeadAttention``, ``EncoderBlock``, ``DecoderBlock``,
  ``TransformerEncoder``, ``Encoder`` (BERT-style), ``TransformerDecoder``, ``EncoderDecoder``
  (sections 7.1, 8);
* ``vit``: ``PatchEmbedding``, ``ViT`` (section 10);
* ``cnn``: ``CNN``, the LeNet-style baseline section 10.3 contrasts with the ViT (``train vit --type cnn``);
* ``baselines``: ``BigramCountModel``, ``NeuralBigram`` (section 3), ``FlattenMLP`` (section 5.3);
* ``recurrent_baselines``: ``RecurrentLM`` (RNN/GRU/LSTM), ``BagOfWordsLM``, ``WaveNetLM`` (section 1's
  alternatives, ``train gpt --type rnn|gru|lstm|bow|wavenet``).
"""
from .baselines import BigramCountModel, FlattenMLP, NeuralBigram
from .recurrent_baselines import BagOfWordsLM, RecurrentLM, WaveNetLM
from .gpt import ATTN_IMPLS, CausalSelfAttention, FeedForward, GPTLanguageModel, TransformerBlock
from .transformer import (DecoderBlock, Encoder, EncoderBlock, EncoderDecoder, MultiHeadAttention,
                          TransformerDecoder, TransformerEncoder)
from .vit import PatchEmbedding, ViT
from .cnn import CNN

__all__ = [
    "ATTN_IMPLS", "BigramCountModel", "CausalSelfAttention", "DecoderBlock", "Encoder", "EncoderBlock",
    "EncoderDecoder", "FeedForward", "FlattenMLP", "GPTLanguageModel", "MultiHeadAttention", "NeuralBigram",
    "PatchEmbedding", "TransformerBlock", "TransformerDecoder", "TransformerEncoder", "ViT",
    "BagOfWordsLM", "RecurrentLM", "WaveNetLM", "CNN",
]
