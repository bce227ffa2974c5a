"""ACC013 (run time only): a tiny language model trained on padded sequences of uneven length,
gradient accumulation over 4 micro-batches. Each micro-batch loss is a mean over its own
non-padding tokens, then divided by 4: micro-batches with few tokens weigh as much as those with
many. ACC_FIXED=1 sums the token losses and divides by the window's token count instead."""
import os

import torch
import torch.nn as nn

torch.manual_seed(0)
vocab, accum_steps, pad = 32, 4, -100
lengths = [12, 3, 9, 5] * 6  # tokens per sequence, very uneven
sequences = torch.randint(vocab, (len(lengths), 13))
targets = sequences[:, 1:].clone()
for row, n in enumerate(lengths):
    targets[row, n:] = pad
model = nn.Sequential(nn.Embedding(vocab, 16), nn.Linear(16, vocab))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
fixed = os.environ.get("ACC_FIXED") == "1"
for start in range(0, len(lengths), accum_steps):
    window = range(start, start + accum_steps)
    window_tokens = int((targets[list(window)] != pad).sum())
    for i in window:
        logits = model(sequences[i:i + 1, :-1]).reshape(-1, vocab)
        if fixed:
            loss = nn.functional.cross_entropy(logits, targets[i], ignore_index=pad,
                                               reduction="sum") / window_tokens
        else:
            loss = nn.functional.cross_entropy(logits, targets[i], ignore_index=pad) / accum_steps
        loss.backward()
    optimizer.step()
    optimizer.zero_grad()
print(f"loss {loss.item():.6f}")
