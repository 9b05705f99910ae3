"""LeNet-5 on random 28x28 "digits", written the way PyTorch teaching code writes it (the classic
conv-pool-conv-pool-fc-fc-fc of LeCun et al. 1998, the MNIST version with padding 2 on the first
convolution, trained with plain SGD + momentum). Plain PyTorch: run it with ``python lenet5.py``,
or on tinygrad_tx unchanged with ``tinygrad-tx run lenet5.py``. tests/test_cnn.py executes this
file twice, as written and with ``torch`` meaning tinygrad_tx, and compares the two.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class LeNet5(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, kernel_size=5, padding=2)   # 28x28 -> 28x28
        self.conv2 = nn.Conv2d(6, 16, kernel_size=5)             # 14x14 -> 10x10
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(-1, self.num_flat_features(x))
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)

    def num_flat_features(self, x):
        size = x.size()[1:]
        num_features = 1
        for s in size:
            num_features *= s
        return num_features


def make_optimizer(model):
    return optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)


def train(model, optimizer, images, labels, steps, batch_size=16):
    model.train()
    losses = []
    for step in range(steps):
        start = (step * batch_size) % images.size(0)
        inputs, targets = images[start:start + batch_size], labels[start:start + batch_size]
        optimizer.zero_grad()
        outputs = model(inputs)
        loss = F.cross_entropy(outputs, targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def evaluate(model, images, labels):
    model.eval()
    correct = 0
    with torch.no_grad():
        outputs = model(images)
        _, predicted = torch.max(outputs.data, 1)
        correct += (predicted == labels).sum().item()
    return correct / labels.size(0)


def main():
    torch.manual_seed(0)
    images = torch.randn(64, 1, 28, 28)
    labels = torch.randint(0, 10, (64,))
    model = LeNet5()
    print(f"LeNet-5: {sum(p.numel() for p in model.parameters())} parameters")
    optimizer = make_optimizer(model)
    for epoch in range(3):
        losses = train(model, optimizer, images, labels, steps=4)
        print(f"epoch {epoch + 1}: loss {sum(losses) / len(losses):.4f}")
    print(f"train accuracy: {evaluate(model, images, labels):.2%}")


if __name__ == "__main__":
    main()
