"""Score recorded episodes with a VLM; write scores and aux rewards beside the data; render a report.

    vlmrl score runs/record/episodes.zarr                         # a vlmrl zarr store, oracle scorer
    vlmrl score runs/record/lerobot scorer:openai --scorer.base-url http://127.0.0.1:8000/v1 --scorer.model M

Each episode is cut into the buffer's clips (``clip_length`` frames, every ``clip_stride`` steps) of one
camera and scored against the task prompt. Scores and per-step aux rewards go back beside the data:
into the zarr store's ``scores/<scorer_id>`` and ``aux_reward/<scorer_id>`` arrays, or, for a
LeRobotDataset (v2.1 or v3.0, read through ``buffer.io``; its own files are never modified), into
``vlmrl_scores/<scorer_id>.parquet`` (one row per frame: episode_index, frame_index, score, aux_reward). The
report (``out_dir``) holds one video per episode with the score curve under the frames, ``summary.md``
(a table), ``summary.json`` and ``index.html``.

Score calibration (``vlm.score_calibration``): ``--fit-score-calibration cal.json`` fits a temperature
and threshold to this scorer's raw clip scores against the episodes' success labels (``clip_labels``)
and writes them with the scorer id and prompt hash; ``--score-calibration cal.json`` (here and in
``vlmrl train``) then maps the scores through it, stored as ``<scorer_id>-cal<temperature>``:

    vlmrl score runs/record/episodes.zarr scorer:oracle --scorer.noise 0.3 --fit-score-calibration cal.json
    vlmrl score runs/record/episodes.zarr scorer:oracle --scorer.noise 0.3 --score-calibration cal.json
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import tyro

from buffer import BufferConfig, make_buffer
from buffer.clips import clip_last_step, clip_span, scores_per_step
from buffer.errors import BufferError
from buffer.metadata import is_zarr_store, read_store_metadata
from buffer.storage.integrity import describe_skipped, known_damage
from sim.video import write_video
from vlm import Clip
from vlm.config import AuxRewardConfig, OracleConfig
from vlm.prompts import prompt_hash
from vlm.score_calibration import accuracy, fit_calibration
from vlmrl.errors import ConfigError
from vlmrl.loop.scoring import write_aux_rewards
from vlmrl.run_dir import write_config
from vlmrl.scorers.choice import ScorerChoice, ready_scorer
from vlmrl.scorers.evaluation import run_evaluation

logger = logging.getLogger("vlmrl.score")


@tyro.conf.configure(tyro.conf.CascadeSubcommandArgs)  # options may follow the scorer subcommand
@dataclass(frozen=True, kw_only=True)
class Config:
    """vlmrl score: score recorded episodes with a VLM and write a report."""

    episodes: Annotated[Path, tyro.conf.Positional]
    """A vlmrl zarr episode store or a LeRobotDataset v3 directory."""
    scorer: ScorerChoice = field(default_factory=OracleConfig)
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
    score_calibration: Path | None = None
    """Score calibration JSON (from ``--fit-score-calibration``) to map the scores through; it must have
    been fitted for this scorer and prompt. The calibrated scores go beside the raw ones."""
    fit_score_calibration: Path | None = None
    """Fit a score calibration on the raw scores of the clips, labelled by the episodes' ``success`` info
    (see ``clip_labels``), and write it here as JSON; its figures before and after go into the report."""
    evaluate: bool = False
    """Measure the scorer (and every ``--compare`` scorer) against the episodes' success labels instead
    of scoring: ROC-AUC, accuracy, ECE, VOC, clips/s (``vlmrl.scorers.evaluation``); writes nothing beside the data."""
    compare: tuple[str, ...] = ()
    """With --evaluate: more scorers, each written as after ``vlmrl score EPISODES``, e.g.
    ``"scorer:oracle --scorer.noise 0.2"`` ``"scorer:learned --scorer.path student.pt"``."""
    json: Path | None = None
    """With --evaluate: also write the figures as JSON here."""
    skip_corrupt: bool = False
    """Score the intact episodes of a store with damaged ones (a missing or corrupt chunk/shard file)
    and list the skipped episodes on the terminal and in the report; without it the first damaged
    episode stops the run, naming it."""


class EpisodeSource:
    """Recorded episodes as a ReplayBuffer: a zarr store reopened in place (scores are written into it),
    or a LeRobotDataset imported into RAM (``buffer.io``; scores go to a sidecar parquet beside it)."""

    def __init__(self, path: Path, cfg: Config) -> None:
        self.path = path
        self.is_lerobot = (path / "meta" / "info.json").is_file()
        if self.is_lerobot:
            from buffer.io import import_lerobot, lerobot_spec
            from buffer.io.lerobot_format import LeRobotReader

            obs_spec, action_dim, info_keys = lerobot_spec(path)
            reader = LeRobotReader(path)
            capacity = int(reader.info.get("total_frames", 0)) + 16
            attrs: dict[str, Any]
            storage, attrs = "memory", {"task_description": reader.first_task(), "control_hz": reader.fps}
        elif is_zarr_store(path):
            meta = read_store_metadata(path)  # one-line BufferError for malformed metadata
            obs_spec, action_dim, info_keys, capacity = (
                meta.obs_spec,
                meta.action_dim,
                meta.info_keys,
                meta.capacity,
            )
            storage, attrs = "zarr", meta.record
        else:
            raise ConfigError(
                f"EPISODES {path}: neither a vlmrl zarr store (zarr.json) nor a LeRobotDataset (meta/info.json)"
            )
        self.cameras = [k.removeprefix("pixels/") for k in obs_spec if k.startswith("pixels/")]
        if not self.cameras:
            raise ConfigError(f"{path}: the episodes hold no camera frames to score")
        self.camera = cfg.camera or self.cameras[0]
        if self.camera not in self.cameras:
            raise ConfigError(f"--camera {self.camera}: not recorded (have {self.cameras})")
        buf_cfg = BufferConfig(
            storage=storage,  # type: ignore[arg-type]
            capacity_steps=capacity,
            clip_length=cfg.clip_length,
            clip_stride=cfg.clip_stride,
            clip_camera=f"pixels/{self.camera}",
        )
        if storage == "zarr":  # damaged episodes are named (self.damaged), not fatal, when opening
            from buffer.io import open_recorded

            self.buffer = open_recorded(buf_cfg, obs_spec, action_dim, info_keys, str(path))
            self.damaged = known_damage(self.buffer.storage)
        else:
            self.buffer = make_buffer(buf_cfg, obs_spec, action_dim, info_keys)
            self.damaged = {}
        self.dataset_index: list[
            int
        ] = []  # LeRobotDataset: the dataset's episode index of each buffer episode
        if self.is_lerobot:  # damaged episodes are not imported; named in self.skipped_on_import
            self.skipped_on_import: dict[int, str] = {}
            import_lerobot(
                path,
                self.buffer,
                skipped=self.skipped_on_import if cfg.skip_corrupt else None,
                imported=self.dataset_index,
            )
        self.task = str(attrs.get("task_description", ""))
        self.fps = float(attrs.get("control_hz", 10.0))
        self._rows: list[dict[str, Any]] = []

    def episodes(self) -> list[int]:
        """Live episode ids, oldest first."""
        table = self.buffer.storage.episodes()
        return list(range(table.first, table.first + table.count))

    def label(self, episode: int) -> int:
        """The episode's id in the source: the store's, or the LeRobotDataset's ``episode_index``."""
        if not self.is_lerobot:
            return episode
        return self.dataset_index[episode - self.buffer.storage.episodes().first]

    def write(self, episode: int, aux: np.ndarray, scorer_id: str) -> str:
        """Where the episode's scores and aux rewards (already in the buffer: ``vlmrl.loop.scoring``) end up: the
        zarr store itself, or rows collected for the LeRobotDataset's sidecar parquet."""
        start, end = self.buffer.episode_rows(episode)
        if not self.is_lerobot:
            return f"{self.path}: scores/{scorer_id}, aux_reward/{scorer_id}"
        rows = np.arange(start, end)
        per_row = self.buffer.storage.read(f"scores/{scorer_id}", rows[:-1])
        for t in range(len(rows)):
            score = float(per_row[t]) if t < len(per_row) else float(per_row[-1])
            aux_t = float(aux[t]) if t < len(aux) else 0.0
            self._rows.append(
                {"episode_index": self.label(episode), "frame_index": t, "score": score, "aux_reward": aux_t}
            )
        return str(self.path / "vlmrl_scores" / f"{scorer_id}.parquet")

    def flush(self, scorer: Any, prompt: str) -> None:
        """LeRobotDataset: write the sidecar parquet (atomically; the dataset's own files stay untouched)."""
        if not self.is_lerobot:
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        out = self.path / "vlmrl_scores"
        out.mkdir(exist_ok=True)
        meta = {
            "scorer_id": scorer.scorer_id,
            "model_id": scorer.model_id,
            "prompt": prompt,
            "prompt_hash": prompt_hash(prompt),
        }
        table = pa.Table.from_pylist(self._rows).replace_schema_metadata({"vlmrl": json.dumps(meta)})
        tmp = out / f"{scorer.scorer_id}.parquet.tmp"
        pq.write_table(table, tmp)
        tmp.replace(out / f"{scorer.scorer_id}.parquet")

    def close(self) -> None:
        """Close the buffer (the zarr store stays as written)."""
        self.buffer.close()


