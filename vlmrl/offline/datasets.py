"""Recorded episodes as an offline RL dataset: load, check, label rewards, sample typed batches.

Sources: a vlmrl zarr episode store (``vlmrl record``, or a training run's buffer) or a LeRobotDataset
(v2.1 / v3.0, imported through ``buffer.io``). Rows follow the buffer: an episode of T transitions has
T + 1 observation rows, transition t goes from row t to row t + 1.

Rewards (``--reward``), RG-VLM style (Lee et al. 2025, shared/seeds/004):

- ``sparse``: 1 on a transition that reaches a successful observation (the episodes' ``success`` info),
- ``aux``: the stored ``aux_reward/<scorer id>`` that ``vlmrl score`` wrote (the only scorer there is),
- ``scorer:<id>``: that scorer's stored aux reward,
- ``sparse+aux`` / ``sparse+scorer:<id>``: their sum (the VLM reward as an auxiliary to the task reward).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from buffer import BufferConfig, make_buffer
from buffer.batch import Batch
from buffer.metadata import read_store_metadata
from sim.errors import SimError
from sim.so101.scripted import ScriptedPolicy
from vlmrl.errors import ConfigError

AUX_PREFIX = "aux_reward/"
SCORES_DIR = "vlmrl_scores"
"""LeRobotDataset sidecar directory where ``vlmrl score`` writes ``<scorer id>.parquet``."""


@dataclass
class Episodes:
    """Recorded episodes in RAM, rows laid out as in the replay buffer (T + 1 rows per episode)."""

    obs: dict[str, np.ndarray]
    """Observation key -> [rows, ...]."""
    action: np.ndarray
    """float32[rows, A]; the final row of each episode is padding (zeros)."""
    terminated: np.ndarray
    """bool[rows]: transition t ended the episode in a terminal state (no bootstrap)."""
    success: np.ndarray | None
    """float32[rows] the ``success`` info of each observation; None when the data has none."""
    aux: dict[str, np.ndarray]
    """Scorer id -> float32[rows] stored aux reward of transition t (row t)."""
    starts: np.ndarray
    """int64[episodes] first row of each episode."""
    ends: np.ndarray
    """int64[episodes] one past its final observation row."""
    source: str = ""
    """Where the episodes came from (for messages)."""
    attrs: dict[str, Any] = field(default_factory=dict)
    """The store's ``vlmrl_record`` attributes (robot type, task, sim config ...), empty when unknown."""

    @property
    def num_episodes(self) -> int:
        """Episodes held."""
        return len(self.starts)

    def transition_rows(self, episodes: Sequence[int] | None = None) -> np.ndarray:
        """int64 rows of every transition (all rows but each episode's last) of the given episodes."""
        chosen = range(self.num_episodes) if episodes is None else episodes
        parts = [np.arange(self.starts[e], self.ends[e] - 1) for e in chosen]
        return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)

    def episode_success(self) -> np.ndarray:
        """bool[episodes]: the episode reached a successful observation (all False without success info)."""
        if self.success is None:
            return np.zeros(self.num_episodes, bool)
        return np.array([self.success[s:e].max() > 0.5 for s, e in zip(self.starts, self.ends)], bool)


