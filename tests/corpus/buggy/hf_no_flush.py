# accumlint corpus: a buggy real-style training script. Expected findings (code@row):
# expect: ACC002@35
# expect: ACC005@36
"""Hand-written accumulation for a classifier: the last partial window is dropped and the
logged total keeps every graph."""
import argparse

import torch
from torch.utils.data import DataLoader
from transformers import AutoModelForSequenceClassification, get_linear_schedule_with_warmup

from glue_data import load_tokenized

parser = argparse.ArgumentParser()
parser.add_argument("--gradient_accumulation_steps", type=int, default=4)
parser.add_argument("--epochs", type=int, default=3)
args = parser.parse_args()

device = torch.device("cuda")
train_set, _, collate = load_tokenized("sst2")
train_dataloader = DataLoader(train_set, batch_size=16, shuffle=True, collate_fn=collate)
model = AutoModelForSequenceClassification.from_pretrained("roberta-base", num_labels=2).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
total_updates = args.epochs * len(train_dataloader) // args.gradient_accumulation_steps
scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=50, num_training_steps=total_updates)

for epoch in range(args.epochs):
    model.train()
    tr_loss = 0.0
    for step, batch in enumerate(train_dataloader):
        batch = {k: v.to(device) for k, v in batch.items()}
        outputs = model(**batch)
        loss = outputs.loss / args.gradient_accumulation_steps
        loss.backward()
        tr_loss += loss
        if (step + 1) % args.gradient_accumulation_steps == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
    print(f"epoch {epoch}: loss {tr_loss / len(train_dataloader)}")
