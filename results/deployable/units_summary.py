"""Section 15's table: lift policies of two conditions on the twin's units (`vlmrl evaluate --robot.unit`).

usage: python results/deployable/units_summary.py UNITS_DIR --conditions recipe std --seeds 0 1 2 3 4 --json OUT
       [--baseline JSON:CONDITION]

UNITS_DIR holds one `vlmrl evaluate` output folder per policy: ``<condition>-s<seed>`` (``--robot.unit all``,
or some units) and optionally ``<condition>-s<seed>-factors`` (``--robot.unit a/factors``); a policy's rows are
the union of its folders. Prints per condition the mean and sd over seeds of success on each unit, the mean over
units a-e, Welch p between the first two conditions, and each condition's factor rows where they exist; writes
the same as JSON. ``--baseline units_lift_std.json:std`` adds a condition from an earlier output of this script
(its ``per_policy`` figures, all its seeds) after those of ``--conditions``, so the first two may be a new one
and an old one whose folders are gone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from finetune_experiment import welch_p

UNITS = ("nominal", "a", "b", "c", "d", "e")


def rows_of(folder: Path) -> dict[str, float]:
    """Success rate per unit (and unit variant) of one `vlmrl evaluate --robot.unit` output folder."""
    record = json.loads((folder / "units.json").read_text())
    return {name: float(figures["success_rate"]) for name, figures in record["summary"].items()}


def policy_rows(units_dir: Path, condition: str, seed: int) -> dict[str, float]:
    """One policy's rows: the union of its folders (``<condition>-s<seed>`` and ``...-factors``) that exist."""
    rows: dict[str, float] = {}
    for name in (f"{condition}-s{seed}", f"{condition}-s{seed}-factors"):
        if (units_dir / name / "units.json").is_file():
            rows.update(rows_of(units_dir / name))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("units_dir", type=Path)
    parser.add_argument("--conditions", nargs="+", required=True)
    parser.add_argument("--seeds", nargs="+", type=int, required=True)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--baseline", help="JSON:CONDITION, a condition of an earlier output")
    args = parser.parse_args()

    per: dict[str, dict[int, dict[str, float]]] = {
        c: {s: policy_rows(args.units_dir, c, s) for s in args.seeds} for c in args.conditions
    }
    seeds_of = {c: list(args.seeds) for c in args.conditions}
    if args.baseline:
        path, _, name = args.baseline.rpartition(":")
        earlier = json.loads(Path(path).read_text())["per_policy"][name]
        per[name] = {int(s): rows for s, rows in earlier.items()}
        seeds_of[name] = sorted(per[name])
    conditions = list(per)
    out: dict[str, object] = {"conditions": {}, "per_policy": per}
    print("| condition | seeds | " + " | ".join(UNITS) + " | units a-e |")
    print("|---" * (len(UNITS) + 3) + "|")
    mean_units: dict[str, list[float]] = {}
    for condition in conditions:
        seeds = [s for s in seeds_of[condition] if all(u in per[condition][s] for u in UNITS)]
        cells, figures = [], {}
        for unit in UNITS:
            values = [per[condition][s][unit] for s in seeds]
            figures[unit] = {
                "mean": statistics.fmean(values),
                "sd": statistics.stdev(values) if len(values) > 1 else 0.0,
            }
            cells.append(f"{figures[unit]['mean']:.0%} ± {figures[unit]['sd']:.0%}")
        mean_units[condition] = [statistics.fmean(per[condition][s][u] for u in UNITS[1:]) for s in seeds]
        spread = statistics.stdev(mean_units[condition]) if len(seeds) > 1 else 0.0
        figures["units_a_e"] = {
            "mean": statistics.fmean(mean_units[condition]),
            "sd": spread,
            "per_seed": mean_units[condition],
        }
        figures["seeds"] = seeds
        out["conditions"][condition] = figures  # type: ignore[index]
        print(
            f"| {condition} | {len(seeds)} | "
            + " | ".join(cells)
            + f" | {figures['units_a_e']['mean']:.0%} ± {spread:.0%} |"
        )
    if len(conditions) >= 2:
        a, b = conditions[:2]
        p_values = {
            unit: welch_p(
                [per[a][s][unit] for s in out["conditions"][a]["seeds"]],  # type: ignore[index]
                [per[b][s][unit] for s in out["conditions"][b]["seeds"]],  # type: ignore[index]
            )
            for unit in UNITS
        }
        p_values["units_a_e"] = welch_p(mean_units[a], mean_units[b])
        out["welch_p"] = {"between": [a, b], **p_values}
        print(
            f"| Welch p ({a} vs {b}) | | "
            + " | ".join(str(p_values[u]) for u in UNITS)
            + f" | {p_values['units_a_e']} |"
        )
    policies = [(c, s) for c in conditions for s in seeds_of[c]]
    variants = {(c, s): {k: v for k, v in per[c][s].items() if "/" in k} for c, s in policies}
    factors = {f"{c}-s{s}": variants[c, s] for c, s in policies if variants[c, s]}
    if factors:
        names = sorted(
            {n for v in factors.values() for n in v}, key=lambda n: (n.split("/")[1].startswith("no-"), n)
        )
        print("\n| policy | nominal | a | " + " | ".join(names) + " |")
        print("|---" * (len(names) + 3) + "|")
        for c, s in policies:
            rows, full = variants[c, s], per[c][s]
            if rows:
                print(f"| {c}-s{s} | {full.get('nominal', float('nan')):.0%} | {full.get('a', float('nan')):.0%} | "
                      + " | ".join(f"{rows[n]:.0%}" if n in rows else "" for n in names) + " |")  # fmt: skip
        out["factors"] = factors
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
