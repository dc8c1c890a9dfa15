#!/usr/bin/env bash
# Test of scripts/launch-local: the ranks' variables, a failing rank stopping the others, bad usage, no files left.
# Usage: tests/launch_local.sh <path of scripts/launch-local>
set -uo pipefail
launch=${1:?the path of scripts/launch-local}
fail() { echo "launch_local test: $*" >&2; exit 1; }

# every rank gets its rank, the world size, one id file for all, and NVLink multicast off
out=$("$launch" 3 bash -c 'echo "$TALLY_RANK $TALLY_LOCAL_RANK $TALLY_WORLD_SIZE $NCCL_NVLS_ENABLE $TALLY_NCCL_ID_FILE"') ||
  fail "three succeeding ranks returned $?"
[ "$(echo "$out" | wc -l)" -eq 3 ] || fail "expected 3 ranks, got: $out"
[ "$(echo "$out" | awk '{print $1}' | sort | tr '\n' ' ')" = "0 1 2 " ] || fail "ranks: $out"
echo "$out" | awk '$1 != $2 || $3 != 3 || $4 != 0 { bad = 1 } END { exit bad }' || fail "variables: $out"
[ "$(echo "$out" | awk '{print $5}' | sort -u | wc -l)" -eq 1 ] || fail "the ranks saw different id files: $out"
folder=$(dirname "$(echo "$out" | awk 'NR == 1 {print $5}')")
[ ! -e "$folder" ] || fail "the id folder $folder is left behind"

# a failing rank: its status comes back, and the rank that would run for a minute is stopped (no hang)
timeout 30 "$launch" 2 bash -c 'if [ "$TALLY_RANK" = 1 ]; then exit 7; fi; exec sleep 60' 2>/dev/null
status=$?
[ $status -ne 124 ] || fail "the other rank was not stopped"
[ $status -eq 7 ] || fail "a rank exiting 7 gave $status"

# bad usage
"$launch" 0 true 2>/dev/null && fail "0 ranks accepted"
"$launch" two true 2>/dev/null && fail "a non-number accepted"
"$launch" 2 2>/dev/null && fail "no program accepted"
echo "launch_local test: passed"
