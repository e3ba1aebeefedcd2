#!/usr/bin/env python3
"""An independent, plain-Python forward pass of a Hugging Face checkpoint in
the Llama family's layout (Llama, Mistral, Qwen2, Qwen3, Gemma 3, Phi-3,
Mixtral, Qwen3-MoE):
model.safetensors (f32) plus config.json, written from the transformers
modelling conventions rather than from inferno's code: RoPE as rotate_half
(pairs i and i + head_dim/2 of each head), with rope_scaling "linear",
"llama3" or "longrope" (as transformers' dynamic update: short factors
while a forward call's last position is within the original context, long
ones past it, the prompt being one call; cos and sin times its attention
factor); q/k/v
biases (Qwen2, or attention_bias), an o_proj bias
(attention_bias); Qwen3's and Gemma's q_norm and k_norm (each head of q and
k RMS-normed, before RoPE); grouped-query attention; head_dim from
config.json when given; RMSNorm; SwiGLU; tied or separate lm_head; sliding
windows on the layers each family's config class makes slide (layer_types
when given). Gemma 3: norms scaling by (1 + weight), the embedding times
sqrt(hidden_size), norms after attention and after the MLP, GELU (tanh) for
the gate, scores scaled by query_pre_attn_scalar ** -0.5, local layers with
RoPE base rope_local_base_freq unscaled, final logit soft-capping. Phi-3:
qkv_proj and gate_up_proj split as Phi3Attention and Phi3MLP split them.
Mixtral and Qwen3-MoE: the mixture-of-experts MLP (router softmax, top
num_experts_per_tok, renormalised always for Mixtral and per norm_topk_prob
for Qwen3-MoE, whose decoder_sparse_step and mlp_only_layers give dense
layers). Greedy-decodes from the given prompt ids and prints, per generated
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

architecture = config["architectures"][0]
gemma = architecture == "Gemma3ForCausalLM"
dim = config["hidden_size"]
heads = config["num_attention_heads"]
kv_heads = config.get("num_key_value_heads", heads)
head_dim = config.get("head_dim") or (256 if gemma else dim // heads)
layers = config["num_hidden_layers"]
eps = config.get("rms_norm_eps", 1e-6)
theta = config.get("rope_theta", 1e6 if gemma else 10000.0)
group = heads // kv_heads
qk_norm = architecture in ("Qwen3ForCausalLM", "Gemma3ForCausalLM", "Qwen3MoeForCausalLM")
norm_offset = 1.0 if gemma else 0.0
gelu_gate = (config.get("hidden_activation") or config.get("hidden_act")
             or ("gelu_pytorch_tanh" if gemma else "silu")) == "gelu_pytorch_tanh"
scaling_divisor = math.sqrt(config.get("query_pre_attn_scalar", 256) if gemma else head_dim)
softcap = config.get("final_logit_softcapping") if gemma else None

if architecture == "Phi3ForCausalLM":  # Phi3Attention / Phi3MLP split the fused rows
    for l in range(layers):
        p = "model.layers.%d." % l
        (rows, cols), qkv = tensors.pop(p + "self_attn.qkv_proj.weight")
        q_rows, kv_rows = heads * head_dim, kv_heads * head_dim
        for name, begin, count in (("q_proj", 0, q_rows), ("k_proj", q_rows, kv_rows),
                                   ("v_proj", q_rows + kv_rows, kv_rows)):
            tensors[p + "self_attn." + name + ".weight"] = ([count, cols], qkv[begin * cols:(begin + count) * cols])
        (rows, cols), gate_up = tensors.pop(p + "mlp.gate_up_proj.weight")
        half = rows // 2
        tensors[p + "mlp.gate_proj.weight"] = ([half, cols], gate_up[:half * cols])
        tensors[p + "mlp.up_proj.weight"] = ([half, cols], gate_up[half * cols:])
# Mixture of experts, as transformers' modelling_mixtral.py and
# modelling_qwen3_moe.py name and compute it: (block, gate, up, down names).
EXPERT_NAMES = {"MixtralForCausalLM": ("block_sparse_moe", "w1", "w3", "w2"),
                "Qwen3MoeForCausalLM": ("mlp", "gate_proj", "up_proj", "down_proj")}.get(config["architectures"][0])


def sliding_layers():
    """The window and which layers slide, as each config class decides."""
    window = config.get("sliding_window", 4096 if gemma else None)
    if architecture in ("Qwen2ForCausalLM", "Qwen3ForCausalLM") and not config.get("use_sliding_window"):
        window = None
    if not window:
        return 0, [False] * layers
    if "layer_types" in config:
        return window, [t == "sliding_attention" for t in config["layer_types"]]
    if gemma:
        pattern = config.get("sliding_window_pattern", 6)
        return window, [(l + 1) % pattern != 0 for l in range(layers)]
    if architecture in ("Qwen2ForCausalLM", "Qwen3ForCausalLM"):
        return window, [l >= config.get("max_window_layers", 28) for l in range(layers)]
    return window, [True] * layers


window, slides = sliding_layers()


def inverse_frequencies(theta, scaled, long_context=False):
    base = [1.0 / theta ** (2 * i / head_dim) for i in range(head_dim // 2)]
    scaling = config.get("rope_scaling")
    if not scaling or not scaled:
        return base
    kind = scaling.get("rope_type", scaling.get("type"))
    if kind in ("longrope", "su"):
        factors = scaling["long_factor" if long_context else "short_factor"]
        return [1.0 / (factors[i] * theta ** (2 * i / head_dim)) for i in range(head_dim // 2)]
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


def longrope_original():
    scaling = config.get("rope_scaling") or {}
    return config.get("original_max_position_embeddings", scaling.get("original_max_position_embeddings", 4096))


def longrope_attention_factor():
    """cos and sin are multiplied by this (transformers' longrope); 1 otherwise."""
    scaling = config.get("rope_scaling") or {}
    if scaling.get("rope_type", scaling.get("type")) not in ("longrope", "su"):
        return 1.0
    if scaling.get("attention_factor") is not None:
        return scaling["attention_factor"]
    original = longrope_original()
    factor = config["max_position_embeddings"] / original
    return 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))


