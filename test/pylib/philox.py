"""trainc's dropout masks in numpy, written from the spec of tc.dropout.

Element i of a dropout with stream s in the step with key [seed, step] is kept
unless word i % 4 of Philox4x32-10(counter = [i // 4, s, step low, step high],
key = [seed low, seed high]), as (word >> 8) * 2^-24, is below the ratio; a
kept element is scaled by float32(1 / (1 - ratio)). The stream of an ONNX
Dropout node is its position in the graph's node list.

Checked against the Random123 known-answer vectors on import.
"""

import numpy as np

_MASK = np.uint64(0xFFFFFFFF)


def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 over arrays (or scalars) of 32-bit words; returns 4 arrays."""
    c = [np.asarray(v, dtype=np.uint64) & _MASK for v in (c0, c1, c2, c3)]
    k0 = np.uint64(k0) & _MASK
    k1 = np.uint64(k1) & _MASK
    for r in range(10):
        if r:
            k0 = (k0 + np.uint64(0x9E3779B9)) & _MASK
            k1 = (k1 + np.uint64(0xBB67AE85)) & _MASK
        p0 = np.uint64(0xD2511F53) * c[0]
        p1 = np.uint64(0xCD9E8D57) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & _MASK,
             (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & _MASK]
    return c


def dropout_scale_mask(shape, ratio, seed, step, stream):
    """float32 array of `shape`: 0 where dropped, float32(1/(1-ratio)) where kept."""
    n = int(np.prod(shape))
    i = np.arange(n, dtype=np.uint64)
    seed, step = int(seed) & (2**64 - 1), int(step) & (2**64 - 1)
    words = philox4x32_10(i >> np.uint64(2), stream, step & 0xFFFFFFFF, step >> 32,
                          seed & 0xFFFFFFFF, seed >> 32)
    word = np.choose((i & np.uint64(3)).astype(np.int64), words)
    u = (word >> np.uint64(8)).astype(np.float32) * np.float32(2.0 ** -24)
    keep = u >= np.float32(ratio)
    scale = np.float32(1.0 / (1.0 - float(np.float32(ratio))))
    return np.where(keep, scale, np.float32(0)).astype(np.float32).reshape(shape)


AUGMENT_STREAM = 0xA06D0001


def augment_draw(seed, epoch, sample, padding):
    """The trainer's --augment draw of `sample` in `epoch` (SampleTransform.h's
    augmentDraw): Philox4x32-10 of counter [sample low, sample high, epoch
    low, 0xA06D0001] under the seed; the crop's top and left are words 0 and
    1 mod (2 padding + 1), the flip is word 2's top bit."""
    seed, sample = int(seed) & (2**64 - 1), int(sample)
    words = [int(w) for w in philox4x32_10(sample & 0xFFFFFFFF, sample >> 32,
                                           int(epoch) & 0xFFFFFFFF, AUGMENT_STREAM,
                                           seed & 0xFFFFFFFF, seed >> 32)]
    span = 2 * padding + 1
    return words[0] % span, words[1] % span, (words[2] >> 31) == 1


def _self_check():
    kat = [((0, 0, 0, 0, 0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
           ((0xffffffff,) * 6, (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
           ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0),
            (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))]
    for args, want in kat:
        got = tuple(int(w) for w in philox4x32_10(*args))
        if got != want:
            raise AssertionError("Philox4x32-10 known answer: got %s, want %s"
                                 % ([hex(g) for g in got], [hex(w) for w in want]))


_self_check()
