"""Installing the checker: public hooks where torch has them, thin wrappers elsewhere. Each
wrapper calls the original first or last and never changes arguments or results, so the run's
numbers stay the same; `uninstall` restores every original."""

from __future__ import annotations

import functools
import weakref
from typing import Any, Callable

import torch
from torch.optim.optimizer import (
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)

from accumlint.runtime import torch_private as tp
from accumlint.runtime.monitor import Monitor

_CLIP_NAMES = ("clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "clip_grads_with_norm_")


class Installation:
    def __init__(self, monitor: Monitor) -> None:
        self.monitor = monitor
        self._saved: list[tuple[Any, str, Any]] = []
        self._handles: list[Any] = []
        self._depth = {"backward": 0, "scheduler": 0, "clip": 0}

    def _replace(self, owner: Any, name: str, make: Callable[[Any], Any]) -> None:
        original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        wrapper = make(original)
        functools.update_wrapper(wrapper, original)
        self._saved.append((owner, name, original))
        setattr(owner, name, wrapper)

    def install(self) -> "Installation":
        mon = self.monitor
        self._handles.append(register_optimizer_step_pre_hook(
            lambda opt, args, kwargs: mon.step_started(opt)))
        self._handles.append(register_optimizer_step_post_hook(
            lambda opt, args, kwargs: mon.step_finished(opt)))
        self._wrap_optimizer()
        self._wrap_backward()
        self._wrap_zero_grad()
        self._wrap_scaler()
        self._wrap_clips()
        self._wrap_schedulers()
        self._wrap_dataloader()
        self._wrap_ddp()
        return self

    def uninstall(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        for owner, name, original in reversed(self._saved):
            setattr(owner, name, original)
        self._saved.clear()
        self.monitor.remove_hooks()

    # ----- wrappers ---------------------------------------------------------------------
    def _wrap_optimizer(self) -> None:
        mon = self.monitor

        def make(original):
            def add_param_group(opt, param_group):
                result = original(opt, param_group)
                mon.register_params(opt, list(opt.param_groups[-1]["params"]))
                return result
            return add_param_group
        self._replace(torch.optim.Optimizer, "add_param_group", make)

    def _wrap_backward(self) -> None:
        mon, depth = self.monitor, self._depth

        def make(original):
            def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
                         grad_variables=None, inputs=None):
                if depth["backward"]:
                    return original(tensors, grad_tensors, retain_graph, create_graph,
                                    grad_variables, inputs)
                roots = tuple(tensors) if isinstance(tensors, (list, tuple)) else (tensors,)
                retain = bool(create_graph if retain_graph is None else retain_graph)
                info = mon.before_backward(roots, retain)
                depth["backward"] += 1
                try:
                    result = original(tensors, grad_tensors, retain_graph, create_graph,
                                      grad_variables, inputs)
                except RuntimeError as error:
                    hint = mon.backward_failed(info, error)
                    if hint:
                        raise RuntimeError(str(error) + hint) from error
                    raise
                finally:
                    depth["backward"] -= 1
                    mon.release(info)
                mon.after_backward(info)
                return result
            return backward
        self._replace(torch.autograd, "backward", make)

    def _wrap_zero_grad(self) -> None:
        mon = self.monitor

        def make_opt(original):
            def zero_grad(opt, *args, **kwargs):
                rec = mon.rec_for(opt)
                if rec is not None:
                    mon.zeroed([rec])
                return original(opt, *args, **kwargs)
            return zero_grad

        def make_module(original):
            def zero_grad(module, *args, **kwargs):
                if mon.opts:
                    mon.zeroed(mon.recs_for_params(module.parameters()))
                return original(module, *args, **kwargs)
            return zero_grad
        self._replace(torch.optim.Optimizer, "zero_grad", make_opt)
        self._replace(torch.nn.Module, "zero_grad", make_module)

    def _wrap_scaler(self) -> None:
        mon = self.monitor
        cls = torch.amp.GradScaler

        def make_scale(original):
            def scale(scaler, outputs):
                result = original(scaler, outputs)
                mon.amp.scaled(scaler, result)
                return result
            return scale

        def make_unscale(original):
            def unscale_(scaler, optimizer):
                try:
                    result = original(scaler, optimizer)
                except RuntimeError as error:
                    hint = mon.amp.unscale_failed(error)
                    if hint:
                        raise RuntimeError(str(error) + hint) from error
                    raise
                mon.amp.unscaled(scaler, optimizer)
                return result
            return unscale_

        def make_step(original):
            def step(scaler, optimizer, *args, **kwargs):
                rec = mon.rec_for(optimizer)
                if rec is not None:
                    rec.hooked_step = False
                result = original(scaler, optimizer, *args, **kwargs)
                if rec is not None and not rec.hooked_step:
                    mon.step_skipped(rec)
                return result
            return step

        def make_update(original):
            def update(scaler, *args, **kwargs):
                try:
                    result = original(scaler, *args, **kwargs)
                except (RuntimeError, AssertionError) as error:  # 2.13 raises AssertionError here
                    hint = mon.amp.update_failed(error)
                    if hint:
                        raise type(error)(str(error) + hint) from error
                    raise
                mon.amp.updated(scaler)
                return result
            return update
        self._replace(cls, "scale", make_scale)
        self._replace(cls, "unscale_", make_unscale)
        self._replace(cls, "step", make_step)
        self._replace(cls, "update", make_update)

    def _wrap_clips(self) -> None:
        mon, depth = self.monitor, self._depth
        from torch.nn.utils import clip_grad

        def make(original, name):
            def clip(parameters, *args, **kwargs):
                if depth["clip"] or not mon.opts:
                    return original(parameters, *args, **kwargs)
                if not isinstance(parameters, torch.Tensor):
                    parameters = list(parameters)  # a generator can be read only once
                    params = parameters
                else:
                    params = [parameters]
                limit = args[0] if args else kwargs.get("max_norm", kwargs.get("clip_value"))
                mon.amp.clipping(params, f"{name}()", limit)
                depth["clip"] += 1
                try:
                    return original(parameters, *args, **kwargs)
                finally:
                    depth["clip"] -= 1
            return clip

        for module in (torch.nn.utils, clip_grad):
            for name in _CLIP_NAMES:
                if hasattr(module, name):
                    self._replace(module, name, functools.partial(make, name=name))

    def _wrap_schedulers(self) -> None:
        mon, depth = self.monitor, self._depth
        ready: "weakref.WeakSet[Any]" = weakref.WeakSet()  # not an attribute: state_dict() would save it

        def make(original):
            def step(sched, *args, **kwargs):
                if depth["scheduler"] or sched not in ready:
                    return original(sched, *args, **kwargs)  # nested, or the constructor's step
                depth["scheduler"] += 1
                try:
                    return original(sched, *args, **kwargs)
                finally:
                    depth["scheduler"] -= 1
                    mon.schedule.scheduler_stepped(sched)
            return step

        def make_init(original):
            def __init__(sched, *args, **kwargs):
                original(sched, *args, **kwargs)
                ready.add(sched)
            return __init__

        for cls in tp.scheduler_classes():
            self._replace(cls, "step", make)
        from torch.optim import lr_scheduler
        for cls in vars(lr_scheduler).values():
            if (isinstance(cls, type) and issubclass(cls, lr_scheduler.LRScheduler)
                    and "__init__" in cls.__dict__):
                self._replace(cls, "__init__", make_init)

    def _wrap_dataloader(self) -> None:
        mon = self.monitor
        cls = tp.dataloader_iter_class()
        if cls is None:
            return

        def make(original):
            def __next__(it):
                try:
                    batch = original(it)
                except StopIteration:
                    mon.epoch_ended(it)
                    raise
                mon.batch_fetched(it)
                return batch
            return __next__
        self._replace(cls, "__next__", make)

    def _wrap_ddp(self) -> None:
        """Count DDP's all-reduces with a communication hook. Ours is registered at the model's
        first forward unless the script registered its own, which is then wrapped instead (a
        model takes one hook only)."""
        if not torch.distributed.is_available():
            return
        from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
        from torch.nn.parallel import DistributedDataParallel as DDP

        sync = self.monitor.sync
        hooked: "weakref.WeakSet[Any]" = weakref.WeakSet()

        def counting(hook: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
            # No annotations: DDP rejects a hook whose `bucket` is annotated as anything but
            # GradBucket, and string annotations count as such.
            def counted_hook(state, bucket):  # type: ignore[no-untyped-def]
                sync.all_reduced()
                return hook(state, bucket)
            return counted_hook

        def make_register(original):
            def register_comm_hook(model, state, hook):
                hooked.add(model)
                sync.ddp_models += 1
                return original(model, state, counting(hook))
            return register_comm_hook

        def make_builtin(original):
            def register_builtin_comm_hook(model, comm_hook_type):
                hooked.add(model)  # a C++ hook: not counted
                return original(model, comm_hook_type)
            return register_builtin_comm_hook

        def make_forward(original):
            def forward(model, *args, **kwargs):
                if model not in hooked:
                    hooked.add(model)
                    if getattr(model, "process_group", None) is not None:
                        DDP.register_comm_hook(model, None, allreduce_hook)
                return original(model, *args, **kwargs)
            return forward
        self._replace(DDP, "register_comm_hook", make_register)
        self._replace(DDP, "_register_builtin_comm_hook", make_builtin)
        self._replace(DDP, "forward", make_forward)
