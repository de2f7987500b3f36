"""Writes the .npy folders predict.test reads: good data (10 samples, small
integers so the result is exact), a wrong dtype, a wrong shape."""
import os
import sys

import numpy as np

root = sys.argv[1]
x = np.arange(30, dtype=np.float32).reshape(10, 3) - 15
np.save(os.path.join(root, "data", "x.npy"), x)
np.save(os.path.join(root, "bad-dtype", "x.npy"), x.astype(np.float64))
np.save(os.path.join(root, "bad-shape", "x.npy"), np.zeros((10, 4), np.float32))
