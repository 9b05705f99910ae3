"""The tutorial's section-10 Vision Transformer on tinygrad_tx. Twin: ``reference.vit``.

1. ``patch_embed.proj`` = ``nn.Conv2d(in_channels, d_model, kernel_size=P, stride=P)``: with
   stride = kernel size the windows tile the image, so this *is* "cut into P x P patches,
   flatten each, multiply by E" (section 10.1); (B, C, H, W) -> (B, d_model, H/P, W/P) ->
   flatten + transpose -> (B, N, d_model), N = HW / P^2.
2. A learnable [CLS] token ``cls_token`` (1, 1, d_model) is prepended: N + 1 tokens.
3. A learned positional embedding ``pos_embedding`` (1, N + 1, d_model) is added.
4. ``blocks``: bidirectional pre-LN encoder blocks.
5. The [CLS] output is normalised by ``ln_f`` and classified by ``head`` (section 10.2).

``forward(images, targets=None) -> (logits (B, num_classes), loss)``.
"""
from __future__ import annotations

import numpy as np

from .. import functional as F
from .. import nn
from ..core.dtypes import default_float
from ..tensor import Tensor, cat
from .gpt import as_targets
from .inputs import as_pair, check_heads, check_image, check_patch_grid
from .transformer import EncoderBlock


class PatchEmbedding(nn.Module):
    """(B, C, H, W) images -> (B, N, d_model) patch tokens, N = (H/P) * (W/P)."""

    def __init__(self, image_size, patch_size, in_channels, d_model):
        super().__init__()
        grid_h, grid_w = check_patch_grid(image_size, patch_size)
        self.image_size = as_pair(image_size, "image_size")
        self.in_channels = in_channels
        self.num_patches = grid_h * grid_w
        self.proj = nn.Conv2d(in_channels, d_model, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        x = x if isinstance(x, Tensor) else Tensor(x)
        check_image(tuple(x.shape), self.in_channels, self.image_size)
        x = self.proj(x)                      # (B, d_model, H/P, W/P)
        return x.flatten(2).transpose(1, 2)   # (B, N, d_model)


class ViT(nn.Module):
    """Vision Transformer classifier (see the module docstring)."""

    def __init__(self, image_size, patch_size, in_channels, num_classes, d_model=64, n_heads=4, n_layers=4,
                 dropout=0.1, attn_impl="fused"):
        super().__init__()
        check_heads(d_model, n_heads)
        self.num_classes = num_classes
        self.patch_embed = PatchEmbedding(image_size, patch_size, in_channels, d_model)
        n = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(np.zeros((1, 1, d_model), dtype=default_float()))
        self.pos_embedding = nn.Parameter(np.zeros((1, n + 1, d_model), dtype=default_float()))
        nn.init.normal_(self.pos_embedding, std=0.02)
        self.dropout = nn.Dropout(dropout)
        self.blocks = nn.Sequential(*[EncoderBlock(d_model, n_heads, dropout, attn_impl) for _ in range(n_layers)])
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, num_classes)

    def forward(self, images, targets=None):
        x = self.patch_embed(images)                      # (B, N, d_model)
        cls = self.cls_token.expand(x.shape[0], -1, -1)   # (B, 1, d_model)
        x = cat((cls, x), dim=1) + self.pos_embedding
        x = self.dropout(x)
        x = self.blocks(x)
        x = self.ln_f(x)
        logits = self.head(x[:, 0])                       # the [CLS] token's representation
        return logits, classification_loss(logits, targets, self.num_classes)


def classification_loss(logits, targets, num_classes: int):
    """Mean cross-entropy of (B, num_classes) logits against (B,) class ids, or None without targets;
    ``ValueError`` for targets of another shape or out of range."""
    if targets is None:
        return None
    if tuple(targets.shape) != (logits.shape[0],):
        raise ValueError(f"targets must have shape ({logits.shape[0]},), got {tuple(targets.shape)}")
    return F.cross_entropy(logits, as_targets(targets, logits.shape, num_classes))
