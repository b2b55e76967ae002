"""vlmrl finetune end to end on the twin: sim checkpoint -> robot episodes -> zarr -> async scores -> SAC."""

import dataclasses
import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from agents.config import SACConfig
from agents.export import load_policy
from agents.sac import SAC
from buffer import BufferConfig, make_buffer
from robot.config import SO101_JOINT_KEYS, ArmConfig
from sim import SimConfig, make_env
from tests.vlmrl.pipeline_helpers import finetune_config as config
from vlm.config import AuxRewardConfig, OracleConfig, WorkerConfig
from vlmrl.arm import robot_arms, trained_run
from vlmrl.deployment import robot_env
from vlmrl.errors import ConfigError
from vlmrl.loop.arm_actions import sim_action_converter
from vlmrl.pipelines import finetune

ROBOT_OBS = {"pixels/front": ((32, 32, 3), np.dtype(np.uint8))} | {
    k: ((1,), np.dtype(np.float32)) for k in SO101_JOINT_KEYS
}


def sim_run(tmp_path, obs_spec=ROBOT_OBS, aux_reward=None, task="lift", max_episode_steps=None):
    """A run directory shaped like `vlmrl train`'s checkpoint, with an agent reading robot keys (its scorer
    the oracle, which finetune never uses: it reads privileged progress)."""
    sim_cfg = SimConfig(task=task, cameras=("front",), image_size=32, max_episode_steps=max_episode_steps)
    env = make_env(sim_cfg)
    agent = SAC(SACConfig(hidden_dims=(32, 32)), obs_spec, env.action_space)
    env.close()
    train = SimpleNamespace(
        sim=sim_cfg,
        agent=agent.cfg,
        policy_obs="pixels",
        buffer=BufferConfig(),
        batch_size=8,
        scorer=OracleConfig(),
        prompt="",
        aux_reward=aux_reward or AuxRewardConfig(kind="scaled"),
        aux_reward_weight=0.5,
        worker=WorkerConfig(),
    )
    run = tmp_path / "sim_run"
    (run / "checkpoint").mkdir(parents=True)
    spec = {k: [list(s), d.name] for k, (s, d) in obs_spec.items()}
    torch.save(
        {"config": train, "agent": agent.state_dict(), "policy_obs_spec": spec},
        run / "checkpoint" / "state.pt",
    )
    return run, agent


def learned_scorer(tmp_path, task="lift", frames=3):
    """A `vlmrl scorer fit`-shaped learned scorer file (random weights) for the twin task's prompt, 32 px front
    frames: a pixel scorer finetune may take its aux reward from."""
    from sim.so101.tasks import TASKS
    from vlm.backends.learned import build_net, save_learned
    from vlm.prompts import prompt_hash, scorer_prompt

    prompt = scorer_prompt(TASKS[task]().description, "learned")
    meta = dict(camera="front", image_hw=[32, 32], num_frames=frames, width=4, prompt=prompt, labels="random")
    path = tmp_path / f"student-{task}.pt"
    save_learned(path, build_net(frames, 4), {**meta, "prompt_hash": prompt_hash(prompt)})
    return f"scorer:learned --scorer.path {path}"


def operator_takes_over_holding_w(monkeypatch) -> None:
    """The operator presses space (takeover) and holds w: the jog raises shoulder lift 2 degrees a step."""
    from robot import teleop

    real_keys, real_jog = teleop.OperatorKeys, teleop.KeyboardJog

    def taking_over(listen=True):
        keys = real_keys(listen=False)
        keys.press("space")
        return keys

    def held_w(keys, step, listen=True):
        jog = real_jog(keys, step, listen=False)
        jog.press("w")
        return jog

    monkeypatch.setattr(robot_arms, "OperatorKeys", taking_over)  # as the arms' module opens them
    monkeypatch.setattr(robot_arms, "KeyboardJog", held_w)


def stored_buffer(out_dir):
    """The zarr buffer finetune wrote in ``out_dir``, opened with the observation spec it recorded."""
    meta = json.loads((out_dir / "buffer.zarr" / "zarr.json").read_text())["attributes"]["vlmrl_buffer"][
        "env"
    ]
    spec = {k: (tuple(s), np.dtype(d)) for k, (s, d) in meta["obs_spec"].items()}
    return make_buffer(
        BufferConfig(storage="zarr", capacity_steps=200), spec, meta["action_dim"], finetune.INFO_KEYS,
        path=str(out_dir / "buffer.zarr"),
    )  # fmt: skip


def train_tiny_reach(
    tmp_path, agent: SACConfig, total_steps: int, action_mode: str = "absolute", **fields
) -> None:
    """`vlmrl train` on twin reach with robot observations, a few steps, into ``tmp_path / "sim"``."""
    from vlmrl.pipelines import train

    cfg = train.TrainConfig(
        sim=SimConfig(
            task="reach", cameras=("front",), image_size=32, max_episode_steps=6, action_mode=action_mode
        ),
        agent=agent,
        policy_obs="robot",
        buffer=BufferConfig(storage="memory", capacity_steps=100),
        total_steps=total_steps,
        learning_starts=8,
        batch_size=8,
        eval_episodes=1,
        video_episodes=0,
        run_dir=str(tmp_path / "sim"),
        progress=False,
        **fields,
    )
    assert train.main(cfg) == 0


def test_finetune_learns_on_the_twin_and_persists_everything(tmp_path):
    run, initial = sim_run(tmp_path)
    assert finetune.main(config(tmp_path, run, scorer=learned_scorer(tmp_path))) == 0
    out = tmp_path / "ft"
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["steps"] for m in lines] == [6, 6]
    assert "updates" not in lines[0] and lines[1]["updates"] == 6.0  # 6 < batch 8 after one episode
    assert lines[1]["scored"] == 4  # two clips of 3 frames per 7-frame episode
    meta = {
        k: (tuple(s), np.dtype(d))
        for k, (s, d) in json.loads((out / "buffer.zarr" / "zarr.json").read_text())["attributes"][
            "vlmrl_buffer"
        ]["env"]["obs_spec"].items()
    }
    buf = make_buffer(
        BufferConfig(storage="zarr", capacity_steps=200),
        meta,
        6,
        finetune.INFO_KEYS,
        path=str(out / "buffer.zarr"),
    )
    assert buf.num_episodes == 2 and buf.num_transitions == 12
    columns = buf.storage.columns()
    assert any(c.startswith("scores/learned") for c in columns) and any(
        c.startswith("aux_reward/learned") for c in columns
    )
    buf.close()
    policy = load_policy(out / "policy.pt")
    obs = {k: np.zeros(s, d) for k, (s, d) in ROBOT_OBS.items()}
    assert not np.allclose(policy(obs), initial.act(obs, deterministic=True))  # the updates changed it
    assert (out / "checkpoint" / "state.pt").is_file() and json.loads((out / "config.json").read_text())[
        "from_run"
    ] == str(run)


