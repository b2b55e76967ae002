"""Score recorded episodes with a VLM; write scores and aux rewards beside the data; render a report.

    vlmrl score runs/record/episodes.zarr                  # a vlmrl zarr store (from record/finetune)
    vlmrl score runs/record/lerobot --scorer.kind hf ...   # a LeRobotDataset v3 directory

Each episode is cut into the buffer's clips (``clip_length`` frames, every ``clip_stride`` steps) of one
camera and scored against the task prompt. Scores and per-step aux rewards go back beside the data:
into the zarr store's ``scores/<scorer_id>`` and ``aux_reward/<scorer_id>`` arrays, or, for a
LeRobotDataset (whose own files are never modified), into ``vlmrl_scores/<scorer_id>.parquet``. The
report (``out_dir``) holds one video per episode with the score curve under the frames, ``summary.md``
(a table), ``summary.json`` and ``index.html``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Protocol

import numpy as np
import tyro

from vlm.config import AuxRewardConfig, OracleConfig, ScorerConfig
from vlmrl.errors import ConfigError
from vlmrl.pipelines.deploy import write_config

logger = logging.getLogger("vlmrl.score")


@dataclass(frozen=True, kw_only=True)
class Config:
    """vlmrl score: score recorded episodes with a VLM and write a report."""

    episodes: Annotated[Path, tyro.conf.Positional]
    """A vlmrl zarr episode store or a LeRobotDataset v3 directory."""
    scorer: ScorerConfig = field(default_factory=OracleConfig)
    """Which scorer judges the clips (oracle needs the privileged ``progress`` stored with the episodes)."""
    prompt: str | None = None
    """Question for the scorer; None: built from the task sentence stored with the episodes."""
    camera: str | None = None
    """Camera whose frames are scored (None: the first one)."""
    clip_length: int = 8
    """Frames per clip."""
    clip_stride: int = 2
    """Steps between a clip's frames; one clip covers clip_length * clip_stride steps."""
    aux: AuxRewardConfig = field(default_factory=AuxRewardConfig)
    """How clip scores become per-step auxiliary rewards."""
    out_dir: Path | None = None
    """Report directory (None: ``<episodes>-report`` beside the data)."""


class EpisodeSource(Protocol):
    """Episodes to score and where their scores go (zarr store or LeRobotDataset)."""

    cameras: list[str]
    fps: float

    def episodes(self) -> list[int]: ...
    def frames(self, episode: int, camera: str) -> np.ndarray: ...
    def info(self, episode: int) -> dict[str, np.ndarray]: ...
    def task(self, episode: int) -> str: ...
    def write(
        self, episode: int, clips: list[Any], scores: np.ndarray, aux: np.ndarray, scorer: Any, prompt: str
    ) -> str: ...