# ---------------------------------------------------------------------------------------------- loading
def load_episodes(path: Path, obs_keys: Sequence[str] | None = None) -> Episodes:
    """Read a zarr episode store or a LeRobotDataset into RAM, keeping ``obs_keys`` (None: all).

    Raises:
        ConfigError: not a dataset, no episodes, no actions, NaN/inf values, or ``obs_keys`` it lacks;
            one line naming the path and what was wrong.
    """
    path = Path(path)
    attrs: dict[str, Any] = {}
    if (path / "meta" / "info.json").is_file():
        from buffer.io import import_lerobot, lerobot_spec
        from buffer.io.lerobot_format import LeRobotReader

        obs_spec, action_dim, info_keys = lerobot_spec(path)
        capacity = int(LeRobotReader(path).info.get("total_frames", 0)) + 16
        storage_kind, store_path = "memory", None
    elif (path / "zarr.json").is_file():
        meta = read_store_metadata(path)  # one-line BufferError for malformed or foreign metadata
        obs_spec, action_dim, info_keys = dict(meta.obs_spec), meta.action_dim, tuple(meta.info_keys)
        capacity = meta.capacity
        storage_kind, store_path = "zarr", str(path)
        attrs = dict(meta.record)
    else:
        raise ConfigError(
            f"--offline {path}: neither a vlmrl zarr store (zarr.json) nor a LeRobotDataset (meta/info.json)"
        )
    if action_dim < 1:
        raise ConfigError(f"{path}: the dataset has no actions (action dimension {action_dim})")
    keys = list(obs_spec) if obs_keys is None else list(obs_keys)
    missing = [k for k in keys if k not in obs_spec]
    if missing:
        raise ConfigError(
            f"{path}: the policy reads observation keys {missing} that the dataset lacks (it has {sorted(obs_spec)})"
        )
    buffer = make_buffer(
        BufferConfig(storage=storage_kind, capacity_steps=max(capacity, 2)),  # type: ignore[arg-type]
        obs_spec,
        action_dim,
        info_keys,
        path=store_path,
    )
    try:
        if storage_kind == "memory":
            import_lerobot(path, buffer)
        episodes = _read_buffer(buffer, keys, path, attrs)
    finally:
        buffer.close()
    if storage_kind == "memory":
        episodes.aux.update(_lerobot_aux(path, episodes))
    return episodes


def _read_buffer(buffer: Any, keys: list[str], path: Path, attrs: dict[str, Any]) -> Episodes:
    table = buffer.storage.episodes()
    if table.count == 0:
        raise ConfigError(f"{path}: the dataset holds no episodes")
    bounds = [table.bounds(e) for e in range(table.first, table.first + table.count)]
    rows = np.concatenate([np.arange(s, e) for s, e in bounds]).astype(np.int64)
    lengths = np.array([e - s for s, e in bounds], np.int64)
    ends = np.cumsum(lengths)
    read = buffer.storage.read
    obs = {k: np.asarray(read(k, rows)) for k in keys}
    action = np.asarray(read("action", rows), np.float32)
    terminated = np.asarray(read("terminated", rows)).astype(bool)
    success = np.asarray(read("info/success", rows), np.float32) if "success" in buffer.info_keys else None
    aux = {
        name[len(AUX_PREFIX) :]: np.asarray(read(name, rows), np.float32)
        for name in buffer.storage.columns()
        if name.startswith(AUX_PREFIX)
    }
    episodes = Episodes(obs, action, terminated, success, aux, ends - lengths, ends, str(path), attrs)
    _check_finite(episodes)
    return episodes


def _check_finite(episodes: Episodes) -> None:
    """ConfigError naming the first array and episode with NaN or inf (frames are uint8, always finite)."""
    arrays = {"action": episodes.action, **{k: v for k, v in episodes.obs.items() if v.dtype.kind == "f"}}
    for name, values in arrays.items():
        bad = ~np.isfinite(values.reshape(len(values), -1)).all(axis=1)
        if bad.any():
            row = int(np.argmax(bad))
            episode = int(np.searchsorted(episodes.ends, row, side="right"))
            raise ConfigError(
                f"{episodes.source}: {name!r} holds NaN or inf (episode {episode}, step "
                f"{row - int(episodes.starts[episode])}); clean or drop that episode"
            )


def _lerobot_aux(root: Path, episodes: Episodes) -> dict[str, np.ndarray]:
    """Aux rewards of a LeRobotDataset from the sidecar parquet files ``vlmrl score`` writes."""
    folder = root / SCORES_DIR
    if not folder.is_dir():
        return {}
    import pyarrow.parquet as pq

    aux: dict[str, np.ndarray] = {}
    for file in sorted(folder.glob("*.parquet")):
        table = pq.read_table(file).to_pydict()
        values = np.zeros(len(episodes.action), np.float32)
        for e, t, r in zip(table["episode_index"], table["frame_index"], table["aux_reward"]):
            if e < episodes.num_episodes and episodes.starts[e] + t < episodes.ends[e]:
                values[episodes.starts[e] + t] = r
        aux[file.name.removesuffix(".parquet")] = values
    return aux


