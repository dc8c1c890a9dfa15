set -u
for v in new base new base; do
  echo "=== $v"
  MODELS=build-dev/$v DEVICES=gpu SIZES="65536 4194304" CASES="sir population hmm" scripts/bench-populations 3 2>/dev/null | grep "^| [a-z]" | awk -F'|' '{print $2,$3,$4,$6}'
done
