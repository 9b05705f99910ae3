"""A small CIFAR-10-style CNN, written the way PyTorch teaching code writes it: three
conv-BatchNorm-ReLU-pool blocks in ``nn.Sequential``, global average pooling, dropout and a
linear classifier, trained with Adam and ``nn.CrossEntropyLoss`` on random 32x32 RGB images.
Plain PyTorch: ``python cifar_cnn.py``, or on tinygrad_tx unchanged with
``tinygrad-tx run cifar_cnn.py``. tests/test_cnn.py executes this file twice, as written and with
``torch`` meaning tinygrad_tx, and compares the two.
"""
import torch
import torch.nn as nn


def conv_block(in_channels, out_channels):
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, bias=False),
        nn.BatchNorm2d(out_channels),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(kernel_size=2, stride=2),
    )


class Net(nn.Module):
    def __init__(self, num_classes=10, dropout=0.25):
        super().__init__()
        self.features = nn.Sequential(
            conv_block(3, 16),    # 32 -> 16
            conv_block(16, 32),   # 16 -> 8
            conv_block(32, 64),   # 8 -> 4
        )
        self.classifier = nn.Sequential(
            nn.AdaptiveAvgPool2d((1, 1)),
            nn.Flatten(),
            nn.Dropout(dropout),
            nn.Linear(64, num_classes),
        )

    def forward(self, x):
        return self.classifier(self.features(x))


def make_optimizer(model):
    return torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=5e-4)


def train(model, optimizer, images, labels, steps, batch_size=8):
    criterion = nn.CrossEntropyLoss()
    model.train()
    losses = []
    for step in range(steps):
        start = (step * batch_size) % len(images)
        inputs, targets = images[start:start + batch_size], labels[start:start + batch_size]
        optimizer.zero_grad()
        outputs = model(inputs)
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


@torch.no_grad()
def evaluate(model, images, labels):
    model.eval()
    predicted = model(images).argmax(dim=1)
    return (predicted == labels).float().mean().item()


def main():
    torch.manual_seed(0)
    images = torch.randn(32, 3, 32, 32)
    labels = torch.randint(0, 10, (32,))
    model = Net()
    print(f"CNN: {sum(p.numel() for p in model.parameters() if p.requires_grad)} parameters")
    optimizer = make_optimizer(model)
    for epoch in range(2):
        losses = train(model, optimizer, images, labels, steps=4)
        print(f"epoch {epoch + 1}: loss {sum(losses) / len(losses):.4f}")
    print(f"train accuracy: {evaluate(model, images, labels):.2%}")


if __name__ == "__main__":
    main()
