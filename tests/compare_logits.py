#!/usr/bin/env python3
"""Compares two //tools:infer runs of one prompt, greedy, each with --output
ids in PREFIX.ids and --dump-logits in PREFIX.logits (one f32 vector of
VOCAB a step): each run's tokens are the greedy picks of its logits, TOKENS
of them unless it stopped (a stop token's step has logits but no id); the
other run's logits match the reference's within TOLERANCE of the largest
reference logit, and its tokens are the reference's, as many. At a near
tie, a step where the other run picked a token whose reference logit is
within TOLERANCE of the top one, the runs go on from different tokens: the
steps up to and with the tie are compared, and the tie is reported.
Prints one line: "ok ..." or "FAIL: ...".

Usage: compare_logits.py REFERENCE_PREFIX OTHER_PREFIX VOCAB TOLERANCE TOKENS
"""
import struct, sys
reference, other, vocab, tolerance, tokens = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
def steps(path):
    data = open(path + ".logits", "rb").read()
    values = struct.unpack("<%df" % (len(data) // 4), data)
    return [values[i:i + vocab] for i in range(0, len(values), vocab)]
def greedy(row):
    return row.index(max(row))
a, b = steps(reference), steps(other)
if not a:
    print("FAIL: the reference generated nothing"); sys.exit()
for name, path, rows in (("the reference", reference, a), ("this run", other, b)):
    ids = [int(x) for x in open(path + ".ids").read().split()]
    if len(rows[-1]) != vocab or not (len(rows) == len(ids) == tokens or len(rows) == len(ids) + 1 <= tokens):
        print("FAIL: %s has %d tokens and %d floats of logits (%d tokens asked, %d floats a step)" %
              (name, len(ids), sum(map(len, rows)), tokens, vocab))
        sys.exit()
    picks = [greedy(row) for row in rows[:len(ids)]]
    if picks != ids:
        print("FAIL: %s's tokens are not the greedy picks of its logits" % name); sys.exit()
largest = max(abs(x) for row in a for x in row)
worst, tie = 0.0, None
for step in range(min(len(a), len(b))):
    worst = max(worst, max(abs(x - y) for x, y in zip(a[step], b[step])) / largest)
    want, got = greedy(a[step]), greedy(b[step])
    if want != got:
        gap = a[step][want] - a[step][got]
        if gap > tolerance * largest:
            print("FAIL: token %d is %d, expected %d (its reference logit %g below the top)" % (step, got, want, gap))
            sys.exit()
        tie = step
        break
if tie is None and len(a) != len(b):
    print("FAIL: %d steps, expected %d" % (len(b), len(a)))
    sys.exit()
if worst > tolerance:
    print("FAIL: logits differ by %g of the largest" % worst)
    sys.exit()
print("ok %d of %d steps compared, relative difference %.2g, near tie at step %s" %
      (len(a) if tie is None else tie + 1, len(a), worst, "none" if tie is None else tie))
