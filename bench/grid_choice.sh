#!/usr/bin/env bash
# --grid auto against measurements (issue 14 item 7): on 2 and 4 processes (one OpenMP thread each), every
# candidate grid of dense 4000x3000 k=16 in C and in Fortran order and of a sparse 20000x10000 matrix (1e6
# non-zeros) is timed with `dnmf factor`, best of REPEATS; the table sets the time model's prediction (from the
# auto run's report.json) beside the measured seconds per iteration and says whether auto picked the fastest.
#   bench/grid_choice.sh BUILD_DIR OUT_DIR [REPEATS] [ITERS] [PROCESSES...]   e.g. bench/grid_choice.sh build/release out 3 30 2 4
# Environment: SCALE=2 halves every extent (a loaded machine), PYTHON (default python3).
set -euo pipefail
build=${1:?usage: grid_choice.sh BUILD_DIR OUT_DIR [REPEATS] [ITERS] [PROCESSES...]}
out=${2:?usage: grid_choice.sh BUILD_DIR OUT_DIR [REPEATS] [ITERS] [PROCESSES...]}
repeats=${3:-3}
iters=${4:-30}
shift $(($# < 4 ? $# : 4))
processes=("$@")
[ ${#processes[@]} -gt 0 ] || processes=(2 4)
scale=${SCALE:-1}
dnmf="$build/bin/dnmf"
python=${PYTHON:-python3}
cores=$(nproc)
mkdir -p "$out"

# Timings only: no OpenBLAS core-type overrides; one thread per rank; Open MPI as root is allowed here.
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

m=$((4000 / scale)) n=$((3000 / scale)) sm=$((20000 / scale)) sn=$((10000 / scale))
[ -f "$out/dense_f.npy" ] || "$dnmf" gen --rows $m --cols $n --rank 16 --noise 0.01 -o "$out/dense_f.npy" >/dev/null
[ -f "$out/dense_c.npy" ] || "$python" -c "import numpy as np, sys; np.save(sys.argv[2], np.ascontiguousarray(np.load(sys.argv[1])))" \
  "$out/dense_f.npy" "$out/dense_c.npy"
[ -f "$out/sparse.mtx" ] || "$dnmf" gen --rows $sm --cols $sn --rank 16 --density 0.005 --noise 0.01 -o "$out/sparse.mtx" >/dev/null

grids_of() {  # every pr x pc = p
  local p=$1 pr
  for ((pr = 1; pr <= p; pr++)); do ((p % pr == 0)) && echo "${pr}x$((p / pr))"; done
}

for np in "${processes[@]}"; do
  yield=0
  [ "$np" -gt "$cores" ] && yield=1  # more ranks than cores: waiting ranks must yield the core
  for workload in dense_c dense_f sparse; do
    file="$out/$workload.npy"
    [ $workload = sparse ] && file="$out/sparse.mtx"
    for r in $(seq 1 "$repeats"); do
      for grid in auto $(grids_of "$np"); do
        echo "== np=$np $workload grid=$grid run $r of $repeats" >&2
        dir="$out/runs/np$np.$workload.$grid.r$r"
        OMPI_MCA_mpi_yield_when_idle=$yield mpirun --oversubscribe -np "$np" "$dnmf" factor "$file" -k 16 \
          --iters "$iters" --tol 0 --grid "$grid" --quiet -o "$dir" >/dev/null
      done
    done
  done
done

"$python" - "$out" "${processes[@]}" <<'PY'
import glob, json, os, sys
out, procs = sys.argv[1], [int(p) for p in sys.argv[2:]]
print(f"{'workload':<8} {'P':>2} {'grid':>5} {'path':>8} {'predicted ms':>12} {'measured ms':>11} {'runs':>4}  note")
summary = []
for p in procs:
    for w in ("dense_c", "dense_f", "sparse"):
        runs = {}
        for f in glob.glob(os.path.join(out, "runs", f"np{p}.{w}.*.r*", "report.json")):
            grid = os.path.basename(os.path.dirname(f)).split(".")[2]
            runs.setdefault(grid, []).append(json.load(open(f)))
        if "auto" not in runs:
            continue
        auto = runs["auto"][0]
        choice = auto["grid_choice"]
        measured = {g: min(r["seconds_per_iteration"] for r in rs) for g, rs in runs.items() if g != "auto"}
        fastest = min(measured, key=measured.get)
        for c in choice.get("candidates", []):
            g = c["grid"]
            note = []
            if g == choice["chosen"]:
                note.append("auto")
            if g == choice.get("by_words"):
                note.append("fewest words")
            if g == fastest:
                note.append("fastest")
            print(f"{w:<8} {p:>2} {g:>5} {c['path']:>8} {1e3 * c['predicted_seconds_per_iteration']:>12.2f} "
                  f"{1e3 * measured.get(g, float('nan')):>11.2f} {len(runs.get(g, [])):>4}  {', '.join(note)}")
        chosen = choice["chosen"]
        ratio = measured[chosen] / measured[fastest]
        by_words = measured.get(choice.get("by_words", chosen), float("nan")) / measured[fastest]
        summary.append(f"{w} P={p}: auto picked {chosen} ({ratio:.2f}x the fastest measured, {fastest}); "
                       f"the words-only grid {choice.get('by_words')} ran at {by_words:.2f}x")
print()
print("\n".join(summary))
PY
