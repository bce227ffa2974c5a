"""ACC003: truncated backpropagation through time on an LSTM language model. The (h, c) state
is carried from one chunk into the next without detach; `retain_graph=True` silences the
"backward through the graph a second time" error, so every backward reaches further back."""
import torch
import torch.nn as nn

device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)
vocab, emb_size, hidden_size, bptt, batch_size = 20, 16, 32, 8, 4
stream = torch.randint(vocab, (batch_size, 8 * bptt + 1), device=device)


class LanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb_size)
        self.lstm = nn.LSTM(emb_size, hidden_size, batch_first=True)
        self.head = nn.Linear(hidden_size, vocab)

    def forward(self, tokens, hidden):
        output, hidden = self.lstm(self.embed(tokens), hidden)
        return self.head(output), hidden


model = LanguageModel().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
criterion = nn.CrossEntropyLoss()

for epoch in range(2):
    hidden = (torch.zeros(1, batch_size, hidden_size, device=device),
              torch.zeros(1, batch_size, hidden_size, device=device))
    for start in range(0, stream.size(1) - 1, bptt):
        tokens = stream[:, start:start + bptt]
        targets = stream[:, start + 1:start + 1 + bptt]
        logits, hidden = model(tokens, hidden)
        loss = criterion(logits.reshape(-1, vocab), targets.reshape(-1))
        optimizer.zero_grad()
        loss.backward(retain_graph=True)
        optimizer.step()
    print(f"epoch {epoch + 1}, loss: {loss.item():.6f}")
