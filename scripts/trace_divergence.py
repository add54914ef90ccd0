#!/usr/bin/env python3
"""Where two runs of one schedule drift apart: compares two Perfetto traces of `collsim simulate
--trace`, transfer by transfer, round by round.

Why: on contended fabrics a change of 1 ps in one input can move a late rank's finish time by
microseconds (docs/performance.md, "Eighth pass"). This shows how a difference grows over the
rounds: per block of rounds, the largest difference of a transfer's start or end between the two
runs, and the first round where the difference passes each of a few thresholds.

usage: trace_divergence.py A.json B.json [--blocks K]

Transfers are matched by GPU, direction, peer, phase, round and name; exits 1 when the traces do
not hold the same transfers (or one holds a transfer twice), 2 on a usage error.
"""
import json
import sys


class TraceError(Exception):
    pass


def load(path):
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    transfers = {}
    for e in events:
        if e.get("ph") != "X":
            continue
        args = e.get("args", {})
        # A transfer appears twice, on its sender's "send" row and its receiver's "recv" row.
        peer = args.get("to", args.get("from"))
        key = (e["pid"], e.get("cat"), peer, args.get("phase"), args.get("round"), e["name"])
        if key in transfers:
            raise TraceError(f"{path}: two events for GPU {key[0]} {key[1]} {peer} in {key[3]} round {key[4]} ({key[5]})")
        transfers[key] = (e["ts"], e["ts"] + e["dur"])  # microseconds
    return transfers


def count(transfers):
    return sum(1 for key in transfers if key[1] == "send")


def main(argv):
    args = list(argv[1:])
    blocks = 20
    if "--blocks" in args:
        i = args.index("--blocks")
        try:
            blocks = int(args[i + 1])
        except (IndexError, ValueError):
            print("--blocks needs a whole number", file=sys.stderr)
            return 2
        del args[i:i + 2]
    if len(args) != 2 or blocks < 1:
        print(__doc__.strip().splitlines()[-4], file=sys.stderr)
        return 2
    try:
        a, b = load(args[0]), load(args[1])
    except TraceError as e:
        print(e)
        return 1
    if set(a) != set(b):
        print(f"the traces hold different transfers ({count(a)} and {count(b)}; "
              f"{len(set(a) ^ set(b))} send or receive events in one only)")
        return 1
    # Per (phase, round): the largest difference, and the earliest start (to order phases).
    per_round = {}
    for key, (start_a, end_a) in a.items():
        start_b, end_b = b[key]
        diff = max(abs(start_a - start_b), abs(end_a - end_b))
        round_key = (key[3], key[4])
        worst, first = per_round.get(round_key, (0.0, start_a))
        per_round[round_key] = (max(worst, diff), min(first, start_a))
    rounds = sorted(per_round, key=lambda k: per_round[k][1])
    print(f"{count(a)} transfers in {len(rounds)} rounds; largest difference of a start or end, in us")
    size = max(1, -(-len(rounds) // blocks))
    print(f"{'rounds':<40} {'largest':>12}")
    for i in range(0, len(rounds), size):
        chunk = rounds[i:i + size]
        worst = max(per_round[k][0] for k in chunk)
        label = f"{chunk[0][0]} {chunk[0][1]} .. {chunk[-1][0]} {chunk[-1][1]}"
        print(f"{label:<40} {worst:>12.3e}")
    for threshold_us in (1e-6, 1e-3, 1.0):
        passed = next((k for k in rounds if per_round[k][0] > threshold_us), None)
        where = f"{passed[0]} round {passed[1]}" if passed else "never"
        print(f"first round past {threshold_us:g} us: {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
