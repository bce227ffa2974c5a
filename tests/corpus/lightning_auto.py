"""A LightningModule with automatic optimisation; the Trainer accumulates 8 batches."""
import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader

from imagenette import make_datasets


class LitClassifier(pl.LightningModule):
    def __init__(self, num_classes=10, lr=3e-4):
        super().__init__()
        self.save_hyperparameters()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten()
        )
        self.head = nn.Linear(32, num_classes)

    def forward(self, x):
        return self.head(self.backbone(x))

    def training_step(self, batch, batch_idx):
        images, labels = batch
        logits = self(images)
        loss = F.cross_entropy(logits, labels)
        self.log("train/loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        images, labels = batch
        logits = self(images)
        self.log("val/loss", F.cross_entropy(logits, labels))
        self.log("val/acc", (logits.argmax(dim=1) == labels).float().mean())

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)
        scheduler = torch.optim.lr_scheduler.OneCycleLR(
            optimizer, max_lr=self.hparams.lr, total_steps=self.trainer.estimated_stepping_batches
        )
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


if __name__ == "__main__":
    train_set, val_set = make_datasets()
    trainer = pl.Trainer(
        max_epochs=15,
        accumulate_grad_batches=8,
        gradient_clip_val=1.0,
        precision="16-mixed",
    )
    trainer.fit(
        LitClassifier(),
        DataLoader(train_set, batch_size=32, shuffle=True, num_workers=4),
        DataLoader(val_set, batch_size=64, num_workers=4),
    )
