"""Every runtime finding's code and wording, in one table shared by all watchers.

A watcher names a kind (the key) and the values its template needs; the code comes from here,
so one kind can never be reported under two codes, and wording is reviewed in one place.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Message:
    code: str
    template: str  # str.format template over the values the watcher passes


MESSAGES: dict[str, Message] = {
    # window accounting: loss weights, zeroing, partial windows
    "undivided": Message(
        "ACC001", "each micro-batch loss entered backward with weight about 1, so the {k} "
        "accumulated gradients sum to about {k}x the mean: divide the loss by the number of "
        "accumulation steps"),
    "underdivided": Message(
        "ACC001", "each micro-batch loss was divided by {divisor} but the window has {k} "
        "backward passes: the step applies {ratio:.3g}x the mean gradient"),
    "overdivided": Message(
        "ACC010", "each micro-batch loss was divided by {divisor} for a window of {k}: the step "
        "applies {ratio:.3g}x the mean gradient (divided twice?)"),
    "zero-in-window": Message(
        "ACC007", "gradients are zeroed while backward passes of the accumulation window are "
        "pending: only the last micro-batch reaches the step"),
    "dropped": Message(
        "ACC005", "gradients of the epoch's last, partial window are zeroed without a step: "
        "those micro-batches never reach the optimizer"),
    "stale": Message(
        "ACC005", "an epoch's partial last window leaked into the next epoch's first step: its "
        "gradients were applied together with the next window's"),
    "run-end": Message(
        "ACC005", "the script ended with gradients of backward passes that no optimizer step "
        "applied (the last, partial window)"),
    # graph tracking
    "kept-graph": Message(
        "ACC002", "`{variable}` keeps the autograd graph of past micro-batches alive across "
        "optimizer steps; detach what it stores (`loss.detach()`)"),
    "second-backward": Message(
        "ACC003", "backward reached a graph an earlier backward already freed, through {shown}: "
        "a value from one iteration is read in the next without detach"),
    "stale-weights": Message(
        "ACC003", "backward reached a graph from before the last optimizer step (kept by "
        "retain_graph=True), whose saved weights the step has since changed, through {shown}: a "
        "value from one iteration is read in the next without detach"),
    "chained-graphs": Message(
        "ACC003", "`{variable}` carries the autograd graph from one backward into the next "
        "(retain_graph=True hides the error): the last backward chained {depth} graphs, and each "
        "backward goes through all earlier ones again; detach `{variable}` after backward, or "
        "sum the losses and call backward once"),
    "unused-retain": Message(
        "ACC006", "backward(retain_graph=True) kept a graph that no later backward used: its "
        "saved tensors stay in memory; drop retain_graph or sum the losses and call backward "
        "once"),
    # GradScaler and clipping
    "after-unscale": Message(
        "ACC004", "backward after scaler.unscale_() and before the step: scaled and unscaled "
        "gradients are mixed"),
    "unscale-twice": Message(
        "ACC004", "scaler.unscale_() runs on every micro-step: unscale once per window, in the "
        "step block right before clipping"),
    "clip-scaled": Message(
        "ACC004", "{how} runs on gradients still multiplied by the GradScaler's scale: call "
        "scaler.unscale_(optimizer) right before it"),
    "clip-partial": Message(
        "ACC015", "{how} ran inside the window, between backward passes of one optimizer step: it "
        "rescaled a partial sum of the window's gradients; clip once, in the step block right "
        "before the step"),
    "update-before-step": Message(
        "ACC008", "scaler.update() runs before any scaler.step() of the window: call it once per "
        "window, right after scaler.step()"),
    "scaler-update": Message(
        "ACC008", "scaler.update() runs more than once per optimizer step; call it once per "
        "window, right after scaler.step()"),
    # schedule
    "scheduler": Message(
        "ACC008", "the LR scheduler steps more than once per optimizer step: the schedule runs "
        "k times too fast; step it in the step block"),
    # gradient sync under DDP
    "sync-every-micro-step": Message(
        "ACC009", "DistributedDataParallel all-reduced the gradients on {synced} of the {k} "
        "backward passes of each window, where one is needed: wrap the non-final micro-steps in "
        "`with model.no_sync():`"),
    # equivalence mode (--verify)
    "verify-undivided": Message(
        "ACC001", "the accumulated gradient is {ratio:.3g}x the gradient of the whole window "
        "(relative error {error:.3g}): each micro-batch loss was not divided by the {k} "
        "micro-batches"),
    "verify-overdivided": Message(
        "ACC010", "the accumulated gradient is {ratio:.3g}x the gradient of the whole window "
        "(relative error {error:.3g}): the loss was divided by the window size twice"),
    "verify-normalisation": Message(
        "ACC013", "the accumulated gradient differs from the gradient of the whole window by "
        "{error:.3g} (relative): each micro-batch loss is a mean over its own count of {unit} "
        "(tokens or samples: {counts}), so micro-batches with fewer {unit} weigh more; sum the "
        "losses over the window and divide by the window's count"),
}


def render(kind: str, **values: object) -> tuple[str, str]:
    """(code, message) for a finding kind."""
    message = MESSAGES[kind]
    return message.code, message.template.format(**values)
