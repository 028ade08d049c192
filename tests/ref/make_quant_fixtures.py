#!/usr/bin/python3
"""Independent reference for the GGUF block types: random blocks and their values, written with
numpy from ggml's block layouts (ggml-common.h) and dequantize_row_* semantics, in a vectorised
form unrelated to src/kernels/quant.c's loops. Writes tests/fixtures/quant_blocks.bin:
  "M2QB" u32 version=1 u32 n_types, then per type:
  u32 ggml_type u32 n_values u32 n_bytes, n_bytes raw blocks, n_values little-endian f32.
Run: /usr/bin/python3 tests/ref/make_quant_fixtures.py   (numpy only; deterministic seed)"""
import os
import struct
import numpy as np

rng = np.random.default_rng(20261201)
F32 = np.float32

def half(n, lo=1e-3, hi=0.05):
    """n random f16 scales with random signs, returned as (uint16 bits, float32 values)."""
    v = (rng.uniform(lo, hi, n) * rng.choice([-1, 1], n)).astype(np.float16)
    return v.view(np.uint16), v.astype(F32)

def u8(*shape):
    return rng.integers(0, 256, shape, dtype=np.uint8)

def h16(bits):  # (nb,) uint16 -> (nb, 2) bytes
    return bits.astype('<u2').view(np.uint8).reshape(-1, 2)

def nibbles(qs):  # (nb, 16) -> (nb, 32): low nibbles are values 0..15, high ones 16..31
    return np.concatenate([qs & 15, qs >> 4], axis=1).astype(F32)

def bits32(qh):  # (nb, 4) bytes -> (nb, 32) bits, bit j of the little-endian u32
    return np.unpackbits(qh, axis=1, bitorder='little').astype(F32)

def q4_0(nb):
    db, d = half(nb); qs = u8(nb, 16)
    return np.concatenate([h16(db), qs], 1), (nibbles(qs) - F32(8)) * d[:, None]

def q4_1(nb):
    db, d = half(nb); mb, m = half(nb); qs = u8(nb, 16)
    return np.concatenate([h16(db), h16(mb), qs], 1), nibbles(qs) * d[:, None] + m[:, None]

def q5_0(nb):
    db, d = half(nb); qh = u8(nb, 4); qs = u8(nb, 16)
    q = nibbles(qs) + F32(16) * bits32(qh)
    return np.concatenate([h16(db), qh, qs], 1), (q - F32(16)) * d[:, None]

def q5_1(nb):
    db, d = half(nb); mb, m = half(nb); qh = u8(nb, 4); qs = u8(nb, 16)
    q = nibbles(qs) + F32(16) * bits32(qh)
    return np.concatenate([h16(db), h16(mb), qh, qs], 1), q * d[:, None] + m[:, None]

def q8_0(nb):
    db, d = half(nb); qs = u8(nb, 32)
    return np.concatenate([h16(db), qs], 1), qs.view(np.int8).astype(F32) * d[:, None]

IQ4NL = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], F32)

def iq4_nl(nb):
    db, d = half(nb); qs = u8(nb, 16)
    return np.concatenate([h16(db), qs], 1), d[:, None] * IQ4NL[nibbles(qs).astype(int)]

def crumbs(qs):
    """(nb, 64) bytes of 2-bit values -> (nb, 256): half h = bytes 32h..32h+31, within a half the
    shift 0, 2, 4, 6 selects values 0-31, 32-63, 64-95, 96-127."""
    nb = qs.shape[0]
    q = qs.reshape(nb, 2, 1, 32) >> (2 * np.arange(4, dtype=np.uint8)).reshape(1, 1, 4, 1)
    return (q & 3).reshape(nb, 256).astype(F32)

def q2_k(nb):
    sc = u8(nb, 16); qs = u8(nb, 64); db, d = half(nb); mb, m = half(nb)
    scale = np.repeat((sc & 15).astype(F32), 16, axis=1)   # per group of 16
    mn = np.repeat((sc >> 4).astype(F32), 16, axis=1)
    y = (d[:, None] * scale) * crumbs(qs) - m[:, None] * mn
    return np.concatenate([sc, qs, h16(db), h16(mb)], 1), y

