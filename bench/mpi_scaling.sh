#!/usr/bin/env bash
# The distributed benchmark on 1, 2 and 4 processes (one OpenMP thread each), repeated, best kept (runs
# accumulate in OUT_DIR: calling it again adds runs, the best of all is kept); then the
# parallel efficiency table and the scaling model's check against these runs (docs/benchmarks.md,
# "Distributed (MPI)", and docs/scaling.md).
#   bench/mpi_scaling.sh BUILD_DIR OUT_DIR [REPEATS] [PROCESSES...]      e.g. bench/mpi_scaling.sh build out 3 1 2 4
# Environment: WORKLOADS (default dense,sparse,hyper), BENCH_ARGS (more bench_mpi flags, e.g. --quick).
set -euo pipefail
build=${1:?usage: mpi_scaling.sh BUILD_DIR OUT_DIR [REPEATS] [PROCESSES...]}
out=${2:?usage: mpi_scaling.sh BUILD_DIR OUT_DIR [REPEATS] [PROCESSES...]}
repeats=${3:-3}
shift $(( $# < 3 ? $# : 3 ))
processes=("$@")
[ ${#processes[@]} -gt 0 ] || processes=(1 2 4)
here=$(cd "$(dirname "$0")" && pwd)
cores=$(nproc)
mkdir -p "$out"

# Timings only: no OpenBLAS core-type overrides; one thread per rank; Open MPI as root is allowed here.
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

for np in "${processes[@]}"; do
  # More ranks than cores: waiting ranks must yield the core instead of spinning on it.
  yield=0
  [ "$np" -gt "$cores" ] && yield=1
  for r in $(seq 1 "$repeats"); do
    echo "== $np process(es), run $r of $repeats" >&2
    OMPI_MCA_mpi_yield_when_idle=$yield mpirun --oversubscribe -np "$np" "$build/bin/bench_mpi" \
      --workloads "${WORKLOADS:-dense,sparse,hyper}" ${BENCH_ARGS:-} --json "$out/np$np.run$(date +%s%N).json" >&2
  done
done

# Best run per workload and process count; parallel efficiency T1 / (P * TP) against the best 1-process run.
python3 - "$out" "${processes[@]}" <<'PY'
import glob, json, os, sys
out, procs = sys.argv[1], [int(p) for p in sys.argv[2:]]
best = {}
for p in procs:
    runs = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(out, f"np{p}.run*.json")))]
    merged = dict(runs[0]); merged["rows"] = []
    for row in runs[0]["rows"]:
        same = [(r, x) for r in runs for x in r["rows"] if x["workload"] == row["workload"]]
        run, pick = min(same, key=lambda t: t[1]["seconds_per_iteration"])
        pick = dict(pick); pick["runs"] = len(same)
        merged["rows"].append(pick)
    merged["latency_s"] = min(r["latency_s"] for r in runs) if p > 1 else 0.0
    merged["bandwidth_bytes_per_s"] = max(r["bandwidth_bytes_per_s"] for r in runs)
    best[p] = merged
base = {row["workload"]: row["seconds_per_iteration"] for row in best.get(1, {"rows": []})["rows"]}
print(f"{'workload':<26} {'P':>2} {'grid':>5} {'fused':>5} {'s/iter':>9} {'speed-up':>8} {'eff':>5} "
      f"{'bytes/rank':>11} {'model':>11} {'ratio':>6} {'GFLOP/s/rank':>12}")
for p in procs:
    for row in best[p]["rows"]:
        t1 = base.get(row["workload"])
        row["parallel_efficiency"] = t1 / (p * row["seconds_per_iteration"]) if t1 else None
        eff = f"{100 * row['parallel_efficiency']:.0f}%" if t1 else "-"
        print(f"{row['workload']:<26} {p:>2} {row['grid']:>5} {'yes' if row['fused'] else 'no':>5} "
              f"{row['seconds_per_iteration']:>9.5f} {t1 / row['seconds_per_iteration'] if t1 else 0:>8.2f} {eff:>5} "
              f"{row['steady_bytes_per_rank_per_iteration_mean']:>11.0f} {row['bytes_model']:>11.0f} "
              f"{row['bytes_ratio_mean_to_model']:>6.3f} {row['product_gflops_per_rank_min']:>12.2f}")
    json.dump(best[p], open(os.path.join(out, f"np{p}.json"), "w"), indent=2)
PY

python3 "$here/scaling_model.py" --cores "$cores" --runs $(for np in "${processes[@]}"; do echo "$out/np$np.json"; done) \
  --json "$out/scaling_model.json"
