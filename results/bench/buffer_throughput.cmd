python benchmarks/buffer_throughput.py --quick --json results/bench/buffer_throughput.json
