"""The run report: report.md, learning curves (PNG) and an evaluation video with clip scores on the frames."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from buffer.clips import plan_episode_clips, scores_per_step
from buffer.config import BufferConfig
from sim.video import write_video
from vlm import Clip
from vlmrl.evaluation.episodes import EpisodeRecord, EvalResult
from vlmrl.online.recipes import recipe_settings
from vlmrl.scorers.car_reward import report_lines as car_report_lines

VIDEO_SIDE_PX = 256
"""Evaluation video frames are upscaled to this side so the drawn scores are readable."""


def clip_scores_for_episode(
    record: EpisodeRecord, scorer: Any, prompt: str, length: int, stride: int
) -> np.ndarray:
    """Score an evaluation episode clip by clip (as training scores buffer clips); returns per-frame scores.

    Clips and the steps each score covers follow the clip rule (``buffer.clips``): frame t shows the score
    of the clip whose span covers it, as the replay priorities do.
    """
    frames = np.stack(record.frames)
    info = {k: np.asarray(v, np.float32) for k, v in record.info.items()}
    plan = plan_episode_clips(len(frames), length, stride)
    clips = []
    for start, n_frames in plan:
        idx = start + np.arange(n_frames) * stride
        clips.append(Clip(frames[idx], {k: v[idx] for k, v in info.items()}))
    scores = np.asarray(scorer.score(clips, prompt), np.float32) if clips else np.zeros(0, np.float32)
    return scores_per_step(len(frames), [start for start, _ in plan], length, stride, scores)


def annotate(frame: np.ndarray, lines: list[str]) -> np.ndarray:
    """Upscale a frame and draw text lines at its top-left (white on a dark band)."""
    import cv2

    out = cv2.resize(frame, (VIDEO_SIDE_PX, VIDEO_SIDE_PX), interpolation=cv2.INTER_NEAREST)
    band = 16 * len(lines) + 6
    out[:band] = (out[:band] * 0.35).astype(np.uint8)
    for i, line in enumerate(lines):
        cv2.putText(
            out, line, (6, 16 * (i + 1)), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (255, 255, 255), 1, cv2.LINE_AA
        )
    return out


def write_eval_video(
    final: EvalResult, scorer: Any, prompt: str, buffer_cfg: BufferConfig, path: Path
) -> Path | None:
    """mp4 of the recorded evaluation episodes, each frame labelled with its clip score and progress."""
    recorded = [e for e in final.episodes if e.frames]
    if not recorded:
        return None
    frames = []
    for number, record in enumerate(recorded):
        if scorer is not None:
            scores = clip_scores_for_episode(
                record, scorer, prompt, buffer_cfg.clip_length, buffer_cfg.clip_stride
            )
        else:
            scores = np.full(len(record.frames), np.nan)
        progress = record.info.get("progress", [0.0] * len(record.frames))
        for t, frame in enumerate(record.frames):
            score = "-" if np.isnan(scores[t]) else f"{scores[t]:.2f}"
            name = scorer.scorer_id if scorer is not None else "none"
            frames.append(
                annotate(
                    frame,
                    [
                        f"episode {number} step {t}",
                        f"clip score {score} ({name})",
                        f"progress {progress[t]:.2f}",
                    ],
                )
            )
    return write_video(frames, path, fps=10.0)


def write_curves(evals: list[dict[str, float]], train_log: list[dict[str, float]], path: Path) -> Path:
    """Success rate and return vs env steps (evaluations), and the scorer's clip-score / priority statistics."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    steps = [e["step"] for e in evals]
    axes[0].plot(steps, [e["success_rate"] for e in evals], marker="o")
    axes[0].set(title="evaluation success rate", xlabel="env steps", ylim=(-0.05, 1.05))
    axes[1].plot(steps, [e["return"] for e in evals], marker="o", label="evaluation")
    train_steps = [t["step"] for t in train_log]
    axes[1].plot(train_steps, [t["return"] for t in train_log], alpha=0.3, label="training episodes")
    axes[1].set(title="episode return", xlabel="env steps")
    axes[1].legend()
    scored = [t for t in train_log if "scorer/score_mean" in t]
    if scored:
        x = [t["step"] for t in scored]
        axes[2].plot(x, [t["scorer/score_mean"] for t in scored], label="clip score (mean, last 256)")
        axes[2].fill_between(
            x, [t["scorer/score_p10"] for t in scored], [t["scorer/score_p90"] for t in scored], alpha=0.2,
            label="clip score p10-p90",
        )  # fmt: skip
        weighted = [t for t in scored if "weight_mean" in t]
        if weighted:
            axes[2].plot(
                [t["step"] for t in weighted], [t["weight_mean"] for t in weighted], label="mean IS weight"
            )
        axes[2].legend()
    axes[2].set(title="scorer / replay priorities", xlabel="env steps")
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def scorer_sentence(scorer: Any, cfg: Any) -> str:
    """Plain words about which scorer steered this run."""
    if scorer is None:
        return "No scorer: the sim has no camera, so no clips were scored (replay and reward are the env's)."
    calibration = getattr(scorer, "calibration", None)
    calibrated = (
        ""
        if calibration is None
        else f" Its scores went through the score calibration `{cfg.score_calibration}` (temperature "
        f"{calibration.temperature:.3g}, fitted on {calibration.n_clips} clips, ECE {calibration.ece_before:.3f} "
        f"-> {calibration.ece:.3f})."
    )
    if cfg.scorer.kind == "oracle":
        return (
            f"Scorer: **oracle** (`{scorer.scorer_id}`): the simulator's privileged task progress, not a VLM. "
            "It is the upper bound a VLM scorer can reach; run `scorer:hf --scorer.model <id>` or "
            f"`scorer:openai --scorer.base-url <url>` for a real VLM.{calibrated}"
        )
    return f"Scorer: **{cfg.scorer.kind}** (`{scorer.scorer_id}`, model `{scorer.model_id}`).{calibrated}"


