"""Reads a --tensorboard folder with TensorBoard's EventAccumulator and
compares its scalars with the run's --log (float32 equality)."""
import json
import os
import sys

import numpy as np
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

folder, log = sys.argv[1], sys.argv[2]
print("files", len(os.listdir(folder)))
events = EventAccumulator(folder, size_guidance={"scalars": 0})
events.Reload()
records = [json.loads(line) for line in open(log)]
steps = [r for r in records if "loss" in r]
evals = [r for r in records if "eval_accuracy" in r]
for tag, key, rows in (("train/loss", "loss", steps), ("train/lr", "lr", steps),
                       ("train/momentum", "momentum", steps),
                       ("train/grad_norm", "grad_norm", steps),
                       ("eval/accuracy", "eval_accuracy", evals)):
    got = {e.step: e.value for e in events.Scalars(tag)}
    want = {r["step"]: np.float32(r[key]) for r in rows}
    same = got.keys() == want.keys() and all(np.float32(got[s]) == want[s] for s in want)
    print(tag, len(got), "evaluations" if tag.startswith("eval") else "steps",
          "equal to the log" if same else "DIFFERENT %r %r" % (got, want))
