"""Stand-in plot script for the run command test: checks it gets DIR and writes a marker."""
import pathlib
import sys

out = pathlib.Path(sys.argv[1])
rows = (out / "summary.csv").read_text().splitlines()
(out / "plotted.txt").write_text(f"{len(rows) - 1} points\n")
sys.exit(3 if "fail" in out.name else 0)
