"""Seeds 000/002, second answer's form: the RNN decoder keeps the whole sequence's history and
calls backward once per batch (full BPTT, intended), with AMP and gradient accumulation.

The token losses are summed over the sequence, but the batch loss is never divided by the
number of accumulation steps, so every step applies k times the gradient it should."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
vocab, hidden_size, target_len = 12, 32, 6
sources = torch.randint(vocab, (48, target_len))
targets = (sources + 1) % vocab
loader = DataLoader(TensorDataset(sources, targets), batch_size=4)


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size)
        self.out = nn.Linear(hidden_size, vocab)

    def forward(self, decoder_input, decoder_hidden):
        output, decoder_hidden = self.gru(self.embed(decoder_input).unsqueeze(0), decoder_hidden)
        return self.out(output[0]), decoder_hidden


model = Decoder().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
criterion = nn.CrossEntropyLoss()
scaler = torch.amp.GradScaler(device)
gradient_accumulation_steps = 2

for epoch in range(2):
    train_loss = 0.0
    for batch_idx, (source, target) in enumerate(loader):
        source, target = source.to(device), target.to(device)
        decoder_input = source[:, 0]
        decoder_hidden = torch.zeros(1, source.size(0), hidden_size, device=device)
        loss = 0
        for i in range(target_len):
            with torch.autocast(device, dtype=torch.float16):
                output, decoder_hidden = model(decoder_input, decoder_hidden)
                item_loss = criterion(output, target[:, i])
            _, topi = output.topk(1)
            decoder_input = topi.squeeze(1)
            loss += item_loss
        scaler.scale(loss).backward()
        train_loss += loss.item()

        if (batch_idx + 1) % gradient_accumulation_steps == 0:
            scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(model.parameters(), 2.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
    print(f"epoch {epoch + 1}, loss: {train_loss:.6f}")
