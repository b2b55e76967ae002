"""LeanAdam is torch's fused Adam, step for step, with a cheaper step."""

from __future__ import annotations

import copy

import pytest
import torch

from agents.optim import LeanAdam, make_adam


def _model(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))


def _groups(model: torch.nn.Module, extra: torch.Tensor, lrs=(1e-2, 3e-3, 1e-1)) -> list[dict]:
    return [
        {"params": list(model[0].parameters()), "lr": lrs[0]},
        {"params": list(model[2].parameters()), "lr": lrs[1]},
        {"params": [extra], "lr": lrs[2]},
    ]


def _train(
    optimizer_cls, steps: int, skip_first_group_at: int = -1, lrs=(1e-2, 3e-3, 1e-1)
) -> list[torch.Tensor]:
    model = _model(0)
    extra = torch.zeros((), requires_grad=True)
    if optimizer_cls is LeanAdam:
        optimizer = LeanAdam(_groups(model, extra, lrs))
    else:
        optimizer = torch.optim.Adam(_groups(model, extra, lrs), fused=True)
    gen = torch.Generator().manual_seed(1)
    for i in range(steps):
        if i == steps // 2:  # a scheduler's change to one group (LeanAdam merges groups that share options)
            optimizer.param_groups[1]["lr"] *= 0.5
        x = torch.randn(8, 5, generator=gen)
        optimizer.zero_grad(set_to_none=True)
        if i == skip_first_group_at:  # the first group gets no gradient (a critic-only warm-up step)
            loss = model[2](torch.relu(model[0](x)).detach()).pow(2).mean() + extra.pow(2)
        else:
            loss = model(x).pow(2).mean() + (extra - 1.0).pow(2)
        loss.backward()
        optimizer.step()
    return [p.detach().clone() for p in [*model.parameters(), extra]]


@pytest.mark.parametrize("skip_at", [-1, 3])
@pytest.mark.parametrize("lrs", [(1e-2, 3e-3, 1e-1), (3e-3, 3e-3, 1e-1), (3e-3, 3e-3, 3e-3)])
def test_lean_adam_matches_fused_adam_bit_for_bit(skip_at: int, lrs: tuple[float, float, float]) -> None:
    lean = _train(LeanAdam, 12, skip_at, lrs)
    reference = _train(torch.optim.Adam, 12, skip_at, lrs)
    for a, b in zip(lean, reference, strict=True):
        assert torch.equal(a, b)
    assert not torch.equal(lean[0], _model(0)[0].weight)  # it did learn something


def test_lean_adam_resumes_from_a_state_dict_like_adam() -> None:
    model = _model(0)
    extra = torch.zeros((), requires_grad=True)
    optimizer = LeanAdam(_groups(model, extra))
    gen = torch.Generator().manual_seed(2)

    def step(m: torch.nn.Module, e: torch.Tensor, opt: torch.optim.Optimizer, x: torch.Tensor) -> None:
        opt.zero_grad()
        (m(x).pow(2).mean() + (e - 1.0).pow(2)).backward()
        opt.step()

    xs = [torch.randn(8, 5, generator=gen) for _ in range(6)]
    for x in xs[:3]:
        step(model, extra, optimizer, x)
    saved_model, saved_extra = copy.deepcopy(model), extra.detach().clone().requires_grad_(True)
    saved_state = copy.deepcopy(optimizer.state_dict())
    for x in xs[3:]:
        step(model, extra, optimizer, x)

    resumed = LeanAdam(_groups(saved_model, saved_extra))
    resumed.load_state_dict(saved_state)
    for x in xs[3:]:
        step(saved_model, saved_extra, resumed, x)
    for a, b in zip([*model.parameters(), extra], [*saved_model.parameters(), saved_extra], strict=True):
        assert torch.equal(a, b)
    assert int(resumed.state[saved_extra]["step"]) == 6


def test_zero_grad_clears_every_gradient_and_make_adam_picks_by_device() -> None:
    model = _model(0)
    optimizer = make_adam([{"params": list(model.parameters())}], torch.device("cpu"))
    assert isinstance(optimizer, LeanAdam)
    model(torch.ones(2, 5)).sum().backward()
    optimizer.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    optimizer.zero_grad(set_to_none=False)  # the non-default form still works (zeros stay None here)
    assert all(p.grad is None for p in model.parameters())
    assert not isinstance(make_adam([{"params": list(model.parameters())}], torch.device("meta")), LeanAdam)
