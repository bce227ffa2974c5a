"""Fine-tuning with Accelerate's accumulate() context, in the style of the *_no_trainer examples."""
import argparse
import math

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from transformers import AutoModelForSequenceClassification, get_scheduler

from glue_data import load_tokenized

parser = argparse.ArgumentParser()
parser.add_argument("--gradient_accumulation_steps", type=int, default=8)
parser.add_argument("--num_train_epochs", type=int, default=3)
parser.add_argument("--learning_rate", type=float, default=5e-5)
parser.add_argument("--per_device_train_batch_size", type=int, default=8)
args = parser.parse_args()

accelerator = Accelerator(gradient_accumulation_steps=args.gradient_accumulation_steps)
train_set, eval_set, collate = load_tokenized("mrpc")
train_dataloader = DataLoader(train_set, shuffle=True, batch_size=args.per_device_train_batch_size, collate_fn=collate)
eval_dataloader = DataLoader(eval_set, batch_size=32, collate_fn=collate)
model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate)

updates_per_epoch = math.ceil(len(train_dataloader) / args.gradient_accumulation_steps)
max_train_steps = args.num_train_epochs * updates_per_epoch
lr_scheduler = get_scheduler(
    "linear",
    optimizer=optimizer,
    num_warmup_steps=0,
    num_training_steps=max_train_steps * accelerator.num_processes,
)
model, optimizer, train_dataloader, eval_dataloader, lr_scheduler = accelerator.prepare(
    model, optimizer, train_dataloader, eval_dataloader, lr_scheduler
)

progress = tqdm(range(max_train_steps), disable=not accelerator.is_local_main_process)
completed_steps = 0
for epoch in range(args.num_train_epochs):
    model.train()
    total_loss = 0
    for step, batch in enumerate(train_dataloader):
        with accelerator.accumulate(model):
            outputs = model(**batch)
            loss = outputs.loss
            total_loss += loss.detach().float()
            accelerator.backward(loss)
            if accelerator.sync_gradients:
                accelerator.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            lr_scheduler.step()
            optimizer.zero_grad()
        if accelerator.sync_gradients:
            progress.update(1)
            completed_steps += 1
        if completed_steps >= max_train_steps:
            break

    model.eval()
    correct = 0
    seen = 0
    for batch in eval_dataloader:
        with torch.no_grad():
            outputs = model(**batch)
        predictions = outputs.logits.argmax(dim=-1)
        predictions, references = accelerator.gather_for_metrics((predictions, batch["labels"]))
        correct += (predictions == references).sum().item()
        seen += references.numel()
    accelerator.print(f"epoch {epoch}: accuracy {correct / seen:.4f}, train loss {total_loss.item() / len(train_dataloader):.4f}")
