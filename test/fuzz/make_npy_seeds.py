#!/usr/bin/python3
"""Writes the .npy fuzzer's seed corpus: small arrays of every element type
the runtime reads, the shapes data sets and parameters have (scalar, empty,
one row, 2-D, 4-D), a format 2.0 header, and files it must refuse (Fortran
order, big-endian, object dtype, a truncated file).

Usage: make_npy_seeds.py DIR
"""

import io
import os
import sys

import numpy as np


def npy_bytes(array, version=None):
    out = io.BytesIO()
    if version is None:
        np.save(out, array)
    else:
        np.lib.format.write_array(out, array, version=version)
    return out.getvalue()


def main(argv):
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.RandomState(0)
    seeds = {
        "f32-2d": rng.randn(4, 3).astype(np.float32),
        "f32-4d": rng.randn(2, 1, 3, 3).astype(np.float32),
        "f32-scalar": np.array(1.5, np.float32),
        "f32-empty": np.zeros((0, 3), np.float32),
        "f64-1d": rng.randn(5),
        "f16-1d": rng.randn(6).astype(np.float16),
        "i64-labels": rng.randint(0, 10, 7).astype(np.int64),
        "i32-2d": rng.randint(0, 64, (3, 4)).astype(np.int32),
        "bool-1d": np.array([True, False, True]),
        "f32-nan": np.array([[np.nan, np.inf], [-np.inf, 0.0]], np.float32),
    }
    files = {name + ".npy": npy_bytes(a) for name, a in seeds.items()}
    files["f32-v2.npy"] = npy_bytes(rng.randn(2, 2).astype(np.float32), version=(2, 0))
    files["bad-fortran.npy"] = npy_bytes(np.asfortranarray(rng.randn(3, 2).astype(np.float32)))
    files["bad-bigendian.npy"] = npy_bytes(rng.randn(3).astype(">f4"))
    files["bad-truncated.npy"] = npy_bytes(rng.randn(8, 8).astype(np.float32))[:-17]
    for name, data in files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print("wrote %d seeds to %s" % (len(files), out))


if __name__ == "__main__":
    main(sys.argv)
