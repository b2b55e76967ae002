"""agents.sim_to_robot: an asymmetric-critic agent handed over to a SAC that reads only robot keys."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from agents.config import SACConfig
from agents.errors import AgentError
from agents.export import export_onnx, export_policy, load_policy
from agents.sac import SAC
from agents.sim_to_robot import estimate_dim_of, load_sim_into_robot_sac
from tests.agents.test_pixels_and_ensembles import BOX, ROBOT_SPEC, SIM_SPEC, SMALL, random_batch

AUX = dataclasses.replace(SMALL, privileged_aux_weight=1.0, num_critics=3, target_critics=2)


def trained_sim_agent(cfg: SACConfig) -> SAC:
    sim = SAC(cfg, SIM_SPEC, BOX, privileged_keys=("state",))
    for seed in range(3):  # normaliser statistics, encoder, head and critics away from their start
        sim.update(random_batch(SIM_SPEC, seed=seed))
    return sim


def critic_inputs(agent: SAC, seed: int) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
    batch = random_batch(SIM_SPEC, seed=seed)
    obs = agent.obs_to_tensors(batch.obs)
    return obs, agent.encoder(obs), torch.as_tensor(batch.action)


@pytest.mark.parametrize("cfg", [AUX, SMALL], ids=["aux-head", "no-head"])
def test_the_robot_agent_acts_as_the_sim_actor_and_its_critics_are_the_sim_critics(cfg: SACConfig) -> None:
    sim = trained_sim_agent(cfg)
    robot = SAC(cfg, ROBOT_SPEC, BOX)
    how = load_sim_into_robot_sac(robot, sim.state_dict())
    assert robot.privileged_head is None and robot.encoder.privileged_dim == 0
    assert ("folded" in how) == (sim.privileged_head is not None)
    robot_obs = random_batch(ROBOT_SPEC, seed=7).obs
    np.testing.assert_allclose(
        robot.act(robot_obs, deterministic=True), sim.act(robot_obs, deterministic=True), rtol=1e-5, atol=1e-6
    )
    obs, features, action = critic_inputs(sim, seed=8)
    with torch.no_grad():
        torch.testing.assert_close(robot.encoder(obs), features)
        # What the robot-side critics stand for: the head's prediction of the state, or the mean state.
        if sim.privileged_head is not None:
            privileged = sim.privileged_head(features)
        else:
            privileged = torch.zeros(features.shape[0], sim.encoder.privileged_dim)
        sim_in = torch.cat([features, privileged], -1)
        for sim_critic, robot_critic in (
            (sim.critic, robot.critic),
            (sim.critic_target, robot.critic_target),
        ):
            torch.testing.assert_close(robot_critic(features, action), sim_critic(sim_in, action))
        # ... and not the sim critic with the true state (the handover does change the critics).
        true_in = torch.cat([features, sim.encoder.privileged(obs)], -1)
        assert not torch.allclose(robot.critic(features, action), sim.critic(true_in, action))
    robot.update(random_batch(ROBOT_SPEC, seed=9))  # learns without any privileged key


def test_a_mismatched_state_is_refused_in_one_line() -> None:
    sim = trained_sim_agent(AUX).state_dict()
    cases = [
        (SAC(AUX, SIM_SPEC, BOX, privileged_keys=("state",)), sim, "reads privileged keys"),
        (SAC(AUX, ROBOT_SPEC, BOX), SAC(AUX, ROBOT_SPEC, BOX).state_dict(), "read no privileged state"),
        (
            SAC(AUX, {**ROBOT_SPEC, "extra": ((3,), np.dtype(np.float32))}, BOX),
            sim,
            "another observation spec",
        ),
        (SAC(AUX, ROBOT_SPEC, BOX), {"actor": {}}, "no 'encoder'"),
        (SAC(dataclasses.replace(AUX, hidden_dims=(16, 16)), ROBOT_SPEC, BOX), sim, "does not match"),
    ]
    for robot, state, message in cases:
        with pytest.raises(AgentError, match=message) as info:
            load_sim_into_robot_sac(robot, state)
        assert "\n" not in str(info.value)


def test_critic_warmup_updates_leave_the_actor_temperature_and_encoder_alone() -> None:
    """The encoder and observation statistics wait with the actor: moved under it, they cost a frozen actor its
    success (results/finetune, "Fine-tuning on the nominal twin")."""
    robot = SAC(AUX, ROBOT_SPEC, BOX)
    load_sim_into_robot_sac(robot, trained_sim_agent(AUX).state_dict())
    robot.critic_only_until = robot.num_updates + 2
    actor, critic = robot.actor.state_dict(), robot.critic.state_dict()
    actor, critic = {k: v.clone() for k, v in actor.items()}, {k: v.clone() for k, v in critic.items()}
    encoder = {k: v.clone() for k, v in robot.encoder.state_dict().items()}
    alpha = robot.alpha
    for seed in range(2):
        robot.update(random_batch(ROBOT_SPEC, seed=seed))
    assert all(torch.equal(v, robot.actor.state_dict()[k]) for k, v in actor.items()) and robot.alpha == alpha
    assert all(torch.equal(v, robot.encoder.state_dict()[k]) for k, v in encoder.items())
    assert not torch.equal(critic["weights.0"], robot.critic.weights[0].detach())
    again = SAC(AUX, ROBOT_SPEC, BOX)
    again.load_state_dict(robot.state_dict())
    assert again.critic_only_until == robot.critic_only_until
    robot.update(random_batch(ROBOT_SPEC, seed=2))  # the warm-up is over: the actor and the encoder move
    assert not all(torch.equal(v, robot.actor.state_dict()[k]) for k, v in actor.items())
    assert not all(torch.equal(v, robot.encoder.state_dict()[k]) for k, v in encoder.items())


def test_a_frozen_encoder_keeps_the_features_the_actor_reads_while_the_critics_and_actor_learn() -> None:
    """``vlmrl finetune --freeze-encoder``: the pixel encoder's weights and the normaliser's statistics stay the
    sim run's, so the actor's input does not move under it; a state_dict keeps the flag."""
    robot = SAC(AUX, ROBOT_SPEC, BOX)
    load_sim_into_robot_sac(robot, trained_sim_agent(AUX).state_dict())
    robot.encoder_frozen = True
    encoder = {k: v.clone() for k, v in robot.encoder.state_dict().items()}
    actor = {k: v.clone() for k, v in robot.actor.state_dict().items()}
    critic = robot.critic.weights[0].detach().clone()
    for seed in range(2):
        robot.update(random_batch(ROBOT_SPEC, seed=seed))
    assert all(torch.equal(v, robot.encoder.state_dict()[k]) for k, v in encoder.items())
    assert not all(torch.equal(v, robot.actor.state_dict()[k]) for k, v in actor.items())
    assert not torch.equal(critic, robot.critic.weights[0].detach())
    again = SAC(AUX, ROBOT_SPEC, BOX)
    again.load_state_dict(robot.state_dict())
    assert again.encoder_frozen
    robot.encoder_frozen = False  # unfrozen, the critic loss trains the encoder again
    robot.update(random_batch(ROBOT_SPEC, seed=3))
    assert not all(torch.equal(v, robot.encoder.state_dict()[k]) for k, v in encoder.items())


@pytest.mark.parametrize("ema", [0.0, 0.1], ids=["actor", "averaged-actor"])
def test_an_actor_reading_the_state_estimate_sees_only_it_and_hands_over_to_a_robot(
    ema: float, tmp_path
) -> None:
    cfg = dataclasses.replace(AUX, actor_reads_estimate=True, actor_ema=ema)
    sim = trained_sim_agent(cfg)
    head = sim.privileged_head
    assert head is not None and sim.actor.estimator is head and sim.eval_actor.estimator is head
    assert sim.estimate_dim == sim.encoder.privileged_dim == 5
    # The bottleneck: features that differ only where the head does not look give the same action.
    features = torch.randn(4, sim.encoder.feature_dim)
    null = torch.linalg.svd(head.weight.detach()).Vh[-1]  # head.weight @ null == 0 (8 features, 5 outputs)
    with torch.no_grad():
        torch.testing.assert_close(sim.actor(features + 3.0 * null)[0], sim.actor(features)[0])
        assert not torch.allclose(sim.actor(features + 3.0 * head.weight[0])[0], sim.actor(features)[0])
    # The actor's optimiser group holds the policy only; the head learns from the auxiliary loss.
    assert not any(p is head.weight for p in sim._actor_params)
    # A robot-side agent: needs the estimate's size, then acts as the sim agent and exports the same.
    with pytest.raises(AgentError, match="needs estimate_dim"):
        SAC(cfg, ROBOT_SPEC, BOX)
    state = sim.state_dict()
    robot = SAC(cfg, ROBOT_SPEC, BOX, estimate_dim=estimate_dim_of(state))
    load_sim_into_robot_sac(robot, state)
    robot_obs = random_batch(ROBOT_SPEC, seed=7).obs
    action = sim.act(robot_obs, deterministic=True)
    np.testing.assert_allclose(robot.act(robot_obs, deterministic=True), action, rtol=1e-5, atol=1e-6)
    policy = load_policy(export_policy(robot, tmp_path / "policy.pt"))
    one = {k: v[0] for k, v in robot_obs.items()}
    np.testing.assert_allclose(policy(one), action[0], rtol=1e-5, atol=1e-6)
    export_onnx(robot, tmp_path / "policy.onnx")  # checked in onnxruntime against the torch policy
    robot.update(random_batch(ROBOT_SPEC, seed=9))  # fine-tunes without privileged keys or head


def test_an_actor_reading_the_state_estimate_needs_the_auxiliary_head() -> None:
    with pytest.raises(AgentError, match="needs the auxiliary head"):
        SAC(dataclasses.replace(SMALL, actor_reads_estimate=True), SIM_SPEC, BOX, privileged_keys=("state",))
    assert estimate_dim_of(trained_sim_agent(AUX).state_dict()) is None
