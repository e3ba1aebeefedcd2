#!/usr/bin/env python3
"""An independent, plain-Python forward pass of a llama2.c checkpoint (v0),
written from the format's description (docs: ../shared/models/README.md) and
llama2.c's conventions: RoPE on adjacent pairs (2i, 2i+1) with angle
pos / 10000^((i mod head_size) / head_size), grouped-query attention (head h
reads KV head h / (n_heads / n_kv_heads)), RMSNorm eps 1e-5, SwiGLU, shared
or separate classifier. Greedy-decodes from the given prompt ids and prints,
per generated token, "argmax <id>" and the logits, for comparison with
//tools:infer. Slow (pure Python): use on stories260K-sized models only.

Usage: llama2c_reference.py MODEL.bin STEPS PROMPT_ID...
"""
import math
import struct
import sys

d = open(sys.argv[1], 'rb').read()
dim, hidden, L, H, KVH, vocab, seq = struct.unpack('7i', d[:28])
shared = vocab > 0; vocab = abs(vocab)
off = 28
def take(n):
    global off
    v = struct.unpack('%df' % n, d[off:off+4*n]); off += 4*n; return v
hs = dim // H; kvd = hs * KVH
emb = take(vocab*dim)
rms_att = take(L*dim); wq = take(L*dim*dim); wk = take(L*kvd*dim); wv = take(L*kvd*dim); wo = take(L*dim*dim)
rms_ffn = take(L*dim); w1 = take(L*hidden*dim); w2 = take(L*dim*hidden); w3 = take(L*hidden*dim)
rms_f = take(dim)
if not shared:
    take(seq * hs // 2)  # freq_cis_real, legacy
    take(seq * hs // 2)  # freq_cis_imag, legacy
    wcls = take(vocab * dim)
else:
    wcls = emb
def mat(w, base, x, rows, cols):
    return [sum(w[base + r*cols + c]*x[c] for c in range(cols)) for r in range(rows)]
def norm(x, w, base):
    ss = sum(v*v for v in x)/len(x) + 1e-5; s = 1/math.sqrt(ss)
    return [w[base+i]*(s*x[i]) for i in range(len(x))]
kc = [[] for _ in range(L)]; vc = [[] for _ in range(L)]
def step(tok, pos):
    x = list(emb[tok*dim:(tok+1)*dim])
    for l in range(L):
        xb = norm(x, rms_att, l*dim)
        q = mat(wq, l*dim*dim, xb, dim, dim); k = mat(wk, l*kvd*dim, xb, kvd, dim); v = mat(wv, l*kvd*dim, xb, kvd, dim)
        for i in range(0, dim, 2):
            hd = i % hs; f = 1.0/(10000.0**(hd/hs)); a = pos*f; c, s = math.cos(a), math.sin(a)
            for vec, lim in ((q, dim), (k, kvd)):
                if i < lim:
                    v0, v1 = vec[i], vec[i+1]; vec[i] = v0*c - v1*s; vec[i+1] = v0*s + v1*c
        kc[l].append(k); vc[l].append(v)
        out = [0.0]*dim
        for h in range(H):
            kh = h // (H//KVH)
            sc = [sum(q[h*hs+i]*kc[l][t][kh*hs+i] for i in range(hs))/math.sqrt(hs) for t in range(pos+1)]
            m = max(sc); e = [math.exp(s-m) for s in sc]; z = sum(e)
            for t in range(pos+1):
                for i in range(hs): out[h*hs+i] += e[t]/z*vc[l][t][kh*hs+i]
        o = mat(wo, l*dim*dim, out, dim, dim); x = [x[i]+o[i] for i in range(dim)]
        xb = norm(x, rms_ffn, l*dim)
        a = mat(w1, l*hidden*dim, xb, hidden, dim); b = mat(w3, l*hidden*dim, xb, hidden, dim)
        g = [a[i]/(1+math.exp(-a[i]))*b[i] for i in range(hidden)]
        o = mat(w2, l*dim*hidden, g, dim, hidden); x = [x[i]+o[i] for i in range(dim)]
    x = norm(x, rms_f, 0)
    return mat(wcls, 0, x, vocab, dim)
steps = int(sys.argv[2])
prompt = [int(t) for t in sys.argv[3:]]
token = prompt[0]
for pos in range(len(prompt) + steps - 1):
    logits = step(token, pos)
    if pos + 1 < len(prompt):
        token = prompt[pos + 1]
        continue
    token = logits.index(max(logits))
    print("argmax", token, " ".join(repr(v) for v in logits))
