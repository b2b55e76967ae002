python benchmarks/scale_out.py --quick --json results/bench/scale_out.json
