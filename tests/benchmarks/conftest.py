"""The benchmark scripts import each other by module name (they run from ``benchmarks/``), so their tests
import them the same way: ``benchmarks/`` goes on sys.path here, after the project's own packages."""

import sys
from pathlib import Path

BENCHMARKS = str(Path(__file__).resolve().parents[2] / "benchmarks")
if BENCHMARKS not in sys.path:
    sys.path.append(BENCHMARKS)