def recipe_lines(cfg: Any) -> list[str]:
    """The report's line on ``--recipe``: each of its settings with the value the run used."""
    name = getattr(cfg, "recipe", "none")
    if name == "none":
        return []
    parts = []
    for path, value in recipe_settings(name, cfg.sim.task).items():
        used = cfg
        for attr in path.split("."):
            used = getattr(used, attr)
        parts.append(f"`{path}={used}`" + ("" if used == value else f" (recipe: {value})"))
    return [f"- recipe: {name}: " + ", ".join(parts)]


def write_report(
    run_dir: Path,
    cfg: Any,
    state: Any,
    final: EvalResult,
    scorer: Any,
    prompt: str,
    buffer_cfg: BufferConfig,
    interrupted: bool = False,
    stored_episodes: int | None = None,
) -> dict[str, Path]:
    """Write report.md, curves.png and eval.mp4 (when frames were recorded); returns their paths.

    ``stored_episodes``: the episodes the replay buffer holds, named beside the learner's own count when
    they differ (demonstrations, or episodes committed after the last checkpoint before a crash).
    """
    outputs = {"curves": write_curves(state.evals, state.train_log, run_dir / "curves.png")}
    video = write_eval_video(final, scorer, prompt, buffer_cfg, run_dir / "eval.mp4")
    if video is not None:
        outputs["video"] = video
    held = (
        f" (the replay buffer holds {stored_episodes}: demonstrations and episodes kept across a resume count there)"
        if stored_episodes is not None and stored_episodes != state.episode
        else ""
    )
    lines = [
        f"# vlmrl train: {cfg.sim.suite} {cfg.sim.task}",
        "",
        "**Interrupted** (Ctrl-C): the checkpoint holds the last finished episode; "
        f"continue with `vlmrl train --resume {run_dir}`."
        if interrupted
        else "Finished.",
        "",
        scorer_sentence(scorer, cfg),
        "",
        f"- env steps: {state.step}, episodes: {state.episode}{held}, reward: {cfg.sim.reward}, "
        f"policy input: {cfg.policy_obs}",
        f"- replay: {cfg.replay} (sampler `{buffer_cfg.sampler.kind}`), aux-reward weight: {cfg.aux_reward_weight}",
        f"- prompt: {prompt or '-'}",
        *recipe_lines(cfg),
        "",
        f"## Final evaluation ({len(final.episodes)} episodes, evaluation-only seeds)",
        "",
        "| success rate | mean return | mean length |",
        "|---|---|---|",
        f"| {final.success_rate:.0%} | {final.mean_return:.3f} | {final.mean_length:.1f} |",
        "",
        *(
            [
                f"Best scheduled evaluation: {state.best_eval_success:.0%} at step {state.best_eval_step} "
                "(`best_policy.pt`: the highest success rate, then mean return).",
                "",
            ]
            if getattr(state, "best_eval_step", -1) >= 0
            else []
        ),
        "## Evaluations during training",
        "",
        "| env steps | success rate | mean return | mean length |",
        "|---|---|---|---|",
        *[
            f"| {e['step']:.0f} | {e['success_rate']:.0%} | {e['return']:.3f} | {e['length']:.1f} |"
            for e in state.evals
        ],
        "",
        *car_report_lines(run_dir, state.train_log),
        "## Files",
        "",
        "- `curves.png`: success and return vs env steps, clip-score and importance-weight statistics",
        "- `eval.mp4`: final evaluation episodes, clip scores drawn on the frames"
        if video
        else f"- no video ({'no camera' if not cfg.sim.cameras else '--video-episodes 0'})",
        "- `policy.pt`: TorchScript actor with observation normalisation baked in (`agents.export.load_policy`)",
        *(
            ["- `best_policy.pt`: the same, from the best scheduled evaluation"]
            if getattr(state, "best_eval_step", -1) >= 0
            else []
        ),
        "- `evals.jsonl`: the scheduled evaluations, one per line, written as the run goes",
        "- `checkpoint/`: everything for `--resume`; `tb/`: TensorBoard scalars; `config.json`: resolved config",
        "",
    ]
    (run_dir / "report.md").write_text("\n".join(lines))
    outputs["report"] = run_dir / "report.md"
    return outputs
