"""How good is a scorer on these recordings? ROC-AUC, accuracy, ECE, VOC and clips/s, several side by side.

    vlmrl score runs/rec/episodes.zarr --evaluate scorer:oracle --scorer.noise 0.2 \\
        --compare "scorer:learned --scorer.path student.pt" "scorer:oracle"

The clips are **windows starting at every step** of each episode (``clip_length`` frames ``clip_stride``
apart; near the end, as many frames as fit), which is the buffer's back-to-back clips plus every shift of
them. A window's label is the one score calibration uses (``window_labels``, the clip rule): has the
episode's ``success`` info been set by the end of the steps the window's score covers (start +
clip_length * clip_stride)? Figures, per scorer, against those labels:

- ROC-AUC: P(a positive window scores above a negative one), ties half.
- accuracy at the threshold: the scorer's own fitted threshold when it has one (a learned scorer's file
  records the one fitted on its held-out split), else 0.5.
- ECE: expected calibration error over 10 equal-width bins.
- VOC (value-order correlation, GVL, Ma et al. 2024): Spearman correlation of the windows' scores with
  their start step along each successful episode, averaged over those episodes.
- clips/s: windows scored per second of ``score`` calls (batches of ``batch_size``), on this machine.

Writes ``evaluation.md`` (the table), ``evaluation.json``, ``roc.png`` and ``reliability.png`` into the
report directory, and the JSON to ``--json PATH`` as well. Evaluation reads the recording only.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from buffer import BufferConfig, make_buffer
from buffer.clips import ClipRef, clip_span
from buffer.metadata import read_store_metadata
from vlm import Clip
from vlm.score_calibration import accuracy, expected_calibration_error, roc_auc
from vlmrl.errors import ConfigError
from vlmrl.scorers.choice import parse_scorer, ready_scorer


@dataclass
class Windows:
    """All windows of a recording, in episode order, with their labels and privileged info."""

    refs: list[ClipRef] = field(default_factory=list)
    labels: list[bool] = field(default_factory=list)
    episode_success: dict[int, bool] = field(default_factory=dict)
    clips: list[Any] = field(default_factory=list)
    """``vlm.Clip`` per window: its frames and per-frame info (progress, success)."""


def dense_windows(episode: int, n_rows: int, length: int, stride: int, camera: str) -> list[ClipRef]:
    """Windows starting at every step of an episode of ``n_rows`` rows (last row: final observation);
    like ``buffer.clips.plan_clips`` but shifted by one step instead of a clip span. ``clip_id`` is -1."""
    out = []
    for start in range(0, n_rows - 1):
        frames = min(length, -(-(n_rows - start) // stride))
        out.append(ClipRef(-1, episode, start, frames, stride, camera))
    return out


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman rank correlation (average ranks for ties); NaN when either side is constant."""
    from scipy.stats import spearmanr

    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(spearmanr(x, y).statistic)


def value_order_correlation(scores: np.ndarray, refs: list[ClipRef], successful: dict[int, bool]) -> float:
    """Mean over successful episodes of Spearman(score, window start); a constant scorer counts as 0."""
    per_episode = []
    episodes = np.array([r.episode for r in refs])
    starts = np.array([r.start for r in refs])
    for episode, ok in successful.items():
        mask = episodes == episode
        if ok and mask.sum() >= 2:
            rho = spearman(scores[mask], starts[mask])
            per_episode.append(0.0 if np.isnan(rho) else rho)
    return float(np.mean(per_episode)) if per_episode else float("nan")


def scorer_threshold(scorer: Any) -> float:
    """The scorer's own fitted threshold (a learned scorer's file records one), else 0.5."""
    meta = getattr(scorer, "meta", None)
    if isinstance(meta, dict) and isinstance(meta.get("threshold"), float):
        return float(meta["threshold"])
    return 0.5


def figures(scores: np.ndarray, labels: np.ndarray, threshold: float) -> dict[str, float]:
    """AUC, accuracy at ``threshold`` and ECE of ``scores`` against boolean ``labels``."""
    return {
        "auc": roc_auc(scores, labels),
        "threshold": threshold,
        "accuracy": accuracy(scores, labels, threshold),
        "ece": expected_calibration_error(scores, labels),
    }


