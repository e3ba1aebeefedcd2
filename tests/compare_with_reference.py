#!/usr/bin/env python3
"""Compares what //tools:infer generated (--output ids, --dump-logits) with
a reference forward pass's output ("argmax <id> <logits...>" per generated
token): the same greedy ids, and every logit within a tolerance. Exits
non-zero with one line naming the difference.

Usage: compare_with_reference.py REFERENCE.txt IDS LOGITS LABEL [TOLERANCE]
"""
import struct
import sys

reference_path, ids_path, logits_path, label = sys.argv[1:5]
tolerance = float(sys.argv[5]) if len(sys.argv) > 5 else 1e-4
reference = [line.split() for line in open(reference_path)]
expected_ids = [int(fields[1]) for fields in reference]
ids = [int(t) for t in open(ids_path).read().split()]
raw = open(logits_path, "rb").read()
logits = struct.unpack("%df" % (len(raw) // 4), raw)
vocab = len(reference[0]) - 2
if ids != expected_ids:
    sys.exit("FAIL: %s: ids %s, reference %s" % (label, ids, expected_ids))
if len(logits) != vocab * len(reference):
    sys.exit("FAIL: %s: %d logits, expected %d" % (label, len(logits), vocab * len(reference)))
worst = 0.0
for step, fields in enumerate(reference):
    for i, text in enumerate(fields[2:]):
        worst = max(worst, abs(logits[step * vocab + i] - float(text)))
if worst > tolerance:
    sys.exit("FAIL: %s: logits differ from the reference by up to %g" % (label, worst))
print("%s: %d tokens match the reference, logits within %.2g" % (label, len(ids), worst))
