"""PyTorch twin of ``tinygrad_tx.models.cnn``: a small LeNet-style CNN classifier.

conv1 (kernel k, padding k // 2) -> ReLU -> 2 x 2 max pool -> conv2 -> ReLU -> 2 x 2 max pool ->
flatten -> dropout -> linear head; (H, W) -> (H // 4, W // 4) before the head.
"""
from __future__ import annotations

import torch.nn as nn
import torch.nn.functional as F

from tinygrad_tx.models.cnn import check_channels, cnn_grid
from tinygrad_tx.models.inputs import as_pair, check_image

from ._twin import TwinModule
from .vit import classification_loss


class CNN(TwinModule):
    """
    LeNet-style CNN classifier: forward(images, targets=None) -> (logits, loss).
    """
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
        check_image(tuple(images.shape), self.in_channels, self.image_size, "the head's input size is fixed to it")
        x = self.pool(F.relu(self.conv1(images)))     # (B, c1, H/2, W/2)
        x = self.pool(F.relu(self.conv2(x)))          # (B, c2, H/4, W/4)
        logits = self.head(self.dropout(x.flatten(1)))
        return logits, classification_loss(logits, targets, self.num_classes)