global_inverse = inverse_frequencies(theta, True)
long_inverse = inverse_frequencies(theta, True, long_context=True)
rope_attention = longrope_attention_factor()
local_inverse = (inverse_frequencies(config.get("rope_local_base_freq", 10000.0), False)
                 if gemma else global_inverse)


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
    return [x[i] * scale * (norm_offset + w[i]) for i in range(len(x))]


def head_norm(vector, count, name):
    """RMSNorm of each of `count` heads of `vector`, with the same weights."""
    out = []
    for h in range(count):
        out += rms_norm(vector[h * head_dim:(h + 1) * head_dim], name)
    return out


def rotate(vector, count, pos, inverse, scale=1.0):
    half = head_dim // 2
    for h in range(count):
        base = h * head_dim
        for i in range(half):
            c, s = scale * math.cos(pos * inverse[i]), scale * math.sin(pos * inverse[i])
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


def gated_mlp(h, gate_name, up_name, down_name):
    """down(act(gate(h)) * up(h)): SwiGLU, or Gemma's GELU (tanh) gate."""
    gate = linear(gate_name, h)
    up = linear(up_name, h)
    if gelu_gate:
        act = [0.5 * g * (1 + math.tanh(math.sqrt(2 / math.pi) * (g + 0.044715 * g ** 3))) * u
               for g, u in zip(gate, up)]
    else:
        act = [g / (1 + math.exp(-g)) * u for g, u in zip(gate, up)]
    return linear(down_name, act)


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
        y = gated_mlp(h, q + gate + ".weight", q + up + ".weight", q + down + ".weight")
        out = [o + weights[e] * v for o, v in zip(out, y)]
    return out


keys = [[] for _ in range(layers)]
values = [[] for _ in range(layers)]


def step(token, pos):
    x = list(weight("model.embed_tokens.weight")[token * dim:(token + 1) * dim])
    if gemma:
        x = [v * math.sqrt(dim) for v in x]
    for l in range(layers):
        p = "model.layers.%d." % l
        h = rms_norm(x, p + "input_layernorm.weight")
        q = linear(p + "self_attn.q_proj.weight", h, p + "self_attn.q_proj.bias")
        k = linear(p + "self_attn.k_proj.weight", h, p + "self_attn.k_proj.bias")
        v = linear(p + "self_attn.v_proj.weight", h, p + "self_attn.v_proj.bias")
        if qk_norm:
            q = head_norm(q, heads, p + "self_attn.q_norm.weight")
            k = head_norm(k, kv_heads, p + "self_attn.k_norm.weight")
        # transformers' forward call: the whole prompt at once, then one position each.
        call_end = len(prompt) if pos < len(prompt) else pos + 1
        inverse = (local_inverse if gemma and slides[l] else
                   long_inverse if call_end > longrope_original() else global_inverse)
        scale = 1.0 if slides[l] and gemma else rope_attention
        rotate(q, heads, pos, inverse, scale)
        rotate(k, kv_heads, pos, inverse, scale)
        keys[l].append(k)
        values[l].append(v)
        attention = [0.0] * (heads * head_dim)
        for head in range(heads):
            kv = (head // group) * head_dim
            qh = q[head * head_dim:(head + 1) * head_dim]
            seen = [t for t in range(pos + 1) if not slides[l] or pos - t < window]
            scores = [sum(qh[i] * keys[l][t][kv + i] for i in range(head_dim)) / scaling_divisor for t in seen]
            top = max(scores)
            e = [math.exp(s - top) for s in scores]
            z = sum(e)
            for j, t in enumerate(seen):
                for i in range(head_dim):
                    attention[head * head_dim + i] += e[j] / z * values[l][t][kv + i]
        o = linear(p + "self_attn.o_proj.weight", attention, p + "self_attn.o_proj.bias")
        if gemma:
            o = rms_norm(o, p + "post_attention_layernorm.weight")
        x = [a + b for a, b in zip(x, o)]
        h = rms_norm(x, p + ("pre_feedforward_layernorm.weight" if gemma else "post_attention_layernorm.weight"))
        if sparse(l):
            down = experts_mlp(p, h)
        else:
            down = gated_mlp(h, p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight", p + "mlp.down_proj.weight")
        if gemma:
            down = rms_norm(down, p + "post_feedforward_layernorm.weight")
        x = [a + b for a, b in zip(x, down)]
    x = rms_norm(x, "model.norm.weight")
    head = "lm_head.weight" if has("lm_head.weight") else "model.embed_tokens.weight"
    logits = linear(head, x)
    if softcap:
        logits = [math.tanh(v / softcap) * softcap for v in logits]
    return logits


token = prompt[0]
for pos in range(len(prompt) + steps - 1):
    logits = step(token, pos)
    if pos + 1 < len(prompt):
        token = prompt[pos + 1]
        continue
    token = logits.index(max(logits))
    print("argmax", token, " ".join(repr(v) for v in logits))
