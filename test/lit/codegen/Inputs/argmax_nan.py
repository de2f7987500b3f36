"""Runs the ArgMax/ArgMin program of argmax-gather-elements-kernels.test on
data with ties and NaN and compares every result with torch.

Usage: argmax_nan.py PROG WORKDIR
torch.argmax/argmin count NaN as the extremum and return the first NaN;
select_last_index (which torch lacks) is checked as torch on the flipped axis.
"""

import os
import subprocess
import sys

import numpy as np
import torch

prog, work = sys.argv[1], sys.argv[2]
data, out = os.path.join(work, "in"), os.path.join(work, "out")
os.makedirs(data, exist_ok=True)
x = np.array([[[1, 3, 3, 0, 2], [5, np.nan, 1, np.nan, 9], [-1, -1, -1, -1, -1]],
              [[np.nan, 0, 0, 4, 4], [2, 2, 7, 7, 1], [0, np.inf, -np.inf, 3, 3]]],
             dtype=np.float32)
x[0, 2, 4] = np.nan  # a NaN last in a line of ties, and in column 4 for argmin
ids = np.array([[49406, 320, 1929, 49407, 0, 0, 0], [49406, 7, 49407, 49407, 1, 2, 3]],
               dtype=np.int64)
np.save(os.path.join(data, "X.npy"), x)
np.save(os.path.join(data, "ids.npy"), ids)
subprocess.run([prog, "--run", "--data", data, "--out", out], check=True)

t = torch.from_numpy(x)
want = {
    "amax": torch.argmax(t, dim=-1).numpy(),
    # Last index of the minimum along axis 1: torch on the flipped axis.
    "aminl": (2 - torch.argmin(torch.flip(t, [1]), dim=1, keepdim=True)).numpy(),
    "eos": torch.argmax(torch.from_numpy(ids).int(), dim=-1).numpy(),
}
for name, w in want.items():
    got = np.load(os.path.join(out, name + ".npy"))
    if got.dtype != np.int64 or not np.array_equal(got, w):
        sys.exit("%s: got %s (%s), torch gives %s" % (name, got.tolist(), got.dtype, w.tolist()))
nan_lines = int(np.isnan(x).any(axis=-1).sum())
print("argmax and argmin match torch on %d and %d lines (NaN in %d lines)"
      % (want["amax"].size, want["aminl"].size, nan_lines))
