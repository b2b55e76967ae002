"""vlmrl record end to end on the twin: scripted expert and keyboard jogging -> zarr -> LeRobotDataset -> score."""

import json

import numpy as np
import pytest
import zarr

from buffer import BufferError
from buffer.io import LeRobotReader
from robot.config import SO101_JOINT_KEYS, LeRobotEnvConfig, WatchdogConfig
from tests.vlmrl.pipeline_helpers import record_config as config
from vlm.config import OracleConfig
from vlmrl.errors import ConfigError
from vlmrl.pipelines import record, score


def test_scripted_demonstrations_go_to_zarr_and_lerobot_and_can_be_scored(tmp_path):
    assert record.main(config(tmp_path)) == 0
    store = tmp_path / "rec" / "episodes.zarr"
    attrs = zarr.open_group(str(store), mode="r").attrs.asdict()
    assert attrs["vlmrl_record"]["action_keys"] == list(SO101_JOINT_KEYS)
    assert "red cube" in attrs["vlmrl_record"]["task_description"]
    episodes = list(LeRobotReader(tmp_path / "rec" / "lerobot").episodes())
    assert [e.index for e in episodes] == [0, 1] and [e.length for e in episodes] == [
        11,
        11,
    ]  # 10 steps + final
    actions = episodes[0].columns["action"]
    assert actions.shape == (11, 6) and np.ptp(actions[:10, 1]) > 1.0  # the expert moved the shoulder
    assert episodes[1].columns["observation.images.front"].shape == (11, 32, 32, 3)
    assert "info.progress" in episodes[0].columns
    # A second run appends to the store; the export is rebuilt with every episode.
    assert record.main(config(tmp_path, episodes=1, seed=5)) == 0
    assert [e.index for e in LeRobotReader(tmp_path / "rec" / "lerobot").episodes()] == [0, 1, 2]
    assert json.loads((tmp_path / "rec" / "config.json").read_text())["source"] == "scripted"
    # The export scores with the oracle (progress was exported beside the frames).
    out = tmp_path / "report"
    assert (
        score.main(score.Config(episodes=tmp_path / "rec" / "lerobot", scorer=OracleConfig(), out_dir=out))
        == 0
    )
    summary = json.loads((out / "summary.json").read_text())
    assert [r["steps"] for r in summary["episodes"]] == [10, 10, 10]
    assert "red cube" in summary["prompt"]


def test_keyboard_jogging_drives_the_twin_and_records_what_was_sent(tmp_path, monkeypatch):
    from robot import teleop

    real_jog = teleop.KeyboardJog
    jogs = []

    def held_w(keys, step, listen=True):
        jog = real_jog(keys, step, listen=False)
        jog.press("w")  # shoulder_lift up for the whole episode
        jogs.append(jog)
        return jog

    monkeypatch.setattr(record, "KeyboardJog", held_w)  # as the verb opens it
    assert record.main(config(tmp_path, source="keyboard", episodes=1, export_lerobot=False)) == 0
    from buffer import BufferConfig, make_buffer

    meta = zarr.open_group(str(tmp_path / "rec" / "episodes.zarr"), mode="r").attrs.asdict()["vlmrl_buffer"]
    spec = {k: (tuple(s), np.dtype(d)) for k, (s, d) in meta["env"]["obs_spec"].items()}
    buf = make_buffer(
        BufferConfig(storage="zarr", capacity_steps=meta["capacity"]),
        spec,
        6,
        ("success", "progress"),
        path=str(tmp_path / "rec" / "episodes.zarr"),
    )
    lift = buf.storage.read("action", np.arange(0, 10))[:, 1]
    buf.close()
    assert np.diff(lift) == pytest.approx(np.full(9, 2.0))  # 2 deg per step, as jogged
    assert len(jogs) == 1


def test_bad_sources_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="needs --policy"):
        record.main(config(tmp_path, source="policy"))