class ZarrSource:
    """A vlmrl zarr store, through the buffer's ReplayBuffer (scores land in the store's own arrays)."""

    def __init__(self, path: Path, cfg: Config) -> None:
        import zarr

        from buffer import BufferConfig, make_buffer

        meta: Any
        try:
            meta = zarr.open_group(str(path), mode="r").attrs.get("vlmrl_buffer")
        except Exception as exc:
            raise ConfigError(f"{path}: cannot open as a zarr store ({type(exc).__name__})") from None
        if meta is None:
            raise ConfigError(f"{path}: a zarr group that is not a vlmrl episode store")
        env = meta["env"]
        record: Any = zarr.open_group(str(path), mode="r").attrs.get("vlmrl_record") or {}
        self.attrs: dict[str, Any] = dict(record)
        obs_spec = {k: (tuple(shape), np.dtype(dt)) for k, (shape, dt) in env["obs_spec"].items()}
        self.cameras = [k.removeprefix("pixels/") for k in obs_spec if k.startswith("pixels/")]
        camera = cfg.camera or (self.cameras[0] if self.cameras else "")
        buf_cfg = BufferConfig(
            storage="zarr",
            capacity_steps=int(meta["capacity"]),
            clip_length=cfg.clip_length,
            clip_stride=cfg.clip_stride,
            clip_camera=f"pixels/{camera}" if camera else "",
        )
        self.buffer = make_buffer(buf_cfg, obs_spec, int(env["action_dim"]), env["info_keys"], path=str(path))
        self.fps = float(self.attrs.get("control_hz", 10.0))

    def episodes(self) -> list[int]:
        table = self.buffer.storage.episodes()
        return list(range(table.first, table.first + table.count))

    def _rows(self, episode: int) -> np.ndarray:
        start, end = self.buffer.episode_rows(episode)
        return np.arange(start, end, dtype=np.int64)

    def frames(self, episode: int, camera: str) -> np.ndarray:
        return self.buffer.storage.read(f"pixels/{camera}", self._rows(episode))

    def info(self, episode: int) -> dict[str, np.ndarray]:
        rows = self._rows(episode)
        return {k: self.buffer.storage.read(f"info/{k}", rows) for k in self.buffer.info_keys}

    def task(self, episode: int) -> str:
        return str(self.attrs.get("task_description", ""))

    def write(
        self, episode: int, clips: list[Any], scores: np.ndarray, aux: np.ndarray, scorer: Any, prompt: str
    ) -> str:
        start, _ = self.buffer.episode_rows(episode)
        self.buffer.set_scores([start + c.start for c in clips], scores, scorer.scorer_id)
        self.buffer.set_aux_reward(start + np.arange(len(aux)), aux, scorer.scorer_id)
        return f"scores/{scorer.scorer_id}"

    def close(self) -> None:
        self.buffer.close()