def test_intervention_drives_with_the_keyboard_and_is_stored(tmp_path, monkeypatch):
    run, _ = sim_run(tmp_path)
    operator_takes_over_holding_w(monkeypatch)
    assert finetune.main(config(tmp_path, run, episodes=1, wait_for_scores_s=0.0)) == 0
    stats = json.loads((tmp_path / "ft" / "metrics.jsonl").read_text())
    assert stats["interventions"] == 6
    buf = stored_buffer(tmp_path / "ft")
    lift = buf.storage.read("action", np.arange(6))[:, 1]
    assert np.diff(lift) == pytest.approx(np.full(5, 2.0))
    assert buf.storage.read("info/intervention", np.arange(6)) == pytest.approx(np.ones(6))
    buf.close()


def test_a_policy_on_privileged_sim_state_is_refused(tmp_path):
    run, _ = sim_run(tmp_path, {"state": ((24,), np.dtype(np.float32))})
    with pytest.raises(ConfigError, match="reads 'state' as float32"):
        finetune.main(config(tmp_path, run))
    with pytest.raises(ConfigError, match="no checkpoint"):
        finetune.main(config(tmp_path, tmp_path / "nowhere"))


def unweighted_and_stored_aux(store, buffer_cfg, aux_cfg):
    """Per episode of a run's store: (``vlm.aux_rewards`` at weight 1 of the stored clip scores, the stored
    aux rewards), concatenated over episodes, by the clip rule the scoring link uses."""
    from buffer.clips import plan_clips
    from vlm.aux_reward import aux_rewards

    meta = json.loads((store / "zarr.json").read_text())["attributes"]["vlmrl_buffer"]
    env = meta["env"]
    spec = {k: (tuple(s), np.dtype(d)) for k, (s, d) in env["obs_spec"].items()}
    buffer = make_buffer(
        dataclasses.replace(buffer_cfg, n_step=1),
        spec,
        int(env["action_dim"]),
        tuple(env["info_keys"]),
        path=str(store),
    )
    try:
        (score_column,) = [c for c in buffer.storage.columns() if c.startswith("scores/")]
        aux_column = "aux_reward/" + score_column.split("/", 1)[1]
        expected, stored = [], []
        for episode in range(buffer.num_episodes):
            start, end = buffer.episode_rows(episode)
            clips = plan_clips(episode, start, end, buffer_cfg.clip_length, buffer_cfg.clip_stride, "")
            scores = buffer.storage.read(score_column, np.array([c.clip_id for c in clips]))
            last = np.array([c.start + (c.length - 1) * c.stride for c in clips])
            terminated = bool(buffer.storage.read("terminated", np.array([end - 2]))[0])
            unit = dataclasses.replace(aux_cfg, weight=1.0, gamma=buffer_cfg.gamma)
            expected.append(aux_rewards(unit, end - start - 1, last, scores, terminated))
            stored.append(buffer.storage.read(aux_column, start + np.arange(end - start - 1)))
        # What a batch gets: the env reward plus the buffer's aux weight times the stored aux reward.
        batch = buffer.sample(16)
        env_reward = buffer.storage.read("reward", batch.indices)
        aux = buffer.storage.read(aux_column, batch.indices)
        np.testing.assert_allclose(batch.reward, env_reward + buffer_cfg.aux_reward_weight * aux, atol=1e-6)
    finally:
        buffer.close()
    return np.concatenate(expected), np.concatenate(stored)


def effective_aux_weight(run_dir, store, aux_cfg) -> float:
    """How many times the unweighted aux reward of its clip scores a run's sampled rewards get."""
    from vlmrl.loop.checkpoint import load_checkpoint

    buffer_cfg = load_checkpoint(run_dir)["buffer_config"]
    unit, stored = unweighted_and_stored_aux(store, buffer_cfg, aux_cfg)
    assert np.abs(unit).max() > 0  # something to weigh
    ratio = stored[unit != 0] / unit[unit != 0]
    np.testing.assert_allclose(ratio, ratio[0], rtol=1e-5)
    return float(ratio[0]) * buffer_cfg.aux_reward_weight


def test_train_and_finetune_give_the_aux_reward_one_weight(tmp_path):
    """One weight (aux_reward_weight) in both pipelines; finetune used to force the scorer's aux weight to 1
    where train multiplied by it, and new train runs now refuse a second weight."""
    from vlmrl.pipelines import train

    scaled = AuxRewardConfig(kind="scaled")
    sim = train.TrainConfig(
        sim=SimConfig(task="reach", cameras=("front",), image_size=32, max_episode_steps=6),
        agent=SACConfig(hidden_dims=(16, 16)),
        policy_obs="robot",
        buffer=BufferConfig(storage="zarr", capacity_steps=500, clip_length=3, clip_stride=1),
        aux_reward=scaled,
        aux_reward_weight=0.5,
        total_steps=24,
        learning_starts=12,
        batch_size=8,
        eval_episodes=1,
        video_episodes=0,
        sync_scoring=True,
        run_dir=str(tmp_path / "sim"),
        progress=False,
    )
    with pytest.raises(ConfigError, match="one weight"):
        train.main(dataclasses.replace(sim, aux_reward=AuxRewardConfig(kind="scaled", weight=2.0)))
    assert train.main(sim) == 0
    scorer = learned_scorer(
        tmp_path, "reach"
    )  # the sim run's oracle reads privileged progress: not on a robot
    assert finetune.main(config(tmp_path, tmp_path / "sim", task="reach", scorer=scorer)) == 0
    trained = effective_aux_weight(tmp_path / "sim", tmp_path / "sim" / "buffer.zarr", scaled)
    tuned = effective_aux_weight(tmp_path / "ft", tmp_path / "ft" / "buffer.zarr", scaled)
    assert trained == pytest.approx(0.5) and tuned == pytest.approx(0.5)


