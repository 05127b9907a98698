#!/usr/bin/env bash
# One fuzz target for FUZZ_SECONDS (default 20), as `.ci/run` runs it: the inputs that once
# crashed it (fuzz/regressions/TARGET) replayed first, so a regression fails here, not by luck;
# then libFuzzer over corpus/TARGET (new inputs, git-ignored) and seeds/TARGET (committed, built
# from the real corpus by scripts/fuzz-seeds.py, or hand-written for model). Its output goes to
# target/fuzz-logs/TARGET.log, and its last lines are printed in one piece when it ends, so two
# targets run side by side do not interleave. Exits non-zero on a crash or a failed replay.
#
#   scripts/fuzz-one.sh TARGET
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
target=$1
seconds=${FUZZ_SECONDS:-20}
mkdir -p ../target/fuzz-logs corpus/"$target"
log=../target/fuzz-logs/"$target".log
: >"$log"
status=0
for input in regressions/"$target"/*; do
  [ -e "$input" ] || continue
  echo "-- replay $input" >>"$log"
  RUSTC_BOOTSTRAP=1 cargo fuzz run "$target" "$input" >>"$log" 2>&1 || { status=$?; break; }
done
if [ "$status" = 0 ]; then
  # The model target runs whole operation sequences: longer inputs from the start, and a hang
  # (a FIFO opened without O_NONBLOCK) is a finding after 10 s, not after libFuzzer's 20 minutes.
  extra=()
  [ "$target" = model ] && extra=(-max_len=160 -len_control=0 -timeout=10)
  seeds=()
  [ -d seeds/"$target" ] && seeds=(seeds/"$target")
  echo "-- fuzz $target" >>"$log"
  RUSTC_BOOTSTRAP=1 cargo fuzz run "$target" corpus/"$target" "${seeds[@]}" -- \
    -max_total_time="$seconds" "${extra[@]}" >>"$log" 2>&1 || status=$?
fi
if [ "$status" = 0 ]; then
  { echo "-- $target"; grep -E '^(-- replay|Done )' "$log"; } | sed 's/^/   /'
else
  { echo "-- $target FAILED (exit $status); the end of $log:"; tail -n 60 "$log"; }
fi
exit "$status"
