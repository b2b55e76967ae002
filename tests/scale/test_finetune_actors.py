"""`vlmrl finetune --actors N` with real Ray processes: two twins, each in its own actor, one learner."""

from __future__ import annotations

import dataclasses
import json
import threading
import time

import numpy as np
import pytest
import zarr

from robot.config import ArmConfig
from tests.vlmrl.pipeline_helpers import finetune_config
from tests.vlmrl.test_finetune import ROBOT_OBS, sim_run
from vlmrl.actors.env_actor import PolicySpec
from vlmrl.actors.robot_actor import RobotActor, RobotSide
from vlmrl.arm import robot_arms
from vlmrl.errors import ConfigError
from vlmrl.online.config import RayConfig
from vlmrl.pipelines import finetune


@pytest.mark.slow
def test_two_twin_arms_feed_one_learner_with_policy_versions(tmp_path, ray_address):
    run, _ = sim_run(tmp_path)
    # One request in flight per actor: the third and fourth episodes are asked for after the learner's first
    # updates (6 per 6-step episode once 8 transitions are stored), so they act with newer weights.
    ray = RayConfig(address=ray_address, weights_every_updates=1, max_in_flight=1)
    cfg = finetune_config(tmp_path, run, actors=2, episodes=4, ray=ray, wait_for_scores_s=0.0)
    assert finetune.main(cfg) == 0
    out = tmp_path / "ft"
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert len(lines) == 4 and {m["actors/actor"] for m in lines} == {0.0, 1.0}
    assert all(m["steps"] == 6 and m["interventions"] == 0 for m in lines)
    group = zarr.open_group(str(out / "buffer.zarr"), mode="r")
    ends = group["episode_ends"][:4]
    assert list(np.diff(np.concatenate([[0], ends]))) == [7] * 4  # 6 transitions + the final observation
    versions = group["info/policy_version"][: ends[-1]]
    per_episode = [versions[s:e] for s, e in zip(np.concatenate([[0], ends[:-1]]), ends)]
    assert all(len(set(v.tolist())) == 1 for v in per_episode)  # one policy per episode
    firsts = [float(v[0]) for v in per_episode]
    assert min(firsts) == 0.0 and max(firsts) > 0.0  # the sim run's weights, then the learner's updates
    assert sorted(p.name for p in out.glob("arm-*")) == ["arm-0", "arm-1"]  # a safety layer per arm
    assert (out / "policy.pt").is_file()


def test_arms_file_gives_each_actor_its_robot_and_is_checked(tmp_path):
    run = tmp_path / "sim_run"
    base = finetune_config(tmp_path, run, actors=2)
    real = dataclasses.replace(base, robot=ArmConfig(type="so101_follower"))
    with pytest.raises(ConfigError, match="give each arm its port and id with --arms"):
        robot_arms.arm_configs(real)
    arms = tmp_path / "arms.json"
    arms.write_text(
        json.dumps(
            [
                {"port": "/dev/ttyACM0", "id": "left", "camera_sources": ["0"]},
                {"port": "/dev/ttyACM1", "id": "right", "leader_port": "/dev/ttyACM2"},
            ]
        )
    )
    left, right = robot_arms.arm_configs(dataclasses.replace(real, arms=arms))
    assert (left.robot.port, left.robot.id, left.robot.camera_sources) == ("/dev/ttyACM0", "left", ("0",))
    assert (right.robot.port, right.robot.type, right.leader_port) == (
        "/dev/ttyACM1",
        "so101_follower",
        "/dev/ttyACM2",
    )
    for bad, message in [
        ([{"port": "a"}], "expected a JSON list of 2 objects"),
        ([{"port": "a"}, {"prot": "b"}], r"arm 1 has unknown fields \['prot'\]"),
        ([{"port": "a", "id": "x"}, {"port": "a", "id": "y"}], "two arms have the same port"),
    ]:
        arms.write_text(json.dumps(bad))
        with pytest.raises(ConfigError, match=message):
            robot_arms.arm_configs(dataclasses.replace(real, arms=arms))
    assert robot_arms.arm_configs(base) == [base, base]  # the twin: every actor its own twin of --robot
    with pytest.raises(ConfigError, match=r"ray\.max_in_flight >= 1"):
        finetune.main(dataclasses.replace(base, ray=RayConfig(max_in_flight=0)))


def test_closing_a_robot_actor_ends_its_episode_at_the_next_step(tmp_path):
    """What ``ActorEpisodes.close`` relies on (``close`` runs in its own Ray concurrency group): the arm is
    released after a truncated step, not after the episode's remaining steps; later episodes are refused."""
    run, agent = sim_run(tmp_path)
    cfg = finetune_config(tmp_path, run)
    cfg = dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, max_episode_steps=100_000))
    policy = PolicySpec(
        agent_cfg=agent.cfg, obs_spec=ROBOT_OBS, privileged_keys=(), policy_keys=tuple(ROBOT_OBS)
    )
    arm = robot_arms.ArmActorConfig(cfg, tmp_path / "arm-0", ROBOT_OBS)
    actor = RobotActor(robot_arms.open_arm, arm, policy, [], seed_base=0)
    episode: dict = {}
    thread = threading.Thread(target=lambda: episode.update(actor.run_episode(0, False, [None], -1)))
    thread.start()
    while actor.kit.env._steps < 3:  # the episode is under way
        time.sleep(0.01)
    actor.close()
    thread.join(timeout=60)
    length = int(episode["stats"]["length"])
    assert 3 <= length < 100_000 and episode["truncated"][-1] and not episode["terminated"].any()
    assert episode["obs"]["pixels/front"].shape == (length + 1, 32, 32, 3)
    assert set(episode["info"]) == {"success", "progress", "intervention", "policy_version"}
    with pytest.raises(RuntimeError, match="closing"):
        actor.run_episode(1, False, [None], -1)


@pytest.mark.slow
def test_an_arm_stopping_in_its_episode_stops_the_run_in_one_line(ray_address):
    from types import SimpleNamespace

    from robot.errors import RobotError
    from vlmrl.actors.ray_source import ActorEpisodes

    class StoppingArm:  # defined here, so Ray ships it by value (its workers cannot import tests.*)
        """Stands in for a robot actor whose arm hits its emergency stop during the first episode."""

        def __init__(self, make_env, cfg, policy, stored_keys, seed_base) -> None:
            pass

        def run_episode(self, episode, random_actions, weights, version) -> dict:
            raise RobotError("emergency stop (escape pressed)")

    import torch

    agent = SimpleNamespace(num_updates=0, encoder=torch.nn.Linear(1, 1), actor=torch.nn.Linear(1, 1))
    source = ActorEpisodes(
        1,
        "stub-stop",
        None,
        None,
        None,
        [],
        0,
        None,
        agent,
        lambda: True,
        RayConfig(),
        actor_class=StoppingArm,
    )
    try:
        with pytest.raises(
            RobotError, match=r"^env actor stub-stop/env-0: emergency stop \(escape pressed\)$"
        ):
            source.collect(0, act=None, after_step=lambda: None)
    finally:
        source.close()


def test_arms_that_differ_are_named_in_words():
    a = RobotSide(
        obs_spec={"pixels/front": ((32, 32, 3), np.dtype(np.uint8))},
        action_dim=6,
        action_keys=("shoulder_pan.pos",),
        cameras=("front",),
        task_description="lift the cube",
    )
    assert robot_arms.describe_difference(a, dataclasses.replace(a, cameras=("wrist",))) == (
        "cameras ('wrist',) instead of ('front',)"
    )
