"""Character-level GPT pre-training in the style of nanoGPT's train.py.

Accumulation is an inner micro-step loop; under DDP only the last micro-step synchronises.
"""
import math
import os
import time
from contextlib import nullcontext

import numpy as np
import torch
from torch.distributed import destroy_process_group, init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP

from tinygpt import Transformer, TransformerConfig

block_size = 256
batch_size = 12
gradient_accumulation_steps = 40
max_iters = 60000
warmup_iters = 2000
lr_decay_iters = 60000
learning_rate = 6e-4
min_lr = 6e-5
grad_clip = 1.0
eval_interval = 1000
log_interval = 10
dtype = "float16"

ddp = int(os.environ.get("RANK", -1)) != -1
if ddp:
    init_process_group(backend="nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    device = f"cuda:{local_rank}"
    torch.cuda.set_device(device)
    is_master = int(os.environ["RANK"]) == 0
    assert gradient_accumulation_steps % world_size == 0
    gradient_accumulation_steps //= world_size
else:
    device = "cuda"
    is_master = True

autocast_ctx = torch.amp.autocast(device_type="cuda", dtype=torch.float16)
train_tokens = np.memmap(os.path.join("data", "train.bin"), dtype=np.uint16, mode="r")
val_tokens = np.memmap(os.path.join("data", "val.bin"), dtype=np.uint16, mode="r")


def get_batch(split):
    tokens = train_tokens if split == "train" else val_tokens
    starts = torch.randint(len(tokens) - block_size, (batch_size,))
    x = torch.stack([torch.from_numpy(tokens[s:s + block_size].astype(np.int64)) for s in starts])
    y = torch.stack([torch.from_numpy(tokens[s + 1:s + 1 + block_size].astype(np.int64)) for s in starts])
    return x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)


model = Transformer(TransformerConfig(block_size=block_size)).to(device)
scaler = torch.amp.GradScaler("cuda", enabled=(dtype == "float16"))
optimizer = model.configure_optimizers(weight_decay=0.1, learning_rate=learning_rate, betas=(0.9, 0.95))
if ddp:
    model = DDP(model, device_ids=[local_rank])
raw_model = model.module if ddp else model


@torch.no_grad()
def estimate_loss(eval_iters=200):
    results = {}
    model.eval()
    for split in ("train", "val"):
        values = torch.zeros(eval_iters)
        for k in range(eval_iters):
            xb, yb = get_batch(split)
            with autocast_ctx:
                _, batch_loss = model(xb, yb)
            values[k] = batch_loss.item()
        results[split] = values.mean()
    model.train()
    return results


def get_lr(it):
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    progress = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (learning_rate - min_lr)


X, Y = get_batch("train")
iter_num = 0
running_mfu = -1.0
t_last = time.time()
while True:
    lr = get_lr(iter_num)
    for group in optimizer.param_groups:
        group["lr"] = lr

    if iter_num % eval_interval == 0 and is_master:
        losses = estimate_loss()
        print(f"step {iter_num}: train {losses['train']:.4f} val {losses['val']:.4f}")

    for micro_step in range(gradient_accumulation_steps):
        if ddp:
            model.require_backward_grad_sync = (micro_step == gradient_accumulation_steps - 1)
        with autocast_ctx:
            logits, loss = model(X, Y)
            loss = loss / gradient_accumulation_steps
        # prefetch the next batch while the GPU is busy with the backward pass
        X, Y = get_batch("train")
        scaler.scale(loss).backward()

    if grad_clip != 0.0:
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)

    t_now = time.time()
    dt, t_last = t_now - t_last, t_now
    if iter_num % log_interval == 0 and is_master:
        lossf = loss.item() * gradient_accumulation_steps
        mfu = raw_model.estimate_mfu(batch_size * gradient_accumulation_steps, dt)
        running_mfu = mfu if running_mfu < 0 else 0.9 * running_mfu + 0.1 * mfu
        print(f"iter {iter_num}: loss {lossf:.4f}, lr {lr:.2e}, mfu {running_mfu * 100:.1f}%")

    iter_num += 1
    if iter_num > max_iters:
        break

if ddp:
    destroy_process_group()
