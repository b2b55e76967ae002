"""Issue #13: reach and lift from robot observations with the patch-embedding encoder (the default since
9a44c5b), the README recipes, against the same recipes' earlier rows with the former 3x3 encoder.

    .venv/bin/python results/pixel-encoder/summarize.py RUNS_DIR COMMIT [OUT]

RUNS_DIR holds ``<task>-robot-s<seed>/tb`` and ``<task>-robot-s<seed>.log`` (the run's stdout, whose last
summary line gives its wall time); every run ran at COMMIT from a clean clone. Writes ``runs.json`` and
``results.md`` to OUT (default: here).
"""

from __future__ import annotations

import json
import platform
import re
import sys
import warnings
from pathlib import Path

import numpy as np
from scipy import stats
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

HERE = Path(__file__).parent
FORMER = {  # the README's rows with the former encoder (results/pixel-reach, the README's lift paragraph)
    "reach": {"final": [1.0, 1.0, 1.0], "first_90": [5000, 4000, 7000], "commit": "f52e56f"},
    "lift": {
        "final": [0.40, 0.80, 0.80, 0.45, 0.50],
        "last_3": [
            (45 + 40 + 40) / 300,
            (55 + 65 + 80) / 300,
            (60 + 75 + 80) / 300,
            (50 + 65 + 45) / 300,
            (25 + 25 + 50) / 300,
        ],
        "commit": "5f805bc",
    },
}
COMMANDS = {
    "reach": "vlmrl train --sim.task reach --policy-obs robot --sim.action-mode delta --sim.reward shaped "
    "--replay uniform --total-steps 10000 --asymmetric-critic --agent.privileged-aux-weight 1.0 --seed S "
    "--eval-every-steps 1000 --eval-episodes 20 --buffer.storage memory --video-episodes 0 --no-progress",
    "lift": "vlmrl train --sim.task lift --policy-obs robot --demo-episodes 25 --agent.layer-norm --replay uniform "
    "--asymmetric-critic --agent.privileged-aux-weight 1.0 --buffer.gamma 0.95 --agent.bc-weight 0.4 "
    "--agent.no-bc-q-filter --total-steps 20000 --seed S --eval-every-steps 2500 --eval-episodes 20 "
    "--buffer.storage memory --video-episodes 0 --no-progress",
}


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def evaluations(tb: Path) -> dict[int, float]:
    events = EventAccumulator(str(tb))
    events.Reload()
    return {int(e.step): float(e.value) for e in events.Scalars("eval/success_rate")}


def main() -> None:
    warnings.filterwarnings("ignore", category=RuntimeWarning)  # Welch's t on all-equal seeds
    runs_dir, commit = Path(sys.argv[1]), sys.argv[2]
    out = Path(sys.argv[3]) if len(sys.argv) > 3 else HERE
    rows = []
    for log in sorted(runs_dir.glob("*-robot-s*.log")):
        task, seed = re.match(r"(\w+)-robot-s(\d+)\.log", log.name).groups()
        wall = re.search(r"final success .* in (\d+) s", log.read_text())
        if wall is None:
            continue  # not finished
        curve = evaluations(log.with_suffix("") / "tb")
        first_90 = next(
            (step for step, rate in sorted(curve.items()) if rate >= 0.9 - 1e-6), None
        )  # float32 0.9
        rows.append({
            "task": task, "seed": int(seed), "final_success": curve[max(curve)], "first_eval_at_90": first_90,
            "curve": curve, "wall_s": int(wall[1]), "commit": commit, "tree_clean": True, "cpu": cpu_model(),
            "command": COMMANDS[task].replace("--seed S", f"--seed {seed}"),
        })  # fmt: skip
    (out / "runs.json").write_text(json.dumps(rows, indent=1) + "\n")
    lines = ["| task | encoder | seeds | final success per seed | mean ± sd | last 3 evaluations | first eval >= 90% | wall s | commit |",
             "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for task in ("reach", "lift"):
        mine = sorted((r for r in rows if r["task"] == task), key=lambda r: r["seed"])
        if not mine:
            continue
        finals = np.array([r["final_success"] for r in mine])
        last_3 = np.mean([np.mean([r["curve"][k] for k in sorted(r["curve"])[-3:]]) for r in mine])
        former_last_3 = FORMER[task].get("last_3")
        first = [r["first_eval_at_90"] for r in mine]
        former = np.array(FORMER[task]["final"])
        p = (
            stats.ttest_ind(finals, former, equal_var=False).pvalue
            if finals.std() + former.std() > 0
            else 1.0
        )
        lines.append(
            f"| {task} | patch 4x4 + 3x3, 16 ch | {len(mine)} | {', '.join(f'{x:.0%}' for x in finals)} | "
            f"**{finals.mean():.0%} ± {finals.std(ddof=1) if len(finals) > 1 else 0:.0%}** (p = {p:.2f} vs former) | "
            f"{last_3:.0%} | {', '.join(f'{x:,}' if x else 'never' for x in first)} | "
            f"{min(r['wall_s'] for r in mine)}-{max(r['wall_s'] for r in mine)} | {commit} |"
        )
        lines.append(
            f"| {task} | former 3x3 s2-2-1, 8-16-16 | {len(former)} | {', '.join(f'{x:.0%}' for x in former)} | "
            f"{former.mean():.0%} ± {former.std(ddof=1):.0%} | "
            f"{f'{np.mean(former_last_3):.0%}' if former_last_3 else '-'} | {', '.join(f'{x:,}' for x in FORMER[task].get('first_90', [])) or '-'} | - | {FORMER[task]['commit']} |"
        )
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