def test_a_sim_run_from_an_older_version_is_read_like_a_resume_and_keeps_its_aux_weights(tmp_path):
    """The sim run's checkpoint goes through checkpoint.load_checkpoint (fill_new_fields), as a resume does;
    finetune's own torch.load failed on configs pickled before fields were added. Its two aux weights
    (aux_reward.weight 2, aux_reward_weight 0.5: from before the one-weight rule) act as their product,
    as when train resumes it (finetune used 0.5)."""
    from vlmrl.online.config import TrainConfig

    sim_cfg = SimConfig(task="lift", cameras=("front",), image_size=32)
    env = make_env(sim_cfg)
    agent = SAC(SACConfig(hidden_dims=(32, 32)), ROBOT_OBS, env.action_space)
    env.close()
    train = TrainConfig(
        sim=sim_cfg,
        agent=agent.cfg,
        policy_obs="robot",
        batch_size=8,
        aux_reward=AuxRewardConfig(kind="scaled", weight=2.0),
        aux_reward_weight=0.5,
    )
    # What an older version pickled: no camera calibration in the sim config, no sampler settings, no
    # score calibration in the run config.
    del vars(train.sim)["camera_calibration"]
    del vars(train)["vlm_sampler"]
    del vars(train)["score_calibration"]
    run = tmp_path / "old_run"
    (run / "checkpoint").mkdir(parents=True)
    spec = {k: [list(s), d.name] for k, (s, d) in ROBOT_OBS.items()}
    torch.save(
        {"config": train, "agent": agent.state_dict(), "policy_obs_spec": spec},
        run / "checkpoint" / "state.pt",
    )
    assert finetune.main(config(tmp_path, run, scorer=learned_scorer(tmp_path))) == 0
    weight = effective_aux_weight(
        tmp_path / "ft", tmp_path / "ft" / "buffer.zarr", AuxRewardConfig(kind="scaled")
    )
    assert weight == pytest.approx(1.0)


@pytest.mark.parametrize("estimate", [False, True], ids=["features", "state-estimate"])
def test_a_run_with_an_asymmetric_critic_is_fine_tuned_on_robot_keys_only(tmp_path, capsys, estimate):
    """Its critics read the sim's privileged state; finetune hands them over without it (agents.sim_to_robot).
    An actor that reads the auxiliary head's state estimate keeps that head (``actor_reads_estimate``)."""
    agent_cfg = SACConfig(hidden_dims=(16, 16), privileged_aux_weight=1.0, actor_reads_estimate=estimate)
    train_tiny_reach(tmp_path, agent_cfg, 12, asymmetric_critic=True)
    ft = config(tmp_path, tmp_path / "sim", task="reach", episodes=1, batch_size=4, critic_warmup_updates=3)
    assert finetune.main(ft) == 0
    assert "handed over without their privileged inputs: folded" in capsys.readouterr().out
    trained, tuned = (
        torch.load(run / "checkpoint" / "state.pt", weights_only=False)["agent"]
        for run in (tmp_path / "sim", tmp_path / "ft")
    )
    assert "privileged_head" in trained and "privileged_head" not in tuned
    assert ("estimator.weight" in tuned["actor"]) == estimate
    if estimate:  # the robot keeps the sim run's estimator as it was: only the auxiliary loss trains it
        torch.testing.assert_close(tuned["actor"]["estimator.weight"], trained["privileged_head"]["weight"])
    assert tuned["critic_only_until"] == trained["num_updates"] + 3 < tuned["num_updates"]
    assert set(load_policy(tmp_path / "ft" / "policy.pt").obs_spec) == set(ROBOT_OBS)
    with pytest.raises(ConfigError, match="--critic-warmup-updates -1"):
        finetune.main(dataclasses.replace(ft, out_dir=tmp_path / "ft2", critic_warmup_updates=-1))


def test_freeze_encoder_fine_tunes_the_actor_on_the_sim_runs_features(tmp_path):
    """--freeze-encoder: the pixel encoder and observation statistics leave finetune as the sim run's agent had
    them, while the actor learns; a resume without the flag trains the encoder again."""
    agent_cfg = SACConfig(hidden_dims=(16, 16), privileged_aux_weight=1.0)
    train_tiny_reach(tmp_path, agent_cfg, 12, asymmetric_critic=True)
    ft = config(tmp_path, tmp_path / "sim", task="reach", episodes=2, batch_size=4, freeze_encoder=True)
    assert finetune.main(ft) == 0
    trained, tuned = (
        torch.load(run / "checkpoint" / "state.pt", weights_only=False)["agent"]
        for run in (tmp_path / "sim", tmp_path / "ft")
    )
    assert tuned["num_updates"] > trained["num_updates"] and tuned["encoder_frozen"]
    kept = [k for k in tuned["encoder"] if not k.startswith("privileged_normalizer")]
    assert any(k.startswith("pixel_encoders") for k in kept) and "normalizer.mean" in kept
    for key in kept:
        torch.testing.assert_close(tuned["encoder"][key], trained["encoder"][key], rtol=0, atol=0, msg=key)
    assert not all(
        torch.equal(v, trained["actor"][k]) for k, v in tuned["actor"].items() if k in trained["actor"]
    )
    assert finetune.main(dataclasses.replace(ft, resume=True, episodes=1, freeze_encoder=False)) == 0
    resumed = torch.load(tmp_path / "ft" / "checkpoint" / "state.pt", weights_only=False)["agent"]
    assert not resumed["encoder_frozen"]
    assert not torch.equal(resumed["encoder"]["normalizer.mean"], trained["encoder"]["normalizer.mean"])


def test_a_joint_delta_run_is_fine_tuned_storing_the_deltas_the_arm_was_sent(tmp_path, monkeypatch):
    """Issue #13: the policy's joint deltas go to the arm as targets (``LeRobotEnv.delta_targets``, as deploy
    runs them); the buffer holds what was sent, back in the agent's units."""
    from robot.lerobot_env import LeRobotEnv

    train_tiny_reach(tmp_path, SACConfig(hidden_dims=(16, 16)), 8, action_mode="delta")
    applied = []
    real_step = LeRobotEnv.step

    def recording_step(env, action):
        previous = env.last_sent()
        out = real_step(env, action)
        applied.append((out[4]["sent_action"] - previous) / np.array([8.0] * 5 + [25.0]))
        return out

    monkeypatch.setattr(LeRobotEnv, "step", recording_step)
    ft = config(tmp_path, tmp_path / "sim", task="reach", episodes=1, batch_size=4, wait_for_scores_s=0.0)
    assert finetune.main(ft) == 0
    buf = stored_buffer(tmp_path / "ft")
    stored = buf.storage.read("action", np.arange(buf.num_transitions))
    buf.close()
    assert len(stored) == len(applied) == 6
    assert np.all(np.abs(stored) <= 1.0) and np.abs(stored).max() > 0
    assert stored == pytest.approx(np.clip(applied, -1.0, 1.0), abs=1e-5)
    # --actors: a robot actor maps its arm's actions the same way (RobotActor, run here without Ray)
    from vlmrl.actors.env_actor import PolicySpec
    from vlmrl.actors.robot_actor import RobotActor

    state = trained_run.load_sim_run(tmp_path / "sim")
    obs_spec = trained_run.policy_obs_spec(state)
    policy = PolicySpec(
        agent_cfg=state["config"].agent, obs_spec=obs_spec, privileged_keys=(), policy_keys=tuple(obs_spec)
    )
    arm = robot_arms.ArmActorConfig(dataclasses.replace(ft, actors=2), tmp_path / "ft3" / "arm-0", obs_spec)
    actor = RobotActor(
        robot_arms.open_arm, arm, policy, None, seed_base=0,
        action_space=trained_run.action_space_of(state), convert=sim_action_converter(state["config"].sim),
    )  # fmt: skip
    applied.clear()
    try:
        episode = actor.run_episode(0, False, [], -1)
    finally:
        actor.close()
    assert episode["action"] == pytest.approx(np.clip(applied, -1.0, 1.0), abs=1e-5)
    # an operator's takeover sends absolute targets (the jog: +2 degrees of shoulder lift a step): their delta
    operator_takes_over_holding_w(monkeypatch)
    applied.clear()
    assert finetune.main(dataclasses.replace(ft, out_dir=tmp_path / "ft2")) == 0
    buf = stored_buffer(tmp_path / "ft2")
    stored = buf.storage.read("action", np.arange(buf.num_transitions))
    assert buf.storage.read("info/intervention", np.arange(6)) == pytest.approx(np.ones(6))
    buf.close()
    assert stored == pytest.approx(np.clip(applied, -1.0, 1.0), abs=1e-5)
    assert stored[:, 1] == pytest.approx(np.full(6, 2.0 / 8.0), abs=1e-5)


