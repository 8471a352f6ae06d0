#!/usr/bin/env bash
# The out-of-memory must-show runs (docs/benchmarks.md, "Out-of-memory streaming"):
#   1. bench_stream: a dense 1 GiB float64 matrix under a 128 MiB budget (8x), file in the page cache:
#      streamed vs resident s/iter; cold reads (drop-behind) against a plain sequential read; tile/depth sweep;
#   2. `dnmf factor big.npy -k 16 --memory-budget 256M` on a 2 GiB .npy: peak RSS (getrusage via /usr/bin/time
#      and report.json) against the 270 MiB limit.
#   bench/stream_must_show.sh BUILD_DIR OUT_DIR [WORK_DIR]
# WORK_DIR holds the 1 GiB and 2 GiB inputs (default OUT_DIR; kept between calls, so repeats skip generation).
# Environment: REPS (default 3), ITERS (bench_stream iterations, default 5), CLI_ITERS (default 5).
set -euo pipefail
build=${1:?usage: stream_must_show.sh BUILD_DIR OUT_DIR [WORK_DIR]}
out=${2:?usage: stream_must_show.sh BUILD_DIR OUT_DIR [WORK_DIR]}
work=${3:-$out}
mkdir -p "$out" "$work"
# Timings only: no OpenBLAS core-type overrides.
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE

echo "== bench_stream: 1 GiB dense under 128M" >&2
"$build/bin/bench_stream" --rows 8192 --cols 16384 --k 16 --budget 128M --iters "${ITERS:-5}" --reps "${REPS:-3}" \
  --file "$work/bench_stream_1g.npy" --keep --json "$out/bench_stream.json" | tee "$out/bench_stream.txt"

echo "== dnmf factor: 2 GiB .npy under 256M" >&2
big="$work/big_2g.npy"
if [ ! -f "$big" ]; then
  "$build/bin/dnmf" gen --rows 16384 --cols 16384 --rank 16 --noise 0.01 --seed 1 -o "$big" >&2
fi
ls -l "$big" | tee "$out/cli.txt"
rm -rf "$out/cli_out"
/usr/bin/time -v "$build/bin/dnmf" factor "$big" -k 16 --memory-budget 256M --iters "${CLI_ITERS:-5}" --tol 0 -q \
  -o "$out/cli_out" 2> "$out/cli_time.txt" | tee -a "$out/cli.txt"
grep -E "Maximum resident set size|Elapsed" "$out/cli_time.txt" | tee -a "$out/cli.txt"
python3 - "$out/cli_out/report.json" <<'PY' | tee -a "$out/cli.txt"
import json, sys
r = json.load(open(sys.argv[1]))
m = r["memory"]
peak = m["peak_rss_bytes"] / 2**20
print(f"report.json: mode={m['mode']} access={m['stream']['access']} tile={m['stream']['tile_bytes']/2**20:.1f} MiB "
      f"depth={m['stream']['depth']} tiles/pass={m['stream']['tiles_per_pass']} passes={m['stream']['passes']} "
      f"waiting={m['stream']['seconds_waiting']:.3f} s reading={m['stream']['seconds_reading']:.3f} s "
      f"s/iter={r['seconds_per_iteration']:.3f} rel_error={r['rel_error']:.4g}")
print(f"peak RSS {peak:.1f} MiB (budget 256 MiB, limit 270 MiB): {'OK' if peak < 270 else 'OVER'}")
PY
