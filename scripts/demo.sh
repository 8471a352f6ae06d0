#!/usr/bin/env bash
# The demo: (1) plant a rank-8 factorisation in a 2000 x 1500 matrix, factor it, print what came out;
# (2) NMFk: plant rank 6 in a 400 x 300 matrix with 2% noise, let `dnmf nmfk` choose k among 2..10, print the
# selected k and where the plot is.
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

# NMFk. One OpenMP thread: the 90 small factorisations gain nothing from threads (and lose a lot on a busy
# machine); `mpirun -np N dnmf nmfk ... --groups N` is how NMFk uses more cores. --restart: a rerun of the demo
# starts afresh instead of resuming from the previous run's checkpoints.
"$dnmf" gen --rows 400 --cols 300 --rank 6 --noise 0.02 --seed 1 -o demo/K.npy
echo "demo nmfk: planted k=6; dnmf nmfk says:"
"$dnmf" nmfk demo/K.npy --k 2:10 --perturbations 10 --threads 1 --restart --quiet -o demo/nmfk
