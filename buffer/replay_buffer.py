"""ReplayBuffer: storage + sampler + episode staging, clips for the scorer, typed batches for the learner."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for
from dataclasses import dataclass
from typing import Any

import numpy as np

from buffer.batch import Batch
from buffer.clips import ClipRef, clip_rows, covered_transitions, plan_clips
from buffer.config import BufferConfig
from buffer.episode import EpisodeRecorder
from buffer.errors import BufferError
from buffer.replay_stats import ReplayStats, episode_values
from buffer.samplers.prior_mix import PriorMixSampler
from buffer.samplers.protocol import Sampler
from buffer.spec import check_value
from buffer.storage.protocol import Storage

_STEP_ARRAYS = ("action", "reward", "terminated", "truncated")


@dataclass(frozen=True)
class _Draw:
    """The transitions of one batch, drawn but not read yet (``BufferConfig.prefetch``)."""

    batch_size: int
    keys: tuple[str, ...]
    pos: np.ndarray
    weights: np.ndarray


@dataclass(frozen=True)
class _Pending:
    draw: _Draw
    future: Future[Batch]


class ReplayBuffer:
    """Episodes in a Storage, drawn by a Sampler.

    Thread-safety: one writer (`add_step`/`add_episode`), one scorer thread (`new_clips`, `read_clip`,
    `set_scores`, `set_aux_reward`) and one learner (`sample`, `update_priorities`, `set_learner_step`)
    may run concurrently. Episode data is written outside the lock (into rows no reader can reach),
    everything else under it. With ``cfg.prefetch`` a background thread reads the next batch; every
    learner or writer call that changes the sampler or the rows waits for that read first.
    """

    def __init__(self, cfg: BufferConfig, storage: Storage, sampler: Sampler):
        if cfg.n_step < 1 or cfg.frame_stack < 1 or cfg.clip_length < 1 or cfg.clip_stride < 1:
            raise BufferError("buffer config: n_step, frame_stack, clip_length and clip_stride must be >= 1")
        if not 0.0 < cfg.gamma <= 1.0:
            raise BufferError(f"buffer config: gamma must be in (0, 1], got {cfg.gamma}")
        if cfg.absorbing_terminal and cfg.gamma >= 1.0:
            raise BufferError(
                "buffer config: absorbing_terminal values a terminal reward as paid for ever: gamma must be < 1"
            )
        self.cfg = cfg
        self.storage = storage
        self.sampler = sampler
        specs = storage.specs
        self.obs_keys = [n for n in specs if n not in _STEP_ARRAYS and not n.startswith("info/")]
        self.info_keys = [n[len("info/") :] for n in specs if n.startswith("info/")]
        self.frame_keys = [n for n in self.obs_keys if specs[n].is_frame]
        self.clip_camera = cfg.clip_camera or (self.frame_keys[0] if self.frame_keys else "")
        if self.clip_camera and self.clip_camera not in self.frame_keys:
            raise BufferError(
                f"clip_camera {self.clip_camera!r} is not a stored camera (have {self.frame_keys})"
            )
        for option, key in (("clone_info_key", cfg.clone_info_key), ("prior_info_key", cfg.prior_info_key)):
            if key and key not in self.info_keys:
                raise BufferError(
                    f"buffer config: {option} {key!r} is not a stored info key (have {self.info_keys})"
                )
        if cfg.prior_info_key and not isinstance(sampler, PriorMixSampler):
            raise BufferError(
                f"buffer config: prior_info_key {cfg.prior_info_key!r} needs a prior-mix sampler (prior data "
                "with a prior share > 0), this buffer's is a " + type(sampler).__name__
            )
        self._recorder = EpisodeRecorder(specs, self.obs_keys, self.info_keys)
        self._lock = threading.RLock()
        self._rng = np.random.default_rng(cfg.seed)
        self._pending: _Pending | None = None
        self._prefetcher: ThreadPoolExecutor | None = None
        cap = storage.capacity
        self._row_of_pos = np.full(cap, -1, np.int64)
        self._steps_to_end = np.zeros(cap, np.int32)  # transitions left in the episode from here
        self._step_index = np.zeros(cap, np.int32)  # step within the episode
        self._clip_cursor = 0
        self._stats = ReplayStats(cap, cfg.replay_stats_every) if cfg.replay_stats_every > 0 else None
        table = storage.episodes()
        positions = [
            self._index_episode(*table.bounds(e)) for e in range(table.first, table.first + table.count)
        ]
        if positions:
            self.sampler.add(np.concatenate(positions))
            self._track_stored_episodes()
        self._clip_cursor = table.first
        self._replay_scores_into_sampler()

    # ---- writing -------------------------------------------------------------------------------

    def add_step(self, obs, action, reward, terminated, truncated, info, next_obs) -> None:
        """Stage one env step; the episode is committed when `terminated` or `truncated`.

        `next_obs` is only read for the final step (otherwise it is the next step's `obs`).

        Raises:
            BufferError: a missing/extra key, wrong shape or dtype, or NaN, naming the step and key.
        """
        if self._recorder.add(obs, action, reward, terminated, truncated, info, next_obs):
            self._commit(self._recorder.finish())

    def add_episode(
        self,
        obs: Mapping[str, np.ndarray],
        action: np.ndarray,
        reward: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
        info: Mapping[str, np.ndarray] | None = None,
    ) -> int:
        """Commit a whole episode of T transitions at once; returns its episode id.

        Args:
            obs: key -> array of T + 1 observations (the last is the final next_obs).
            action: [T, action_dim]; reward, terminated, truncated: [T].
            info: info key -> [T + 1] values describing each observation (zeros when absent).
        """
        action = np.asarray(action)
        t = len(action)
        if t < 1:
            raise BufferError("add_episode: an episode needs at least one transition")
        arrays: dict[str, np.ndarray] = {}
        specs = self.storage.specs
        for key in self.obs_keys:
            if key not in obs:
                raise BufferError(f"add_episode: obs is missing key {key!r}")
            arrays[key] = self._check_rows(key, obs[key], t + 1)
        for name, value in zip(_STEP_ARRAYS, (action, reward, terminated, truncated)):
            rows = self._check_rows(name, value, t)
            arrays[name] = np.concatenate([rows, np.zeros((1, *specs[name].shape), specs[name].dtype)])
        for key in self.info_keys:
            value = (info or {}).get(key, np.zeros(t + 1, np.float32))
            arrays[f"info/{key}"] = self._check_rows(f"info/{key}", value, t + 1)
        return self._commit(arrays)

    def _check_rows(self, name: str, value: Any, n: int) -> np.ndarray:
        spec = self.storage.specs[name]
        arr = np.asarray(value)
        if arr.shape[:1] != (n,):
            raise BufferError(f"add_episode: {name!r} needs {n} rows, got shape {list(arr.shape)}")
        return check_value(type(spec)(spec.name, (n, *spec.shape), spec.dtype), arr, f"add_episode {name!r}")

    def _commit(self, arrays: dict[str, np.ndarray]) -> int:
        n = len(arrays["action"])
        cap = self.storage.capacity
        self._settle()
        with self._lock:
            start, evicted = self.storage.reserve(n)
            for lo, hi in evicted:
                self.sampler.remove(np.arange(lo, hi) % cap)
                self._row_of_pos[np.arange(lo, hi) % cap] = -1
                if self._stats is not None:
                    self._stats.remove(np.arange(lo, hi) % cap)
        self.storage.write(start, arrays)
        with self._lock:
            self.storage.commit(start + n)
            positions = self._index_episode(start, start + n)
            self.sampler.add(positions)
            if self.cfg.prior_info_key:
                # a transition's flag is on the observation it led to, as cloning reads it
                flagged = np.asarray(arrays[f"info/{self.cfg.prior_info_key}"]).reshape(-1)[1:] > 0
                assert isinstance(self.sampler, PriorMixSampler)  # checked in __init__
                self.sampler.promote(positions[flagged])
            episode = self.storage.episodes().first + self.storage.episodes().count - 1
            if self._stats is not None:
                info = {key: arrays[f"info/{key}"] for key in self.info_keys}
                self._track_episode(start, start + n, episode, info)
                self._stats.clock = self._transitions_ever_stored()
            return episode

    def _index_episode(self, start: int, end: int) -> np.ndarray:
        """Record an episode's rows by ring position; returns the positions of its transitions."""
        rows = np.arange(start, end, dtype=np.int64)
        pos = rows % self.storage.capacity
        self._row_of_pos[pos] = rows
        self._steps_to_end[pos] = end - 1 - rows
        self._step_index[pos] = rows - start
        return pos[:-1]

    def _track_episode(self, start: int, end: int, episode: int, info: Mapping[str, np.ndarray]) -> None:
        """Give the replay statistics an episode's transitions (rows [start, end - 1))."""
        assert self._stats is not None
        rows = np.arange(start, end - 1, dtype=np.int64)
        values = episode_values(dict(info), end - 1 - start, self.cfg.clip_length, self.cfg.clip_stride)
        self._stats.add(rows % self.storage.capacity, values, rows - episode)

    def _track_stored_episodes(self) -> None:
        """After reopening a store: the replay statistics of its live episodes (one read per info column)."""
        if self._stats is None:
            return
        table = self.storage.episodes()
        keys = [key for key in ("success", "progress") if key in self.info_keys]
        all_rows = np.arange(table.first_row, table.next_row, dtype=np.int64)
        columns = {key: self.storage.read(f"info/{key}", all_rows) for key in keys}
        for e in range(table.first, table.first + table.count):
            start, end = table.bounds(e)
            lo, hi = start - table.first_row, end - table.first_row
            self._track_episode(start, end, e, {key: col[lo:hi] for key, col in columns.items()})
        self._stats.clock = self._transitions_ever_stored()

    def _transitions_ever_stored(self) -> int:
        """Rows ever written less one final-observation row per episode ever stored (ids count from 0)."""
        table = self.storage.episodes()
        return table.next_row - table.first - table.count

    def _replay_scores_into_sampler(self) -> None:
        """After reopening a store, feed the stored VLM scores of live transitions back to the sampler."""
        live = self._row_of_pos >= 0
        for name in self.storage.columns():
            if name.startswith("scores/") and self._uses_scorer(name[len("scores/") :]):
                rows = self._row_of_pos[live]
                scores = self.storage.read(name, rows)
                known = ~np.isnan(scores)
                self.sampler.set_scores(rows[known] % self.storage.capacity, scores[known])
                if self._stats is not None:
                    self._stats.set_scores(rows[known] % self.storage.capacity, scores[known])

    def _uses_scorer(self, scorer_id: str) -> bool:
        return not self.cfg.priority_scorer or self.cfg.priority_scorer == scorer_id

    # ---- sampling ------------------------------------------------------------------------------

    def sample(self, batch_size: int, keys: Sequence[str] | None = None) -> Batch:
        """Draw a batch of transitions.

        Args:
            batch_size: rows B.
            keys: observation keys to read (e.g. ("state",) for a state policy); None = all.

        Raises:
            BufferError: no committed transition yet, or an unknown key.
        """
        keys = tuple(self.obs_keys if keys is None else keys)
        unknown = [k for k in keys if k not in self.obs_keys]
        if unknown:
            raise BufferError(f"sample: unknown observation keys {unknown} (have {self.obs_keys})")
        pending, self._pending = self._pending, None
        if pending is not None and (pending.draw.batch_size, pending.draw.keys) == (batch_size, keys):
            batch = pending.future.result()
        else:
            if pending is not None:
                wait_for([pending.future])  # drawn for another batch size or keys: dropped
            with self._lock:
                draw = self._draw(batch_size, keys)
            batch = self._read(draw)
        if self.cfg.prefetch:
            with self._lock:
                upcoming = self._draw(batch_size, keys)
            self._submit(upcoming)
        if self._stats is not None:
            with self._lock:
                self._stats.observe(batch.indices)
        return batch

    def replay_stats(self, prior_rows: int = 0) -> dict[str, float]:
        """What the sampler replayed against what the buffer held, over the last
        ``cfg.replay_stats_every`` sampled batches: ``replay/...`` figures (``buffer.replay_stats``), once per
        window; empty until a window is full (or when ``replay_stats_every`` is 0).

        Args:
            prior_rows: global rows [0, prior_rows) hold demonstrations or prior data (their share is
                reported when > 0).
        """
        if self._stats is None or not self._stats.ready:
            return {}
        with self._lock:
            return self._stats.summary(self._row_of_pos, self.storage.episodes().first_row, prior_rows)

    def _draw(self, batch_size: int, keys: tuple[str, ...]) -> _Draw:
        pos, weights = self.sampler.sample(batch_size, self._rng)
        return _Draw(batch_size, keys, pos, weights)

    def _submit(self, draw: _Draw) -> None:
        if self._prefetcher is None:
            self._prefetcher = ThreadPoolExecutor(1, thread_name_prefix="batch-prefetch")
        self._pending = _Pending(draw, self._prefetcher.submit(self._read, draw))

    def _settle(self) -> None:
        """Wait until the prefetched batch is read (its error, if any, is raised by the next sample)."""
        if self._pending is not None:
            wait_for([self._pending.future])

    def _read(self, draw: _Draw) -> Batch:
        cfg = self.cfg
        with self._lock:
            rows = self._row_of_pos[draw.pos]
            if (rows < 0).any():  # evicted since the draw by a writer that did not settle first
                draw = self._draw(draw.batch_size, draw.keys)
                rows = self._row_of_pos[draw.pos]
            pos, weights = draw.pos, draw.weights
            k = np.minimum(cfg.n_step, self._steps_to_end[pos]).astype(np.int64)
            offsets = np.arange(cfg.n_step, dtype=np.int64)
            summed = offsets[None, :] < k[:, None]
            reward_rows = np.where(summed, rows[:, None] + offsets[None, :], rows[:, None])
            r = self.storage.read("reward", reward_rows).astype(np.float32)
            last_env_reward = r[np.arange(len(k)), k - 1]
            if cfg.aux_reward_scorer and f"aux_reward/{cfg.aux_reward_scorer}" in self.storage.columns():
                aux = self.storage.read(f"aux_reward/{cfg.aux_reward_scorer}", reward_rows)
                r = r + cfg.aux_reward_weight * np.nan_to_num(aux)
            gammas = (cfg.gamma**offsets).astype(np.float32)
            reward = (r * summed * gammas[None, :]).sum(axis=1)
            terminated = self.storage.read("terminated", rows + k - 1).astype(np.float32)
            discount = (cfg.gamma**k * (1.0 - terminated)).astype(np.float32)
            if cfg.absorbing_terminal:  # the terminal step's reward, for ever after it
                reward = reward + terminated * cfg.gamma**k * last_env_reward / (1.0 - cfg.gamma)
            next_rows = rows + k
            step = self._step_index[pos].astype(np.int64)
            action = self.storage.read("action", rows)
            obs = {key: self._read_obs(key, rows, step) for key in draw.keys}
            next_obs = {key: self._read_obs(key, next_rows, step + k) for key in draw.keys}
            # rows cloned as the prior rows are: all of them, or the steps the clone key flags (the operator's
            # takeovers; a step's info is stored with its next observation, one row on)
            cloned = None
            if cfg.clone_all:
                cloned = np.ones(len(rows), bool)
            elif cfg.clone_info_key:
                cloned = self.storage.read(f"info/{cfg.clone_info_key}", rows + 1) > 0
        prior = self.sampler.is_prior(pos) if isinstance(self.sampler, PriorMixSampler) else None
        if cloned is not None:
            prior = cloned if prior is None else (np.asarray(prior, bool) | cloned)
        return Batch(
            obs=obs,
            action=action,
            reward=reward.astype(np.float32),
            next_obs=next_obs,
            terminated=terminated,
            discount=discount,
            weights=weights,
            indices=rows,
            prior=prior,
        )

    def _read_obs(self, key: str, rows: np.ndarray, step: np.ndarray) -> np.ndarray:
        stack = self.cfg.frame_stack
        if stack == 1 or not self.storage.specs[key].is_frame:
            return self.storage.read(key, rows)
        back = np.arange(stack - 1, -1, -1, dtype=np.int64)  # oldest first
        stacked_rows = rows[:, None] - np.minimum(back[None, :], step[:, None])
        frames = self.storage.read(key, stacked_rows)  # [B, S, H, W, 3]
        b, s, h, w, c = frames.shape
        return np.ascontiguousarray(frames.transpose(0, 2, 3, 1, 4)).reshape(b, h, w, s * c)

    def update_priorities(self, indices: np.ndarray, td_errors: np.ndarray) -> None:
        """Report TD errors for sampled `Batch.indices` (transitions evicted since are ignored)."""
        indices = np.asarray(indices, np.int64).reshape(-1)
        td = np.asarray(td_errors, np.float64).reshape(-1)
        if td.shape != indices.shape:
            raise BufferError(f"update_priorities: {len(indices)} indices but {td.size} td_errors")
        self._settle()
        with self._lock:
            pos = indices % self.storage.capacity
            live = self._row_of_pos[pos] == indices
            self.sampler.update_priorities(pos[live], td[live])

    def set_learner_step(self, step: int) -> None:
        """Drive PER beta and VLM lambda annealing."""
        self._settle()
        with self._lock:
            self.sampler.set_learner_step(step)

    # ---- clips and scores ----------------------------------------------------------------------

    def new_clips(self) -> list[ClipRef]:
        """Clips of the episodes committed since the last call (oldest first)."""
        if not self.clip_camera:
            return []
        cfg = self.cfg
        with self._lock:
            table = self.storage.episodes()
            first = max(self._clip_cursor, table.first)
            clips: list[ClipRef] = []
            for e in range(first, table.first + table.count):
                clips += plan_clips(e, *table.bounds(e), cfg.clip_length, cfg.clip_stride, self.clip_camera)
            self._clip_cursor = table.first + table.count
        return clips

    def read_clip(self, ref: ClipRef) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Frames uint8[L, H, W, 3] of a clip and its per-frame info arrays (e.g. "progress").

        Raises:
            BufferError: the clip's episode has been evicted or never existed.
        """
        with self._lock:
            start, _ = self.storage.episodes().bounds(ref.episode)
            rows = clip_rows(ref, start)
            frames = self.storage.read(ref.camera, rows)
            info = {key: self.storage.read(f"info/{key}", rows) for key in self.info_keys}
        return frames, info

    def set_scores(self, clip_ids: Sequence[int], scores: np.ndarray, scorer_id: str) -> None:
        """Store clip scores in [0, 1] under `scores/<scorer_id>` for the transitions each clip covers.

        Clips of episodes evicted meanwhile are ignored.
        """
        scores = np.asarray(scores, np.float32).reshape(-1)
        if len(scores) != len(clip_ids):
            raise BufferError(f"set_scores: {len(clip_ids)} clip ids but {len(scores)} scores")
        if not np.all((scores >= 0) & (scores <= 1)):
            raise BufferError(f"set_scores from {scorer_id!r}: scores must be in [0, 1], got {scores}")
        cfg = self.cfg
        with self._lock:
            table = self.storage.episodes()
            rows_list, values = [], []
            for clip_id, score in zip(clip_ids, scores):
                clip_id = int(clip_id)
                i = int(np.searchsorted(table.ends, clip_id, side="right"))
                if clip_id < table.first_row or i >= table.count:
                    continue
                rows = covered_transitions(clip_id, int(table.ends[i]), cfg.clip_length, cfg.clip_stride)
                rows_list.append(rows)
                values.append(np.full(len(rows), score, np.float32))
            if not rows_list:
                return
            rows, vals = np.concatenate(rows_list), np.concatenate(values)
            self.storage.write_column(f"scores/{scorer_id}", rows, vals)
            if self._uses_scorer(scorer_id):
                self.sampler.set_scores(rows % self.storage.capacity, vals)
                if self._stats is not None:
                    self._stats.set_scores(rows % self.storage.capacity, vals)

    def set_aux_reward(self, transition_indices: np.ndarray, values: np.ndarray, scorer_id: str) -> None:
        """Store per-transition auxiliary rewards under `aux_reward/<scorer_id>` (evicted ones ignored)."""
        idx = np.asarray(transition_indices, np.int64).reshape(-1)
        vals = np.asarray(values, np.float32).reshape(-1)
        if idx.shape != vals.shape:
            raise BufferError(f"set_aux_reward: {len(idx)} indices but {len(vals)} values")
        if not np.all(np.isfinite(vals)):
            raise BufferError(f"set_aux_reward from {scorer_id!r}: values contain NaN or inf")
        with self._lock:
            live = self._row_of_pos[idx % self.storage.capacity] == idx
            if live.any():
                self.storage.write_column(f"aux_reward/{scorer_id}", idx[live], vals[live])

    # ---- bookkeeping ---------------------------------------------------------------------------

    @property
    def num_episodes(self) -> int:
        """Live committed episodes."""
        return self.storage.episodes().count

    @property
    def num_transitions(self) -> int:
        """Live committed transitions (rows minus each episode's final-observation row)."""
        t = self.storage.episodes()
        return t.next_row - t.first_row - t.count

    def episode_rows(self, episode: int) -> tuple[int, int]:
        """Global [start, end) rows of a live episode (end - start = transitions + 1)."""
        with self._lock:
            return self.storage.episodes().bounds(episode)

    def state_dict(self) -> dict[str, Any]:
        """Sampler state, RNG and clip cursor: with the reopened storage, sampling resumes exactly.
        The episode in flight is not included (as after a crash); a prefetched batch is, as its draw."""
        self._settle()
        with self._lock:
            table = self.storage.episodes()
            state = {
                "sampler": self.sampler.state_dict(),
                "rng": self._rng.bit_generator.state,
                "clip_cursor": self._clip_cursor,
                "live_rows": (table.first_row, table.next_row),
            }
            if self._stats is not None:
                state["replay_stats"] = self._stats.window_state()
            if self._pending is not None:
                draw = self._pending.draw
                state["prefetched"] = {
                    "batch_size": draw.batch_size,
                    "keys": list(draw.keys),
                    "pos": draw.pos.copy(),
                    "weights": draw.weights.copy(),
                }
            return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from `state_dict`. If the store changed since (episodes committed or evicted after
        the checkpoint, e.g. by a writer that crashed later), the sampler is reconciled: rows gone
        since are dropped, rows new since join with the default priority. A prefetched batch is read
        again from its draw (drawn anew if its rows are gone)."""
        self._settle()
        self._pending = None
        with self._lock:
            self.sampler.load_state_dict(state["sampler"])
            self._rng.bit_generator.state = state["rng"]
            self._clip_cursor = int(state["clip_cursor"])
            if self._stats is not None:
                self._stats.load_window_state(state.get("replay_stats"))
            table = self.storage.episodes()
            (f0, n0), (f1, n1) = state["live_rows"], (table.first_row, table.next_row)
            if (f0, n0) != (f1, n1):
                then, now = np.arange(f0, n0, dtype=np.int64), np.arange(f1, n1, dtype=np.int64)
                changed = np.unique(np.setxor1d(then, now) % self.storage.capacity)
                live = (self._row_of_pos[changed] >= 0) & (self._steps_to_end[changed] > 0)
                self.sampler.remove(changed[~live])
                self.sampler.add(changed[live])
        prefetched = state.get("prefetched")
        if prefetched is not None:
            keys = tuple(prefetched["keys"])
            draw = _Draw(int(prefetched["batch_size"]), keys, prefetched["pos"], prefetched["weights"])
            if all(k in self.obs_keys for k in keys):
                self._submit(draw)

    def close(self) -> None:
        """Drop the episode in flight and close the storage."""
        self._settle()
        self._pending = None
        if self._prefetcher is not None:
            self._prefetcher.shutdown()
            self._prefetcher = None
        self._recorder.discard()
        self.storage.close()

    def __enter__(self) -> ReplayBuffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
