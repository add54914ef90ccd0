"""The plots' legend order comes from the algorithm table when they are given the binary
(COLLSIM_BIN), else from the results CSV they read; a broken binary is an error.
usage: /usr/bin/python3 plot_algorithm_table_test.py COLLSIM_BINARY PLOTS_DIR SCRATCH_DIR
Exit 0 pass, 1 fail, 77 skip (no matplotlib: collsim_plot imports it)."""
import csv
import json
import os
import subprocess
import sys

binary, plots_dir, scratch = sys.argv[1:4]
try:
    import matplotlib  # noqa: F401
except ImportError:
    print("SKIP: this interpreter cannot import matplotlib")
    sys.exit(77)

os.makedirs(scratch, exist_ok=True)
results = os.path.join(scratch, "results.csv")
with open(results, "w", newline="") as handle:
    writer = csv.writer(handle)
    writer.writerow(["algorithm", "n", "time_s"])
    for algorithm in ("ring", "direct", "stragglar"):
        writer.writerow([algorithm, 8, 1.0])

probe = f"""
import sys
sys.path.insert(0, {plots_dir!r})
import collsim_plot as cp
cp.read_rows({results!r})
print(",".join(cp.ordered({{"direct", "ring", "stragglar", "zz_unknown"}})))
"""


def order(env_binary):
    env = dict(os.environ)
    env.pop("COLLSIM_BIN", None)
    if env_binary is not None:
        env["COLLSIM_BIN"] = env_binary
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    return done.returncode, done.stdout.strip(), done.stderr.strip()


failures = []
table = [row["name"] for row in json.loads(subprocess.run([binary, "algorithms", "--json"], check=True,
                                                         capture_output=True, text=True).stdout)]
expected_table = [a for a in table if a in ("direct", "ring", "stragglar")] + ["zz_unknown"]
code, out, err = order(binary)
if code != 0 or out != ",".join(expected_table):
    failures.append(f"with the binary: got {out!r} (exit {code}, {err}), want {','.join(expected_table)!r}")
code, out, err = order(None)
if code != 0 or out != "ring,direct,stragglar,zz_unknown":
    failures.append(f"without the binary: got {out!r} (exit {code}, {err}), want the CSV order")
code, out, err = order(os.path.join(scratch, "no_such_collsim"))
if code == 0 or "COLLSIM_BIN" not in err:
    failures.append(f"a missing binary must be an error naming COLLSIM_BIN: exit {code}, {err!r}")

for failure in failures:
    print("FAIL:", failure)
sys.exit(1 if failures else 0)
