#!/usr/bin/python3
"""Writes a synthetic trace in which the late rank changes: rotating-4.csv or rotating-32.csv.

176 iterations (as many as bytedance-AR-dp-arrivals.csv). Each iteration one rank, drawn
uniformly at random, is late by MIN_DELAY plus a lognormal delay (median 6.97 ms, sigma 0.787:
the fine-tuning delays of study 4); every rank also gets a uniform 0-50 us jitter. Fixed seed, so
the files are reproducible:
    /usr/bin/python3 make_rotating.py > rotating-4.csv
    /usr/bin/python3 make_rotating.py 32 3e-3 > rotating-32.csv
(32 ranks, every delay above 3 ms: longer than the ReduceScatter of 1 GiB among 31 ranks at
450 GiB/s, 2.2 ms, which is the case stragglar_online's target is stated for.)
"""
import math
import random
import sys

ranks = int(sys.argv[1]) if len(sys.argv) > 1 else 4
min_delay_s = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
rng = random.Random(14)
print("iteration,rank,arrival_s")
for iteration in range(176):
    late = rng.randrange(ranks)
    delay = min_delay_s + math.exp(math.log(6.97e-3) + 0.787 * rng.gauss(0.0, 1.0))
    for rank in range(ranks):
        arrival = rng.uniform(0.0, 50e-6) + (delay if rank == late else 0.0)
        print(f"{iteration},{rank},{arrival:.9f}")