def test_a_policy_can_drive_the_recording(tmp_path):
    from agents.config import SACConfig
    from agents.export import export_policy
    from agents.sac import SAC
    from sim import SimConfig, make_env

    env = make_env(SimConfig(task="lift", cameras=()))
    spec = {"pixels/front": ((32, 32, 3), np.dtype(np.uint8))} | {
        k: ((1,), np.dtype(np.float32)) for k in SO101_JOINT_KEYS
    }
    policy = export_policy(SAC(SACConfig(hidden_dims=(16, 16)), spec, env.action_space), tmp_path / "p.pt")
    env.close()
    cfg = config(tmp_path, source="policy", policy=policy, episodes=1, export_lerobot=False)
    assert record.main(cfg) == 0
    meta = zarr.open_group(str(tmp_path / "rec" / "episodes.zarr"), mode="r").attrs.asdict()
    assert meta["vlmrl_buffer"]["env"]["action_dim"] == 6
    assert meta["vlmrl_record"]["robot_type"] == "sim_so101"
    assert meta["commit"]["num_episodes"] == 1


def tree(root):
    """path -> bytes of every file under root (what a failed run must leave as it was)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def flip_frame_byte(store, row):
    """Corrupt the frame of ring row `row` (structure intact: found when the frame is read)."""
    n = json.loads((store / "zarr.json").read_text())["attributes"]["vlmrl_buffer"]["frames_per_shard"]
    path = store / "pixels" / "front" / "c" / str(row // n) / "0" / "0" / "0"
    data = bytearray(path.read_bytes())
    index = np.frombuffer(bytes(data[: 16 * n]), "<u8").reshape(n, 2)
    data[int(index[row % n, 0]) + 5] ^= 0xFF
    path.write_bytes(bytes(data))


def test_export_failure_keeps_the_new_episode_says_so_and_leaves_no_tmp_and_skip_corrupt(tmp_path, capfd):
    """Issue 15 items 6 and 7: a failed export left lerobot.tmp and did not say the episode was kept;
    the encoder's banner flooded the terminal; the final count did not say what the store holds."""
    assert record.main(config(tmp_path)) == 0
    out, err = capfd.readouterr()
    assert "Svt[info]" not in out + err and "moov atom" not in out + err  # encoder logs kept quiet
    assert "record: 2 new episode(s) ->" in out and "which holds 2 episode(s)" in out
    rec = tmp_path / "rec"
    exported = tree(rec / "lerobot")
    flip_frame_byte(rec / "episodes.zarr", 3)  # episode 0, step 3

    with pytest.raises(BufferError, match=r"row 3 \(episode 0, step 3\) is corrupt .*--skip-corrupt leaves"):
        record.main(config(tmp_path, episodes=1, seed=5))
    out = capfd.readouterr().out
    assert (
        "record: 1 new episode(s) ->" in out and "which holds 3 episode(s); the LeRobot export failed" in out
    )
    assert not (rec / "lerobot.tmp").exists() and tree(rec / "lerobot") == exported

    assert record.main(config(tmp_path, episodes=1, seed=6, skip_corrupt=True)) == 0
    out = capfd.readouterr().out
    assert "export: 1 episode(s) skipped [0]" in out and "which holds 4 episode(s)" in out
    episodes = list(LeRobotReader(rec / "lerobot").episodes())
    assert len(episodes) == 3  # episodes 1, 2, 3 of the store; 0 left out
    info = json.loads((rec / "lerobot" / "meta" / "info.json").read_text())
    assert info["robot_type"] == "sim_so101" and info["features"]["action"]["names"] == list(SO101_JOINT_KEYS)


def test_a_run_failing_on_bad_input_leaves_the_previous_run_untouched(tmp_path):
    """Issue 15 item 6: a failed command overwrote config.json and left safety.jsonl behind."""
    fresh = tmp_path / "fresh"
    with pytest.raises(ConfigError, match="needs --policy"):
        record.main(config(tmp_path, source="policy", out_dir=fresh))
    assert not fresh.exists()

    assert record.main(config(tmp_path, episodes=1, export_lerobot=False)) == 0
    before = tree(tmp_path / "rec")
    # Another image size: the store holds other arrays than this env gives, found after the env is up.
    other_size = LeRobotEnvConfig(
        control_hz=200.0,
        max_episode_steps=10,
        image_size=16,
        reset_settle_steps=1,
        keyboard_estop=False,
        watchdog=WatchdogConfig(enabled=False),
    )
    with pytest.raises(BufferError, match="other arrays"):
        record.main(config(tmp_path, episodes=1, export_lerobot=False, env=other_size, seed=3))
    assert tree(tmp_path / "rec") == before
    # A new directory whose run fails once the env is up (a policy for other frames) is removed again:
    # no stray safety.jsonl, empty store or config.json.
    from agents.config import SACConfig
    from agents.export import export_policy
    from agents.sac import SAC
    from sim import SimConfig, make_env

    env = make_env(SimConfig(task="lift", cameras=()))
    spec = {"pixels/front": ((16, 16, 3), np.dtype(np.uint8))}
    policy = export_policy(SAC(SACConfig(hidden_dims=(8,)), spec, env.action_space), tmp_path / "p.pt")
    env.close()
    elsewhere = tmp_path / "elsewhere"
    with pytest.raises(ConfigError, match=r"reads 'pixels/front' as uint8\[16, 16, 3\]"):
        record.main(config(tmp_path, out_dir=elsewhere, source="policy", policy=policy))
    assert not elsewhere.exists()


