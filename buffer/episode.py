"""Episodes: the committed-episode table and the recorder that stages one episode's steps."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from buffer.errors import BufferError
from buffer.spec import ArraySpec, check_value


@dataclass(frozen=True)
class EpisodeTable:
    """Live committed episodes: episode ids first..first+len(ends)-1, rows on one global axis.

    Episode e (e >= first) covers global rows [start_e, ends[e - first]), where start_first = first_row
    and start_e = ends of e-1. Its last row holds only the final observation (not a transition start).
    Global row g lives at ring position g % capacity.
    """

    first: int
    first_row: int
    ends: np.ndarray

    @property
    def count(self) -> int:
        """Number of live episodes."""
        return len(self.ends)

    @property
    def next_row(self) -> int:
        """Global row where the next episode starts."""
        return int(self.ends[-1]) if len(self.ends) else self.first_row

    def bounds(self, episode: int) -> tuple[int, int]:
        """Global [start, end) rows of a live episode.

        Raises:
            BufferError: the episode is not live (never committed, or evicted).
        """
        i = episode - self.first
        if not 0 <= i < len(self.ends):
            raise BufferError(
                f"episode {episode} is not in the buffer (live: {self.first}..{self.first + self.count - 1})"
            )
        start = self.first_row if i == 0 else int(self.ends[i - 1])
        return start, int(self.ends[i])


class EpisodeRecorder:
    """Stages the steps of the episode in flight until it ends (nothing is visible before)."""

    def __init__(self, specs: Mapping[str, ArraySpec], obs_keys: list[str], info_keys: list[str]):
        self._specs = specs
        self._obs_keys = obs_keys
        self._info_keys = info_keys
        self._rows: dict[str, list[np.ndarray]] = {name: [] for name in specs}

    @property
    def num_steps(self) -> int:
        """Transitions staged so far."""
        return len(self._rows["action"])

    def _check_obs(self, obs: Mapping[str, object], what: str) -> dict[str, np.ndarray]:
        if not isinstance(obs, Mapping):
            raise BufferError(f"{what}: expected a dict of arrays, got {type(obs).__name__}")
        missing = [k for k in self._obs_keys if k not in obs]
        extra = [k for k in obs if k not in self._specs or k not in self._obs_keys]
        if missing or extra:
            raise BufferError(f"{what}: missing keys {missing}, unexpected keys {extra}")
        return {k: check_value(self._specs[k], obs[k], f"{what}[{k!r}]") for k in self._obs_keys}

    def _check_info(self, info: Mapping[str, object]) -> dict[str, np.ndarray]:
        out = {}
        for key in self._info_keys:
            if key not in info:
                raise BufferError(
                    f"info: missing key {key!r} (the buffer was built with info_keys={self._info_keys})"
                )
            value = np.asarray(info[key])
            if value.size != 1:
                raise BufferError(f"info[{key!r}]: expected one number, got shape {list(value.shape)}")
            out[f"info/{key}"] = check_value(self._specs[f"info/{key}"], value.reshape(()), f"info[{key!r}]")
        return out

    def add(self, obs, action, reward, terminated, truncated, info, next_obs) -> bool:
        """Validate and stage one step; True when it ends the episode (terminated or truncated)."""
        n = self.num_steps
        checked = self._check_obs(obs, f"step {n} obs")
        row: dict[str, np.ndarray] = {
            **checked,
            "action": check_value(self._specs["action"], action, f"step {n} action"),
            "reward": check_value(self._specs["reward"], reward, f"step {n} reward"),
            "terminated": np.asarray(bool(terminated)),
            "truncated": np.asarray(bool(truncated)),
        }
        info_row = self._check_info(info)
        done = bool(terminated) or bool(truncated)
        next_checked = self._check_obs(next_obs, f"step {n} next_obs") if done else None
        # info describes next_obs, so it belongs to the next row; row 0 borrows the first step's info.
        if n == 0:
            for k, v in info_row.items():
                self._rows[k].append(v)
        for k, v in row.items():
            self._rows[k].append(v)
        if done:
            assert next_checked is not None
            for k, v in next_checked.items():
                self._rows[k].append(v)
            for name in ("action", "reward", "terminated", "truncated"):
                self._rows[name].append(np.zeros(self._specs[name].shape, self._specs[name].dtype))
        for k, v in info_row.items():
            self._rows[k].append(v)
        return done

    def finish(self) -> dict[str, np.ndarray]:
        """The staged episode as arrays of T + 1 rows (last row: final observation), and reset."""
        arrays = {name: np.stack(rows) for name, rows in self._rows.items()}
        self._rows = {name: [] for name in self._specs}
        return arrays

    def discard(self) -> None:
        """Drop the staged steps."""
        self._rows = {name: [] for name in self._specs}
