set -u
PEER=build-dev/sir_jax.py MODELS=build-dev/new DEVICES=gpu SIZES="65536 1048576 4194304" CASES="sir population hmm" scripts/bench-populations 3 2>/dev/null | tail -25
for v in base new base; do
  echo "=== $v"
  MODELS=build-dev/$v DEVICES=gpu SIZES="65536 1048576 4194304" CASES="sir population hmm" scripts/bench-populations 3 2>/dev/null | grep "^| [a-z]" | awk -F'|' '{print $2,$3,$4,$6,$12,$13}'
done
