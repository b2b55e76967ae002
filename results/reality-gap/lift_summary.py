"""Lift rows of the issue #19 evidence: robot-observation lift policies trained with and without
randomisation (and with and without ``--agent.pixel.standardize``), each on the nominal twin and the held-out
grids (``vlmrl evaluate``, 10 episodes a row).

    .venv/bin/python results/reality-gap/lift_summary.py [--out DIR] EVAL_DIR COMMIT [EVAL_DIR COMMIT ...]

Each EVAL_DIR holds ``eval-<grid>-<condition>-s<seed>/evaluate.json`` (``reproduce.sh``,
part 3, trains the policies and evaluates them),
trained and evaluated at COMMIT; writes ``lift.md`` and ``lift.json`` to DIR (default: here) and copies each
``evaluate.md`` to ``DIR/lift-runs/``.
"""

from __future__ import annotations

import itertools
import json
import shutil
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
OVERALL = "overall (perturbed rows)"
CONDITIONS = {
    "nominal": "none",
    "light": "`--sim.randomize.preset light`",
    "nominal-std": "none, `--agent.pixel.standardize`",
    "light-std": "`light`, `--agent.pixel.standardize`",
    "light-est-std": "`light`, `--agent.pixel.standardize --agent.actor-reads-estimate`",
    "ramp10k-std": "`light`, `--agent.pixel.standardize --randomize-ramp-steps 10000`",
    "jit3-std": "`light`, `--agent.pixel.standardize --agent.pixel.color-jitter 0.3`",
    "ramp10k-jit3-std": "`light`, `--agent.pixel.standardize --agent.pixel.color-jitter 0.3 --randomize-ramp-steps 10000`",
    "ramp10k-jit3-std-best": "the same, `best_policy.pt` (its best training evaluation)",
}


def cell(x: np.ndarray) -> str:
    return f"{100 * x.mean():.0f}% ({100 * x.min():.0f}-{100 * x.max():.0f})"


def main() -> None:
    pairs = sys.argv[1:]
    out = Path(pairs[1]) if pairs[:1] == ["--out"] else HERE
    pairs = pairs[2:] if pairs[:1] == ["--out"] else pairs
    if not pairs or len(pairs) % 2:
        raise SystemExit("usage: lift_summary.py [--out DIR] EVAL_DIR COMMIT [EVAL_DIR COMMIT ...]")
    sources = [(Path(pairs[i]), pairs[i + 1]) for i in range(0, len(pairs), 2)]
    record: dict = {"commits": [commit for _, commit in sources], "grids": {}}
    lines = [
        "| trained with randomisation | held-out grid | seeds | nominal twin | grid (all perturbed rows) | kept | "
        "every factor at once | light row | colour row | texture row | commit |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for grid in ("medium", "light"):
        for (cond, label), (evals, commit) in itertools.product(CONDITIONS.items(), sources):
            summaries = {}
            for path in sorted(evals.glob(f"eval-{grid}-{cond}-s*/evaluate.json")):
                seed_text = path.parent.name.removeprefix(f"eval-{grid}-{cond}-s")
                if not seed_text.isdigit():  # eval-light-nominal-s* also matches eval-light-nominal-std-s0
                    continue
                seed = int(seed_text)
                summaries[seed] = json.loads(path.read_text())["summary"]
                (out / "lift-runs").mkdir(exist_ok=True)
                shutil.copy(path.parent / "evaluate.md", out / "lift-runs" / f"{path.parent.name}.md")
            if not summaries:
                continue

            def rate(row: str, summaries: dict = summaries) -> np.ndarray:
                return np.array([s[row]["success_rate"] if row in s else np.nan for s in summaries.values()])

            nominal, overall = rate("nominal"), rate(OVERALL)
            kept = overall.mean() / nominal.mean() if nominal.mean() > 0 else float("nan")
            rows = ["all", "light_frac", "color", "texture"]
            cells = [cell(rate(r)) if not np.isnan(rate(r)).any() else "-" for r in rows]
            lines.append(
                f"| {label} | `{grid}` | {', '.join(map(str, sorted(summaries)))} | {cell(nominal)} | "
                f"{cell(overall)} | {kept:.2f} | {' | '.join(cells)} | {commit} |"
            )
            record["grids"].setdefault(grid, {})[cond] = {
                "commit": commit,
                "seeds": sorted(summaries),
                "nominal": nominal.tolist(),
                "overall": overall.tolist(),
                "kept": kept,
                "per_row_mean": {r: float(np.nanmean(rate(r))) for r in next(iter(summaries.values()))},
            }
    text = "\n".join(lines) + "\n"
    (out / "lift.md").write_text(text)
    (out / "lift.json").write_text(json.dumps(record, indent=2) + "\n")
    print(text)


if __name__ == "__main__":
    main()