# ---------------------------------------------------------------------------------------------- rewards
def label_rewards(episodes: Episodes, reward: str, aux_weight: float = 1.0) -> np.ndarray:
    """float32[rows] reward of transition t at row t (``--reward``, see the module docstring).

    Raises:
        ConfigError: an unknown reward, no success info for ``sparse``, or missing/ambiguous scores
            (naming the ``vlmrl score`` command that writes them).
    """
    parts = reward.split("+")
    total = np.zeros(len(episodes.action), np.float32)
    for part in parts:
        if part == "sparse":
            if episodes.success is None:
                raise ConfigError(
                    f"--reward {reward}: {episodes.source} has no 'success' info; use --reward scorer:<id> instead"
                )
            nxt = np.zeros_like(episodes.success)
            nxt[:-1] = episodes.success[1:]  # the success of the observation transition t reaches
            total += (nxt > 0.5).astype(np.float32)
        elif part == "aux" or part.startswith("scorer:"):
            total += aux_weight * _aux_of(episodes, part, reward)
        else:
            raise ConfigError(f"--reward {reward}: expected sparse, aux, sparse+aux or scorer:<id>")
    last = episodes.ends - 1
    total[last] = 0.0  # padding rows carry no transition
    return total


def _aux_of(episodes: Episodes, part: str, reward: str) -> np.ndarray:
    how = f"write them with `vlmrl score {episodes.source} scorer:<backend>`"
    if part == "aux":
        if len(episodes.aux) != 1:
            have = sorted(episodes.aux) or "none"
            raise ConfigError(
                f"--reward {reward}: 'aux' needs exactly one scorer's stored aux rewards in {episodes.source} "
                f"(found {have}); name one with scorer:<id>, or {how}"
            )
        return next(iter(episodes.aux.values()))
    scorer_id = part[len("scorer:") :]
    if scorer_id not in episodes.aux:
        raise ConfigError(
            f"--reward {reward}: {episodes.source} has no aux_reward/{scorer_id} (stored: "
            f"{sorted(episodes.aux) or 'none'}); {how}"
        )
    return episodes.aux[scorer_id]


