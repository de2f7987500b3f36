#!/usr/bin/python3
"""Writes the digits data that scikit-learn ships as trainer input:
OUT/train and OUT/val, each with x.npy (float32 [N, 64], pixels / 16) and
label.npy (int64 [N]); a fixed 80/20 split (seed 0).
Usage: /usr/bin/python3 examples/prepare_digits.py OUT
"""
import os
import sys

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

out = sys.argv[1]
digits = load_digits()
x = (digits.data / 16.0).astype(np.float32)
y = digits.target.astype(np.int64)
x_train, x_val, y_train, y_val = train_test_split(x, y, test_size=0.2, random_state=0,
                                                  stratify=y)
for name, xs, ys in (("train", x_train, y_train), ("val", x_val, y_val)):
    os.makedirs(os.path.join(out, name), exist_ok=True)
    np.save(os.path.join(out, name, "x.npy"), xs)
    np.save(os.path.join(out, name, "label.npy"), ys)
    print("wrote %s: %d samples" % (os.path.join(out, name), len(ys)))
