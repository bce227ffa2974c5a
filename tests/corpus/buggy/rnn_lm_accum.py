# accumlint corpus: a buggy real-style training script. Expected findings (code@row):
# expect: ACC003@32
# expect: ACC008@40
"""An LSTM language model that accumulates over BPTT chunks but never detaches its state,
and steps its warm-up schedule on every chunk."""
import torch
import torch.nn as nn

import corpus_data
import rnn_models

bptt = 35
accum_chunks = 4
device = torch.device("cuda")
corpus = corpus_data.Corpus("./data/wikitext-2")
train_data = corpus.train.view(20, -1).t().contiguous().to(device)
ntokens = len(corpus.dictionary)
model = rnn_models.LSTMLanguageModel(ntokens, 400, 400, 2, dropout=0.3).to(device)
criterion = nn.NLLLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
chunk_starts = list(range(0, train_data.size(0) - 1, bptt))
scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.05, total_iters=len(chunk_starts) // accum_chunks)

for epoch in range(10):
    model.train()
    hidden = model.init_hidden(20)
    total = 0.0
    for batch, i in enumerate(chunk_starts):
        seq_len = min(bptt, len(train_data) - 1 - i)
        data = train_data[i:i + seq_len]
        targets = train_data[i + 1:i + 1 + seq_len].reshape(-1)
        output, hidden = model(data, hidden)
        loss = criterion(output, targets) / accum_chunks
        loss.backward()
        total += loss.item()
        if (batch + 1) % accum_chunks == 0 or batch + 1 == len(chunk_starts):
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            optimizer.step()
            optimizer.zero_grad()
        scheduler.step()
    print(f"epoch {epoch}: {total / len(chunk_starts):.3f}")
