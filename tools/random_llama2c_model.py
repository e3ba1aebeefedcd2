#!/usr/bin/env python3
"""Writes a llama2.c checkpoint (.bin, f32, shared classifier) of random weights for benchmarks.

The 110M shape by default (dim 768, hidden 2048, 12 layers, 12 heads, vocab 32000, seq_len
1024): every matrix is a tiled block of 65536 uniform values in [-0.05, 0.05) (seed 1), every
norm 1.0, the RoPE tables llama2.c leaves in the file zero. Speed figures only: the text is noise.

    tools/random_llama2c_model.py OUT [--dim 768 --hidden 2048 --layers 12 --heads 12 --vocab 32000]
"""
import argparse
import array
import random
import struct

parser = argparse.ArgumentParser()
parser.add_argument("out")
for name, default in (("dim", 768), ("hidden", 2048), ("layers", 12), ("heads", 12), ("vocab", 32000),
                      ("seq-len", 1024)):
    parser.add_argument("--" + name, type=int, default=default)
args = parser.parse_args()
dim, hidden, layers, heads, vocab = args.dim, args.hidden, args.layers, args.heads, args.vocab
random.seed(1)
block = array.array("f", [random.uniform(-0.05, 0.05) for _ in range(1 << 16)])
with open(args.out, "wb") as out:
    out.write(struct.pack("7i", dim, hidden, layers, heads, heads, vocab, args.seq_len))

    def tiled(n):
        whole, rest = divmod(n, len(block))
        for _ in range(whole):
            block.tofile(out)
        block[:rest].tofile(out)

    def filled(n, value):
        array.array("f", [value] * n).tofile(out)

    tiled(vocab * dim)  # token embedding (and classifier)
    filled(layers * dim, 1.0)  # attention norms
    for _ in range(4):  # wq, wk, wv, wo
        tiled(layers * dim * dim)
    filled(layers * dim, 1.0)  # feed-forward norms
    for _ in range(3):  # w1, w2, w3
        tiled(layers * hidden * dim)
    filled(dim, 1.0)  # final norm
    filled(args.seq_len * (dim // heads), 0.0)  # RoPE tables (real and imaginary halves)
