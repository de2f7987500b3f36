"""fp16 loss scaling checks shared by the CPU suite
(test/train/check_precision.py) and the GPU check (test/gpu/compare_scaler.py):
reading a trainer's checkpoint, the overflowing data, and the criteria of a
skipped step."""

import json
import os

import numpy as np

# Batch 3 of the digits training set (no shuffle, batch 32) is scaled by
# this: finite in f32, inf once cast to fp16.
OVERFLOW_ROWS = slice(64, 96)
OVERFLOW_FACTOR = np.float32(1e30)


def make_overflow_data(train_dir, out_dir):
    """The digits training set with batch 3 scaled by 1e30, in out_dir."""
    os.makedirs(out_dir, exist_ok=True)
    x = np.load(os.path.join(train_dir, "x.npy"))
    x[OVERFLOW_ROWS] *= OVERFLOW_FACTOR
    np.save(os.path.join(out_dir, "x.npy"), x)
    np.save(os.path.join(out_dir, "label.npy"), np.load(os.path.join(train_dir, "label.npy")))


def read_checkpoint(folder):
    """The tensors of DIR/checkpoint.safetensors (name -> raw bytes) and
    the manifest DIR/checkpoint.json."""
    with open(os.path.join(folder, "checkpoint.safetensors"), "rb") as f:
        blob = f.read()
    size = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + size])
    base = 8 + size
    tensors = {k: blob[base + v["data_offsets"][0]:base + v["data_offsets"][1]]
               for k, v in header.items() if k != "__metadata__"}
    with open(os.path.join(folder, "checkpoint.json")) as f:
        return tensors, json.load(f)


def f32_of(raw):
    return float(np.frombuffer(raw, np.float32)[0])


def skipped_step_checks(name, log3, after2, after3, manifest3, adam, dynamic=True):
    """(ok, what) pairs for a run of 3 steps whose step 3 overflows, against
    the run of its first 2 steps (checkpoint tensors after each). A fixed
    scale (dynamic=False) only counts the skipped step."""
    compared = [k for k in after3 if not k.startswith("state/loss_scale")]
    changed = [k for k in compared if after3[k] != after2.get(k)]
    checks = [(
        len(log3) == 3 and log3[2].get("skipped") is True and
        not log3[0].get("skipped") and not log3[1].get("skipped") and not changed,
        "%s: the overflowing step 3 (loss %s) is skipped: all %d parameter and state tensors "
        "bit for bit as after step 2 (changed: %s)"
        % (name, log3[2]["loss"] if len(log3) == 3 else "?", len(compared),
           ", ".join(changed) or "none"))]
    skipped = f32_of(after3["state/loss_scale.skipped_steps"])
    if not dynamic:
        checks.append((
            skipped == 1.0 and "state/loss_scale" not in after3 and
            manifest3.get("loss_scale.skipped_steps") == "1",
            "%s: a fixed scale counts the skipped step (%g; manifest %s) and keeps no scale "
            "state" % (name, skipped, manifest3.get("loss_scale.skipped_steps"))))
        return checks
    scale = f32_of(after3["state/loss_scale"])
    count2 = f32_of(after2["state/loss_scale.growth_tracker"])
    count3 = f32_of(after3["state/loss_scale.growth_tracker"])
    checks.append((
        scale == 32768.0 and skipped == 1.0 and count3 == 0.0 and count2 == 2.0 and
        manifest3.get("loss_scale") == "32768",
        "%s: the scale halves 65536 -> %g, 1 step skipped (%g), the good-step count resets "
        "(%g after 2 good steps, %g after the skip); manifest loss_scale %s"
        % (name, scale, skipped, count2, count3, manifest3.get("loss_scale"))))
    if adam:
        t = f32_of(after3["state/adam.step"])
        checks.append((t == 2.0, "%s: Adam's step count stays at %g after the skipped step 3 "
                                 "(a skipped step is no optimizer.step())" % (name, t)))
    return checks