def test_store_action_policy_keeps_the_policys_own_deltas_and_a_takeovers_sent_ones(tmp_path, monkeypatch):
    """--store-action policy: a step the policy drove stores the policy's action, not what the safety layer
    let through (the safety layer becomes part of the robot, as the twin's clipping is in `vlmrl train`); a
    takeover still stores what was sent."""
    from agents.sac import SAC

    train_tiny_reach(tmp_path, SACConfig(hidden_dims=(16, 16)), 8, action_mode="delta")
    proposed = []
    real_act = SAC.act

    def recording_act(agent, obs, deterministic=False):
        out = real_act(agent, obs, deterministic=deterministic)
        proposed.append(np.asarray(out, np.float32).reshape(-1))
        return out

    monkeypatch.setattr(SAC, "act", recording_act)
    ft = config(tmp_path, tmp_path / "sim", task="reach", episodes=1, batch_size=4, wait_for_scores_s=0.0)
    assert finetune.main(dataclasses.replace(ft, store_action="policy")) == 0
    buf = stored_buffer(tmp_path / "ft")
    stored = buf.storage.read("action", np.arange(buf.num_transitions))
    buf.close()
    assert len(stored) == 6 and len(proposed) >= 6
    assert stored == pytest.approx(np.clip(np.array(proposed[:6]), -1.0, 1.0), abs=1e-6)
    proposed.clear()  # the same run storing what was sent: the same proposals, the safety layer's clips show
    assert finetune.main(dataclasses.replace(ft, out_dir=tmp_path / "ft-sent")) == 0
    buf = stored_buffer(tmp_path / "ft-sent")
    sent = buf.storage.read("action", np.arange(buf.num_transitions))
    buf.close()
    assert np.array(proposed[:6]) == pytest.approx(stored, abs=1e-6)
    assert np.abs(sent - stored).max() > 0.05
    operator_takes_over_holding_w(monkeypatch)  # takeovers: what was sent, whatever store_action says
    assert finetune.main(dataclasses.replace(ft, store_action="policy", out_dir=tmp_path / "ft2")) == 0
    buf = stored_buffer(tmp_path / "ft2")
    stored = buf.storage.read("action", np.arange(buf.num_transitions))
    buf.close()
    assert stored[:, 1] == pytest.approx(np.full(6, 2.0 / 8.0), abs=1e-5)


def scripted(tmp_path, run, **overrides):
    """finetune on twin reach with the scripted operator: the (untrained) policy stalls for 3 steps under its
    0.5 m bar, the expert takes over and reaches the target, the operator presses success."""
    from sim.config import ScriptedOperatorConfig

    operator = ScriptedOperatorConfig(
        stall_steps=3, stall_m=0.5, takeover_steps=30, budget_steps=30,
        workspace_min_m=(-1.0, -1.0, -1.0), workspace_max_m=(1.0, 1.0, 1.0),  # no drift: the stall decides
    )  # fmt: skip
    base = dict(task="reach", operator="scripted", scripted_operator=operator, wait_for_scores_s=0.0)
    cfg = config(tmp_path, run, batch_size=4, **(base | overrides))
    return dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, max_episode_steps=40))


def test_the_scripted_operators_keys_and_takeovers_reach_the_buffer_and_the_learner(
    tmp_path, monkeypatch, capsys
):
    """Its success key is the episode's only reward (the twin's status is never read), its takeovers are stored
    as a person's (intervention flag, the expert's targets as sent), and the updates learn from both."""
    run, _ = sim_run(tmp_path, task="reach")
    batches = []
    real_update = SAC.update

    def recording_update(agent, batch):
        batches.append((batch.action.copy(), batch.reward.copy()))
        return real_update(agent, batch)

    monkeypatch.setattr(SAC, "update", recording_update)
    assert finetune.main(scripted(tmp_path, run)) == 0
    out = tmp_path / "ft"
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    signals = [json.loads(line) for line in (out / "operator.jsonl").read_text().splitlines()]
    buf = stored_buffer(out)
    rows = 0
    for line, log in zip(lines, signals):
        n = line["steps"]
        assert line["success"] and line["keys/success"] == 1 and line["takeovers"] == 1
        assert [(s["step"], s["key"]) for s in log["signals"]] == [(3, "takeover"), (n - 1, "success")]
        assert "moved under 0.5 m in 3 steps" in log["signals"][0]["reason"]
        assert log["intervention_steps"] == line["interventions"] == n - 3
        steps, infos = rows + np.arange(n), rows + 1 + np.arange(n)  # a step's info is on its next row
        flags = buf.storage.read("info/intervention", infos)
        assert flags == pytest.approx([0.0] * 3 + [1.0] * (n - 3))
        reward = buf.storage.read("reward", steps)
        assert reward == pytest.approx([0.0] * (n - 1) + [1.0])  # the key's step, and only it
        assert buf.storage.read("terminated", steps).tolist() == [False] * (n - 1) + [True]
        success = buf.storage.read("info/success", infos)
        assert success == pytest.approx(
            [0.0] * (n - 1) + [1.0]
        )  # not at the twin's own success, a step earlier
        rows += n + 1  # the final observation's row
    buf.close()
    # The takeovers' actions are the expert's absolute targets as the arm was sent them, and the updates
    # sample them and the key's reward.
    actions, mask = stored_actions(out)
    sampled = np.concatenate([a for a, _ in batches])
    taken = [np.isclose(actions[mask], row, atol=1e-5).all(axis=-1).any() for row in sampled]
    assert any(taken)
    assert lines[1]["updates"] > 0 and any((r == 1.0).any() for _, r in batches)
    # One line per episode for the person at the arm; the report says where the reward came from.
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("finetune: episode")]
    assert len(printed) == 2 and "success, return 1.00" in printed[0] and "in 1 takeover," in printed[0]
    report = (out / "report.md").read_text()
    assert (
        "reward: the operator's keys (success: 1, terminal) only: the sim run's scorer is the oracle"
        in report
    )
    assert "operator: scripted" in report and (out / "success_vs_robot_minutes.png").stat().st_size > 0
    minutes = [line["robot_minutes"] for line in lines]
    assert minutes == pytest.approx(np.cumsum([line["steps"] for line in lines]) / 20.0 / 60.0)