class LeRobotSource:
    """A LeRobotDataset v3 directory; scores go to ``vlmrl_scores/`` beside (never into) its files."""

    def __init__(self, path: Path) -> None:
        from robot.lerobot_dataset import LeRobotEpisodes

        self.dataset = LeRobotEpisodes(path)
        self.cameras = list(self.dataset.cameras)
        self.fps = float(self.dataset.fps)
        self._rows: list[dict[str, Any]] = []
        self._clips: list[dict[str, Any]] = []
        self.root = Path(path)

    def episodes(self) -> list[int]:
        return self.dataset.episodes

    def frames(self, episode: int, camera: str) -> np.ndarray:
        return self.dataset.frames(episode, camera)

    def info(self, episode: int) -> dict[str, np.ndarray]:
        names = self.dataset.features
        out = {}
        for key in ("progress", "success", "next.success"):
            if key in names:
                out[key.removeprefix("next.")] = (
                    self.dataset.column(episode, key).reshape(-1).astype(np.float32)
                )
        return out

    def task(self, episode: int) -> str:
        return self.dataset.task(episode)

    def write(
        self, episode: int, clips: list[Any], scores: np.ndarray, aux: np.ndarray, scorer: Any, prompt: str
    ) -> str:
        per_step = step_scores(self.dataset.length(episode), clips, scores)
        for t in range(self.dataset.length(episode)):
            aux_t = float(aux[t]) if t < len(aux) else 0.0
            self._rows.append(
                {"episode_index": episode, "frame_index": t, "score": float(per_step[t]), "aux_reward": aux_t}
            )
        for c, s in zip(clips, scores):
            self._clips.append(
                {
                    "episode_index": episode,
                    "start": c.start,
                    "length": c.length,
                    "stride": c.stride,
                    "score": float(s),
                }
            )
        return str(self.root / "vlmrl_scores" / f"{scorer.scorer_id}.parquet")

    def flush(self, scorer: Any, prompt: str) -> None:
        """Write the collected rows (one parquet per scorer; rewritten whole, atomically)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        from vlm.prompts import prompt_hash

        out = self.root / "vlmrl_scores"
        out.mkdir(exist_ok=True)
        meta = {
            "scorer_id": scorer.scorer_id,
            "model_id": scorer.model_id,
            "prompt": prompt,
            "prompt_hash": prompt_hash(prompt),
        }
        for name, rows in (
            (f"{scorer.scorer_id}.parquet", self._rows),
            (f"{scorer.scorer_id}.clips.parquet", self._clips),
        ):
            table = pa.Table.from_pylist(rows).replace_schema_metadata({"vlmrl": json.dumps(meta)})
            tmp = out / (name + ".tmp")
            pq.write_table(table, tmp)
            tmp.replace(out / name)

    def close(self) -> None:
        pass


def step_scores(n_steps: int, clips: list[Any], scores: np.ndarray) -> np.ndarray:
    """Per-step score: each step carries the score of the clip that covers it (NaN before any clip)."""
    out = np.full(n_steps, np.nan, np.float32)
    for c, s in zip(clips, scores):
        out[c.start : min(n_steps, c.start + c.length * c.stride)] = s
    return out


def open_source(path: Path, cfg: Config) -> Any:
    """The source for a path (zarr store or LeRobotDataset); ConfigError for anything else."""
    from robot.lerobot_dataset import is_lerobot_dataset

    if not path.exists():
        raise ConfigError(f"EPISODES {path}: no such file or directory")
    if is_lerobot_dataset(path):
        return LeRobotSource(path)
    if (path / "zarr.json").is_file():
        return ZarrSource(path, cfg)
    raise ConfigError(
        f"EPISODES {path}: neither a vlmrl zarr store (zarr.json) nor a LeRobotDataset (meta/info.json)"
    )


def main(cfg: Config) -> int:
    """Score every episode; returns 0."""
    from buffer.clips import plan_clips
    from sim.video import write_video
    from vlm import Clip, make_prompt, make_scorer
    from vlm.aux_reward import aux_rewards
    from vlm.prompts import clip_goal_prompt

    if cfg.clip_length < 1 or cfg.clip_stride < 1:
        raise ConfigError("--clip-length and --clip-stride must be at least 1")
    source = open_source(cfg.episodes, cfg)
    out_dir = cfg.out_dir or cfg.episodes.parent / f"{cfg.episodes.name}-report"
    try:
        if not source.cameras:
            raise ConfigError(f"{cfg.episodes}: the episodes hold no camera frames to score")
        camera = cfg.camera or source.cameras[0]
        if camera not in source.cameras:
            raise ConfigError(f"--camera {camera}: not recorded (have {source.cameras})")
        episodes = source.episodes()
        if not episodes:
            raise ConfigError(f"{cfg.episodes}: no committed episodes")
        write_config(cfg, out_dir)
        scorer = make_scorer(cfg.scorer)
        rows = []
        try:
            goal = cfg.prompt or source.task(episodes[0])
            if not goal:
                raise ConfigError(f"{cfg.episodes}: no task sentence stored; pass --prompt")
            prompt = cfg.prompt or (
                clip_goal_prompt(goal) if cfg.scorer.kind == "clip" else make_prompt(goal)
            )
            for episode in episodes:
                frames = source.frames(episode, camera)
                info = source.info(episode)
                n = len(frames)
                clips = plan_clips(episode, 0, n, cfg.clip_length, cfg.clip_stride, camera)
                batch = []
                for c in clips:
                    idx = c.start + np.arange(c.length) * c.stride
                    batch.append(Clip(frames[idx], {k: v[idx] for k, v in info.items() if len(v) == n}))
                scores = scorer.score(batch, prompt)
                n_transitions = max(n - 1, 1)
                last_steps = np.array(
                    [min(c.start + (c.length - 1) * c.stride, n_transitions) for c in clips]
                )
                success = info.get("success")
                ended = success is not None and bool(success[-1] > 0)
                aux = aux_rewards(cfg.aux, n_transitions, last_steps, scores, terminated=ended)
                where = source.write(episode, clips, scores, aux, scorer, prompt)
                curve = step_scores(n, clips, scores)
                video = out_dir / f"episode_{episode}.mp4"
                write_video(compose_report_frames(frames, curve, info.get("progress")), video, fps=source.fps)
                rows.append(
                    {
                        "episode": episode,
                        "steps": n,
                        "clips": len(clips),
                        "mean_score": float(np.mean(scores)),
                        "final_score": float(scores[-1]),
                        "aux_return": float(np.sum(aux)),
                        "success": None if success is None else bool(np.any(success > 0)),
                        "video": video.name,
                        "written_to": where,
                    }
                )
            if isinstance(source, LeRobotSource):
                source.flush(scorer, prompt)
        finally:
            scorer.close()
    finally:
        source.close()
    write_summary(out_dir, rows, scorer.scorer_id, prompt)
    print(f"score: {len(rows)} episode(s) scored by {scorer.scorer_id} -> {out_dir / 'summary.md'}")
    return 0


def compose_report_frames(
    frames: np.ndarray, curve: np.ndarray, progress: np.ndarray | None, width: int = 256
) -> np.ndarray:
    """Each frame scaled to ``width``, with the score curve (and progress, dashed grey) plotted under it
    and a cursor at the current step."""
    import cv2

    n = len(frames)
    h = round(frames.shape[1] * width / frames.shape[2])
    plot_h, pad = 96, 8
    panel = np.full((plot_h, width, 3), 255, np.uint8)
    xs = np.linspace(pad, width - pad, max(n, 2))

    def y_of(v: np.ndarray) -> np.ndarray:
        return plot_h - pad - np.clip(v, 0, 1) * (plot_h - 2 * pad)

    cv2.line(
        panel,
        (pad, int(y_of(np.array(0.5))[()])),
        (width - pad, int(y_of(np.array(0.5))[()])),
        (225, 225, 225),
        1,
    )
    if progress is not None and len(progress) == n:
        pts = np.stack([xs[:n], y_of(np.asarray(progress, np.float32))], 1).astype(np.int32)
        cv2.polylines(panel, [pts], False, (160, 160, 160), 1)
    valid = ~np.isnan(curve)
    if valid.any():
        pts = np.stack([xs[:n][valid], y_of(curve[valid])], 1).astype(np.int32)
        cv2.polylines(panel, [pts], False, (30, 90, 220), 2)
    cv2.putText(panel, "score", (pad, 14), cv2.FONT_HERSHEY_SIMPLEX, 0.4, (30, 90, 220), 1)
    out = np.empty((n, h + plot_h, width, 3), np.uint8)
    for t in range(n):
        out[t, :h] = cv2.resize(frames[t], (width, h), interpolation=cv2.INTER_NEAREST)
        out[t, h:] = panel
        x = int(xs[t])
        cv2.line(out[t, h:], (x, 0), (x, plot_h - 1), (0, 0, 0), 1)
    return out


def write_summary(out_dir: Path, rows: list[dict[str, Any]], scorer_id: str, prompt: str) -> None:
    """summary.json, summary.md (a table) and index.html (the table with the videos)."""
    (out_dir / "summary.json").write_text(
        json.dumps({"scorer_id": scorer_id, "prompt": prompt, "episodes": rows}, indent=2) + "\n"
    )
    cols = ["episode", "steps", "clips", "mean_score", "final_score", "aux_return", "success", "video"]

    def cell(v: Any) -> str:
        return f"{v:.3f}" if isinstance(v, float) else ("-" if v is None else str(v))

    lines = [
        f"# Scores by `{scorer_id}`",
        "",
        f"Prompt: {prompt}",
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]
    lines += ["| " + " | ".join(cell(r[c]) for c in cols) + " |" for r in rows]
    if rows:
        lines += [
            "",
            f"Mean score over {len(rows)} episode(s): {np.mean([r['mean_score'] for r in rows]):.3f}",
        ]
    (out_dir / "summary.md").write_text("\n".join(lines) + "\n")
    html_rows = "".join(
        "<tr>"
        + "".join(f"<td>{cell(r[c])}</td>" for c in cols[:-1])
        + f'<td><video src="{r["video"]}" controls width="256"></video></td></tr>'
        for r in rows
    )
    head = "".join(f"<th>{c}</th>" for c in cols)
    (out_dir / "index.html").write_text(
        f"<html><body><h1>Scores by {scorer_id}</h1><p>{prompt}</p><table border=1><tr>{head}</tr>{html_rows}</table></body></html>\n"
    )
