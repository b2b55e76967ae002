python benchmarks/pixel_learning.py --quick --json results/bench/pixel_learning.json
