#!/usr/bin/env python3
"""Compares two greedy id sequences of the same prompt, ours and a reference
engine's: equal, or first different at a step where our own logits
(infer --dump-logits: one f32 vector per step) rank the reference's token
within FRACTION of that step's logit range below ours — a near-tie at the
precision both engines compute with (8-bit activations), not an error.
Prints what it found; exits 1 when the sequences differ otherwise.

  near_tie.py OURS_IDS_FILE REFERENCE_IDS_LINE LOGITS_FILE FRACTION
"""
import struct
import sys


def main():
    ours_file, reference_line, logits_file, fraction = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    ours = open(ours_file).read().split()
    reference = reference_line.split()
    if len(ours) != len(reference):
        sys.exit(f"{len(ours)} ids, the reference {len(reference)}")
    data = open(logits_file, "rb").read()
    vocab = len(data) // 4 // len(ours)
    for step, (a, b) in enumerate(zip(ours, reference)):
        if a == b:
            continue
        logits = struct.unpack_from(f"<{vocab}f", data, step * vocab * 4)
        gap = logits[int(a)] - logits[int(b)]
        spread = max(logits) - min(logits)
        verdict = "a near-tie" if gap <= fraction * spread else "NOT a near-tie"
        print(f"first difference at step {step}: ours {a}, the reference's {b}, {gap:.6f} apart in our "
              f"logits (range {spread:.3f}, tolerance {fraction * spread:.6f}): {verdict}")
        sys.exit(0 if gap <= fraction * spread else 1)
    print(f"all {len(ours)} ids equal")


if __name__ == "__main__":
    main()