def step_scores(n_steps: int, clips: list[Any], scores: np.ndarray) -> np.ndarray:
    """Per-step score by the clip rule (``buffer.clips``): each step carries the score of the clip whose
    span covers it (NaN where none does)."""
    if not clips:
        return np.full(n_steps, np.nan, np.float32)
    return scores_per_step(n_steps, [c.start for c in clips], clips[0].length, clips[0].stride, scores)


def main(cfg: Config, custom_scorer: Any = None) -> int:
    """Score every episode; returns 0. ``custom_scorer``: any ``vlm.Scorer`` instead of the one ``cfg.scorer``
    names (the Python API's ``vlmrl.score(cfg, scorer=...)``); closed at the end like it."""
    if cfg.clip_length < 1 or cfg.clip_stride < 1:
        raise ConfigError("--clip-length and --clip-stride must be at least 1")
    if cfg.evaluate:
        return run_evaluation(cfg)
    if cfg.compare or cfg.json:
        raise ConfigError("--compare and --json go with --evaluate")
    if cfg.score_calibration and cfg.fit_score_calibration:
        raise ConfigError("--fit-score-calibration fits the scorer's raw scores; drop --score-calibration")
    if cfg.aux.weight != 1.0:
        raise ConfigError(
            f"--aux.weight {cfg.aux.weight}: stored aux rewards are unweighted (one weight, applied where they "
            "are used: vlmrl train --aux-reward-weight); leave --aux.weight at 1"
        )
    if not cfg.episodes.exists():
        raise ConfigError(f"EPISODES {cfg.episodes}: no such file or directory")
    source = EpisodeSource(cfg.episodes, cfg)
    out_dir = cfg.out_dir or cfg.episodes.parent / f"{cfg.episodes.name}-report"
    rows = []
    raw_scores: dict[int, np.ndarray] = {}
    try:
        skipped = dict(source.damaged)  # episode -> why it is not scored
        if skipped and not cfg.skip_corrupt:
            raise ConfigError(
                f"{cfg.episodes}: {describe_skipped(skipped, 'damaged')}; --skip-corrupt scores the others"
            )
        episodes = [e for e in source.episodes() if e not in skipped]
        if not episodes:
            raise ConfigError(f"{cfg.episodes}: no episodes" + (" left intact" if skipped else ""))
        goal = cfg.prompt or source.task
        if not goal:
            raise ConfigError(f"{cfg.episodes}: no task sentence stored; pass --prompt")
        clips_of: dict[int, list[Any]] = {}
        for ref in source.buffer.new_clips():
            clips_of.setdefault(ref.episode, []).append(ref)
        # Labels first: data that cannot be calibrated fails before the (slow) scoring.
        labels = episode_labels(source, clips_of, episodes) if cfg.fit_score_calibration else None

        def first_frame() -> tuple[str, tuple[int, ...]]:
            first, _ = source.buffer.episode_rows(episodes[0])
            frame = source.buffer.storage.read(f"pixels/{source.camera}", np.array([first]))
            return source.camera, frame.shape[1:3]

        scorer, prompt = ready_scorer(
            cfg.scorer, goal, scorer=custom_scorer, prompt=cfg.prompt, source=first_frame,
            calibration=cfg.score_calibration,
        )  # fmt: skip
        try:
            if cfg.score_calibration:
                warn_if_calibration_hurts(scorer.calibration, cfg.score_calibration)
            # Inputs are valid: only now is the report directory (and its config.json) written.
            write_config(cfg, out_dir)
            for episode in episodes:
                start, end = source.buffer.episode_rows(episode)
                n_rows = end - start
                clips = clips_of.get(episode, [])
                try:  # every read of the episode first: damage found here skips it before any write
                    frames = source.buffer.storage.read(f"pixels/{source.camera}", np.arange(start, end))
                    info = {
                        k: source.buffer.storage.read(f"info/{k}", np.arange(start, end))
                        for k in source.buffer.info_keys
                    }
                    batch = [Clip(*source.buffer.read_clip(c)) for c in clips]
                    source.buffer.storage.read("terminated", np.array([end - 2]))  # the aux rule reads it
                except BufferError as exc:
                    if not cfg.skip_corrupt:
                        raise
                    skipped[source.label(episode)] = str(exc)
                    print(f"score: skipped episode {source.label(episode)}: {exc}")
                    continue
                scores = scorer.score(batch, prompt) if batch else np.zeros(0, np.float32)
                raw_scores[episode] = scores
                n_transitions = n_rows - 1
                last_steps = np.array([clip_last_step(c.start, c.length, c.stride) for c in clips])
                source.buffer.set_scores([c.clip_id for c in clips], scores, scorer.scorer_id)
                # The one path from clip scores to stored aux rewards, as in train and finetune.
                aux = write_aux_rewards(source.buffer, episode, last_steps, scores, cfg.aux, scorer.scorer_id)
                where = source.write(episode, aux, scorer.scorer_id)
                curve = step_scores(n_rows, clips, scores)
                video = out_dir / f"episode_{source.label(episode)}.mp4"
                write_video(compose_report_frames(frames, curve, info.get("progress")), video, fps=source.fps)
                success = info.get("success")
                rows.append(
                    {
                        "episode": source.label(episode),
                        "steps": n_transitions,
                        "clips": len(clips),
                        "mean_score": float(np.mean(scores)) if len(scores) else None,
                        "final_score": float(scores[-1]) if len(scores) else None,
                        "aux_return": float(np.sum(aux)),
                        "success": None if success is None else bool(np.any(success > 0)),
                        "video": video.name,
                        "written_to": where,
                    }
                )
            source.flush(scorer, prompt)
            skipped.update(getattr(source, "skipped_on_import", {}))
        finally:
            scorer.close()
    finally:
        source.close()
    calibration = None
    if cfg.fit_score_calibration and labels is not None:
        scored = list(raw_scores)
        fit_labels = np.concatenate([labels[e] for e in scored])
        check_both_classes(fit_labels, source.path)
        calibration = fit_score_calibration(
            cfg.fit_score_calibration,
            np.concatenate([raw_scores[e] for e in scored]),
            fit_labels,
            scorer.scorer_id,
            prompt,
        )
    write_summary(out_dir, rows, scorer.scorer_id, prompt, calibration, skipped)
    print(f"score: {len(rows)} episode(s) scored by {scorer.scorer_id} -> {out_dir / 'summary.md'}")
    if skipped:
        print(f"score: {describe_skipped(skipped)}")
    return 0


