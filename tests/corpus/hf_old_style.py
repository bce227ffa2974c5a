"""An older Hugging Face example style: a default Accelerator, accumulation written by hand."""
import argparse

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM, get_linear_schedule_with_warmup

from lm_data import build_datasets

parser = argparse.ArgumentParser()
parser.add_argument("--gradient_accumulation_steps", type=int, default=4)
parser.add_argument("--num_train_epochs", type=int, default=3)
parser.add_argument("--max_train_steps", type=int, default=None)
args = parser.parse_args()

accelerator = Accelerator()
train_dataset, _ = build_datasets()
train_dataloader = DataLoader(train_dataset, shuffle=True, batch_size=4)
model = AutoModelForCausalLM.from_pretrained("gpt2")
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-5)
model, optimizer, train_dataloader = accelerator.prepare(model, optimizer, train_dataloader)

num_update_steps_per_epoch = (len(train_dataloader) + args.gradient_accumulation_steps - 1) // args.gradient_accumulation_steps
if args.max_train_steps is None:
    args.max_train_steps = args.num_train_epochs * num_update_steps_per_epoch
lr_scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=100, num_training_steps=args.max_train_steps)

completed_steps = 0
for epoch in range(args.num_train_epochs):
    model.train()
    for step, batch in enumerate(train_dataloader):
        outputs = model(**batch)
        loss = outputs.loss
        loss = loss / args.gradient_accumulation_steps
        accelerator.backward(loss)
        if step % args.gradient_accumulation_steps == 0 or step == len(train_dataloader) - 1:
            optimizer.step()
            lr_scheduler.step()
            optimizer.zero_grad()
            completed_steps += 1
        if completed_steps >= args.max_train_steps:
            break
    accelerator.print(f"epoch {epoch} done after {completed_steps} updates")