# --------------------------------------------------------------------------------------------- sampling
class OfflineDataset:
    """Uniform transition batches from ``Episodes`` with labelled rewards; its RNG state checkpoints.

    Args:
        episodes: the data.
        rewards: float32[rows] from ``label_rewards``.
        gamma: discount; ``Batch.discount`` is gamma * (1 - terminated).
        episode_ids: episodes to draw from (None: all), e.g. the training split.
        seed: seed of the sampling RNG.
    """

    def __init__(
        self,
        episodes: Episodes,
        rewards: np.ndarray,
        gamma: float,
        episode_ids: Sequence[int] | None = None,
        seed: int = 0,
    ) -> None:
        self.episodes = episodes
        self.rewards = np.asarray(rewards, np.float32)
        self.gamma = gamma
        self.rows = episodes.transition_rows(episode_ids)
        if len(self.rows) == 0:
            raise ConfigError(f"{episodes.source}: no transitions to train on")
        self.rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return len(self.rows)

    def batch(self, rows: np.ndarray) -> Batch:
        """The transitions starting at ``rows`` as a typed batch (weights 1, indices = rows)."""
        e = self.episodes
        terminated = e.terminated[rows].astype(np.float32)
        return Batch(
            obs={k: v[rows] for k, v in e.obs.items()},
            action=e.action[rows],
            reward=self.rewards[rows],
            next_obs={k: v[rows + 1] for k, v in e.obs.items()},
            terminated=terminated,
            discount=(self.gamma * (1.0 - terminated)).astype(np.float32),
            weights=np.ones(len(rows), np.float32),
            indices=rows.astype(np.int64),
        )

    def sample(self, batch_size: int) -> Batch:
        """``batch_size`` transitions drawn uniformly with replacement."""
        return self.batch(self.rows[self.rng.integers(0, len(self.rows), batch_size)])

    def state_dict(self) -> dict[str, Any]:
        """The sampling RNG's state (the data itself is reloaded from its source)."""
        return {"rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore ``state_dict()``."""
        self.rng.bit_generator.state = state["rng"]


def split_episodes(episodes: Episodes, holdout_fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """(train, held-out) episode ids; the held-out share keeps successes and failures in proportion (at
    least one episode is held out when ``holdout_fraction`` > 0 and there are two or more)."""
    rng = np.random.default_rng(seed)
    success = episodes.episode_success()
    train: list[int] = []
    held: list[int] = []
    for group in (np.flatnonzero(success), np.flatnonzero(~success)):
        order = rng.permutation(group)
        n_held = round(holdout_fraction * len(order))
        if n_held >= len(order) and len(order) > 0 and holdout_fraction < 1.0:
            n_held = len(order) - 1
        held += order[:n_held].tolist()
        train += order[n_held:].tolist()
    if holdout_fraction > 0.0 and not held and len(train) >= 2:  # small data: hold out one episode at least
        held.append(train.pop(int(rng.integers(len(train)))))
    return sorted(train), sorted(held)


# ----------------------------------------------------------------------------------- twin data (sim env)
def rollout_episode(env: Any, act: Any, seed: int) -> dict[str, Any]:
    """One episode of a sim env driven by ``act(obs) -> action``, as ``ReplayBuffer.add_episode`` arrays."""
    obs, info = env.reset(seed=seed)
    observations, actions, rewards, terminated, truncated, infos = [obs], [], [], [], [], [info]
    while True:
        action = np.asarray(act(obs), np.float32)
        obs, reward, term, trunc, info = env.step(action)
        observations.append(obs)
        actions.append(action)
        rewards.append(reward)
        terminated.append(term)
        truncated.append(trunc)
        infos.append(info)
        if term or trunc:
            break
    return {
        "obs": {k: np.stack([o[k] for o in observations]) for k in observations[0]},
        "action": np.stack(actions),
        "reward": np.asarray(rewards, np.float32),
        "terminated": np.asarray(terminated, bool),
        "truncated": np.asarray(truncated, bool),
        "info": {
            k: np.asarray([float(i.get(k, 0.0)) for i in infos], np.float32) for k in ("success", "progress")
        },
    }


def mixed_quality_episodes(
    env: Any, expert: int, noisy: int, random: int, noise_std: float, seed: int
) -> list[dict[str, Any]]:
    """Episodes of the SO-101 twin's scripted expert, of the expert with Gaussian action noise, and of
    uniform-random actions (in that order; seeds ``seed``, ``seed + 1``, ...). ``noise_std`` is in units
    of half the action range; where noise has pushed the arm out of the expert's IK, the step holds still."""
    policy = ScriptedPolicy(env)
    rng = np.random.default_rng(seed)
    low, high = env.action_space.low, env.action_space.high
    out = []
    for i, kind in enumerate(["expert"] * expert + ["noisy"] * noisy + ["random"] * random):
        policy.reset()
        std = noise_std if kind == "noisy" else 0.0

        def act(obs: Any, kind: str = kind, std: float = std) -> np.ndarray:
            if kind == "random":
                return rng.uniform(low, high).astype(np.float32)
            try:
                a = np.asarray(policy.act(obs), np.float32)
            except SimError:  # noise pushed the arm where the expert's IK has no solution: hold still
                a = np.zeros(low.shape, np.float32)
            noise = std * (high - low) / 2 * rng.standard_normal(a.shape)
            return np.clip(a + noise, low, high).astype(np.float32)

        out.append(rollout_episode(env, act, seed + i))
    return out


def episodes_from_rollouts(rollouts: Sequence[dict[str, Any]], obs_keys: Sequence[str]) -> Episodes:
    """``Episodes`` straight from ``rollout_episode`` dicts (no store), for tests and experiments."""
    lengths = np.array([len(r["action"]) + 1 for r in rollouts], np.int64)
    ends = np.cumsum(lengths)

    def cat(arrays: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(arrays)

    def padded(r: dict[str, Any], name: str) -> np.ndarray:
        value = np.asarray(r[name])
        return np.concatenate([value, np.zeros((1, *value.shape[1:]), value.dtype)])

    return Episodes(
        obs={k: cat([r["obs"][k] for r in rollouts]) for k in obs_keys},
        action=cat([padded(r, "action") for r in rollouts]).astype(np.float32),
        terminated=cat([padded(r, "terminated") for r in rollouts]).astype(bool),
        success=cat([r["info"]["success"] for r in rollouts]).astype(np.float32),
        aux={},
        starts=ends - lengths,
        ends=ends,
        source="rollouts",
    )
