#!/usr/bin/env bash
# The demo: plant a rank-8 factorisation in a 2000 x 1500 matrix, factor it, print what came out.
set -euo pipefail
dnmf=${1:-build/release/bin/dnmf}
mkdir -p demo
"$dnmf" gen --rows 2000 --cols 1500 --rank 8 --noise 0 --seed 1 -o demo/A.npy
"$dnmf" factor demo/A.npy -k 8 --algo hals --iters 1000 --quiet -o demo/out
python3 - <<'PY'
import json
r = json.load(open("demo/out/report.json"))
print(f"demo: k={r['k']} rel_error={r['rel_error']:.3e} iterations={r['iterations']} "
      f"seconds={r['seconds']:.2f} ({r['seconds_per_iteration']*1e3:.2f} ms/iter) -> demo/out/W.npy, H.npy, report.json")
PY
