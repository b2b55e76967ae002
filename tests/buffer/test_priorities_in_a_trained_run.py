"""A `vlmrl train` run drives its replay sampler: the learner step reaches the sampler (issue #15, item 9a).

If the training loop stopped calling ``ReplayBuffer.set_learner_step``, ``--replay vlm`` would train with
its mixing weight stuck at ``lambda_start`` (uniform replay) and PER's beta would never anneal, with every
sampler test still green. This runs the real loop briefly and reads the sampler at the end.
"""

from __future__ import annotations

import pytest
import torch

from agents.config import SACConfig
from buffer.config import BufferConfig, PERSamplerConfig, VLMMixSamplerConfig, VLMTDSamplerConfig
from sim.config import SimConfig
from vlmrl.errors import ConfigError
from vlmrl.online.config import check_config
from vlmrl.online.trainer import Trainer
from vlmrl.pipelines.train import TrainConfig


def test_the_trained_runs_sampler_step_equals_the_agents_updates_and_lambda_reaches_its_target(tmp_path):
    torch.set_num_threads(1)
    cfg = TrainConfig(
        sim=SimConfig(task="reach", cameras=("front",), image_size=16, max_episode_steps=10),
        agent=SACConfig(hidden_dims=(16, 16)),
        buffer=BufferConfig(capacity_steps=200),
        replay="vlm",
        vlm_sampler=VLMMixSamplerConfig(lambda_start=0.0, lambda_end=0.8, warmup_steps=20),
        sync_scoring=True,
        total_steps=50,
        learning_starts=20,
        batch_size=8,
        eval_every_steps=1_000,
        eval_episodes=1,
        video_episodes=0,
        run_dir=str(tmp_path / "run"),
        progress=False,
    )
    trainer = Trainer.create(cfg)
    trainer.run()
    sampler = trainer.buffer.sampler
    assert trainer.agent.num_updates >= 25  # one update per step from step 20 to 50
    assert sampler.state_dict()["step"] == trainer.agent.num_updates
    assert sampler.mix_lambda == 0.8


@pytest.mark.parametrize(
    ("replay", "option", "settings"),
    [
        ("vlm", "per-sampler", {"per_sampler": PERSamplerConfig(alpha=0.9)}),
        ("per", "vlm-sampler", {"vlm_sampler": VLMMixSamplerConfig(lambda_end=0.9)}),
        ("uniform", "vlm-td-sampler", {"vlm_td_sampler": VLMTDSamplerConfig(alpha=0.2)}),
    ],
)
def test_sampler_settings_of_another_replay_mode_are_refused_not_ignored(tmp_path, replay, option, settings):
    """Issue #15 (item 7): --per-sampler.alpha was silently ignored unless --replay per."""
    cfg = TrainConfig(replay=replay, run_dir=str(tmp_path / "run"), progress=False, **settings)
    with pytest.raises(
        ConfigError, match=rf"--{option}\.\* settings apply to --replay \w+ only.*uses --replay {replay}"
    ):
        check_config(cfg)
    check_config(cfg, new_run=False)  # a resumed run keeps what it started with
