"""What a person at the arm reads of a `vlmrl finetune` run: a line per episode, report.md and a curve of
success against robot minutes (steps over the control rate, what an arm's time is counted in).

Everything comes from ``metrics.jsonl`` (one object per episode, written as the run goes), so the report of a
resumed run covers the whole run.
"""

from __future__ import annotations

import collections
import json
from pathlib import Path
from typing import Any

import numpy as np

from vlmrl.loop.learner import LoopState

CURVE_FILE = "success_vs_robot_minutes.png"
"""The curve report.md shows, in the run directory."""
ROLLING_EPISODES = 10
"""Episodes in the curve's rolling success rate."""

Config = Any
"""A ``vlmrl finetune`` config (``vlmrl.pipelines.finetune.Config``)."""


def episode_line(stats: dict[str, Any]) -> str:
    """One line for the terminal: outcome, return, steps, interventions, safety clips (counts)."""
    from vlmrl.deployment.policy_episodes import clip_counts_line

    takeovers = int(stats.get("takeovers", 0))
    return (
        f"finetune: episode {stats['episode']} ({stats['robot_minutes']:.1f} robot min): "
        f"{'success' if stats['success'] else 'failure'}, return {stats['return']:.2f}, {stats['steps']} steps, "
        f"{stats['interventions']} intervention steps in {takeovers} takeover{'s' * (takeovers != 1)}, "
        f"{clip_counts_line(stats.get('safety_clips', {}))}"
    )


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """The episodes of ``metrics.jsonl`` (none when it does not exist)."""
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_curve(episodes: list[dict[str, Any]], path: Path) -> Path:
    """Success per episode (dots) and its rolling rate against robot minutes (all successes, and those the
    policy made without a takeover), interventions per episode below."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    minutes = np.array([e["robot_minutes"] for e in episodes], np.float64)
    success = np.array([float(e["success"]) for e in episodes])
    alone = success * np.array([e["interventions"] == 0 for e in episodes])
    window = min(ROLLING_EPISODES, len(episodes))

    def rolling(x: np.ndarray) -> np.ndarray:
        return np.array([x[max(0, i - window + 1) : i + 1].mean() for i in range(len(x))])

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    top.plot(minutes, success, "o", alpha=0.3, label="episode (1: success)")
    top.plot(minutes, rolling(success), label=f"success rate, last {window} episodes")
    top.plot(minutes, rolling(alone), "--", label="... of them without a takeover")
    top.set(title="fine-tuning: success against robot time", ylabel="success", ylim=(-0.05, 1.05))
    top.legend(loc="lower right")
    bottom.bar(minutes, [e["interventions"] for e in episodes], width=max(minutes.max(), 1e-3) / 100)
    bottom.set(xlabel="robot minutes (steps / control rate)", ylabel="intervention steps")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_report(out_dir: Path, facts: dict[str, Any]) -> Path:
    """``report.md`` and the curve from ``out_dir/metrics.jsonl``; ``facts``: ``from_run``, ``robot``,
    ``operator``, ``reward`` (where the reward comes from, in words), ``control_hz``."""
    episodes = read_metrics(out_dir / "metrics.jsonl")
    lines = [
        "# Fine-tuning report",
        "",
        f"- from: `{facts['from_run']}`",
        f"- robot: {facts['robot']}",
        f"- operator: {facts['operator']}",
        f"- reward: {facts['reward']}",
        f"- robot time: steps / {facts['control_hz']:g} Hz",
        "",
    ]
    if episodes:
        write_curve(episodes, out_dir / CURVE_FILE)
        n = len(episodes)
        tenth = max(1, n // 10)
        first, last = episodes[:tenth], episodes[-tenth:]

        def rate(rows: list[dict[str, Any]], key: str) -> float:
            return float(np.mean([float(r.get(key, 0.0)) for r in rows]))

        def alone_rate(rows: list[dict[str, Any]]) -> float:
            return float(np.mean([bool(r["success"]) and r["interventions"] == 0 for r in rows]))

        clips = sum(sum(e.get("safety_clips", {}).values()) for e in episodes)
        lines += [
            f"{n} episodes, {episodes[-1]['robot_minutes']:.1f} robot minutes, "
            f"success {sum(bool(e['success']) for e in episodes)}/{n}.",
            "",
            "| episodes | success | without a takeover | intervention steps / episode | takeovers / episode |",
            "|---|---|---|---|---|",
            *(
                f"| {name} {tenth} | {100 * rate(rows, 'success'):.0f}% | {100 * alone_rate(rows):.0f}% | "
                f"{rate(rows, 'interventions'):.1f} | {rate(rows, 'takeovers'):.1f} |"
                for name, rows in (("first", first), ("last", last))
            ),
            "",
            f"Safety clips: {clips} in all ({clips / n:.1f} per episode; each in safety.jsonl).",
            "",
            f"![success against robot minutes]({CURVE_FILE})",
            "",
        ]
    path = out_dir / "report.md"
    path.write_text("\n".join(lines))
    return path


def episode_record(stats: dict[str, Any], loop: LoopState, buffer: Any, control_hz: float) -> dict[str, Any]:
    """One episode's line of ``metrics.jsonl``: the source's stats in plain types, the episode number, the
    robot minutes so far (every step collected, over the control rate), scored clips and transitions."""
    rest = {k: v for k, v in stats.items() if k not in ("return", "success", "length", "interventions")}
    return {
        "return": stats["return"],
        "success": bool(stats["success"]),
        "steps": int(stats["length"]),
        "interventions": int(stats["interventions"]),
        **rest,
        "episode": loop.episode - 1,
        "robot_minutes": loop.step / control_hz / 60.0,
        "scored": int(stats.get("scorer/scored", 0)),
        "transitions": buffer.num_transitions,
    }


def log_episode(out_dir: Path, stats: dict[str, Any]) -> None:
    """Append the episode to ``metrics.jsonl`` (its operator's signals to ``operator.jsonl``) and print its
    line."""
    operator = stats.pop("operator", None)
    with (out_dir / "metrics.jsonl").open("a") as f:
        f.write(json.dumps(stats, default=float) + "\n")
    if operator is not None:
        with (out_dir / "operator.jsonl").open("a") as f:
            f.write(json.dumps({"episode": stats["episode"], **operator}, default=float) + "\n")
    print(episode_line(stats))


BEST_POLICY_RECORD = "best_policy.json"
"""Where a fine-tuning run records which episode ``best_policy.pt`` is from and its own success rate."""


def own_success_rate(out_dir: Path, window: int) -> float | None:
    """The share of the last ``window`` episodes of ``out_dir/metrics.jsonl`` that ended in success without a
    takeover: the policy's own successes, read from the operator's keys (nothing a real arm lacks); None until
    there are ``window`` episodes."""
    path = out_dir / "metrics.jsonl"
    if window < 1 or not path.is_file():
        return None
    with path.open() as rows_file:  # streamed: only the last ``window`` lines are kept, however long the run
        lines = collections.deque(rows_file, maxlen=window)
    if len(lines) < window:
        return None
    rows = [json.loads(line) for line in lines]
    return sum(bool(r["success"]) and not r.get("takeovers") for r in rows) / window


def better_policy(out_dir: Path, window: int) -> float | None:
    """``own_success_rate`` when it is above 0 and above the one ``best_policy.pt`` was kept at (its record in
    ``out_dir``, so a resumed run goes on from it), else None."""
    rate = own_success_rate(out_dir, window)
    record = out_dir / BEST_POLICY_RECORD
    best = json.loads(record.read_text())["own_success_rate"] if record.is_file() else 0.0
    return rate if rate is not None and rate > best else None


def record_best(out_dir: Path, rate: float, window: int, stats: dict[str, Any]) -> None:
    """Record that ``best_policy.pt`` is now the policy after episode ``stats["episode"]``, and say so."""
    record = {
        "episode": stats["episode"],
        "robot_minutes": stats["robot_minutes"],
        "own_success_rate": rate,
        "window": window,
    }
    (out_dir / BEST_POLICY_RECORD).write_text(json.dumps(record) + "\n")
    print(
        f"finetune: best_policy.pt <- episode {stats['episode']} ({stats['robot_minutes']:.1f} robot min): "
        f"{rate:.0%} own successes over the last {window} episodes"
    )


def describe_robot(cfg: Config) -> str:
    """The arm in words, for report.md."""
    if cfg.robot.type == "sim_so101":
        return f"the twin (sim_so101), unit {cfg.robot.unit or 'nominal'} (sim.units), task {cfg.task}"
    return f"{cfg.robot.type} on {cfg.robot.port} (id {cfg.robot.id})"


def describe_operator(cfg: Config) -> str:
    """Who pressed the keys, in words, for report.md."""
    if cfg.operator == "scripted":
        o = cfg.scripted_operator
        return (
            f"scripted (sim.scripted_operator): takeovers with the twin's expert after a stall ({o.stall_steps} "
            f"steps under {o.stall_m:g} m) or a drift out of the workspace, {o.takeover_steps} steps each, at "
            f"most {o.budget_steps} per episode; signals per episode in operator.jsonl"
        )
    return f"a person (keyboard keys; takeovers with the {cfg.teleop})"
