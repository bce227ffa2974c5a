"""A DeepSpeed engine loop: the engine divides the loss and decides when to step."""
import argparse

import deepspeed
import torch
import torch.nn as nn

from toy_data import RegressionSet

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=-1)
parser.add_argument("--epochs", type=int, default=5)
args = parser.parse_args()

ds_config = {
    "train_micro_batch_size_per_gpu": 16,
    "gradient_accumulation_steps": 4,
    "gradient_clipping": 1.0,
    "fp16": {"enabled": True},
    "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}},
    "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 100}},
}

net = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 1))
model_engine, optimizer, train_loader, lr_scheduler = deepspeed.initialize(
    args=args, model=net, model_parameters=net.parameters(), training_data=RegressionSet(), config=ds_config
)
criterion = nn.MSELoss()

for epoch in range(args.epochs):
    running = 0.0
    for step, (x, y) in enumerate(train_loader):
        x = x.to(model_engine.device).half()
        y = y.to(model_engine.device).half()
        loss = criterion(model_engine(x), y)
        model_engine.backward(loss)
        model_engine.step()
        running += loss.item()
        if model_engine.is_gradient_accumulation_boundary() and model_engine.global_rank == 0:
            print(f"epoch {epoch} step {step}: loss {running / (step + 1):.4f}")
