python benchmarks/scoring.py --quick --json results/bench/scoring.json
