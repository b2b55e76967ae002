"""`vlmrl train --actors N` with real Ray processes: faults (actor SIGKILL, a stopped actor, learner SIGKILL
and --resume) lose no committed episode; without --actors nothing imports Ray."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import zarr

from agents.config import SACConfig
from buffer.config import BufferConfig
from sim.config import SimConfig
from vlmrl.online.config import RayConfig, TrainConfig
from vlmrl.online.trainer import Trainer
from vlmrl.pipelines.train import main

ROOT = Path(__file__).resolve().parents[2]


def tiny_pixels(run_dir: Path, **overrides) -> TrainConfig:
    """10-step episodes of the twin's reach with a 32 px front camera into a zarr buffer, two actors."""
    cfg = TrainConfig(
        sim=SimConfig(task="reach", reward="shaped", action_mode="delta", cameras=("front",), image_size=32,
                      max_episode_steps=10, terminate_on_success=False),
        agent=SACConfig(hidden_dims=(16, 16)),
        buffer=BufferConfig(capacity_steps=4_000, storage="zarr"),
        replay="uniform", total_steps=240, learning_starts=20, batch_size=16, eval_every_steps=100_000,
        eval_episodes=1, video_episodes=0, checkpoint_every_steps=100_000, run_dir=str(run_dir),
        progress=False, actors=2, ray=RayConfig(weights_every_updates=20),
    )  # fmt: skip
    return dataclasses.replace(cfg, **overrides)


def committed(store: Path) -> int:
    """Committed episodes of a zarr store, from its commit record (readable while a writer runs)."""
    return int(json.loads((store / "zarr.json").read_text())["attributes"]["commit"]["num_episodes"])


def episode_rewards(store: Path, n: int) -> list[np.ndarray]:
    """The rewards of episodes 0..n-1 (the store's data, to compare before and after a crash)."""
    group = zarr.open_group(str(store), mode="r")
    ends, reward = group["episode_ends"][:n], group["reward"][:]
    starts = np.concatenate([[0], ends[:-1]])
    return [reward[s:e] for s, e in zip(starts, ends)]