def q3_k(nb):
    hm = u8(nb, 32); qs = u8(nb, 64); sc = u8(nb, 12); db, d = half(nb)
    g = np.arange(16)
    low = np.where(g < 8, sc[:, np.minimum(g, 7)] & 15, sc[:, np.maximum(g - 8, 0)] >> 4)
    high = (sc[:, 8 + g % 4] >> (2 * (g // 4)).astype(np.uint8)) & 3
    scale = np.repeat((low | (high << 4)).astype(F32) - F32(32), 16, axis=1)
    hbit = np.unpackbits(hm, axis=1, bitorder='little').reshape(nb, 32, 8)   # [byte l, bit b]
    hb = hbit.transpose(0, 2, 1).reshape(nb, 256).astype(F32)               # value 32 b + l
    q = crumbs(qs) - F32(4) * (F32(1) - hb)
    return np.concatenate([hm, qs, sc, h16(db)], 1), (d[:, None] * scale) * q

def scale_min_k4(s):
    """(nb, 12) -> scales (nb, 8), mins (nb, 8) of Q4_K / Q5_K."""
    sc = np.empty((s.shape[0], 8), np.int64); mn = np.empty_like(sc)
    sc[:, :4] = s[:, 0:4] & 63
    mn[:, :4] = s[:, 4:8] & 63
    sc[:, 4:] = (s[:, 8:12] & 15) | ((s[:, 0:4] >> 6) << 4)
    mn[:, 4:] = (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)
    return sc.astype(F32), mn.astype(F32)

def quads(qs):  # (nb, 128) -> (nb, 256): chunk c of 32 bytes gives values 64c..64c+31 (low), +32 (high)
    nb = qs.shape[0]
    q = qs.reshape(nb, 4, 1, 32)
    return np.concatenate([q & 15, q >> 4], axis=2).reshape(nb, 256).astype(F32)

def q4_k(nb):
    db, d = half(nb); mb, m = half(nb); s = u8(nb, 12); qs = u8(nb, 128)
    sc, mn = scale_min_k4(s)
    y = np.repeat(d[:, None] * sc, 32, 1) * quads(qs) - np.repeat(m[:, None] * mn, 32, 1)
    return np.concatenate([h16(db), h16(mb), s, qs], 1), y

def q5_k(nb):
    db, d = half(nb); mb, m = half(nb); s = u8(nb, 12); qh = u8(nb, 32); qs = u8(nb, 128)
    sc, mn = scale_min_k4(s)
    hbit = np.unpackbits(qh, axis=1, bitorder='little').reshape(nb, 32, 8).transpose(0, 2, 1).reshape(nb, 256)
    q = quads(qs) + F32(16) * hbit.astype(F32)
    y = np.repeat(d[:, None] * sc, 32, 1) * q - np.repeat(m[:, None] * mn, 32, 1)
    return np.concatenate([h16(db), h16(mb), s, qh, qs], 1), y

def q6_k(nb):
    ql = u8(nb, 128); qh = u8(nb, 64); sc = u8(nb, 16); db, d = half(nb)
    out = np.empty((nb, 256), F32)
    for h in range(2):
        lo = ql[:, 64 * h:64 * h + 64].reshape(nb, 2, 32)           # [k % 2, l]
        lo = np.stack([lo[:, 0] & 15, lo[:, 1] & 15, lo[:, 0] >> 4, lo[:, 1] >> 4], 1)   # [k, l]
        hi = qh[:, 32 * h:32 * h + 32][:, None, :] >> (2 * np.arange(4, dtype=np.uint8))[None, :, None]
        q = (lo | ((hi & 3) << 4)).astype(F32) - F32(32)
        out[:, 128 * h:128 * h + 128] = q.reshape(nb, 128)
    scale = np.repeat(sc.view(np.int8).astype(F32), 16, axis=1)
    return np.concatenate([ql, qh, sc, h16(db)], 1), (d[:, None] * scale) * out

TYPES = [(2, q4_0, 8), (3, q4_1, 8), (6, q5_0, 8), (7, q5_1, 8), (8, q8_0, 8), (10, q2_k, 3),
         (11, q3_k, 3), (12, q4_k, 3), (13, q5_k, 3), (14, q6_k, 3), (20, iq4_nl, 8)]

def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'fixtures', 'quant_blocks.bin')
    with open(out, 'wb') as f:
        f.write(b'M2QB' + struct.pack('<II', 1, len(TYPES)))
        for gid, fn, nb in TYPES:
            raw, y = fn(nb)
            raw = np.ascontiguousarray(raw, np.uint8).tobytes()
            y = np.ascontiguousarray(y, '<f4').reshape(-1)
            f.write(struct.pack('<III', gid, y.size, len(raw)) + raw + y.tobytes())
            print(f'type {gid:2d}: {nb} blocks, {len(raw)} bytes, {y.size} values, max |x| {np.abs(y).max():.3g}')

if __name__ == '__main__':
    main()
