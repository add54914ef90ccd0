#!/usr/bin/python3
"""Writes rotating-4.csv: a synthetic trace in which the late rank changes.

4 ranks, 176 iterations (as many as bytedance-AR-dp-arrivals.csv). Each iteration one rank,
drawn uniformly at random, is late by a lognormal delay (median 6.97 ms, sigma 0.787: the
fine-tuning delays of study 4); every rank also gets a uniform 0-50 us jitter. Fixed seed, so
the file is reproducible: /usr/bin/python3 make_rotating.py > rotating-4.csv
"""
import math
import random

rng = random.Random(14)
print("iteration,rank,arrival_s")
for iteration in range(176):
    late = rng.randrange(4)
    delay = math.exp(math.log(6.97e-3) + 0.787 * rng.gauss(0.0, 1.0))
    for rank in range(4):
        arrival = rng.uniform(0.0, 50e-6) + (delay if rank == late else 0.0)
        print(f"{iteration},{rank},{arrival:.9f}")
