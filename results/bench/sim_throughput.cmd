.venv/bin/python benchmarks/sim_throughput.py --json results/bench/sim_throughput.json
