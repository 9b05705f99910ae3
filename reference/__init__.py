"""PyTorch twins of the tinygrad_tx models: same class names, attribute names and state-dict
keys, so ``twin.load_state_dict(ours.state_dict())`` and ``ours.load_state_dict(twin.state_dict())``
both work. The GPT family is the tutorial's section-7.3 code."""
from .baselines import BigramCountModel, FlattenMLP, NeuralBigram
from .recurrent_baselines import BagOfWordsLM, RecurrentLM, WaveNetLM
from .gpt import CausalSelfAttention, FeedForward, GPTLanguageModel, TransformerBlock
from .transformer import (DecoderBlock, Encoder, EncoderBlock, EncoderDecoder, MultiHeadAttention,
                          TransformerDecoder, TransformerEncoder)
from .vit import PatchEmbedding, ViT
from .cnn import CNN

__all__ = [
    "BigramCountModel", "CausalSelfAttention", "DecoderBlock", "Encoder", "EncoderBlock", "EncoderDecoder",
    "FeedForward", "FlattenMLP", "GPTLanguageModel", "MultiHeadAttention", "NeuralBigram", "PatchEmbedding",
    "TransformerBlock", "TransformerDecoder", "TransformerEncoder", "ViT",
    "BagOfWordsLM", "RecurrentLM", "WaveNetLM", "CNN",
]
