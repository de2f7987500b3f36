"""Truncates a training file while the trainer runs and reports how the
trainer ended: python truncate_while_training.py TRAINER DATA WORK WORKERS.

Timing-independent: the trainer is given far more steps than it can run
(--steps 10^9), the file is cut only once the first --log line shows that
training has started, and every later epoch reads every sample, so the
trainer must meet the missing rows, whatever the speed of the machine.
Prints "exit CODE" and the trainer's last stderr line."""
import os
import subprocess
import sys
import time

trainer, data, work, workers = sys.argv[1:5]
log = os.path.join(work, "log-%s.jsonl" % workers)
err_path = os.path.join(work, "err-%s.txt" % workers)
for path in (log, err_path):
    if os.path.exists(path):
        os.remove(path)
with open(err_path, "w") as err:
    proc = subprocess.Popen([trainer, "--data", data, "--steps", "1000000000", "--log", log,
                             "--workers", workers], stdout=err, stderr=err)
    deadline = time.monotonic() + 120
    while not (os.path.exists(log) and os.path.getsize(log) > 0):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            sys.exit("the trainer ended or logged nothing before the file was cut")
        time.sleep(0.01)
    # Keep the header and the first half of the samples.
    x = os.path.join(data, "x.npy")
    os.truncate(x, 128 + (os.path.getsize(x) - 128) // 2)
    try:
        code = proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        sys.exit("the trainer did not stop after the file was cut")
lines = open(err_path).read().strip().splitlines()
print("exit", code)
print(lines[-1] if lines else "(no message)")
