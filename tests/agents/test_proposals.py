"""IBRL's proposals (``SACConfig.proposals``): a frozen copy of the actor competes with it in the critics' target
and in training actions; evaluation and export stay the actor's."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from agents.errors import AgentError
from agents.networks import sample_squashed
from agents.sac import SAC

from .test_pixels_and_ensembles import BOX, SIM_SPEC, SMALL
from .test_sac import params, random_batch, random_obs, same

PROPOSING = dataclasses.replace(SMALL, proposals=True)


def moved_agent(cfg=PROPOSING) -> SAC:
    """An asymmetric pixel agent whose proposer was frozen and whose actor then moved on."""
    sac = SAC(cfg, SIM_SPEC, BOX, privileged_keys=("state",))
    sac.update(random_batch(SIM_SPEC, seed=0))
    sac.freeze_proposer()
    with torch.no_grad():  # the actor moves away from its frozen copy
        for p in sac.actor.parameters():
            p.add_(0.5 * torch.randn_like(p))
    return sac


def test_the_proposer_is_a_frozen_copy_that_updates_leave_alone() -> None:
    sac = moved_agent()
    assert sac.proposer is not None
    encoder, actor = sac.proposer
    before = params(actor) + params(encoder)
    for seed in range(1, 4):
        sac.update(random_batch(SIM_SPEC, seed=seed))
    assert same(before, params(actor) + params(encoder))
    assert not same(params(actor), params(sac.actor))


def test_training_actions_are_the_better_valued_of_actor_and_proposer() -> None:
    sac = moved_agent()
    obs = random_obs(SIM_SPEC, 64, np.random.default_rng(3))
    state = sac.generator.get_state()
    acted = sac.to_unit(torch.as_tensor(sac.act(obs)))
    # The same draws again, by hand: the actor's sample, then the proposer's.
    sac.generator.set_state(state)
    with torch.no_grad():
        tensors = sac.obs_to_tensors(obs, sac.actor_obs_spec)
        features = sac.encoder(tensors)
        own, _ = sample_squashed(*sac.actor(features), generator=sac.generator)
        proposed, _ = sample_squashed(*sac._proposal(tensors), generator=sac.generator)
        critic_in = sac._critic_input(features, sac._privileged(sac.obs_to_tensors(obs)))
        q_own = sac._policy_value(sac.critic(critic_in, own))
        q_proposed = sac._policy_value(sac.critic(critic_in, proposed))
    expected = torch.where((q_proposed > q_own).unsqueeze(-1), proposed, own)
    torch.testing.assert_close(acted, expected, atol=1e-5, rtol=0)
    chose_proposer = int((q_proposed > q_own).sum())
    assert 0 < chose_proposer < 64  # both win somewhere: a real choice, not a constant
    # Evaluation (deterministic) is the actor's own mode.
    mode = sac.act(obs, deterministic=True)
    with torch.no_grad():
        np.testing.assert_allclose(mode, sac.to_env(sac.actor.deterministic(features)).numpy(), atol=1e-6)


def test_the_target_takes_the_better_of_the_actors_and_the_proposers_value() -> None:
    """The same agent, batch and noise with and without its proposer: every row's target is at least the plain
    one and above it on some rows (the TD, Q - target with the same Q, falls)."""
    sac = moved_agent()
    batch = random_batch(SIM_SPEC, seed=9)
    obs, next_obs = sac.obs_to_tensors(batch.obs), sac.obs_to_tensors(batch.next_obs)
    for key in sac.encoder.pixel_keys:
        encoder = sac.encoder.pixel_encoder(key)
        obs[key] = encoder.prepare_shifted(obs[key], 0, sac.generator)
        next_obs[key] = encoder.prepare_shifted(next_obs[key], 0, sac.generator)
    noise = torch.zeros(len(batch.action), 2)
    args = (
        obs,
        next_obs,
        sac.to_unit(torch.as_tensor(batch.action)),
        torch.as_tensor(batch.reward),
        torch.as_tensor(batch.discount),
        None,
        noise,
        noise,
        None,
    )
    _, td_with, _ = sac._losses(*args)
    proposer, sac.proposer = sac.proposer, None
    _, td_without, _ = sac._losses(*args)
    sac.proposer = proposer
    assert bool((td_with <= td_without + 1e-6).all())
    assert bool((td_with < td_without - 1e-6).any())


def test_the_proposer_is_checkpointed_and_restored() -> None:
    a = moved_agent()
    b = SAC(dataclasses.replace(PROPOSING, seed=7), SIM_SPEC, BOX, privileged_keys=("state",))
    b.load_state_dict(a.state_dict())
    assert b.proposer is not None and a.proposer is not None
    assert same(params(a.proposer[1]), params(b.proposer[1]))
    assert same(params(a.proposer[0]), params(b.proposer[0]))
    batch = random_batch(SIM_SPEC, seed=4)
    np.testing.assert_array_equal(a.update(batch)["td_error"], b.update(batch)["td_error"])


def test_freezing_a_proposer_needs_the_option() -> None:
    sac = SAC(SMALL, SIM_SPEC, BOX, privileged_keys=("state",))
    with pytest.raises(AgentError, match=r"freeze_proposer needs SACConfig\.proposals"):
        sac.freeze_proposer()
