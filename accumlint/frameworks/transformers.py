"""Hugging Face transformers: a project class built on the library's `Trainer` that copies and
edits its `train()` loop calls `self.training_step(model, inputs)`, which runs the forward and the
backward of one micro-batch (and divides by the accumulation steps itself)."""

TRAINER_CLASSES = frozenset({"transformers.Trainer", "transformers.trainer.Trainer", "transformers.Seq2SeqTrainer"})
TRAINING_STEP = "training_step"
