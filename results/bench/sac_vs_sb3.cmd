python benchmarks/sac_vs_sb3.py --json results/bench/sac_vs_sb3.json