def stored_actions(out_dir):
    """(actions, intervention mask) of every transition finetune stored in ``out_dir``."""
    buf = stored_buffer(out_dir)
    try:
        actions, mask = [], []
        for episode in range(buf.num_episodes):
            start, end = buf.episode_rows(episode)
            idx = np.arange(start, end - 1)
            actions.append(buf.storage.read("action", idx))
            mask.append(buf.storage.read("info/intervention", idx + 1) > 0.5)  # a step's info: next row
    finally:
        buf.close()
    return np.concatenate(actions), np.concatenate(mask)


def test_the_reward_never_comes_from_privileged_progress_and_the_report_says_where_it_comes_from(
    tmp_path, monkeypatch
):
    """The sim run's oracle is dropped (keys only), ``--scorer scorer:oracle`` is refused in one line, a pixel
    scorer adds its aux reward; the env never reads the twin's task status."""
    run, _ = sim_run(tmp_path)
    base = config(tmp_path, run)
    train = trained_run.load_sim_run(run)["config"]
    scorer, words = trained_run.reward_scorer(base, train)
    assert scorer is None and "only: the sim run's scorer is the oracle" in words
    assert trained_run.reward_scorer(dataclasses.replace(base, scorer="none"), train) == (
        None, "the operator's keys (success: 1, terminal) only (--scorer none)",
    )  # fmt: skip
    learned, words = trained_run.reward_scorer(
        dataclasses.replace(base, scorer=learned_scorer(tmp_path)), train
    )
    assert learned.kind == "learned" and words.endswith(
        "+ 0.5 x the aux reward of --scorer (learned) on the clips' pixels"
    )
    with pytest.raises(
        ConfigError, match=r"--scorer 'scorer:oracle' reads the simulator's privileged progress"
    ):
        finetune.main(dataclasses.replace(base, scorer="scorer:oracle"))
    with pytest.raises(ConfigError, match="--operator scripted watches the twin's task"):
        finetune.main(dataclasses.replace(base, operator="scripted", robot=ArmConfig(type="so101_follower")))
    assert not (tmp_path / "ft").exists()
    made = {}

    def spying(*args, **kwargs):
        made.update(kwargs)
        return robot_env.make_robot_env(*args, **kwargs)

    monkeypatch.setattr(robot_arms, "make_robot_env", spying)
    assert finetune.main(dataclasses.replace(base, episodes=1, scorer="none")) == 0
    assert made["privileged_status"] is False and made["warn_clips"] is False
    report = (tmp_path / "ft" / "report.md").read_text()
    assert "- reward: the operator's keys (success: 1, terminal) only (--scorer none)" in report
    buf = stored_buffer(tmp_path / "ft")
    assert not any(c.startswith(("scores/", "aux_reward/")) for c in buf.storage.columns())
    buf.close()


def test_finetune_episodes_are_as_long_as_the_sim_runs_unless_given(tmp_path):
    run, _ = sim_run(tmp_path, max_episode_steps=4)
    cfg = config(tmp_path, run, episodes=1, scorer="none")
    cfg = dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, max_episode_steps=None))
    assert finetune.main(cfg) == 0
    line = json.loads((tmp_path / "ft" / "metrics.jsonl").read_text())
    assert line["steps"] == 4 and line["robot_minutes"] == pytest.approx(4 / 20 / 60)
    # --robot-minutes stops a resumed run once the whole run has spent them (here 2 more 4-step episodes)
    more = dataclasses.replace(cfg, resume=True, episodes=50, robot_minutes=12 / 20 / 60)
    assert finetune.main(more) == 0
    lines = (tmp_path / "ft" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["episode"] for line in lines] == [0, 1, 2]
    with pytest.raises(ConfigError, match="--robot-minutes 0"):
        finetune.main(dataclasses.replace(more, robot_minutes=0.0))


def test_a_fresh_agent_has_the_sim_runs_networks_and_not_its_weights(tmp_path, capsys):
    """--fresh-agent (training from scratch on the arm): the agent the sim run's config builds, newly
    initialised; without it the run's trained weights. No updates here (learning never starts), so the exported
    policy is the agent the run started from."""
    run, trained = sim_run(tmp_path)
    with torch.no_grad():  # the sim run's weights are not what a new agent of its config starts with
        for param in trained.actor.parameters():
            param.add_(0.5)
    state = torch.load(run / "checkpoint" / "state.pt", weights_only=False)
    torch.save({**state, "agent": trained.state_dict()}, run / "checkpoint" / "state.pt")
    obs = {k: np.full(s, 0.3, d) for k, (s, d) in ROBOT_OBS.items()}
    env = make_env(SimConfig(task="lift", cameras=("front",), image_size=32))
    new = SAC(SACConfig(hidden_dims=(32, 32)), ROBOT_OBS, env.action_space)
    env.close()
    started = {}
    for fresh in (False, True):
        out = tmp_path / f"ft-fresh-{fresh}"
        cfg = config(tmp_path, run, out_dir=out, episodes=1, learning_starts=10_000, fresh_agent=fresh)
        assert finetune.main(cfg) == 0
        started[fresh] = load_policy(out / "policy.pt")(obs)
        assert json.loads((out / "config.json").read_text())["fresh_agent"] is fresh
    assert started[False] == pytest.approx(trained.act(obs, deterministic=True), abs=1e-5)
    assert started[True] == pytest.approx(new.act(obs, deterministic=True), abs=1e-5)
    assert not np.allclose(started[True], started[False], atol=1e-3)
    assert (
        "(its networks, freshly initialised: --fresh-agent)"
        in (tmp_path / "ft-fresh-True" / "report.md").read_text()
    )
    assert "a fresh agent with the networks of" in capsys.readouterr().out


