#!/usr/bin/env python3
"""An independent, plain-Python forward pass of a Hugging Face checkpoint in
the Llama family's layout (Llama, Mistral, Qwen2, Qwen3): model.safetensors (f32)
plus config.json, written from the transformers modelling conventions rather
than from inferno's code: RoPE as rotate_half (pairs i and i + head_dim/2 of
each head), with rope_scaling "linear" or "llama3"; q/k/v biases (Qwen2, or
attention_bias), an o_proj bias (attention_bias); Qwen3's q_norm and k_norm
(each head of q and k RMS-normed, before RoPE); grouped-query attention;
head_dim from config.json when given; RMSNorm; SwiGLU; tied or separate
lm_head; the mixture-of-experts MLP of Mixtral and Qwen3-MoE (router
softmax, top num_experts_per_tok, renormalised always for Mixtral and per
norm_topk_prob for Qwen3-MoE, whose decoder_sparse_step and mlp_only_layers
give dense layers). Greedy-decodes from the given prompt ids and prints, per generated
token, "argmax <id>" and the logits, for comparison with //tools:infer.
Pure Python, double precision: use on toy-sized models only.

Usage: hf_reference.py MODEL_DIR STEPS PROMPT_ID...
"""
import array
import json
import math
import struct
import sys

folder, steps, prompt = sys.argv[1], int(sys.argv[2]), [int(t) for t in sys.argv[3:]]
config = json.load(open(folder + "/config.json"))
raw = open(folder + "/model.safetensors", "rb").read()
(header_size,) = struct.unpack("<Q", raw[:8])
header = json.loads(raw[8:8 + header_size])
tensors = {}
for name, info in header.items():
    if name == "__metadata__":
        continue
    assert info["dtype"] == "F32", name
    begin, end = info["data_offsets"]
    values = array.array("f")
    values.frombytes(raw[8 + header_size + begin:8 + header_size + end])
    tensors[name] = (info["shape"], list(values))

dim = config["hidden_size"]
heads = config["num_attention_heads"]
kv_heads = config.get("num_key_value_heads", heads)
head_dim = config.get("head_dim") or dim // heads
layers = config["num_hidden_layers"]
eps = config.get("rms_norm_eps", 1e-6)
theta = config.get("rope_theta", 10000.0)
group = heads // kv_heads
qk_norm = config["architectures"][0] in ("Qwen3ForCausalLM", "Qwen3MoeForCausalLM")
# Mixture of experts, as transformers' modelling_mixtral.py and
# modelling_qwen3_moe.py name and compute it: (block, gate, up, down names).
EXPERT_NAMES = {"MixtralForCausalLM": ("block_sparse_moe", "w1", "w3", "w2"),
                "Qwen3MoeForCausalLM": ("mlp", "gate_proj", "up_proj", "down_proj")}.get(config["architectures"][0])