def clip_labels(success: np.ndarray, clips: list[Any]) -> np.ndarray:
    """bool [n_clips]: has the episode succeeded by the end of the steps each clip's score covers?

    A clip's score stands for the transitions from its first frame to the next clip's first frame (the
    last clip: to the episode's final observation), so its label is whether the per-row ``success`` info
    is set at any row up to that end. Episodes end at success (``LeRobotEnv``), so success shows on the
    final observation only, which the clips' frames often miss (it depends on the episode's length);
    labelling by the clip's own frames would leave many recordings without a successful clip.
    """
    reached = np.maximum.accumulate(np.asarray(success) > 0)
    last_row = len(reached) - 1
    return np.array([reached[clip_span(c.start, c.length, c.stride, last_row)[1]] for c in clips], bool)


def episode_labels(
    source: EpisodeSource, clips_of: dict[int, list[Any]], episodes: list[int]
) -> dict[int, np.ndarray]:
    """Labels of the clips of each episode (``clip_labels``); one-line ConfigError when the episodes
    store no success info or their clips are all of one class."""
    if "success" not in source.buffer.info_keys:
        raise ConfigError(
            f"--fit-score-calibration: {source.path} stores no per-step success info to label clips with "
            "(vlmrl record writes info/success; a LeRobotDataset needs an info.success or next.success column)"
        )
    labels = {}
    for episode in episodes:
        start, end = source.buffer.episode_rows(episode)
        success = source.buffer.storage.read("info/success", np.arange(start, end))
        labels[episode] = clip_labels(success, clips_of.get(episode, []))
    check_both_classes(np.concatenate(list(labels.values())) if labels else np.zeros(0, bool), source.path)
    return labels


