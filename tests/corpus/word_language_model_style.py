"""Word-level LSTM language model in the style of pytorch/examples word_language_model.

Truncated BPTT over a long token stream: the hidden state is carried across batches and
re-wrapped (detached) at the start of each one. Plain SGD by hand, no accumulation.
"""
import argparse
import math
import time

import torch
import torch.nn as nn

import corpus_data
import rnn_models

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=20.0)
parser.add_argument("--clip", type=float, default=0.25)
parser.add_argument("--epochs", type=int, default=40)
parser.add_argument("--batch_size", type=int, default=20)
parser.add_argument("--bptt", type=int, default=35)
parser.add_argument("--log-interval", type=int, default=200)
args = parser.parse_args()

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
corpus = corpus_data.Corpus("./data/wikitext-2")


def batchify(tokens, n_columns):
    n_rows = tokens.size(0) // n_columns
    tokens = tokens.narrow(0, 0, n_rows * n_columns)
    return tokens.view(n_columns, -1).t().contiguous().to(device)


train_data = batchify(corpus.train, args.batch_size)
val_data = batchify(corpus.valid, 10)
ntokens = len(corpus.dictionary)
model = rnn_models.LSTMLanguageModel(ntokens, 200, 200, 2, dropout=0.2).to(device)
criterion = nn.NLLLoss()


def repackage_hidden(h):
    """Cut the hidden state off from the graph of the previous batch."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i):
    seq_len = min(args.bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


def evaluate(source):
    model.eval()
    total = 0.0
    hidden = model.init_hidden(10)
    with torch.no_grad():
        for i in range(0, source.size(0) - 1, args.bptt):
            data, targets = get_batch(source, i)
            output, hidden = model(data, hidden)
            hidden = repackage_hidden(hidden)
            total += len(data) * criterion(output, targets).item()
    return total / (len(source) - 1)


def train(lr):
    model.train()
    total_loss = 0.0
    start = time.time()
    hidden = model.init_hidden(args.batch_size)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
        data, targets = get_batch(train_data, i)
        hidden = repackage_hidden(hidden)
        model.zero_grad()
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        total_loss += loss.data
        if batch % args.log_interval == 0 and batch > 0:
            cur_loss = total_loss.item() / args.log_interval
            elapsed = time.time() - start
            print(f"batch {batch} | lr {lr:.2f} | ms/batch {elapsed * 1000 / args.log_interval:.1f} "
                  f"| loss {cur_loss:.2f} | ppl {math.exp(cur_loss):.1f}")
            total_loss = 0.0
            start = time.time()


lr = args.lr
best_val = None
for epoch in range(1, args.epochs + 1):
    train(lr)
    val_loss = evaluate(val_data)
    print(f"end of epoch {epoch} | valid loss {val_loss:.2f}")
    if best_val is None or val_loss < best_val:
        torch.save(model.state_dict(), "model.pt")
        best_val = val_loss
    else:
        lr /= 4.0