def test_the_twin_records_at_its_training_rate_unless_told_otherwise(tmp_path):
    """The guide's `vlmrl record --source scripted` tripped its watchdog at the default 30 Hz on a busy
    2-core machine; the twin's policies train and deploy at SimConfig.control_hz (20 Hz)."""
    from robot.config import ArmConfig
    from sim import SimConfig

    default = config(tmp_path, env=LeRobotEnvConfig(), twin_control_hz=None)
    assert record.twin_rate(default).env.control_hz == SimConfig().control_hz
    chosen = config(tmp_path, env=LeRobotEnvConfig(control_hz=50.0), twin_control_hz=None)
    assert record.twin_rate(chosen).env.control_hz == 50.0
    arm = config(
        tmp_path, env=LeRobotEnvConfig(), twin_control_hz=None, robot=ArmConfig(type="so101_follower")
    )
    assert record.twin_rate(arm).env.control_hz == LeRobotEnvConfig().control_hz


def test_the_watchdog_is_on_for_arms_and_off_for_the_lockstep_twin_unless_asked(tmp_path):
    from robot.watchdog import Watchdog
    from vlmrl.deployment.robot_env import make_robot_env

    assert Watchdog(WatchdogConfig(), period_s=0.05, on_trip=lambda reason: None).enabled  # a real arm
    default = config(tmp_path, env=LeRobotEnvConfig(image_size=32))
    with make_robot_env(default, tmp_path / "a") as env:
        assert not env.watchdog.enabled
    asked = config(tmp_path, env=LeRobotEnvConfig(image_size=32, watchdog=WatchdogConfig(on_twin=True)))
    with make_robot_env(asked, tmp_path / "b") as env:
        assert env.watchdog.enabled


def test_a_watchdog_stop_keeps_and_exports_the_episodes_committed_before_it(tmp_path, monkeypatch, capsys):
    """Episode 2 of 3 stalls past the watchdog's limit: episode 1 stays in the store and the LeRobot export
    (so docs/offline.md's next line, train --offline runs/rec/lerobot, has data), and the stop is reported."""
    import time

    from robot.errors import RobotError

    real_make_driver = record.make_driver

    def stalling(cfg, env):
        propose, on_reset, close = real_make_driver(cfg, env)
        episode, step = [0], [0]

        def slow(obs):
            step[0] += 1
            if episode[0] == 2 and step[0] == 3:
                time.sleep(1.0)  # 20 periods at 20 Hz: the watchdog trips
            return propose(obs)

        def reset():
            episode[0], step[0] = episode[0] + 1, 0
            on_reset()

        return slow, reset, close

    monkeypatch.setattr(record, "make_driver", stalling)
    env = LeRobotEnvConfig(
        control_hz=20.0,
        max_episode_steps=10,
        image_size=32,
        reset_settle_steps=1,
        keyboard_estop=False,
        watchdog=WatchdogConfig(on_twin=True),  # the twin's default is off: a simulated arm cannot go stale
    )
    with pytest.raises(RobotError, match=r"(stale observation|control loop overran).*lower --env.control-hz"):
        record.main(config(tmp_path, env=env, episodes=3))
    assert "1 new episode(s)" in capsys.readouterr().out
    assert [e.index for e in LeRobotReader(tmp_path / "rec" / "lerobot").episodes()] == [0]
