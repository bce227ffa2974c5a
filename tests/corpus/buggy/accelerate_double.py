# accumlint corpus: a buggy real-style training script. Expected findings (code@row):
# expect: ACC010@34
# expect: ACC002@33
"""A loop migrated to Accelerate's accumulate() that kept its hand division and logs a tensor total."""
import argparse

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader
from transformers import AutoModelForSequenceClassification, get_scheduler

from glue_data import load_tokenized

parser = argparse.ArgumentParser()
parser.add_argument("--gradient_accumulation_steps", type=int, default=4)
args = parser.parse_args()

accelerator = Accelerator(gradient_accumulation_steps=args.gradient_accumulation_steps)
train_set, _, collate = load_tokenized("mrpc")
train_dataloader = DataLoader(train_set, batch_size=8, shuffle=True, collate_fn=collate)
model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
lr_scheduler = get_scheduler("linear", optimizer=optimizer, num_warmup_steps=0, num_training_steps=1000)
model, optimizer, train_dataloader, lr_scheduler = accelerator.prepare(model, optimizer, train_dataloader, lr_scheduler)

for epoch in range(3):
    model.train()
    total_loss = 0
    for batch in train_dataloader:
        with accelerator.accumulate(model):
            outputs = model(**batch)
            loss = outputs.loss / args.gradient_accumulation_steps
            total_loss += loss
            accelerator.backward(loss)
            optimizer.step()
            lr_scheduler.step()
            optimizer.zero_grad()
    accelerator.print(f"epoch {epoch}: {total_loss.item() / len(train_dataloader):.4f}")
