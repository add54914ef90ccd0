#!/usr/bin/env bash
# Draws one plot script's fixture and checks the figure: plot_script_test.sh SCRIPT FIXTURES SCRATCH
#
# The fixture is FIXTURES/<script stem>/: result files as `collsim run` writes them (a tiny run,
# trimmed). It is copied to SCRATCH/<stem>/ and the script runs there the way `collsim run` runs
# a spec's plot (`/usr/bin/python3 SCRIPT DIR`), or with the arguments listed one per line in the
# fixture's `args` file ({dir} = the scratch copy; lines starting with # are comments). The
# script must write at least one PNG and one SVG, every one of them non-empty and well formed.
# With a fixture file `expect_title`, the figure's title must contain each of its lines.
# Exit 0 pass, 1 fail (also when the script has no fixture), 77 skip: no /usr/bin/python3 or no
# matplotlib.
set -euo pipefail

if [[ $# -ne 3 ]]; then
  echo "usage: $0 SCRIPT FIXTURES_DIR SCRATCH_DIR" >&2
  exit 1
fi
script=$1
fixtures=$2
scratch=$3
stem=$(basename "$script" .py)
python=/usr/bin/python3

if [[ ! -x $python ]]; then
  echo "SKIP: $python not found (plots need Debian's python3 with python3-matplotlib)"
  exit 77
fi
if ! "$python" -c 'import matplotlib' 2>/dev/null; then
  echo "SKIP: $python cannot import matplotlib (install python3-matplotlib)"
  exit 77
fi

fixture="$fixtures/$stem"
if [[ ! -d $fixture ]]; then
  echo "FAIL: $script has no fixture: add $fixture/ with the results.csv/summary.csv of a tiny run" \
       "of its study (see tests/data/plots/README.md)"
  exit 1
fi
if compgen -G "$fixture/*.png" >/dev/null || compgen -G "$fixture/*.svg" >/dev/null; then
  echo "FAIL: $fixture holds PNG/SVG files; a fixture holds only the script's input"
  exit 1
fi

dir="$scratch/$stem"
rm -rf "$dir"
mkdir -p "$dir"
cp -R "$fixture/." "$dir/"

args=("$dir")
if [[ -f $fixture/args ]]; then
  args=()
  while IFS= read -r line || [[ -n $line ]]; do
    [[ -z $line || $line == \#* ]] && continue
    args+=("${line//\{dir\}/$dir}")
  done <"$fixture/args"
fi

echo "+ $python $script ${args[*]}"
if ! "$python" "$script" "${args[@]}"; then
  echo "FAIL: $script exited with an error on $fixture"
  exit 1
fi

shopt -s nullglob
pngs=("$dir"/*.png)
svgs=("$dir"/*.svg)
if [[ ${#pngs[@]} -eq 0 || ${#svgs[@]} -eq 0 ]]; then
  echo "FAIL: $script wrote ${#pngs[@]} PNG and ${#svgs[@]} SVG files in $dir (expected at least one of each)"
  exit 1
fi
for file in "${pngs[@]}" "${svgs[@]}"; do
  if [[ ! -s $file ]]; then
    echo "FAIL: $file is empty"
    exit 1
  fi
done
for file in "${pngs[@]}"; do
  if [[ $(head -c 8 "$file" | od -An -tx1 | tr -d ' \n') != 89504e470d0a1a0a ]]; then
    echo "FAIL: $file is not a PNG"
    exit 1
  fi
done
for file in "${svgs[@]}"; do
  if ! grep -q '<svg' "$file"; then
    echo "FAIL: $file is not an SVG"
    exit 1
  fi
done
# expect_title (optional): strings, one a line, that the figure's title must contain (save()
# stores it as the SVG's Title metadata; drawn SVG text is paths, so it cannot be read there).
if [[ -f $fixture/expect_title ]]; then
  while IFS= read -r want || [[ -n $want ]]; do
    [[ -z $want || $want == \#* ]] && continue
    for file in "${svgs[@]}"; do
      if ! grep -o '<dc:title>[^<]*</dc:title>' "$file" | grep -qF -- "$want"; then
        echo "FAIL: the title of $file does not contain '$want' ($(grep -o '<dc:title>[^<]*</dc:title>' "$file" || echo 'no title'))"
        exit 1
      fi
    done
  done <"$fixture/expect_title"
fi
echo "ok: $stem wrote ${pngs[*]##*/} and ${svgs[*]##*/}"
