"""What an offline run trains on (issue #36, item 7: "offline rewards multiplied by 0" and "--aux-reward-weight
ignored" survived the offline tests other than the learning one): the batches an `OfflineRun` draws carry the
labelled rewards, and `vlmrl train --offline --aux-reward-weight W` weights the stored aux reward by W."""

from __future__ import annotations

import numpy as np

from agents.config import IQLConfig, PixelEncoderConfig
from vlmrl.offline.datasets import label_rewards
from vlmrl.offline.run import OfflineRun, from_train_config
from vlmrl.online.config import TrainConfig

TINY = IQLConfig(hidden_dims=(16, 16), pixel=PixelEncoderConfig(channels=4, num_layers=2, feature_dim=8))


def offline_run(store, run_dir, **train) -> OfflineRun:
    """The run `vlmrl train --offline STORE` with these options would train (built, not trained)."""
    cfg = from_train_config(
        TrainConfig(offline=store, policy_obs="robot", iql=TINY, run_dir=str(run_dir), **train)
    )
    run_dir.mkdir(parents=True)
    return OfflineRun(cfg, run_dir)


def batch_rewards(run: OfflineRun) -> tuple[np.ndarray, np.ndarray]:
    """The rewards of every training transition as batches carry them, and those rows."""
    batch = run.dataset.batch(run.dataset.rows)
    return batch.reward, batch.indices


def test_batches_carry_the_labelled_rewards_and_the_aux_weight_applies(recorded, tmp_path) -> None:
    store = recorded / "episodes.zarr"
    sparse = offline_run(store, tmp_path / "sparse", reward="sparse")
    aux = offline_run(store, tmp_path / "aux", reward="aux")  # --aux-reward-weight 0 (default): weight 1
    aux3 = offline_run(store, tmp_path / "aux3", reward="aux", aux_reward_weight=3.0)
    both = offline_run(store, tmp_path / "both", reward="sparse+aux", aux_reward_weight=0.5)

    sparse_r, rows = batch_rewards(sparse)
    np.testing.assert_array_equal(sparse_r, label_rewards(sparse.episodes, "sparse")[rows])
    aux_r, aux_rows = batch_rewards(aux)
    np.testing.assert_array_equal(aux_rows, rows)
    assert np.all(aux_r >= 0) and aux_r.sum() > 0.5  # the oracle's progress rewards, weight 1
    np.testing.assert_allclose(batch_rewards(aux3)[0], 3.0 * aux_r, rtol=1e-6)
    np.testing.assert_allclose(batch_rewards(both)[0], sparse_r + 0.5 * aux_r, rtol=1e-6)
    sampled = both.dataset.sample(64)
    np.testing.assert_allclose(sampled.reward, both.rewards[sampled.indices], rtol=0)
    assert np.any(sampled.reward != 0)
    for run in (sparse, aux, aux3, both):
        if run.env is not None:
            run.env.close()
