python benchmarks/viewer.py --quick --json results/bench/viewer-quick.json
