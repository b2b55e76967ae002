"""The lift-learner grid's table (issue #13): state SAC on twin lift with 25 demonstrations, one row per setting.

Reads ``results/lift-learner/G<setting>-s<seed>.json`` (each written by ``results/lift-learner/reproduce.sh``: the
run's command, commit, CPU and its evaluation curve) and writes ``table.md`` beside them: success at 20,000
steps (mean, sample standard deviation and each seed), the mean of the last three evaluations (15k-20k)
and Welch's t-test p-values of the final success against setting A and against D (the recipe the later rows
change one thing of).

    python benchmarks/lift_learner_table.py            # writes results/lift-learner/table.md
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
from scipy.stats import ttest_ind

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = {
    "A": "anti-windup (the twin's new default)",
    "B": "A + `--buffer.gamma 0.95`",
    "C": "A + `--agent.bc-weight 0.4 --agent.no-bc-q-filter`",
    "D": "A + gamma 0.95 + BC 0.4 without Q-filter",
    "E": "A without anti-windup (`--sim.max-windup-deg 0`, the twin before)",
    "F": "D with BC weight 1.0",
    "G": "D with `--agent.actor-lr 1e-4`",
    "H": "D with `--agent.utd-ratio 2`",
    "I": "D with `--agent.actor-ema 0.005` (the averaged actor is evaluated)",
    "J": "D with `--agent.num-critics 10` (RLPD's ensemble: target over a random 2, actor on the mean)",
    "K": "D with `--buffer.n-step 3`",
}
NAME = re.compile(r"^G([A-Z])-s(\d+)$")


def load(folder: Path) -> dict[str, list[dict]]:
    """Setting letter -> its runs (sorted by seed)."""
    runs: dict[str, list[dict]] = {}
    for path in sorted(folder.glob("G*-s*.json")):
        run = json.loads(path.read_text())
        match = NAME.match(run["name"])
        if match and run.get("curve_success"):
            # The final evaluation repeats the one at the last step (same policy, same seeds): one point a step.
            steps = run.get("curve_steps") or list(range(len(run["curve_success"])))
            run["curve_success"] = list(dict(zip(steps, run["curve_success"])).values())
            runs.setdefault(match[1], []).append(run)
    return {k: sorted(v, key=lambda r: r["seed"]) for k, v in sorted(runs.items())}


def table(runs: dict[str, list[dict]]) -> str:
    finals = {k: np.array([r["curve_success"][-1] for r in v]) for k, v in runs.items()}
    lines = [
        "| setting | seeds | success at 20k, mean ± sd | per seed | last 3 evaluations, mean | p vs A | p vs D | commit |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for key, group in runs.items():
        final = finals[key]
        last3 = np.mean([np.mean(r["curve_success"][-3:]) for r in group])
        sd = final.std(ddof=1) if len(final) > 1 else 0.0
        p = {base: _welch(final, finals.get(base), key == base) for base in ("A", "D")}
        commits = sorted(
            {r["git_commit"][:7] + ("" if r.get("tree_clean", True) else "+dirty") for r in group}
        )
        lines.append(
            f"| {key}: {SETTINGS.get(key, key)} | {', '.join(str(r['seed']) for r in group)} | "
            f"{final.mean():.0%} ± {sd:.0%} | {', '.join(f'{x:.0%}' for x in final)} | {last3:.0%} | {p['A']} | {p['D']} | "
            f"{', '.join(commits)} |"
        )
    return "\n".join(lines)


def _welch(final: np.ndarray, base: np.ndarray | None, same: bool) -> str:
    """Welch's t-test p-value of ``final`` against a base setting's finals, "-" where it does not apply."""
    if same or base is None or len(final) < 2 or len(base) < 2:
        return "-"
    return f"{ttest_ind(final, base, equal_var=False).pvalue:.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, default=ROOT / "results" / "lift-learner")
    args = parser.parse_args()
    runs = load(args.folder)
    if not runs:
        raise SystemExit(f"lift_learner_table: no G<setting>-s<seed>.json runs in {args.folder}")
    text = table(runs)
    (args.folder / "table.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
