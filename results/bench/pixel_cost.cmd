python benchmarks/pixel_learning.py --cost-only --json results/bench/pixel_cost.json
