"""Summarise the nominal-twin fine-tuning runs (``nominal_twin`` in results/finetune/reproduce.sh): success of the
deployed policy before and after 5, 10 (and, resumed, 20) robot minutes of fine-tuning on the nominal twin, per
condition, and what the fine-tuning episodes show.

    python results/finetune/collect_nominal.py OUT [OUT2 ...] --json results/finetune/nominal_twin.json
    python results/finetune/collect_nominal.py OUT3 --keep results/finetune/nominal_twin.json --json NEW.json

Each OUT holds ``before/`` (the sim run's policy deployed) and one folder per condition (``provenance.txt``,
``options.txt``, ``eval-<minutes>/``, ``ft/metrics.jsonl``); a condition is compared with the ``before`` of its
own OUT, made at the same commit. Prints a Markdown table; ``--json`` writes the figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "benchmarks"))

from offline_experiment import fisher_p, welch_p  # noqa: E402

MINUTES = (5, 10, 20, 30)
"""Robot minutes after which a deploy may exist (``eval-<minutes>/``): the study ran 5 and 10, later ones 20 and 30."""


def deployed(folder: Path) -> dict[str, Any] | None:
    """Successes over the episodes of one ``vlmrl deploy`` (its metrics.json), None when it did not run."""
    path = folder / "metrics.json"
    if not path.is_file():
        return None
    episodes = json.loads(path.read_text())["episodes"]
    return {"successes": sum(int(e["success"]) for e in episodes), "episodes": len(episodes)}


def training_episodes(path: Path) -> dict[str, Any]:
    """The fine-tuning episodes in halves: success (the operator's key, takeovers included), success without a
    takeover, intervention steps per episode, and the critics' mean estimate (q_mean) at the end of each half."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    half = len(rows) // 2
    out: dict[str, Any] = {"episodes": len(rows)}
    for name, part in (("first_half", rows[:half]), ("second_half", rows[half:])):
        if not part:
            continue
        q = [r["q_mean"] for r in part if "q_mean" in r]
        out[name] = {
            "success": round(statistics.mean(float(r["success"]) for r in part), 3),
            "success_without_takeover": round(
                statistics.mean(float(r["success"] and r["interventions"] == 0) for r in part), 3
            ),
            "intervention_steps": round(statistics.mean(r["interventions"] for r in part), 1),
            "q_mean_last": round(q[-1], 2) if q else None,
        }
    return out


def portable(options: str) -> str:
    """Options with each absolute path (``--prior-data /somewhere/demos/buffer.zarr``) written from the output
    folder on (``OUT/demos/buffer.zarr``), as reproduce.sh names it."""
    return " ".join(
        "OUT/" + "/".join(Path(word).parts[-2:]) if word.startswith("/") else word for word in options.split()
    )


def unit_of(before: Path) -> str:
    """The twin unit the ``before`` deploy ran on (its config.json), ``nominal`` when none."""
    path = before / "config.json"
    unit = json.loads(path.read_text()).get("robot", {}).get("unit") if path.is_file() else None
    return unit or "nominal"


def provenance(folder: Path) -> dict[str, str]:
    path = folder / "provenance.txt"
    lines = path.read_text().splitlines() if path.is_file() else []
    return dict(line.split(" ", 1) for line in lines if " " in line)


def collect(out: Path) -> list[dict[str, Any]]:
    before = deployed(out / "before")
    rows = []
    for folder in sorted(p for p in out.iterdir() if p.is_dir() and (p / "options.txt").is_file()):
        row: dict[str, Any] = {
            "condition": folder.name,
            "options": portable((folder / "options.txt").read_text().strip()),
            "unit": unit_of(out / "before"),
            **{k: v for k, v in provenance(folder).items() if k in ("commit", "cpu")},
            "before": before,
            **{f"after_{m}min": deployed(folder / f"eval-{m}") for m in MINUTES},
        }
        if (folder / "ft" / "metrics.jsonl").is_file():
            row["finetune_episodes"] = training_episodes(folder / "ft" / "metrics.jsonl")
        for m in (10, 20):  # two-sided Fisher exact test, after 10 (20) robot minutes against before
            last = row[f"after_{m}min"]
            if before and last:
                p = fisher_p((last["successes"], last["episodes"]), (before["successes"], before["episodes"]))
                row[f"p_{m}min_vs_before"] = float(f"{p:.2g}")
        rows.append(row)
    return rows


def seed_groups(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Conditions run with several fine-tuning seeds (``U6-...`` with ``U6-seed1``, ``U6-seed2``: the name up to
    its first ``-``), per unit: successes per seed at each point, their mean; and, for each pair of such groups
    on one unit, Welch's p over the seeds and Fisher's over the pooled episodes at each point."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row.get("unit", "nominal"), row["condition"].split("-")[0]), []).append(row)
    out = []
    multi = {key: members for key, members in groups.items() if len(members) > 1}
    for (unit, name), members in multi.items():
        group: dict[str, Any] = {"unit": unit, "condition": name, "runs": [m["condition"] for m in members]}
        for m in MINUTES:
            points = [r[f"after_{m}min"] for r in members if r.get(f"after_{m}min")]
            if len(points) == len(members):
                rates = [p["successes"] / p["episodes"] for p in points]
                group[f"after_{m}min"] = {"per_seed": rates, "mean": round(statistics.mean(rates), 3)}
        out.append(group)
    for a, b in (
        (a, b) for a in out for b in out if a["unit"] == b["unit"] and a["condition"] < b["condition"]
    ):
        for m in MINUTES:
            ra, rb = a.get(f"after_{m}min"), b.get(f"after_{m}min")
            if ra and rb:
                pool = [
                    (sum(r[f"after_{m}min"]["successes"] for r in groups[(g["unit"], g["condition"])]),
                     sum(r[f"after_{m}min"]["episodes"] for r in groups[(g["unit"], g["condition"])]))
                    for g in (a, b)
                ]  # fmt: skip
                a.setdefault("vs", {}).setdefault(b["condition"], {})[f"after_{m}min"] = {
                    "welch_p": float(f"{welch_p(ra['per_seed'], rb['per_seed']):.2g}"),
                    "fisher_p_pooled": float(f"{fisher_p(pool[0], pool[1]):.2g}"),
                }
    return out


def markdown(rows: list[dict[str, Any]]) -> str:
    def frac(d: dict[str, Any] | None) -> str:
        return f"{d['successes']}/{d['episodes']}" if d else "-"

    lines = [
        "| unit | condition | options | before | 5 robot min | 10 robot min | 20 robot min | 30 robot min "
        "| p (10 min vs before) | p (20 min vs before) | commit |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        after = " | ".join(frac(r.get(f"after_{m}min")) for m in MINUTES)
        lines.append(
            f"| {r.get('unit', 'nominal')} | {r['condition']} | `{r['options'] or '(defaults)'}` | "
            f"{frac(r['before'])} | {after} | {r.get('p_10min_vs_before', '-')} | "
            f"{r.get('p_20min_vs_before', '-')} | {r.get('commit', '?')} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, nargs="+", help="output folders of reproduce.sh's nominal_twin")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument(
        "--keep",
        type=Path,
        help="an earlier --json whose rows come first (runs of other sessions, folders gone)",
    )
    args = parser.parse_args()
    kept = json.loads(args.keep.read_text())["rows"] if args.keep else []
    rows = [*kept, *(row for out in args.out for row in collect(out))]
    groups = seed_groups(rows)
    print(markdown(rows))
    for group in groups:
        print(json.dumps(group))
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "seed_groups": groups}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
