"""PyTorch twin of ``tinygrad_tx.models.vit``: the tutorial's section-10 Vision Transformer.

Patches are cut and projected by one ``nn.Conv2d(in_channels, d_model, kernel_size=P,
stride=P)`` (section 10.1), a learnable [CLS] token is prepended, a learned (N+1)-position
embedding added, bidirectional encoder blocks applied, and the [CLS] output is normalised
by ``ln_f`` and classified by ``head`` (section 10.2).
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from tinygrad_tx.models.inputs import as_pair, check_heads, check_image, check_patch_grid, check_targets

from ._twin import TwinModule, np_of
from .transformer import EncoderBlock


class PatchEmbedding(TwinModule):
    """
    (B, C, H, W) images -> (B, N, d_model) patch tokens, N = (H/P) * (W/P).
    """
    def __init__(self, image_size, patch_size, in_channels, d_model):
        super().__init__()
        grid_h, grid_w = check_patch_grid(image_size, patch_size)
        self.image_size = as_pair(image_size, "image_size")
        self.in_channels = in_channels
        self.num_patches = grid_h * grid_w
        self.proj = nn.Conv2d(in_channels, d_model, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        check_image(tuple(x.shape), self.in_channels, self.image_size)
        x = self.proj(x)                      # (B, d_model, H/P, W/P)
        return x.flatten(2).transpose(1, 2)   # (B, N, d_model)


class ViT(TwinModule):
    """
    Vision Transformer classifier: forward(images, targets=None) -> (logits, loss).
    """
    def __init__(self, image_size, patch_size, in_channels, num_classes, d_model=64, n_heads=4, n_layers=4,
                 dropout=0.1, attn_impl="naive"):
        super().__init__()
        check_heads(d_model, n_heads)
        self.num_classes = num_classes
        self.patch_embed = PatchEmbedding(image_size, patch_size, in_channels, d_model)
        n = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d_model))
        self.pos_embedding = nn.Parameter(torch.randn(1, n + 1, d_model) * 0.02)
        self.dropout = nn.Dropout(dropout)
        self.blocks = nn.Sequential(*[EncoderBlock(d_model, n_heads, dropout, attn_impl) for _ in range(n_layers)])
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, num_classes)

    def forward(self, images, targets=None):
        x = self.patch_embed(images)                      # (B, N, d_model)
        cls = self.cls_token.expand(x.shape[0], -1, -1)   # (B, 1, d_model)
        x = torch.cat((cls, x), dim=1) + self.pos_embedding
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
    check_targets(np_of(targets), logits.shape, num_classes)
    return F.cross_entropy(logits, targets)
