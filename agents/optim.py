"""torch's fused Adam without its per-step Python bookkeeping.

``torch.optim.Adam(fused=True)`` spends most of a small learner's optimiser time outside its kernel:
grouping tensors by device and dtype, re-reading every parameter's state, hooks and checks, on each call.
At SAC's sizes (256x256 networks, ~220k parameters in three groups) that was 0.6-0.9 ms of a 10 ms update
on this CPU, and ``zero_grad`` another 0.2 ms. ``LeanAdam`` keeps Adam's state, ``state_dict`` and
defaults and runs the same fused kernel on lists it gathers once; the result is bit-identical to
``torch.optim.Adam(fused=True)`` (``tests/agents/test_optim.py``).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor


class LeanAdam(torch.optim.Adam):
    """``torch.optim.Adam(fused=True)`` whose ``step`` calls the fused kernel directly.

    The plan (per group: parameters and their moment and step tensors) is built after the first step
    and rebuilt after ``load_state_dict``. A step falls back to ``torch.optim.Adam.step`` when the plan
    cannot serve it: a parameter without a gradient (the actor during a critic-only warm-up), a closure,
    or options the plan does not cover (amsgrad, weight decay, maximize).
    """

    def __init__(self, params: Any, **kwargs: Any) -> None:
        super().__init__(params, fused=True, **kwargs)
        self._plan: list[tuple[list[Tensor], list[Tensor], list[Tensor], list[Tensor], dict]] | None = None
        self._steps: list[Tensor] = []  # every parameter's step counter, in plan order

    def _make_plan(self) -> None:
        plan = []
        for group in self.param_groups:
            options = group["amsgrad"] or group["weight_decay"] or group["maximize"]
            if options or any(not self.state.get(p) for p in group["params"]):
                self._plan = None  # Adam.step serves these (and the first step, which makes the state)
                return
            states = [self.state[p] for p in group["params"]]
            plan.append(
                (
                    list(group["params"]),
                    [s["exp_avg"] for s in states],
                    [s["exp_avg_sq"] for s in states],
                    [s["step"] for s in states],
                    group,
                )
            )
        self._plan = plan
        self._steps = [step for *_, steps, _ in plan for step in steps]

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:  # type: ignore[override]
        plan = self._plan
        if plan is None or closure is not None:
            loss = super().step(closure)
            self._make_plan()
            return loss
        grads: list[list[Tensor]] = []
        for params, *_ in plan:
            present = [p.grad for p in params if p.grad is not None]
            if len(present) < len(params):
                return super().step()
            grads.append(present)
        torch._foreach_add_(self._steps, 1)
        # One kernel call for consecutive groups that share lr, betas and eps (SAC's defaults: all three).
        calls: list[tuple[list[Tensor], list[Tensor], list[Tensor], list[Tensor], list[Tensor], tuple]] = []
        for (params, exp_avgs, exp_avg_sqs, steps, group), group_grads in zip(plan, grads, strict=True):
            options = (group["lr"], *group["betas"], group["eps"])
            if calls and calls[-1][5] == options:
                for merged, part in zip(calls[-1][:5], (params, group_grads, exp_avgs, exp_avg_sqs, steps)):
                    merged.extend(part)
            else:
                calls.append(
                    (list(params), list(group_grads), list(exp_avgs), list(exp_avg_sqs), list(steps), options)
                )
        for params, group_grads, exp_avgs, exp_avg_sqs, steps, (lr, beta1, beta2, eps) in calls:
            torch._fused_adam_(
                params,
                group_grads,
                exp_avgs,
                exp_avg_sqs,
                [],
                steps,
                amsgrad=False,
                lr=lr,
                beta1=beta1,
                beta2=beta2,
                weight_decay=0.0,
                eps=eps,
                maximize=False,
            )
        return None

    def zero_grad(self, set_to_none: bool = True) -> None:
        if not set_to_none:
            super().zero_grad(set_to_none=False)
            return
        for group in self.param_groups:
            for p in group["params"]:
                p.grad = None

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        self._make_plan()


def make_adam(groups: list[dict[str, Any]], device: torch.device) -> torch.optim.Adam:
    """The learners' optimiser: ``LeanAdam`` where torch has a fused Adam kernel (CPU, CUDA), else Adam."""
    return LeanAdam(groups) if device.type in ("cpu", "cuda") else torch.optim.Adam(groups)
