"""Compares predict's y with numpy's x * s + b (the model in affine.onnxtxt)."""
import sys

import numpy as np

x, y = np.load(sys.argv[1]), np.load(sys.argv[2])
want = x * np.array([2, 3, 4], np.float32) + np.array([1, 0, -1], np.float32)
assert y.shape == want.shape, (y.shape, want.shape)
print("max abs error %g with %d samples" % (np.abs(y - want).max(), y.shape[0]))
