#!/bin/sh
# Kill -9 loop: a run that is SIGKILLed at random moments and resumed with
# --resume each time must end with the parameters and the --log of an
# uninterrupted run, byte for byte (the log's timing fields aside).
#
#   scripts/kill-loop.sh [KILLS]      (default 30)
#
# Compiles examples/digits_mlp.onnx for the CPU target, trains it once
# without interruption (--checkpoint-every 1 --log, held-out evaluation after
# every epoch), then runs the same training KILLS times, each killed with
# SIGKILL after a random delay (up to the uninterrupted run's duration) and
# continued with --resume (or started afresh when no checkpoint was written
# yet; the last kill waits for a checkpoint first), and once more to the end. The verdict does not depend on where the
# kills land: every kill point must resume to the same result. Prints PASS
# or FAIL; exits 0 on PASS.
#
# Environment: TRAINC (default build/bin/trainc), PYTHON (default
# /usr/bin/python3), WORK (a folder to use; default a new temporary one,
# removed on PASS), STEPS (default 150), BATCH (default 32).
set -eu

KILLS=${1:-30}
case $KILLS in
'' | *[!0-9]*) echo "usage: $0 [KILLS]" >&2; exit 2 ;;
esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TRAINC=${TRAINC:-$ROOT/build/bin/trainc}
PYTHON=${PYTHON:-/usr/bin/python3}
STEPS=${STEPS:-150}
BATCH=${BATCH:-32}
if [ -n "${WORK:-}" ]; then
  mkdir -p "$WORK"
  KEEP=1
else
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/kill-loop.XXXXXX")
  KEEP=0
fi

fail() {
  echo "FAIL: $*"
  echo "(files kept in $WORK)"
  exit 1
}

"$PYTHON" "$ROOT/examples/prepare_digits.py" "$WORK/digits" > /dev/null ||
  fail "cannot prepare the digits data"
"$TRAINC" compile "$ROOT/examples/digits_mlp.onnx" --target=cpu --batch-size="$BATCH" \
  --loss=cross-entropy --optimizer=adamw -o "$WORK/trainer" > /dev/null ||
  fail "cannot compile the trainer"

# Both runs take the same flags; only the folders differ. The trainer
# replaces the (sub)shell that calls this, so that a kill reaches it.
train() { # OUT_PREFIX [--resume]
  prefix=$1
  shift
  exec "$WORK/trainer" --data "$WORK/digits/train" --eval-data "$WORK/digits/val" \
    --steps "$STEPS" --lr 0.003 --seed 7 --checkpoint-every 1 \
    --checkpoint-dir "$prefix.ck" --log "$prefix.jsonl" --save-params "$prefix.params" "$@"
}

# Milliseconds since the epoch (GNU date).
now_ms() { date +%s%3N; }

rm -rf "$WORK/full.ck" "$WORK/full.jsonl" "$WORK/full.params"
start=$(now_ms)
(train "$WORK/full") > /dev/null 2> "$WORK/full.err" || fail "the uninterrupted run failed: $(tail -n 1 "$WORK/full.err")"
duration=$(($(now_ms) - start))
[ "$duration" -gt 0 ] || duration=1

# One run of the killed series, run in a subshell that becomes the trainer:
# resumed when a checkpoint exists, fresh otherwise.
run_once() {
  if [ -f "$WORK/killed.ck/checkpoint.safetensors" ]; then
    train "$WORK/killed" --resume "$@"
  else
    train "$WORK/killed" "$@"
  fi
}

rm -rf "$WORK/killed.ck" "$WORK/killed.jsonl" "$WORK/killed.params"
i=0
resumed=0
fresh=0
after=0 # kills that landed when a checkpoint existed
while [ "$i" -lt "$KILLS" ]; do
  i=$((i + 1))
  # A delay in [0, duration] ms, from /dev/urandom.
  r=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
  delay=$((r % (duration + 1)))
  if [ -f "$WORK/killed.ck/checkpoint.safetensors" ]; then
    resumed=$((resumed + 1))
  else
    fresh=$((fresh + 1))
  fi
  run_once > /dev/null 2> "$WORK/killed.$i.err" &
  pid=$!
  # The last kill lands after a checkpoint exists, so that every loop kills
  # at least one run mid-training and continues it with --resume.
  if [ "$i" -eq "$KILLS" ]; then
    while [ ! -f "$WORK/killed.ck/checkpoint.safetensors" ] && kill -0 "$pid" 2> /dev/null; do
      sleep 0.01
    done
  fi
  sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
  [ -f "$WORK/killed.ck/checkpoint.safetensors" ] && after=$((after + 1))
  kill -9 "$pid" 2> /dev/null || true
  status=0
  wait "$pid" 2> /dev/null || status=$?
  # 137: killed (128 + SIGKILL); 0: it finished before the kill.
  if [ "$status" -ne 137 ] && [ "$status" -ne 0 ]; then
    fail "run $i (killed after ${delay} ms) exited with $status: $(tail -n 1 "$WORK/killed.$i.err")"
  fi
done
(run_once) > /dev/null 2> "$WORK/killed.last.err" ||
  fail "the final resumed run failed: $(tail -n 1 "$WORK/killed.last.err")"

for f in "$WORK"/full.params/*; do
  name=$(basename "$f")
  cmp -s "$f" "$WORK/killed.params/$name" || fail "parameter $name differs from the uninterrupted run"
done
[ "$(ls "$WORK/full.params" | wc -l)" -eq "$(ls "$WORK/killed.params" | wc -l)" ] ||
  fail "the runs saved different parameter files"
# The logs, but for the timing fields (wall_time, samples_per_s).
sed -E 's/, "(wall_time|samples_per_s)": [0-9.e+-]+//g' "$WORK/full.jsonl" > "$WORK/full.untimed"
sed -E 's/, "(wall_time|samples_per_s)": [0-9.e+-]+//g' "$WORK/killed.jsonl" > "$WORK/killed.untimed"
cmp -s "$WORK/full.untimed" "$WORK/killed.untimed" ||
  fail "the log differs from the uninterrupted run's ($(diff "$WORK/full.untimed" "$WORK/killed.untimed" | head -n 3 | tr '\n' ' '))"

echo "PASS: $KILLS kills ($fresh in fresh runs, $resumed in resumed runs, $after after a checkpoint existed), $STEPS steps: parameters and log identical to the uninterrupted run"
[ "$KEEP" -eq 1 ] || rm -rf "$WORK"
exit 0
