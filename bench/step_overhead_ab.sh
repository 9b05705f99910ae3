#!/usr/bin/env bash
# A/B of the tiny GPT step between two checkouts, alternating processes (each in its own session),
# ROUNDS rounds, one thread (set before the first import: step_overhead.py's own setting comes too
# late once the check below has imported NumPy); prints each median (ms) and each side's median. Usage:
#   bash bench/step_overhead_ab.sh /path/to/checkout_a /path/to/checkout_b [ROUNDS]
set -euo pipefail
A=$1; B=$2; ROUNDS=${3:-8}
uptime
here=$(cd "$(dirname "$0")/.." && pwd)
for ((r = 0; r < ROUNDS; r++)); do
  for side in A B; do
    dir=${!side}
    ms=$(cd "$dir" && OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONPATH="$dir" setsid python -c "import sys, runpy, tinygrad_tx; assert tinygrad_tx.__file__.startswith('$dir'), tinygrad_tx.__file__; sys.argv=['x']; runpy.run_path('$here/bench/step_overhead.py', run_name='__main__')")
    echo "$side $ms"
  done
done | tee /dev/stderr | python3 -c "
import sys, statistics
v = {'A': [], 'B': []}
for line in sys.stdin:
    s, ms = line.split(); v[s].append(float(ms))
a, b = statistics.median(v['A']), statistics.median(v['B'])
print(f'median A {a:.3f} ms, B {b:.3f} ms, B/A {b / a:.3f}')
"
uptime
