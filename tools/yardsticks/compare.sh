#!/bin/bash
# Runs //tools:collective_bench (over tcp://, ipc:// and, with --transport
# auto, shared memory), Open MPI over TCP and over its shared-memory BTL
# (vader), Gloo over TCP and bare libzmq over TCP (zmq_floor_bench, the floor
# under any ZeroMQ transport) side by side on this machine at 2 and 4 ranks,
# and prints a markdown table of the medians, bus bandwidths and ratios, plus
# the targets of issues 3 and 10. Raw protocol lines (see bench/bench_protocol.h) go to OUTPUT_DIR.
# On a small, shared machine single runs are noisy, so each implementation runs
# ROUNDS times, interleaved with the others, and the table keeps each line's
# best (lowest) median.
#
# Usage: tools/yardsticks/compare.sh [OUTPUT_DIR]
#        tools/yardsticks/compare.sh --table OUTPUT_DIR   (re-print from raw lines)
# Environment: SIZES (default 4K,64K,1M,16M), OPS (default: all four),
#   WORLDS (default "2 4"), ROUNDS (default 3),
#   IMPLS (which to run, default all: ours_tcp ours_ipc ours_shm mpi mpi_shm
#   gloo zmq_floor; e.g. IMPLS="ours_shm mpi_shm" for the shared-memory pair),
#   RUN_TIMEOUT (seconds per run, default 300),
#   BAZEL_OUTPUT_BASE (default ~/.cache/bazel_ob_compare).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
TABLE_ONLY=false
if [ "${1:-}" = "--table" ]; then
  TABLE_ONLY=true
  shift
fi
OUT="${1:-$(mktemp -d "${TMPDIR:-/tmp}/collective_compare.XXXXXX")}"
SIZES="${SIZES:-4K,64K,1M,16M}"
OPS="${OPS:-all_reduce,all_gather,broadcast,ping_pong}"
WORLDS="${WORLDS:-2 4}"
ROUNDS="${ROUNDS:-3}"
IMPLS=" ${IMPLS:-ours_tcp ours_ipc ours_shm mpi mpi_shm gloo zmq_floor} "
OUTPUT_BASE="${BAZEL_OUTPUT_BASE:-$HOME/.cache/bazel_ob_compare}"
mkdir -p "$OUT"

# Every run is bounded by RUN_TIMEOUT seconds; a run that fails or hangs is
# reported on stderr, keeps the lines it printed, and the comparison goes on.
RUN_TIMEOUT="${RUN_TIMEOUT:-300}"
report_failure() {  # WHAT STATUS
  echo "compare.sh: $1 failed with status $2; keeping the lines it printed" >&2
}
# --insecure: the yardsticks do not encrypt either (docs/reliability.md
# measures the cost of the default, CURVE).
run_ours() {  # WORLD TRANSPORT
  "$LAUNCH" -n "$1" --insecure --timeout "$RUN_TIMEOUT" -- "$BIN/tools/collective_bench" --transport "$2" \
    --ops "$OPS" --sizes "$SIZES" || report_failure "collective_bench ($2, $1 ranks)" $?
}
run_mpi() {  # WORLD BTLS; pml ob1 keeps UCX out; btl tcp,self (TCP only) or vader,self (shared memory)
  timeout "$RUN_TIMEOUT" mpirun --allow-run-as-root --oversubscribe --mca pml ob1 \
    --mca btl "$2" -np "$1" "$BIN/tools/yardsticks/mpi_bench" --ops "$OPS" --sizes "$SIZES" ||
    report_failure "mpi_bench ($1 ranks, btl $2)" $?
}
run_with_store() {  # WORLD BENCH: a yardstick whose ranks meet through files in a directory
  local store
  store="$(mktemp -d "$OUT/$2_store.XXXXXX")"
  "$LAUNCH" -n "$1" --timeout "$RUN_TIMEOUT" -- "$BIN/tools/yardsticks/$2" \
    --store "$store" --ops "$OPS" --sizes "$SIZES" || report_failure "$2 ($1 ranks)" $?
  rm -rf "$store"
}

wanted() { [[ "$IMPLS" == *" $1 "* ]]; }

