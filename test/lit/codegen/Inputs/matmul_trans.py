"""Data for and check of matmul-trans.onnxtxt: y = (x w1^T)^T(0, 2, 1) w2 with
the mse loss, against numpy in float64.

  matmul_trans.py make DIR          writes DIR/x.npy, label.npy, sample_weights.npy
  matmul_trans.py check DIR OUT     compares OUT/loss.npy and OUT/grad.w*.npy
"""
import os
import sys

import numpy as np

W1 = np.array([0.1, -0.2, 0.3, -0.4, 0.5, -0.6, 0.7, -0.8, 0.9, -1.0, 1.1, -1.2, 0.15, 0.25,
               -0.35, 0.45, -0.55, 0.65, -0.75, 0.85, -0.95, 0.05, 0.2, -0.3, 0.4, 0.6,
               -0.7, 0.8, -0.9, 1.0], np.float32).reshape(5, 6)
W2 = np.array([0.5, -0.25, 0.75, -1.0, 0.3, 0.6, -0.9, 0.2, -0.4, 0.8, 0.1, -0.7],
              np.float32).reshape(3, 4)
RTOL, ATOL = 1e-5, 1e-6


def make(d):
    rng = np.random.default_rng(7)
    np.save(os.path.join(d, "x.npy"), rng.standard_normal((4, 3, 6)).astype(np.float32))
    np.save(os.path.join(d, "label.npy"), rng.standard_normal((4, 5, 4)).astype(np.float32))
    np.save(os.path.join(d, "sample_weights.npy"), np.ones(4, np.float32))
    np.save(os.path.join(d, "sample_mask.npy"), np.ones(4, np.float32))


def check(d, out):
    x = np.load(os.path.join(d, "x.npy")).astype(np.float64)
    label = np.load(os.path.join(d, "label.npy")).astype(np.float64)
    w1, w2 = W1.astype(np.float64), W2.astype(np.float64)
    h = x @ w1.T                      # [4, 3, 5]
    t = h.transpose(0, 2, 1)          # [4, 5, 3]
    y = t @ w2                        # [4, 5, 4]
    loss = np.mean((y - label) ** 2)
    dy = 2.0 * (y - label) / y.size
    dw2 = np.einsum("nij,nik->jk", t, dy)         # sum_n t[n]^T dy[n]
    dt = dy @ w2.T                                # [4, 5, 3]
    dh = dt.transpose(0, 2, 1)                    # [4, 3, 5]
    dw1 = np.einsum("nij,nik->jk", dh, x)         # sum_n dh[n]^T x[n]
    worst = 0.0
    for name, want in (("loss", loss), ("grad.w1", dw1), ("grad.w2", dw2)):
        got = np.load(os.path.join(out, name + ".npy")).astype(np.float64)
        assert got.shape == np.shape(want), (name, got.shape, np.shape(want))
        if not np.allclose(got, want, rtol=RTOL, atol=ATOL):
            print("MISMATCH %s: max abs error %g" % (name, np.abs(got - want).max()))
            sys.exit(1)
        worst = max(worst, float(np.abs(got - want).max()))
    print("loss and gradients match numpy (float64) within rtol %g, atol %g" % (RTOL, ATOL))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        check(sys.argv[2], sys.argv[3])
