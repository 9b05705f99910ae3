"""A small LeNet-style CNN classifier for images on tinygrad_tx (``tinygrad-tx train vit --type cnn``).
Twin: ``reference.cnn``.

1. ``conv1`` = ``nn.Conv2d(in_channels, conv1_channels, kernel_size, padding=kernel_size // 2)``:
   with an odd kernel and that padding the (H, W) grid is kept ("same"), then ReLU and
   ``pool`` = ``nn.MaxPool2d(2)``: (H, W) -> (H // 2, W // 2);
2. ``conv2`` = ``nn.Conv2d(conv1_channels, conv2_channels, kernel_size, padding=kernel_size // 2)``,
   ReLU, the same 2 x 2 max pool: -> (H // 4, W // 4);
3. flatten, ``dropout``, ``head`` = ``nn.Linear(conv2_channels * (H // 4) * (W // 4), num_classes)``.

On the 8 x 8 digits: 8 x 8 -> 4 x 4 -> 2 x 2 grids. The inductive bias the tutorial's section
10.3 contrasts with the ViT is all here: every filter is shared across positions (translation
equivariance) and sees a k x k neighbourhood only (locality); the pools add a little invariance.

``forward(images, targets=None) -> (logits (B, num_classes), loss)``, as ``ViT``'s.
"""
from __future__ import annotations

from .. import functional as F
from .. import nn
from ..core.tensor import Tensor
from .inputs import as_pair, check_image
from .vit import classification_loss


def cnn_grid(image_size, kernel_size):
    """``(H // 4, W // 4)``, the grid the head reads; ``ValueError`` naming a bad ``image_size``
    (smaller than 4 x 4: nothing left after the two pools) or ``kernel_size`` (not a positive odd
    int: ``kernel_size // 2`` would not keep the grid)."""
    H, W = as_pair(image_size, "image_size")
    if isinstance(kernel_size, bool) or not isinstance(kernel_size, int) or kernel_size < 1 or kernel_size % 2 == 0:
        raise ValueError(f"kernel_size must be a positive odd int (padding kernel_size // 2 keeps the grid), "
                         f"got {kernel_size!r}")
    if H < 4 or W < 4:
        raise ValueError(f"image_size must be at least 4 x 4 (two 2 x 2 max pools), got {(H, W)}")
    return H // 4, W // 4


def check_channels(**channels) -> None:
    for name, value in channels.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")


class CNN(nn.Module):
    """LeNet-style CNN classifier (see the module docstring)."""

    def __init__(self, image_size, in_channels, num_classes, conv1_channels=32, conv2_channels=64, kernel_size=3,
                 dropout=0.0):
        super().__init__()
        check_channels(in_channels=in_channels, num_classes=num_classes, conv1_channels=conv1_channels,
                       conv2_channels=conv2_channels)
        grid_h, grid_w = cnn_grid(image_size, kernel_size)
        self.image_size = as_pair(image_size, "image_size")
        self.in_channels = in_channels
        self.num_classes = num_classes
        self.conv1 = nn.Conv2d(in_channels, conv1_channels, kernel_size, padding=kernel_size // 2)
        self.conv2 = nn.Conv2d(conv1_channels, conv2_channels, kernel_size, padding=kernel_size // 2)
        self.pool = nn.MaxPool2d(2)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(conv2_channels * grid_h * grid_w, num_classes)

    def forward(self, images, targets=None):
        x = images if isinstance(images, Tensor) else Tensor(images)
        check_image(tuple(x.shape), self.in_channels, self.image_size, "the head's input size is fixed to it")
        x = self.pool(F.relu(self.conv1(x)))          # (B, c1, H/2, W/2)
        x = self.pool(F.relu(self.conv2(x)))          # (B, c2, H/4, W/4)
        logits = self.head(self.dropout(x.flatten(1)))
        return logits, classification_loss(logits, targets, self.num_classes)