def inverse_frequencies():
    base = [1.0 / theta ** (2 * i / head_dim) for i in range(head_dim // 2)]
    scaling = config.get("rope_scaling")
    if not scaling:
        return base
    kind = scaling.get("rope_type", scaling.get("type"))
    factor = scaling["factor"]
    if kind == "linear":
        return [f / factor for f in base]
    assert kind == "llama3", kind
    original = scaling["original_max_position_embeddings"]
    low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
    result = []
    for f in base:
        wavelength = 2 * math.pi / f
        if wavelength < original / high:
            result.append(f)
        elif wavelength > original / low:
            result.append(f / factor)
        else:
            smooth = (original / wavelength - low) / (high - low)
            result.append((1 - smooth) * f / factor + smooth * f)
    return result


inverse = inverse_frequencies()


def weight(name):
    return tensors[name][1]


def has(name):
    return name in tensors


def linear(name, x, bias=None):
    shape, w = tensors[name]
    rows, cols = shape
    out = [sum(w[r * cols + c] * x[c] for c in range(cols)) for r in range(rows)]
    if bias is not None and has(bias):
        b = weight(bias)
        out = [o + b[i] for i, o in enumerate(out)]
    return out


def rms_norm(x, name):
    w = weight(name)
    scale = 1.0 / math.sqrt(sum(v * v for v in x) / len(x) + eps)
    return [w[i] * x[i] * scale for i in range(len(x))]


def head_norm(vector, count, name):
    """RMSNorm of each of `count` heads of `vector`, with the same weights."""
    out = []
    for h in range(count):
        out += rms_norm(vector[h * head_dim:(h + 1) * head_dim], name)
    return out


def rotate(vector, count, pos):
    half = head_dim // 2
    for h in range(count):
        base = h * head_dim
        for i in range(half):
            c, s = math.cos(pos * inverse[i]), math.sin(pos * inverse[i])
            a, b = vector[base + i], vector[base + i + half]
            vector[base + i] = a * c - b * s
            vector[base + i + half] = b * c + a * s


def sparse(layer):
    if EXPERT_NAMES is None:
        return False
    if config["architectures"][0] == "MixtralForCausalLM":
        return True
    return (config["num_experts"] > 0 and (layer + 1) % config.get("decoder_sparse_step", 1) == 0
            and layer not in config.get("mlp_only_layers", []))


def swiglu_mlp(h, gate_name, up_name, down_name):
    gate = linear(gate_name, h)
    up = linear(up_name, h)
    return linear(down_name, [g / (1 + math.exp(-g)) * u for g, u in zip(gate, up)])


def experts_mlp(p, h):
    """Router softmax over every expert, the top k kept, their outputs summed
    weighted by their probabilities (renormalised to sum 1 when asked)."""
    block, gate, up, down = EXPERT_NAMES
    logits = linear(p + block + ".gate.weight", h)
    top = max(logits)
    exps = [math.exp(v - top) for v in logits]
    probs = [v / sum(exps) for v in exps]
    chosen = sorted(range(len(probs)), key=lambda e: -probs[e])[:config["num_experts_per_tok"]]
    weights = {e: probs[e] for e in chosen}
    if config["architectures"][0] == "MixtralForCausalLM" or config.get("norm_topk_prob", False):
        total = sum(weights.values())
        weights = {e: w / total for e, w in weights.items()}
    out = [0.0] * dim
    for e in sorted(chosen):
        q = "%s%s.experts.%d." % (p, block, e)
        y = swiglu_mlp(h, q + gate + ".weight", q + up + ".weight", q + down + ".weight")
        out = [o + weights[e] * v for o, v in zip(out, y)]
    return out


keys = [[] for _ in range(layers)]
values = [[] for _ in range(layers)]


def step(token, pos):
    x = list(weight("model.embed_tokens.weight")[token * dim:(token + 1) * dim])
    for l in range(layers):
        p = "model.layers.%d." % l
        h = rms_norm(x, p + "input_layernorm.weight")
        q = linear(p + "self_attn.q_proj.weight", h, p + "self_attn.q_proj.bias")
        k = linear(p + "self_attn.k_proj.weight", h, p + "self_attn.k_proj.bias")
        v = linear(p + "self_attn.v_proj.weight", h, p + "self_attn.v_proj.bias")
        if qk_norm:
            q = head_norm(q, heads, p + "self_attn.q_norm.weight")
            k = head_norm(k, kv_heads, p + "self_attn.k_norm.weight")
        rotate(q, heads, pos)
        rotate(k, kv_heads, pos)
        keys[l].append(k)
        values[l].append(v)
        attention = [0.0] * (heads * head_dim)
        for head in range(heads):
            kv = (head // group) * head_dim
            qh = q[head * head_dim:(head + 1) * head_dim]
            scores = [sum(qh[i] * keys[l][t][kv + i] for i in range(head_dim)) / math.sqrt(head_dim)
                      for t in range(pos + 1)]
            top = max(scores)
            e = [math.exp(s - top) for s in scores]
            z = sum(e)
            for t in range(pos + 1):
                for i in range(head_dim):
                    attention[head * head_dim + i] += e[t] / z * values[l][t][kv + i]
        o = linear(p + "self_attn.o_proj.weight", attention, p + "self_attn.o_proj.bias")
        x = [a + b for a, b in zip(x, o)]
        h = rms_norm(x, p + "post_attention_layernorm.weight")
        if sparse(l):
            down = experts_mlp(p, h)
        else:
            down = swiglu_mlp(h, p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight", p + "mlp.down_proj.weight")
        x = [a + b for a, b in zip(x, down)]
    x = rms_norm(x, "model.norm.weight")
    head = "lm_head.weight" if has("lm_head.weight") else "model.embed_tokens.weight"
    return linear(head, x)


token = prompt[0]
for pos in range(len(prompt) + steps - 1):
    logits = step(token, pos)
    if pos + 1 < len(prompt):
        token = prompt[pos + 1]
        continue
    token = logits.index(max(logits))
    print("argmax", token, " ".join(repr(v) for v in logits))
