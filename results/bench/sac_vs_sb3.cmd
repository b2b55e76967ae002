python benchmarks/sac_vs_sb3.py --quick --json results/bench/sac_vs_sb3.json
