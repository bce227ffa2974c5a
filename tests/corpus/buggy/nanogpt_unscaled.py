# accumlint corpus: a buggy real-style training script. Expected findings (code@row):
# expect: ACC001@46
# expect: ACC004@47
"""nanoGPT-style loop that forgot the division and clips scaled gradients."""
import math
import os

import numpy as np
import torch

from tinygpt import Transformer, TransformerConfig

block_size = 256
batch_size = 12
gradient_accumulation_steps = 8
max_iters = 5000
learning_rate = 6e-4
device = "cuda"

tokens = np.memmap(os.path.join("data", "train.bin"), dtype=np.uint16, mode="r")


def get_batch():
    starts = torch.randint(len(tokens) - block_size, (batch_size,))
    x = torch.stack([torch.from_numpy(tokens[s:s + block_size].astype(np.int64)) for s in starts])
    y = torch.stack([torch.from_numpy(tokens[s + 1:s + 1 + block_size].astype(np.int64)) for s in starts])
    return x.to(device), y.to(device)


def get_lr(it):
    return learning_rate * min(1.0, (it + 1) / 200) * 0.5 * (1.0 + math.cos(math.pi * it / max_iters))


model = Transformer(TransformerConfig(block_size=block_size)).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, betas=(0.9, 0.95))
scaler = torch.amp.GradScaler("cuda")

X, Y = get_batch()
for iter_num in range(max_iters):
    for group in optimizer.param_groups:
        group["lr"] = get_lr(iter_num)
    for micro_step in range(gradient_accumulation_steps):
        with torch.amp.autocast(device_type="cuda", dtype=torch.float16):
            logits, loss = model(X, Y)
        X, Y = get_batch()
        scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    if iter_num % 10 == 0:
        print(f"iter {iter_num}: loss {loss.item():.4f}")