def test_prior_data_from_demonstrations_on_the_arm_is_half_of_each_batch_and_cloned(
    tmp_path, monkeypatch, capsys
):
    """The scripted operator demonstrates (the expert drives whole episodes); a second run takes that buffer
    as ``--prior-data``: its episodes come first in the new buffer, marked as the prior part of every batch
    (cloned at the sim run's bc_weight), they cost no robot minutes, and a resume does not add them again."""
    from sim.config import ScriptedOperatorConfig

    run, _ = sim_run(tmp_path, task="reach")
    demo = ScriptedOperatorConfig(demonstrate=True, takeover_steps=40, budget_steps=40, give_up=False)
    assert finetune.main(scripted(tmp_path, run, scripted_operator=demo, out_dir=tmp_path / "demos")) == 0
    demos = [json.loads(line) for line in (tmp_path / "demos" / "metrics.jsonl").read_text().splitlines()]
    assert all(d["interventions"] == d["steps"] for d in demos)  # the expert drove every step
    demo_steps = sum(d["steps"] for d in demos)
    prior_flags = []
    real_update = SAC.update

    def recording_update(agent, batch):
        prior_flags.append(np.asarray(batch.prior, bool).copy())
        return real_update(agent, batch)

    monkeypatch.setattr(SAC, "update", recording_update)
    ft = scripted(tmp_path, run, prior_data=tmp_path / "demos" / "buffer.zarr", episodes=2)
    assert finetune.main(ft) == 0
    assert f"2 episodes ({demo_steps} steps) of prior data" in capsys.readouterr().out
    lines = [json.loads(line) for line in (tmp_path / "ft" / "metrics.jsonl").read_text().splitlines()]
    own = sum(line["steps"] for line in lines)
    assert lines[-1]["robot_minutes"] == pytest.approx(own / 20.0 / 60.0)  # the prior data is not robot time
    buf = stored_buffer(tmp_path / "ft")
    first = buf.storage.read("action", np.arange(demo_steps + 2))
    assert buf.num_transitions == demo_steps + own
    buf.close()
    demo_buf = stored_buffer(tmp_path / "demos")
    assert first == pytest.approx(demo_buf.storage.read("action", np.arange(demo_steps + 2)))
    demo_buf.close()
    share = np.concatenate(prior_flags).mean()
    assert prior_flags and 0.3 < share < 0.7  # half of each batch (4 rows), drawn from the prior part
    assert finetune.main(dataclasses.replace(ft, resume=True, episodes=1)) == 0
    buf = stored_buffer(tmp_path / "ft")
    assert buf.storage.episodes().count == 2 + len(lines) + 1  # the prior episodes once, not again
    buf.close()


def test_takeovers_join_the_prior_part_with_prior_info_key(tmp_path, monkeypatch):
    """``--buffer.prior-info-key intervention``: the steps the scripted operator took over go into the prior
    part of every batch beside the demonstrations (HIL-SERL's demonstration buffer); the policy's own steps
    stay online. Without prior data there is no prior part to join: refused in one line."""
    from sim.config import ScriptedOperatorConfig

    run, _ = sim_run(tmp_path, task="reach")
    demo = ScriptedOperatorConfig(demonstrate=True, takeover_steps=40, budget_steps=40, give_up=False)
    assert finetune.main(scripted(tmp_path, run, scripted_operator=demo, out_dir=tmp_path / "demos")) == 0
    demo_steps = sum(
        json.loads(line)["steps"] for line in (tmp_path / "demos" / "metrics.jsonl").read_text().splitlines()
    )
    sampled = []
    real_update = SAC.update

    def recording_update(agent, batch):
        sampled.append((np.asarray(batch.indices).copy(), np.asarray(batch.prior, bool).copy()))
        return real_update(agent, batch)

    monkeypatch.setattr(SAC, "update", recording_update)
    ft = scripted(tmp_path, run, prior_data=tmp_path / "demos" / "buffer.zarr", episodes=3)
    ft = dataclasses.replace(ft, buffer=dataclasses.replace(ft.buffer, prior_info_key="intervention"))
    assert finetune.main(ft) == 0
    lines = [json.loads(line) for line in (tmp_path / "ft" / "metrics.jsonl").read_text().splitlines()]
    assert sum(line["interventions"] for line in lines) > 0  # the untrained policy stalled: takeovers
    rows = np.concatenate([r for r, _ in sampled])
    prior = np.concatenate([p for _, p in sampled])
    buf = stored_buffer(tmp_path / "ft")
    took_over = buf.storage.read("info/intervention", rows + 1).reshape(-1) > 0
    buf.close()
    own = rows >= demo_steps + 2  # past the two prior episodes' rows (each ends with its last observation)
    assert (prior == (~own | took_over)).all()  # a robot row is prior exactly when the operator drove it
    assert (prior & own).any() and (~prior & own).any()
    with pytest.raises(ConfigError, match=r"--buffer\.prior-info-key intervention: .* needs --prior-data"):
        finetune.main(dataclasses.replace(ft, prior_data=None, out_dir=tmp_path / "ft2"))
    assert not (tmp_path / "ft2").exists()


def test_prior_data_that_does_not_fit_the_arm_is_refused_in_one_line(tmp_path):
    run, _ = sim_run(tmp_path, task="reach")
    with pytest.raises(ConfigError, match=r"--prior-data .*nowhere: no such store"):
        finetune.main(scripted(tmp_path, run, prior_data=tmp_path / "nowhere"))
    with pytest.raises(ConfigError, match=r"--prior-share 1\.5: expected a share in"):
        finetune.main(scripted(tmp_path, run, prior_share=1.5))
    assert not (tmp_path / "ft").exists()


def test_actor_lr_and_bc_weight_are_the_runs_own_after_the_sim_runs_optimiser_is_loaded(tmp_path):
    run, _ = sim_run(tmp_path)
    assert finetune.main(config(tmp_path, run, actor_lr=1e-5, bc_weight=2.0)) == 0
    state = torch.load(tmp_path / "ft" / "checkpoint" / "state.pt", weights_only=False)
    groups = state["agent"]["optimizer"]["param_groups"]
    assert groups[0]["lr"] == pytest.approx(1e-5) and groups[1]["lr"] == pytest.approx(3e-4)
    with pytest.raises(ConfigError, match="actor learning rate -1: expected a positive number"):
        finetune.main(config(tmp_path, run, actor_lr=-1.0, out_dir=tmp_path / "ft2"))