measure() {
  cd "$ROOT"
  bazel --output_base="$OUTPUT_BASE" build --config=opt --symlink_prefix=/ //tools:launch //tools:collective_bench \
    //tools/yardsticks:mpi_bench //tools/yardsticks:gloo_bench \
    //tools/yardsticks:zmq_floor_bench >&2
  BIN="$(bazel --output_base="$OUTPUT_BASE" info --config=opt bazel-bin 2>/dev/null)"
  LAUNCH="$BIN/tools/launch"
  for world in $WORLDS; do
    rm -f "$OUT"/*_"$world".txt
    for ((round = 1; round <= ROUNDS; round++)); do
      echo "== $world ranks, round $round of $ROUNDS:$IMPLS" >&2
      if wanted ours_tcp; then run_ours "$world" tcp >> "$OUT/ours_tcp_$world.txt"; fi
      if wanted ours_ipc; then run_ours "$world" ipc >> "$OUT/ours_ipc_$world.txt"; fi
      if wanted ours_shm; then run_ours "$world" auto >> "$OUT/ours_shm_$world.txt"; fi
      if wanted mpi; then run_mpi "$world" tcp,self >> "$OUT/mpi_$world.txt"; fi
      if wanted mpi_shm; then run_mpi "$world" vader,self >> "$OUT/mpi_shm_$world.txt"; fi
      if wanted gloo; then run_with_store "$world" gloo_bench >> "$OUT/gloo_$world.txt"; fi
      if wanted zmq_floor; then run_with_store "$world" zmq_floor_bench >> "$OUT/zmq_floor_$world.txt"; fi
    done
  done
}

print_table() {
  echo "Raw lines in $OUT; table rendered $(date -u "+%Y-%m-%d %H:%M UTC") on $(nproc) cores, kernel $(uname -r)."
  echo
  echo "| op | bytes | ranks | ours tcp µs | ours ipc µs | MPI µs | Gloo µs | zmq floor µs | ours tcp busbw | ours ipc busbw | MPI busbw | Gloo busbw | tcp/MPI | tcp/Gloo | ours shm µs | MPI vader µs | ours shm busbw | MPI vader busbw | shm/vader busbw |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  for world in $WORLDS; do
    local files=()
    for impl in ours_tcp ours_ipc mpi gloo zmq_floor ours_shm mpi_shm; do
      [ -f "$OUT/${impl}_$world.txt" ] && files+=("$OUT/${impl}_$world.txt")
    done
    awk -v world="$world" '
      FNR == 1 { impl = FILENAME; sub(/.*\//, "", impl); sub(/_[0-9]+\.txt$/, "", impl) }
      NF == 6 { key = $1 " " $2; if (!(key in seen)) { seen[key] = 1; order[n++] = key }
                if (us[impl, key] == "" || $4 + 0 < us[impl, key] + 0) { us[impl, key] = $4; bus[impl, key] = $6 } }
      function cell(v) { return v == "" ? "–" : v }
      function ratio(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "–" : sprintf("%.2f", a / b) }
      END {
        for (i = 0; i < n; ++i) {
          k = order[i]; split(k, f, " ")
          printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
            f[1], f[2], world,
            cell(us["ours_tcp", k]), cell(us["ours_ipc", k]), cell(us["mpi", k]), cell(us["gloo", k]),
            cell(us["zmq_floor", k]),
            cell(bus["ours_tcp", k]), cell(bus["ours_ipc", k]), cell(bus["mpi", k]), cell(bus["gloo", k]),
            ratio(bus["ours_tcp", k], bus["mpi", k]), ratio(bus["ours_tcp", k], bus["gloo", k]),
            cell(us["ours_shm", k]), cell(us["mpi_shm", k]), cell(bus["ours_shm", k]), cell(bus["mpi_shm", k]),
            ratio(bus["ours_shm", k], bus["mpi_shm", k])
        }
      }' "${files[@]}"
  done
  echo
  echo "Targets (ours over tcp):"
  awk '
    FNR == 1 { impl = FILENAME; sub(/.*\//, "", impl); sub(/\.txt$/, "", impl) }
    NF == 6 && $1 == "all_reduce" && (us[impl, $2] == "" || $4 + 0 < us[impl, $2] + 0) {
      us[impl, $2] = $4; bus[impl, $2] = $6
    }
    function check(name, value, op, limit) {
      if (value == "") { printf "- %s: not measured\n", name; return }
      ok = op == ">=" ? value >= limit : value <= limit
      printf "- %s: %.2f (target %s %.1f) %s\n", name, value, op, limit, ok ? "MET" : "MISSED"
    }
    function r(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "" : a / b }
    END {
      check("all_reduce 1 MiB, 2 ranks, busbw ours/MPI", r(bus["ours_tcp_2", 1048576], bus["mpi_2", 1048576]), ">=", 1.0)
      check("all_reduce 16 MiB, 2 ranks, busbw ours/MPI", r(bus["ours_tcp_2", 16777216], bus["mpi_2", 16777216]), ">=", 1.0)
      check("all_reduce 1 MiB, 2 ranks, busbw ours/Gloo", r(bus["ours_tcp_2", 1048576], bus["gloo_2", 1048576]), ">=", 2.0)
      check("all_reduce 16 MiB, 2 ranks, busbw ours/Gloo", r(bus["ours_tcp_2", 16777216], bus["gloo_2", 16777216]), ">=", 2.0)
      check("all_reduce 4 KiB, 2 ranks, latency ours/MPI", r(us["ours_tcp_2", 4096], us["mpi_2", 4096]), "<=", 2.0)
      check("all_reduce 1 MiB, 4 ranks, busbw ours/MPI", r(bus["ours_tcp_4", 1048576], bus["mpi_4", 1048576]), ">=", 0.8)
      check("all_reduce 16 MiB, 4 ranks, busbw ours/MPI", r(bus["ours_tcp_4", 16777216], bus["mpi_4", 16777216]), ">=", 0.8)
      print "Targets of issue 10 (ours over shared memory, --transport auto, against Open MPI vader):"
      check("all_reduce 4 KiB, 2 ranks, latency ours/vader", r(us["ours_shm_2", 4096], us["mpi_shm_2", 4096]), "<=", 1.5)
      check("all_reduce 64 KiB, 2 ranks, latency ours/vader", r(us["ours_shm_2", 65536], us["mpi_shm_2", 65536]), "<=", 1.5)
      check("all_reduce 1 MiB, 2 ranks, busbw ours/vader", r(bus["ours_shm_2", 1048576], bus["mpi_shm_2", 1048576]), ">=", 1.0)
      check("all_reduce 16 MiB, 2 ranks, busbw ours/vader", r(bus["ours_shm_2", 16777216], bus["mpi_shm_2", 16777216]), ">=", 1.0)
      check("all_reduce 1 MiB, 4 ranks, busbw ours/vader", r(bus["ours_shm_4", 1048576], bus["mpi_shm_4", 1048576]), ">=", 0.8)
      check("all_reduce 16 MiB, 4 ranks, busbw ours/vader", r(bus["ours_shm_4", 16777216], bus["mpi_shm_4", 16777216]), ">=", 0.8)
    }' "$OUT"/*_[0-9]*.txt
  awk '
    FNR == 1 { impl = FILENAME; sub(/.*\//, "", impl); sub(/\.txt$/, "", impl) }
    NF == 6 && ($1 == "all_gather" || $1 == "broadcast") && (bus[impl, $1, $2] == "" || $6 + 0 > bus[impl, $1, $2] + 0) {
      bus[impl, $1, $2] = $6
    }
    function check(name, value, limit) {
      if (value == "") { printf "- %s: not measured\n", name; return }
      printf "- %s: %.2f (target >= %.1f) %s\n", name, value, limit, (value >= limit ? "MET" : "MISSED")
    }
    function r(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "" : a / b }
    END {
      split("all_gather broadcast", ops, " "); split("1048576 16777216", sizes, " ")
      for (o = 1; o <= 2; ++o) for (s = 1; s <= 2; ++s)
        check(ops[o] " " (sizes[s] == 1048576 ? "1 MiB" : "16 MiB") ", 2 ranks, busbw ours/vader",
              r(bus["ours_shm_2", ops[o], sizes[s]], bus["mpi_shm_2", ops[o], sizes[s]]), 1.0)
    }' "$OUT"/*_[0-9]*.txt
}

if ! $TABLE_ONLY; then measure; fi
print_table | tee "$OUT/table.md"
