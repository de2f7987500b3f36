"""Broken copies of a training folder (x.npy, label.npy) for bad-input.test:
shape/ (x has one feature too few), length/ (one label too few), nolabel/,
nan/ (a NaN in sample 17), badeval/ (an out-of-range label in sample 3)."""
import os
import sys

import numpy as np

src, out = sys.argv[1], sys.argv[2]
x = np.load(os.path.join(src, "x.npy"))
y = np.load(os.path.join(src, "label.npy"))


def write(name, xs, ys):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "x.npy"), xs)
    if ys is not None:
        np.save(os.path.join(d, "label.npy"), ys)


write("shape", x[:, :63].copy(), y)
write("length", x, y[:-1].copy())
write("nolabel", x, None)
nan = x.copy()
nan[17, 5] = np.nan
write("nan", nan, y)
bad = y[:100].copy()
bad[3] = 10
write("badeval", x[:100].copy(), bad)
