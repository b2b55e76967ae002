"""benchmarks/sac_vs_sb3.py's FLOP accounting: our update does only the matmuls SAC needs, SB3's more."""

import importlib

import numpy as np


def test_our_update_counts_only_the_matmuls_sac_needs_and_fewer_than_sb3():
    bench = importlib.import_module("sac_vs_sb3")
    from agents.config import SACConfig
    from agents.sac import SAC

    env_id, batch, hidden = "Pendulum-v1", 16, 32
    data = bench.collect(env_id, 50, seed=0)
    obs_dim, act_dim = data["obs"].shape[1], data["action"].shape[1]
    import gymnasium as gym

    ours = SAC(
        SACConfig(hidden_dims=(hidden, hidden), normalize_obs=False),
        {"state": ((obs_dim,), np.dtype(np.float32))},
        gym.make(env_id).action_space,
    )
    rng = np.random.default_rng(0)
    ours_flops = bench.matmul_flops(lambda: ours.update(bench.sample_batch(data, rng, batch)))

    # Two critics' hidden layers (their output layer is a multiply-and-sum, not a matmul) and the actor.
    critic_in, critics = obs_dim + act_dim, 2
    critic_pass = 2 * critics * batch * (critic_in * hidden + hidden * hidden)
    actor_pass = 2 * batch * (obs_dim * hidden + hidden * hidden + hidden * 2 * act_dim)
    expected = (
        3 * critic_pass  # target, critic-loss and actor-loss forward passes
        + critic_pass  # the critics' weight gradients, from the critic loss only
        + 2 * 2 * critics * batch * hidden * hidden  # input gradients of the second layer, both losses
        + 2 * critics * batch * critic_in * hidden  # the actor loss's gradient into the action
        + 3 * actor_pass  # next-action and policy forward passes, the actor's weight gradients
        + 2 * batch * (hidden * hidden + hidden * 2 * act_dim)  # the actor's input gradients
    )
    assert ours_flops == expected

    sb3 = bench.make_sb3(env_id, data, [hidden, hidden], batch, seed=0)
    sb3_flops = bench.matmul_flops(lambda: sb3.train(gradient_steps=1, batch_size=batch))
    assert sb3_flops > ours_flops  # SB3 also takes the critics' weight gradients of the actor loss
