"""Runs the trainer given as the arguments and, once it has finished an
epoch, sends it SIGINT twice 50 ms apart: one request delivered twice, as
timeout(1) and `kill -INT -- -PGID` deliver it (to the process, then to its
group). Prints the trainer's standard error and its exit status."""
import os
import signal
import subprocess
import sys
import time

trainer = subprocess.Popen(sys.argv[1:], stderr=subprocess.PIPE, text=True)
lines = []
for line in trainer.stderr:
    lines.append(line)
    if line.startswith("epoch "):
        break
os.kill(trainer.pid, signal.SIGINT)
time.sleep(0.05)
os.kill(trainer.pid, signal.SIGINT)
lines.append(trainer.stderr.read())
print("".join(lines), end="")
print("exit status %d" % trainer.wait())