def check_both_classes(flat: np.ndarray, path: Path) -> None:
    """One-line ConfigError unless the clip labels hold both successes and failures."""
    if flat.all() or not flat.any():
        missing, have = ("failed", "success") if flat.all() else ("successful", "failure")
        raise ConfigError(
            f"--fit-score-calibration: all {len(flat)} clips of {path} are labelled {have} by its "
            f"success info; calibration needs {missing} clips too (record {missing} episodes as well)"
        )


def warn_if_calibration_hurts(calibration: Any, path: Path) -> bool:
    """Print ``ScoreCalibration.ece_warning`` when one is due; returns whether it warned."""
    warning = calibration.ece_warning(path)
    if warning:
        print(f"score: warning: {warning}")
    return bool(warning)


def fit_score_calibration(
    path: Path, scores: np.ndarray, labels: np.ndarray, scorer_id: str, prompt: str
) -> dict[str, Any]:
    """Fit, write ``path`` and print the figures; returns them for the report. Accuracy before is that of
    the raw score at 0.5, after that of the calibrated score at the fitted threshold."""
    cal = fit_calibration(scores, labels, scorer_id=scorer_id, prompt_hash=prompt_hash(prompt))
    cal.save(path)
    warn_if_calibration_hurts(cal, path)
    figures = {
        "file": str(path),
        "clips": cal.n_clips,
        "successes": int(np.sum(labels)),
        "temperature": cal.temperature,
        "threshold": cal.threshold,
        "auc": cal.auc,
        "accuracy_before": accuracy(scores, labels, 0.5),
        "accuracy_after": cal.accuracy,
        "ece_before": cal.ece_before,
        "ece_after": cal.ece,
    }
    print(
        f"score: calibration of {scorer_id} on {cal.n_clips} clips ({figures['successes']} successful): "
        f"temperature {cal.temperature:.3g}, threshold {cal.threshold:.3f} -> {path}\n"
        f"score:   AUC {cal.auc:.3f} (temperature keeps the ranking); accuracy "
        f"{figures['accuracy_before']:.3f} at 0.5 -> {cal.accuracy:.3f} at {cal.threshold:.3f}; "
        f"ECE {cal.ece_before:.3f} -> {cal.ece:.3f}"
    )
    return figures


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


