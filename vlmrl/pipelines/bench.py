"""Run the benchmarks in `benchmarks/` and print each one's figures and its ratio to the reference.

Each benchmark is a script that runs our implementation and its reference (raw robosuite, an in-RAM
buffer, Stable-Baselines3...) in one run and writes its figures with `--json PATH`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from vlmrl.errors import ConfigError

BENCHMARK_DIR = Path(__file__).resolve().parents[2] / "benchmarks"


@dataclass(frozen=True, kw_only=True)
class Config:
    names: tuple[str, ...] = ()
    """Benchmarks to run by file stem (e.g. sim_throughput); empty runs all of them."""
    quick: bool = True
    """Pass --quick (short budgets); --no-quick runs the full measurement."""
    out_dir: Path = Path("runs/bench")
    """Where each benchmark's JSON figures are written (<name>.json)."""
    timeout_s: float = 3600.0
    """Wall-clock limit per benchmark."""


def available_benchmarks() -> dict[str, Path]:
    if not BENCHMARK_DIR.is_dir():
        raise ConfigError(
            f"benchmarks folder not found at {BENCHMARK_DIR}; run `vlmrl bench` from a source checkout"
        )
    return {p.stem: p for p in sorted(BENCHMARK_DIR.glob("*.py")) if not p.stem.startswith("_")}


def main(cfg: Config) -> int:
    from rich.console import Console
    from rich.table import Table

    scripts = available_benchmarks()
    unknown = [n for n in cfg.names if n not in scripts]
    if unknown:
        raise ConfigError(f"unknown benchmark(s) {unknown}; available: {sorted(scripts)}")
    chosen = {n: scripts[n] for n in (cfg.names or tuple(scripts))}
    cfg.out_dir.mkdir(parents=True, exist_ok=True)
    console = Console()
    table = Table(title="vlmrl benchmarks")
    for column in ("benchmark", "figures", "ratio"):
        table.add_column(column)
    failed = []
    for name, script in chosen.items():
        json_path = cfg.out_dir / f"{name}.json"
        cmd = [sys.executable, str(script), "--json", str(json_path)] + (["--quick"] if cfg.quick else [])
        console.print(f"[bold]{name}[/bold]: {' '.join(cmd)}")
        proc = subprocess.run(cmd, timeout=cfg.timeout_s)
        if proc.returncode != 0 or not json_path.exists():
            failed.append(name)
            table.add_row(name, f"[red]failed (exit {proc.returncode})[/red]", "-")
            continue
        figures = json.loads(json_path.read_text())
        ratios = {k: v for k, v in figures.items() if "ratio" in k and isinstance(v, int | float)}
        shown = ", ".join(f"{k}={_fmt(v)}" for k, v in figures.items() if k not in ratios)
        table.add_row(name, shown, ", ".join(f"{k}={_fmt(v)}" for k, v in ratios.items()) or "-")
    console.print(table)
    console.print(f"figures written to {cfg.out_dir}/")
    return 1 if failed else 0


def _fmt(value: object) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)
