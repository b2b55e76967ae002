python benchmarks/viewer.py --json results/bench/viewer.json
