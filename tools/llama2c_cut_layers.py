#!/usr/bin/env python3
"""Writes a llama2.c checkpoint's first N layers as a checkpoint of its own.

The cut keeps the embedding, the final norm, the RoPE tables and the
classifier, and each per-layer array's first N layers: a "layer-skip" draft
model for speculative decoding (infer/serve --draft) with the source's
vocabulary, which agrees with it as often as its last layers change little.

Usage: llama2c_cut_layers.py SOURCE.bin N OUT.bin
"""
import struct
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.strip().splitlines()[-1])
    source, keep, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    data = open(source, "rb").read()
    dim, hidden, layers, heads, kv_heads, vocab, seq_len = struct.unpack("<7i", data[:28])
    if not 1 <= keep <= layers:
        sys.exit(f"N must be in [1, {layers}] (the source's layers), not {keep}")
    kv_dim = dim * kv_heads // heads
    head_size = dim // heads
    # Per-layer arrays in file order, in floats per layer.
    per_layer = [dim, dim * dim, dim * kv_dim, dim * kv_dim, dim * dim, dim, hidden * dim, dim * hidden,
                 hidden * dim]
    offset = 28
    parts = [struct.pack("<7i", dim, hidden, keep, heads, kv_heads, vocab, seq_len)]

    def take(floats):
        nonlocal offset
        chunk = data[offset:offset + 4 * floats]
        offset += 4 * floats
        return chunk

    parts.append(take(abs(vocab) * dim))  # the embedding
    for floats in per_layer:
        parts.append(take(floats * layers)[:4 * floats * keep])
    parts.append(take(dim))  # final norm
    parts.append(take(seq_len * head_size))  # freq_cis_real and freq_cis_imag
    if vocab < 0:
        parts.append(take(-vocab * dim))  # the classifier
    if offset != len(data):
        sys.exit(f"{source}: {len(data)} bytes, but its header lays out {offset}")
    with open(out, "wb") as f:
        f.write(b"".join(parts))


if __name__ == "__main__":
    main()
