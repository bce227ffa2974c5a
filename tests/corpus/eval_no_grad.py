"""Training plus an evaluation pass that collects logits and losses under torch.no_grad()."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

from cifar import train_set, test_set

device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 512), nn.ReLU(), nn.Linear(512, 10)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
train_loader = DataLoader(train_set, batch_size=128, shuffle=True)
test_loader = DataLoader(test_set, batch_size=256)


def evaluate():
    model.eval()
    all_logits = []
    all_labels = []
    total_loss = torch.zeros((), device=device)
    with torch.no_grad():
        for images, labels in test_loader:
            images, labels = images.to(device), labels.to(device)
            logits = model(images)
            all_logits.append(logits)
            all_labels.append(labels)
            total_loss += F.cross_entropy(logits, labels, reduction="sum")
    logits = torch.cat(all_logits)
    accuracy = (logits.argmax(dim=1) == torch.cat(all_labels)).float().mean().item()
    return total_loss.item() / len(test_set), accuracy


@torch.no_grad()
def collect_embeddings(loader):
    outputs = []
    for images, _ in loader:
        outputs.append(model[:-1](images.to(device)))
    return torch.cat(outputs)


for epoch in range(10):
    model.train()
    seen_loss = 0.0
    for images, labels in train_loader:
        images, labels = images.to(device), labels.to(device)
        loss = F.cross_entropy(model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        seen_loss += loss.item() * images.size(0)
    test_loss, test_acc = evaluate()
    print(f"epoch {epoch}: train {seen_loss / len(train_set):.3f} test {test_loss:.3f} acc {test_acc:.3f}")
embeddings = collect_embeddings(test_loader)