def test_a_recording_of_joint_targets_is_prior_data_for_a_joint_delta_policy(tmp_path):
    """`vlmrl record` stores the joint targets sent; a joint-delta policy's --prior-data stores each step's
    change of target over the policy's scale (from the measured joints at the first step), clipped to
    [-1, 1], the recording's missing takeover flags as zeros, and the arm's state where the twin's
    recording stored the sim's."""
    from tests.vlmrl.pipeline_helpers import record_config
    from vlmrl.pipelines import record

    assert record.main(record_config(tmp_path, task="reach", env=dataclasses.replace(
        record_config(tmp_path).env, max_episode_steps=6))) == 0  # fmt: skip
    rec = stored_recording(tmp_path / "rec" / "episodes.zarr")
    train_tiny_reach(tmp_path, SACConfig(hidden_dims=(16, 16)), 8, action_mode="delta")
    ft = config(tmp_path, tmp_path / "sim", task="reach", episodes=1, batch_size=4, wait_for_scores_s=0.0)
    assert finetune.main(dataclasses.replace(ft, prior_data=tmp_path / "rec" / "episodes.zarr")) == 0
    buf = stored_buffer(tmp_path / "ft")
    steps = len(rec["action"])
    stored = buf.storage.read("action", np.arange(steps))
    flags = buf.storage.read("info/intervention", np.arange(steps + 1))
    state = buf.storage.read("state", np.arange(steps + 1))  # the arm's joint vector, not the sim's state
    buf.close()
    assert state == pytest.approx(rec["joints"], abs=1e-5)
    scale = np.array([8.0] * 5 + [25.0])  # the tiny run's max_delta_deg, max_delta_gripper
    previous = np.vstack([rec["joints"][:1], rec["action"][:-1]])
    expected = np.clip((rec["action"] - previous) / scale, -1.0, 1.0)
    assert stored == pytest.approx(expected, abs=1e-5)
    assert np.abs(stored).max() > 0.05 and flags == pytest.approx(np.zeros(steps + 1))


def stored_recording(path):
    """The first episode of a `vlmrl record` store: its actions (joint targets) and measured joints."""
    from buffer.io import open_recorded
    from buffer.metadata import read_store_metadata

    meta = read_store_metadata(path)
    buf = open_recorded(
        BufferConfig(storage="zarr", capacity_steps=meta.capacity), meta.obs_spec, meta.action_dim,
        meta.info_keys, str(path),
    )  # fmt: skip
    try:
        start, end = buf.episode_rows(0)
        keys = meta.record["action_keys"]
        joints = np.stack([buf.storage.read(k, np.arange(start, end)).reshape(-1) for k in keys], axis=1)
        return {"action": buf.storage.read("action", np.arange(start, end - 1)), "joints": joints}
    finally:
        buf.close()


def test_an_end_effector_run_is_fine_tuned_storing_the_moves_the_arm_was_sent(tmp_path, monkeypatch):
    """Issue #32: an ee_delta policy's actions go to the arm through the twin's kinematics (as deploy runs
    them) and the buffer holds what was sent as the agent's 5 values: the policy's own steps, an operator's
    takeover, and a recording of joint targets given as prior data."""
    from robot.lerobot_env import LeRobotEnv
    from tests.vlmrl.pipeline_helpers import record_config
    from vlmrl.loop.arm_actions import EndEffectorDeltas
    from vlmrl.pipelines import record

    train_tiny_reach(tmp_path, SACConfig(hidden_dims=(16, 16)), 8, action_mode="ee_delta")
    convert = EndEffectorDeltas(
        0.02, 8.0, 25.0
    )  # the tiny run's max_delta_m, max_delta_deg, max_delta_gripper
    applied = []
    real_step = LeRobotEnv.step

    def recording_step(env, action):
        previous = env.last_sent()
        out = real_step(env, action)
        applied.append(convert.to_agent(env.action_keys, out[4]["sent_action"], previous))
        return out

    monkeypatch.setattr(LeRobotEnv, "step", recording_step)
    ft = config(tmp_path, tmp_path / "sim", task="reach", episodes=1, batch_size=4, wait_for_scores_s=0.0)
    assert finetune.main(ft) == 0
    buf = stored_buffer(tmp_path / "ft")
    assert buf.storage.specs["action"].shape == (5,)
    stored = buf.storage.read("action", np.arange(buf.num_transitions))
    buf.close()
    assert len(stored) == len(applied) == 6
    assert np.all(np.abs(stored) <= 1.0) and np.abs(stored).max() > 0
    assert stored == pytest.approx(np.array(applied), abs=1e-5)
    assert load_policy(tmp_path / "ft" / "policy.pt").run["action_mode"] == "ee_delta"  # deploy runs it so
    # an operator's takeover (the jog: +2 degrees of shoulder lift a step) is stored as the tool's move
    operator_takes_over_holding_w(monkeypatch)
    applied.clear()
    assert finetune.main(dataclasses.replace(ft, out_dir=tmp_path / "ft2")) == 0
    buf = stored_buffer(tmp_path / "ft2")
    stored = buf.storage.read("action", np.arange(buf.num_transitions))
    buf.close()
    assert stored == pytest.approx(np.array(applied), abs=1e-5)
    assert np.linalg.norm(stored[:, :3], axis=1).min() > 0.1 and stored[:, 3:] == pytest.approx(
        np.zeros((6, 2))
    )
    # a recording of joint targets as prior data: each step's move from the previous target
    monkeypatch.undo()
    assert record.main(record_config(tmp_path, task="reach", env=dataclasses.replace(
        record_config(tmp_path).env, max_episode_steps=6))) == 0  # fmt: skip
    rec = stored_recording(tmp_path / "rec" / "episodes.zarr")
    prior = dataclasses.replace(ft, out_dir=tmp_path / "ft3", prior_data=tmp_path / "rec" / "episodes.zarr")
    assert finetune.main(prior) == 0
    buf = stored_buffer(tmp_path / "ft3")
    steps = len(rec["action"])
    stored = buf.storage.read("action", np.arange(steps))
    buf.close()
    keys = list(SO101_JOINT_KEYS)
    previous = np.vstack([rec["joints"][:1], rec["action"][:-1]])
    expected = [
        convert.to_agent(keys, now, before) for now, before in zip(rec["action"], previous, strict=True)
    ]
    assert stored == pytest.approx(np.array(expected), abs=1e-5)
    assert np.abs(stored).max() > 0.05