def test_default_train_and_finetune_do_not_import_ray():
    code = (
        "import sys, tyro; from vlmrl import cli; import vlmrl.pipelines.train as t; import vlmrl.online.trainer; "
        "import vlmrl.pipelines.finetune as f; tyro.cli(f.Config, args=['--from', 'run']); "
        "tyro.cli(t.Config, args=['--total-steps', '10']); print('ray' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False", out.stderr


@pytest.mark.slow
def test_killed_and_stopped_actors_are_replaced_and_training_goes_on(tmp_path, ray_address):
    """Actor 1 is stopped (SIGSTOP: a slow actor) and the learner goes on with actor 0; then actor 0 is
    SIGKILLed and Ray restarts it, and the stopped one is killed by the learner's timeout and restarted."""
    import ray

    # A store that never evicts: on a loaded machine the faults take long and the learner goes on meanwhile,
    # and 4,000 steps once dropped the warm-up episodes the version check below reads (CI, 2026-12-04).
    cfg = tiny_pixels(
        tmp_path / "run",
        ray=RayConfig(weights_every_updates=20, episode_timeout_s=5.0),
        buffer=BufferConfig(capacity_steps=100_000, storage="zarr"),
    )
    trainer = Trainer.create(cfg)
    source = trainer.episode_source()
    seen: dict[str, int] = {}
    faults_done = threading.Event()

    def faults() -> None:
        while trainer.state.episode < 2:
            time.sleep(0.05)
        handles = [ray.get_actor(slot.name, namespace="vlmrl") for slot in source.slots]
        pids = [ray.get(h.pid.remote()) for h in handles]
        os.kill(pids[1], signal.SIGSTOP)
        stopped_at = trainer.state.episode
        deadline = time.monotonic() + 60
        while trainer.state.episode < stopped_at + 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        seen["episodes_while_stopped"] = trainer.state.episode - stopped_at
        os.kill(pids[0], signal.SIGKILL)
        faults_done.set()

    thread = threading.Thread(target=faults, daemon=True)
    thread.start()
    deadline = time.monotonic() + 240

    def both_back() -> bool:
        """Both actors restarted and returned episodes again (or the test's time is up)."""
        back = all(s.restarts >= 1 and s.episodes_since_start > 0 for s in source.slots)
        return (faults_done.is_set() and back) or time.monotonic() > deadline

    try:
        trainer.learner.run(source, until=both_back, after_episode=lambda stats: None)
    finally:
        source.close()
        trainer.buffer.close()
    assert seen["episodes_while_stopped"] >= 3  # at most 2 of them were actor 1's queued results
    restarted = [s.restarts >= 1 and s.episodes_since_start > 0 for s in source.slots]
    assert restarted == [True, True], source.counters
    counters = source.counters
    assert counters.timeouts >= 1 and counters.lost_episodes >= 2
    store = tmp_path / "run" / "buffer.zarr"
    assert committed(store) == trainer.state.episode == counters.episodes
    versions = zarr.open_group(str(store), mode="r")["info/policy_version"][:]
    assert versions.min() == -1 and versions.max() > 0  # warm-up episodes, then the learner's weights


@pytest.mark.slow
def test_learner_killed_resumes_with_no_committed_episode_lost(tmp_path, ray_address):
    run = tmp_path / "run"
    args = [
        "--sim.task", "reach", "--sim.reward", "shaped", "--sim.cameras", "front", "--sim.image-size", "32",
        "--sim.max-episode-steps", "10", "--agent.hidden-dims", "16", "16", "--buffer.capacity-steps", "4000",
        "--replay", "uniform", "--total-steps", "100000", "--learning-starts", "20", "--batch-size", "16",
        "--eval-episodes", "1", "--video-episodes", "0", "--checkpoint-every-steps", "30", "--run-dir", str(run),
        "--no-progress", "--actors", "1", "--ray.address", ray_address,
    ]  # fmt: skip
    learner = subprocess.Popen(
        [sys.executable, "-m", "vlmrl", "train", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    store, checkpoint = run / "buffer.zarr", run / "checkpoint" / "state.pt"
    deadline = time.monotonic() + 180
    while not (checkpoint.exists() and committed(store) >= 5) and learner.poll() is None:
        assert time.monotonic() < deadline, "the learner did not checkpoint in time"
        time.sleep(0.1)
    learner.send_signal(signal.SIGKILL)
    output = learner.communicate()[0].decode()
    assert learner.returncode == -signal.SIGKILL, output
    before = committed(store)
    kept = episode_rewards(store, before)
    assert main(TrainConfig(resume=str(run), stop_after_steps=20, progress=False)) == 0
    after = committed(store)
    assert after > before
    for old, new in zip(kept, episode_rewards(store, before)):
        np.testing.assert_array_equal(old, new)


def test_actor_settings_are_refused_in_one_line(tmp_path):
    from vlmrl.errors import ConfigError
    from vlmrl.online.config import check_config
    from vlmrl.pipelines.train import actors_on_resume

    with pytest.raises(ConfigError, match="actors must be >= 0"):
        check_config(tiny_pixels(tmp_path, actors=-1))
    with pytest.raises(ConfigError, match=r"ray\.max_in_flight must be >= 1, got 0 \(--ray\.max-in-flight\)"):
        check_config(tiny_pixels(tmp_path, ray=RayConfig(max_in_flight=0)))
    with pytest.raises(ConfigError, match="--prior-data with --actors"):
        check_config(tiny_pixels(tmp_path, prior_data=tmp_path))
    with pytest.raises(ConfigError, match="started without env actors"):
        actors_on_resume(tiny_pixels(tmp_path), tiny_pixels(tmp_path, actors=0))
    joined = RayConfig(address="10.0.0.5:6379")
    assert actors_on_resume(TrainConfig(actors=3, ray=joined), tiny_pixels(tmp_path)) == {
        "actors": 3,
        "ray": joined,
    }
    assert actors_on_resume(TrainConfig(), tiny_pixels(tmp_path)) == {}


@pytest.mark.slow
def test_an_actor_whose_env_cannot_be_built_stops_the_run_in_one_line(tmp_path, ray_address):
    from sim import make_env
    from sim.errors import SimError
    from vlmrl.errors import ConfigError

    learner_pid = os.getpid()

    def only_in_the_learner(sim_cfg):
        if os.getpid() != learner_pid:
            raise SimError("no renderer on this machine")
        return make_env(sim_cfg)

    trainer = Trainer.create(tiny_pixels(tmp_path / "run", actors=1), env_factory=only_in_the_learner)
    try:
        with pytest.raises(ConfigError, match=r"could not start: .*no renderer on this machine"):
            trainer.run()
    finally:
        trainer.link.close()
        trainer.buffer.close()
    assert committed(tmp_path / "run" / "buffer.zarr") == 0