def roc_points(scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(false positive rate, true positive rate) over every threshold, from (0, 0) to (1, 1)."""
    order = np.argsort(-scores, kind="mergesort")
    s, y = scores[order], labels[order].astype(np.float64)
    distinct = np.r_[np.nonzero(np.diff(s))[0], len(s) - 1]
    tp, fp = np.cumsum(y)[distinct], np.cumsum(1 - y)[distinct]
    return np.r_[0.0, fp / max(fp[-1], 1)], np.r_[0.0, tp / max(tp[-1], 1)]


def reliability_bins(
    scores: np.ndarray, labels: np.ndarray, n_bins: int = 10
) -> list[tuple[float, float, int]]:
    """(mean score, success rate, count) of each non-empty equal-width bin."""
    bins = np.minimum((scores * n_bins).astype(int), n_bins - 1)
    return [
        (float(scores[bins == b].mean()), float(labels[bins == b].mean()), int((bins == b).sum()))
        for b in range(n_bins)
        if (bins == b).any()
    ]


def plot_roc_and_reliability(out_dir: Path, curves: dict[str, tuple[np.ndarray, np.ndarray]]) -> list[str]:
    """roc.png and reliability.png with one line per named (scores, labels); returns the file names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (roc_ax, rel_ax) = plt.subplots(1, 2, figsize=(10, 4.5))
    for name, (scores, labels) in curves.items():
        fpr, tpr = roc_points(scores, labels)
        roc_ax.plot(fpr, tpr, label=name)
        bins = reliability_bins(scores, labels)
        rel_ax.plot([b[0] for b in bins], [b[1] for b in bins], marker="o", label=name)
    for ax in (roc_ax, rel_ax):
        ax.plot([0, 1], [0, 1], color="grey", linestyle=":")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.legend(fontsize=7)
    roc_ax.set(title="ROC", xlabel="false positive rate", ylabel="true positive rate")
    rel_ax.set(title="reliability", xlabel="mean score in bin", ylabel="success rate in bin")
    fig.tight_layout()
    names = []
    for ax, name in ((roc_ax, "roc.png"), (rel_ax, "reliability.png")):
        extent = ax.get_tightbbox(fig.canvas.get_renderer()).transformed(fig.dpi_scale_trans.inverted())
        fig.savefig(out_dir / name, bbox_inches=extent.expanded(1.05, 1.05), dpi=100)
        names.append(name)
    plt.close(fig)
    return names


class Recording:
    """Recorded episodes of one camera, read-only: a vlmrl zarr store or a LeRobotDataset (imported into
    RAM through ``buffer.io``), with their per-row info (``success``, ``progress``) and task sentence."""

    def __init__(self, path: Path, camera: str | None = None) -> None:
        self.path = path
        if not path.exists():
            raise ConfigError(f"EPISODES {path}: no such file or directory")
        if (path / "meta" / "info.json").is_file():
            from buffer.io import import_lerobot, lerobot_spec
            from buffer.io.lerobot_format import LeRobotReader

            obs_spec, action_dim, info_keys = lerobot_spec(path)
            reader = LeRobotReader(path)
            capacity, storage, self.task = (
                reader.info.get("total_frames", 0) + 16,
                "memory",
                reader.first_task(),
            )
        elif (path / "zarr.json").is_file():
            meta = read_store_metadata(path)  # one-line BufferError for malformed metadata
            obs_spec, action_dim, info_keys, capacity = (
                meta.obs_spec,
                meta.action_dim,
                meta.info_keys,
                meta.capacity,
            )
            storage, self.task = "zarr", str(meta.record.get("task_description", ""))
        else:
            raise ConfigError(
                f"EPISODES {path}: neither a vlmrl zarr store (zarr.json) nor a LeRobotDataset (meta/info.json)"
            )
        cameras = [k.removeprefix("pixels/") for k in obs_spec if k.startswith("pixels/")]
        if not cameras:
            raise ConfigError(f"{path}: the episodes hold no camera frames to score")
        self.camera = camera or cameras[0]
        if self.camera not in cameras:
            raise ConfigError(f"--camera {self.camera}: not recorded (have {cameras})")
        self.image_hw = tuple(int(v) for v in obs_spec[f"pixels/{self.camera}"][0][:2])
        self.info_keys = tuple(info_keys)
        cfg = BufferConfig(storage=storage, capacity_steps=int(capacity))  # type: ignore[arg-type]
        self.buffer = make_buffer(
            cfg, obs_spec, action_dim, info_keys, path=str(path) if storage == "zarr" else None
        )
        self._dataset_index: list[int] | None = None
        if storage == "memory":
            self._dataset_index = []
            import_lerobot(path, self.buffer, imported=self._dataset_index)

    def episodes(self) -> list[int]:
        """Live episode ids, oldest first."""
        table = self.buffer.storage.episodes()
        return list(range(table.first, table.first + table.count))

    def source_id(self, episode: int) -> int:
        """The episode's id in the recording: the store's, or the LeRobotDataset's ``episode_index`` (what
        labels files name, ``vlmrl.scorers.labels``)."""
        if self._dataset_index is None:
            return episode
        return self._dataset_index[episode - self.buffer.storage.episodes().first]

    def arrays(self, episode: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """(frames uint8 [T, H, W, 3] of the camera, per-row info arrays) of one episode."""
        start, end = self.buffer.episode_rows(episode)
        rows = np.arange(start, end)
        frames = self.buffer.storage.read(f"pixels/{self.camera}", rows)
        info = {k: self.buffer.storage.read(f"info/{k}", rows) for k in self.info_keys}
        return frames, info

    def close(self) -> None:
        """Closes the store (nothing is written)."""
        self.buffer.close()


def window_labels(success: np.ndarray, refs: list[ClipRef]) -> np.ndarray:
    """bool per window: success info set by the end of the steps its score covers (``buffer.clips.clip_span``),
    the rule ``vlmrl score --fit-score-calibration`` labels clips by."""
    reached = np.maximum.accumulate(np.asarray(success) > 0)
    last_row = len(reached) - 1
    return np.array([reached[clip_span(r.start, r.length, r.stride, last_row)[1]] for r in refs], bool)


def window_clip(frames: np.ndarray, info: dict[str, np.ndarray], ref: ClipRef, reverse: bool = False) -> Any:
    """The ``vlm.Clip`` of one window of an episode's arrays; ``reverse`` plays it backwards (rewound)."""
    idx = ref.start + np.arange(ref.length) * ref.stride
    if reverse:
        idx = idx[::-1]
    return Clip(frames[idx], {k: np.asarray(v)[idx] for k, v in info.items()})


def collect_windows(source: Any, length: int, stride: int) -> Windows:
    """Every episode's windows and labels (``dense_windows``, ``window_labels``); one-line ConfigError
    when the recording stores no success info or its windows are all of one class."""
    if "success" not in source.info_keys:
        raise ConfigError(
            f"--evaluate: {source.path} stores no per-step success info to label clips with "
            "(vlmrl record writes info/success; a LeRobotDataset needs an info.success or next.success column)"
        )
    out = Windows()
    for episode in source.episodes():
        frames, info = source.arrays(episode)
        success = info["success"]
        refs = dense_windows(episode, len(frames), length, stride, f"pixels/{source.camera}")
        out.refs += refs
        out.labels += window_labels(success, refs).tolist()
        out.episode_success[episode] = bool(np.any(np.asarray(success) > 0))
        out.clips += [window_clip(frames, info, r) for r in refs]
    if all(out.labels) or not any(out.labels):
        raise ConfigError(
            f"--evaluate: all {len(out.labels)} clips of {source.path} have one label; evaluation needs "
            "successful and failed clips (record failed episodes as well)"
        )
    return out


def evaluate_scorers(
    source: Any,
    configs: list[Any],
    goal: str,
    prompt: str | None,
    length: int,
    stride: int,
    batch_size: int = 64,
) -> tuple[list[dict[str, Any]], dict[str, tuple[np.ndarray, np.ndarray]], Windows]:
    """Scores every window with each scorer, asked about ``goal`` (or with ``prompt`` when given); returns one
    row of figures per scorer and the curves."""
    windows = collect_windows(source, length, stride)
    labels = np.array(windows.labels, bool)
    clips = windows.clips
    hw = source.image_hw
    rows, curves = [], {}
    for cfg in configs:
        scorer, asked = ready_scorer(cfg, goal, prompt=prompt, source=(source.camera, hw))
        try:
            scores, elapsed = np.empty(len(clips), np.float32), 0.0
            for i in range(0, len(clips), batch_size):
                t0 = time.perf_counter()
                scores[i : i + batch_size] = scorer.score(clips[i : i + batch_size], asked)
                elapsed += time.perf_counter() - t0
            row = {"scorer": scorer.scorer_id, "model": scorer.model_id, "clips": len(clips)}
            row.update(figures(scores, labels, scorer_threshold(scorer)))
            row["voc"] = value_order_correlation(scores, windows.refs, windows.episode_success)
            row["clips_per_s"] = len(clips) / elapsed if elapsed > 0 else float("inf")
            rows.append(row)
            curves[scorer.scorer_id] = (scores, labels)
        finally:
            scorer.close()
    return rows, curves, windows


def markdown_table(rows: list[dict[str, Any]], n_successful: int, n_episodes: int) -> str:
    """The side-by-side table."""
    lines = [
        "| scorer | clips | ROC-AUC | accuracy (threshold) | ECE | VOC | clips/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| `{r['scorer']}` | {r['clips']} | {r['auc']:.3f} | {r['accuracy']:.3f} ({r['threshold']:.2f}) | "
            f"{r['ece']:.3f} | {r['voc']:.3f} | {r['clips_per_s']:.3g} |"
        )
    lines += ["", f"VOC over {n_successful} successful of {n_episodes} episodes."]
    return "\n".join(lines)


def run_evaluation(cfg: Any) -> int:
    """`vlmrl score --evaluate`: the scorer and every ``--compare`` scorer on the same windows."""
    configs = [cfg.scorer] + [parse_scorer(spec) for spec in cfg.compare]
    source = Recording(cfg.episodes, cfg.camera)
    try:
        if not source.episodes():
            raise ConfigError(f"{cfg.episodes}: no episodes")
        goal = cfg.prompt or source.task
        if not goal:
            raise ConfigError(f"{cfg.episodes}: no task sentence stored; pass --prompt")
        prompt = str(cfg.prompt) if cfg.prompt else None
        rows, curves, windows = evaluate_scorers(
            source, configs, goal, prompt, cfg.clip_length, cfg.clip_stride
        )
        n_episodes = len(windows.episode_success)
        n_successful = sum(windows.episode_success.values())
    finally:
        source.close()
    out_dir = cfg.out_dir or cfg.episodes.parent / f"{cfg.episodes.name}-report"
    out_dir.mkdir(parents=True, exist_ok=True)
    plots = plot_roc_and_reliability(out_dir, curves)
    table = markdown_table(rows, n_successful, n_episodes)
    report = {
        "episodes": str(cfg.episodes),
        "camera": source.camera,
        "clip_length": cfg.clip_length,
        "clip_stride": cfg.clip_stride,
        "n_episodes": n_episodes,
        "n_successful_episodes": n_successful,
        "scorers": rows,
    }
    (out_dir / "evaluation.json").write_text(json.dumps(report, indent=2) + "\n")
    if cfg.json:
        cfg.json.parent.mkdir(parents=True, exist_ok=True)
        cfg.json.write_text(json.dumps(report, indent=2) + "\n")
    md = [
        f"# Scorers evaluated on `{cfg.episodes}`",
        "",
        f"Windows of {cfg.clip_length} frames every {cfg.clip_stride} steps starting at every step of "
        f"{n_episodes} episodes (camera `{source.camera}`), labelled by the episodes' success info.",
        "",
        table,
        "",
        *[f"![{p}]({p})" for p in plots],
    ]
    (out_dir / "evaluation.md").write_text("\n".join(md) + "\n")
    print(table)
    print(f"score: evaluation of {len(rows)} scorer(s) -> {out_dir / 'evaluation.md'}")
    return 0