def test_best_policy_is_kept_where_the_policys_own_successes_peak(tmp_path, monkeypatch):
    """``--best-window N``: best_policy.pt is the policy after the episode ending the best run of N episodes by
    the policy's own successes (the success key on episodes without a takeover), recorded in best_policy.json;
    a later worse run leaves it, and a resumed run goes on from its record."""
    from vlmrl.arm import finetune_report

    out = tmp_path / "ft"
    out.mkdir()
    rows = [(True, 0), (True, 2), (False, 0), (True, 0), (True, 0), (False, 0), (False, 1), (False, 0)]
    kept = []
    for episode, (success, takeovers) in enumerate(rows):
        stats = {
            "episode": episode,
            "robot_minutes": episode / 10,
            "success": success,
            "takeovers": takeovers,
        }
        with (out / "metrics.jsonl").open("a") as f:
            f.write(json.dumps(stats) + "\n")
        rate = finetune_report.better_policy(out, 3)
        if rate is not None:
            finetune_report.record_best(out, rate, 3, stats)
            kept.append((episode, rate))
    # episodes 0-2: one own success (episode 1 was taken over); 2-4: two; nothing later beats two of three
    assert kept == [(2, pytest.approx(1 / 3)), (4, pytest.approx(2 / 3))]
    record = json.loads((out / "best_policy.json").read_text())
    assert record == {
        "episode": 4,
        "robot_minutes": 0.4,
        "own_success_rate": pytest.approx(2 / 3),
        "window": 3,
    }
    assert finetune_report.own_success_rate(out, 20) is None  # fewer episodes than the window
    # a real run: the operator presses success at every episode's end, no takeovers -> best_policy.pt
    from robot import teleop

    real_keys = teleop.OperatorKeys

    class SuccessAtTheEnd(real_keys):
        def poll(self):
            return ["success"]

    monkeypatch.setattr(robot_arms, "OperatorKeys", lambda listen=True: SuccessAtTheEnd(listen=False))
    train_tiny_reach(tmp_path, SACConfig(hidden_dims=(16, 16)), 8)
    ft = config(tmp_path, tmp_path / "sim", task="reach", episodes=3, batch_size=4, wait_for_scores_s=0.0)
    assert finetune.main(dataclasses.replace(ft, out_dir=tmp_path / "ft2", best_window=2)) == 0
    assert (tmp_path / "ft2" / "best_policy.pt").is_file()
    assert json.loads((tmp_path / "ft2" / "best_policy.json").read_text())["episode"] == 1  # 2 of 2 at once
    assert load_policy(tmp_path / "ft2" / "best_policy.pt").run["task"] == "reach"
    with pytest.raises(ConfigError, match=r"--best-window -1: expected a number of episodes"):
        finetune.main(dataclasses.replace(ft, out_dir=tmp_path / "ft3", best_window=-1))


def test_the_actors_rate_falls_over_robot_minutes_to_its_final_fraction_and_stays(tmp_path):
    """``--actor-lr-final-fraction``: each episode's updates run at the rate the robot minutes before it give."""
    run, _ = sim_run(tmp_path)
    minutes = 12 / 200 / 60  # two episodes of 6 steps at 200 Hz
    ft = config(tmp_path, run, episodes=4, actor_lr=1e-4, actor_lr_final_fraction=0.1,
                actor_lr_decay_minutes=minutes, wait_for_scores_s=0.0)  # fmt: skip
    assert finetune.main(ft) == 0
    rows = [json.loads(line) for line in (tmp_path / "ft" / "metrics.jsonl").read_text().splitlines()]
    before = [0.0] + [row["robot_minutes"] for row in rows[:-1]]
    expected = [1e-4 * (1 - 0.9 * min(spent / minutes, 1.0)) for spent in before]
    np.testing.assert_allclose([row["actor_lr"] for row in rows], expected, rtol=1e-6)
    assert rows[0]["actor_lr"] == pytest.approx(1e-4) and rows[-1]["actor_lr"] == pytest.approx(1e-5)
    state = torch.load(tmp_path / "ft" / "checkpoint" / "state.pt", weights_only=False)
    groups = state["agent"]["optimizer"]["param_groups"]
    assert groups[0]["lr"] == pytest.approx(1e-5) and groups[1]["lr"] == pytest.approx(
        3e-4
    )  # critics keep theirs
    resumed = dataclasses.replace(ft, resume=True, episodes=1)  # a resume goes on from the minutes spent
    assert finetune.main(resumed) == 0
    last = json.loads((tmp_path / "ft" / "metrics.jsonl").read_text().splitlines()[-1])
    assert last["actor_lr"] == pytest.approx(1e-5)


@pytest.mark.parametrize(
    "fraction, minutes, message",
    [(0.0, 5.0, r"--actor-lr-final-fraction 0: expected a fraction"),
     (0.1, 0.0, r"--actor-lr-decay-minutes 0: expected a positive number of robot minutes")],
)  # fmt: skip
def test_a_bad_actor_rate_schedule_is_a_one_line_error(tmp_path, fraction, minutes, message):
    run, _ = sim_run(tmp_path)
    with pytest.raises(ConfigError, match=message):
        finetune.main(config(tmp_path, run, actor_lr_final_fraction=fraction, actor_lr_decay_minutes=minutes))
    assert not (tmp_path / "ft").exists()


def test_a_buffer_that_fills_and_evicts_the_prior_data_says_so_once(tmp_path, capsys):
    """The ring evicts the oldest episodes, the demonstrations first: the run says so in one line, once."""
    from sim.config import ScriptedOperatorConfig

    run, _ = sim_run(tmp_path, task="reach")
    demo = ScriptedOperatorConfig(demonstrate=True, takeover_steps=40, budget_steps=40, give_up=False)
    assert finetune.main(scripted(tmp_path, run, scripted_operator=demo, out_dir=tmp_path / "demos")) == 0
    demo_rows = sum(
        json.loads(line)["steps"] + 1
        for line in (tmp_path / "demos" / "metrics.jsonl").read_text().splitlines()
    )
    ft = scripted(tmp_path, run, prior_data=tmp_path / "demos" / "buffer.zarr", episodes=4)
    small = dataclasses.replace(ft.buffer, capacity_steps=demo_rows + 5)  # no room for a robot episode
    capsys.readouterr()
    assert finetune.main(dataclasses.replace(ft, buffer=small)) == 0
    out = capsys.readouterr().out
    assert out.count("finetune: warning: the buffer is full") == 1 and "--prior-data's first" in out
    # ... and says so before the first episode, with the size that would keep them
    ahead = [line for line in out.splitlines() if "plans do not fit" in line]
    assert len(ahead) == 1 and f"--prior-data's {demo_rows} rows" in ahead[0]
    assert out.index(ahead[0]) < out.index("the buffer is full")
    wanted = int(ahead[0].split("--buffer.capacity-steps ")[1].split()[0])
    assert wanted > demo_rows + 5
    roomy = dataclasses.replace(ft, out_dir=tmp_path / "ft2", episodes=1)  # 50,000 rows: nothing evicted
    out = capsys.readouterr().out if finetune.main(roomy) == 0 else "failed"
    assert "the buffer is full" not in out and "plans do not fit" not in out
    sized = dataclasses.replace(
        ft, out_dir=tmp_path / "ft3", buffer=dataclasses.replace(small, capacity_steps=wanted)
    )
    out = capsys.readouterr().out if finetune.main(sized) == 0 else "failed"
    assert (
        "the buffer is full" not in out and "plans do not fit" not in out
    )  # the size it asked for is enough