def write_summary(
    out_dir: Path,
    rows: list[dict[str, Any]],
    scorer_id: str,
    prompt: str,
    calibration: dict[str, Any] | None = None,
    skipped: dict[int, str] | None = None,
) -> None:
    """summary.json, summary.md (a table, the damaged episodes skipped, and the fitted calibration's
    figures) and index.html (the table with the videos)."""
    summary: dict[str, Any] = {"scorer_id": scorer_id, "prompt": prompt, "episodes": rows}
    if calibration is not None:
        summary["calibration"] = calibration
    if skipped:
        summary["skipped"] = {str(e): why for e, why in sorted(skipped.items())}
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
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
    if skipped:
        lines += ["", f"## Skipped: {len(skipped)} damaged episode(s)", ""]
        lines += [f"- episode {e}: {why}" for e, why in sorted(skipped.items())]
    if calibration is not None:
        c = calibration
        lines += [
            "",
            f"## Score calibration fitted on {c['clips']} clips ({c['successes']} successful)",
            "",
            f"Written to `{c['file']}`: temperature {c['temperature']:.3g}, threshold {c['threshold']:.3f}.",
            "",
            "| figure | raw scores | calibrated |",
            "|---|---|---|",
            f"| ROC AUC | {c['auc']:.3f} | {c['auc']:.3f} |",
            f"| accuracy (raw at 0.5, calibrated at the threshold) | {c['accuracy_before']:.3f} | "
            f"{c['accuracy_after']:.3f} |",
            f"| ECE | {c['ece_before']:.3f} | {c['ece_after']:.3f} |",
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
