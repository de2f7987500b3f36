"""A training run's final weights against a float64 reference, next to
PyTorch float32's own error (numpy only: the GPU machine runs it too).

Over all parameters: the weights norm-wise, ||ours - f64|| / ||f64||, at
most 1e-6 or 4x PyTorch float32's where that is larger; and each tensor's
change, ||(ours - w0) - (f64 - w0)|| / ||f64 - w0||, at most 4x PyTorch
float32's own (at least 1e-4), or `change_tol` when given (then the weights
are not compared). A tensor whose float64 change is under 1/100 of
float32's (a gradient that is 0 in exact arithmetic, as the attention keys'
bias: its float32 change is rounding noise that normalizing optimizers
scale up) must change no more than 4x PyTorch float32's.
"""
import math

import numpy as np

WEIGHT_TOL, CHANGE_FACTOR, CHANGE_FLOOR = 1e-6, 4.0, 1e-4


def compare_weights(initial, ours, ref64, ref32, change_tol=None):
    """(ok, text) for dicts name -> array (the same names in each)."""
    names = sorted(ref64)
    ours = {k: ours[k].astype(np.float64) for k in names}
    diff = math.sqrt(sum(float(np.sum((ours[k] - ref64[k]) ** 2)) for k in names))
    size = math.sqrt(sum(float(np.sum(ref64[k].astype(np.float64) ** 2)) for k in names))
    diff32 = math.sqrt(sum(float(np.sum((ref32[k] - ref64[k]) ** 2)) for k in names))
    worst, worst_name, bad, noise = -1.0, "", [], []
    for k in names:
        w0 = initial[k].astype(np.float64)
        scale = max(float(np.linalg.norm(ref64[k] - w0)), 1e-30)
        change32 = float(np.linalg.norm(ref32[k] - w0))
        if change32 > 100 * scale:
            noise.append(k)
            if float(np.linalg.norm(ours[k] - w0)) > 4 * change32 + 1e-7:
                bad.append("%s changes %.3g, PyTorch float32 %.3g (float64 %.3g)"
                           % (k, float(np.linalg.norm(ours[k] - w0)), change32, scale))
            continue
        e = float(np.linalg.norm(ours[k] - ref64[k])) / scale
        e32 = float(np.linalg.norm(ref32[k] - ref64[k])) / scale
        tol = change_tol if change_tol is not None else max(CHANGE_FACTOR * e32, CHANGE_FLOOR)
        if e > tol:
            bad.append("%s %.3g > %.3g" % (k, e, tol))
        if e / tol > worst:
            worst, worst_name = e / tol, "%s: %.3g, PyTorch float32 %.3g" % (k, e, e32)
    weight_tol = max(WEIGHT_TOL, CHANGE_FACTOR * diff32 / size)
    weight_ok = change_tol is not None or diff / size <= weight_tol
    text = ("weights norm-wise %.3g (PyTorch float32 %.3g; tolerance %.3g), nearest to its "
            "tolerance the change of %s%s%s"
            % (diff / size, diff32 / size, weight_tol, worst_name,
               "; rounding noise only: " + ", ".join(noise) if noise else "",
               ": " + "; ".join(bad[:4]) if bad else ""))
    return weight_ok and not bad, text
