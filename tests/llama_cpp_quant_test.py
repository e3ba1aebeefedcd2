#!/usr/bin/env python3
"""inferno's quantizers and dequantizers against llama.cpp's own libraries.

The reference is node-llama-cpp 3.21.1's prebuilt llama.cpp (fetched by
tools/yardsticks/fetch_llama_cpp.sh), driven through ctypes; inferno's side is
//tests:quant_codec and //tools:convert_to_gguf. Checks:

 1. Blocks: for every type inferno writes, on inputs of several
    distributions (normal, weights-like, uniform, positive, all zero,
    constant, tiny, huge, ties, outliers, zero sub-blocks, one long row),
    inferno's bytes equal ggml_quantize_chunk's (what llama_model_quantize
    writes) and, except IQ4_NL, quantize_row_<type>_ref's; and for every type
    inferno reads, its dequantization of ggml-made blocks and of random block
    bytes is bit-equal to dequantize_row_<type>.
 2. Files: an F32 GGUF toy model (rows of 256 and of 352, so the fallbacks
    appear) quantized by llama_model_quantize to Q4_K_M, Q5_K_M, Q6_K, Q8_0,
    F16, BF16, Q4_0, Q4_1, Q2_K, Q3_K_M, IQ4_XS and, --pure, to every block
    type: every tensor as inferno's loader dequantizes it is bit-equal to
    ggml's dequantization, and the files hold every type inferno reads; the
    same for make_toy_model's Q8_0 and Q4_0 files of infer_gguf_test.
 3. Writer: convert_to_gguf --dtype q4_k_m, q5_k_m, q6_k, q8_0, f16, bf16 and
    each single block type (against llama-quantize --pure) of the same model,
    from the F32 GGUF and from a safetensors folder, gives each tensor the
    type llama_model_quantize gives it, the same block bytes and the same
    general.file_type; so does --dtype q4_k_m of llama.cpp's F16 and BF16
    files of the model, --dtype q4_k_m and q5_k_m of qwen3moe toys of 8 and
    4 experts (llama.cpp's expert rules), and --dtype q4_k_m and q8_0 of
    stories260K (../shared/models, when present: tied embeddings, F16
    fallbacks).

Prints "SKIP: ..." and passes when the package is absent.

Usage: llama_cpp_quant_test.py QUANT_CODEC MAKE_TOY_MODEL CONVERT_TO_GGUF
"""

import array
import ctypes
import math
import os
import pwd
import random
import struct
import subprocess
import sys
import tempfile

# ggml type id -> (name, elements per block, bytes per block).
TYPES = {
    8: ("Q8_0", 32, 34),
    2: ("Q4_0", 32, 18),
    3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24),
    20: ("IQ4_NL", 32, 18),
    10: ("Q2_K", 256, 84),
    11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176),
    14: ("Q6_K", 256, 210),
    23: ("IQ4_XS", 256, 136),
    0: ("F32", 1, 4),
    1: ("F16", 1, 2),
    30: ("BF16", 1, 2),
}
# quantize_row_iq4_nl_ref tries one scale per block where the model
# quantizer (quantize_iq4_nl) tries 15: inferno writes what files hold.
REF_DIFFERS_FROM_FILES = {"IQ4_NL"}
# The files llama_model_quantize makes of the F32 toy model: label, llama_ftype
# (include/llama.h), whether --pure (every matrix in the ftype's type, only
# the fallbacks differing), and the convert_to_gguf --dtype that must give the
# same tensor types, block bytes and general.file_type (None: llama.cpp's mix
# for that ftype, which convert_to_gguf does not write).
FILES = [
    ("Q4_K_M", 15, False, "q4_k_m"),
    ("Q5_K_M", 17, False, "q5_k_m"),
    ("Q6_K", 18, False, "q6_k"),
    ("Q8_0", 7, False, "q8_0"),
    ("F16", 1, False, "f16"),
    ("BF16", 32, False, "bf16"),
    ("Q4_0", 2, False, None),
    ("Q4_1", 3, False, None),
    ("Q2_K", 10, False, None),
    ("Q3_K_M", 12, False, None),
    ("IQ4_XS", 30, False, None),
    ("Q4_0 --pure", 2, True, "q4_0"),
    ("Q4_1 --pure", 3, True, "q4_1"),
    ("Q5_0 --pure", 8, True, "q5_0"),
    ("Q5_1 --pure", 9, True, "q5_1"),
    ("IQ4_NL --pure", 25, True, "iq4_nl"),
    ("Q2_K --pure", 10, True, "q2_k"),
    ("Q3_K_S --pure", 11, True, "q3_k"),
    ("Q4_K_S --pure", 14, True, "q4_k"),
    ("Q5_K_S --pure", 16, True, "q5_k"),
    ("IQ4_XS --pure", 30, True, "iq4_xs"),
]

FAILURES = []


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    FAILURES.append(message)


def package_dir():
    # Bazel points HOME at the test's temporary folder: the account's home.
    home = pwd.getpwuid(os.getuid()).pw_dir
    cache = os.environ.get("INFERNO_CACHE") or os.path.join(home, ".cache", "inferno")
    return os.path.join(cache, "yardsticks", "node-llama-cpp-3.21.1")


def load_llama_cpp(bins):
    mode = ctypes.RTLD_GLOBAL
    base = ctypes.CDLL(os.path.join(bins, "libggml-base.so"), mode=mode)
    ggml = ctypes.CDLL(os.path.join(bins, "libggml.v0.4.0.so"), mode=mode)
    llama = ctypes.CDLL(os.path.join(bins, "libllama.v0.4.0.so"), mode=mode)
    ggml.ggml_backend_load_all_from_path.argtypes = [ctypes.c_char_p]
    ggml.ggml_backend_load_all_from_path(bins.encode())
    base.ggml_quantize_chunk.restype = ctypes.c_size_t
    base.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                         ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    return base, llama


class QuantizeParams(ctypes.Structure):
    # llama_model_quantize_params (include/llama.h of the bundled release).
    _fields_ = [("nthread", ctypes.c_int32), ("ftype", ctypes.c_int), ("output_tensor_type", ctypes.c_int),
                ("token_embedding_type", ctypes.c_int), ("allow_requantize", ctypes.c_bool),
                ("quantize_output_tensor", ctypes.c_bool), ("only_copy", ctypes.c_bool),
                ("pure", ctypes.c_bool), ("keep_split", ctypes.c_bool), ("dry_run", ctypes.c_bool),
                ("imatrix", ctypes.c_void_p), ("kv_overrides", ctypes.c_void_p),
                ("tt_overrides", ctypes.c_void_p), ("prune_layers", ctypes.c_void_p),
                ("max_buf_size", ctypes.c_size_t)]


def floats(values):
    return array.array("f", values)


def inputs():
    """(name, f32 values) cases, each a whole number of super-blocks."""
    rng = random.Random(27)
    n = 256 * 4
    cases = [
        ("normal", [rng.gauss(0, 1) for _ in range(n)]),
        ("weights", [rng.gauss(0, 0.02) for _ in range(n)]),
        ("uniform", [rng.uniform(-1, 1) for _ in range(n)]),
        ("positive", [rng.uniform(0, 3) for _ in range(n)]),
        ("negative", [-rng.expovariate(4) for _ in range(n)]),
        ("zero", [0.0] * n),
        ("constant", [0.75] * n),
        ("tiny", [rng.gauss(0, 1e-7) for _ in range(n)]),
        ("subnormal_scales", [rng.gauss(0, 1e-14) for _ in range(n)]),
        ("below_eps", [rng.gauss(0, 1e-17) for _ in range(n)]),
        ("huge", [rng.gauss(0, 3e4) for _ in range(n)]),
        ("beyond_f16", [rng.gauss(0, 1e30) for _ in range(n)]),
        ("ties", [rng.randint(-16, 16) / 4 for _ in range(n)]),
        ("outliers", [rng.gauss(0, 0.1) * (80 if rng.random() < 0.01 else 1) for _ in range(n)]),
        ("zero_sub_blocks", [0.0 if (i // 16) % 3 == 0 else rng.gauss(0, 1) for i in range(n)]),
        ("one_hot", [1.0 if i % 97 == 0 else 0.0 for i in range(n)]),
        ("long_row", [rng.gauss(0, 0.05) for _ in range(256 * 64)]),
    ]
    return [(name, floats(values)) for name, values in cases]


def run(args):
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(" ".join(args) + ": " + result.stderr.strip())
    return result.stdout


def same_floats(a, b):
    """Bit-equal f32 arrays (as bytes), NaNs included."""
    return bytes(a) == bytes(b)


def first_difference(a, b, width):
    for i in range(0, min(len(a), len(b)), width):
        if a[i:i + width] != b[i:i + width]:
            return i // width
    return None


def check_blocks(base, codec, work):
    cases = inputs()
    everything = floats([])
    spans = []
    for name, values in cases:
        spans.append((name, len(everything), len(values)))
        everything.extend(values)
    src = os.path.join(work, "values.f32")
    with open(src, "wb") as f:
        everything.tofile(f)
    rng = random.Random(5)
    checked = []
    for type_id, (name, block_elements, block_bytes) in TYPES.items():
        if block_elements == 1:
            continue
        total = len(everything)
        blocks = total // block_elements
        chunk = ctypes.create_string_buffer(blocks * block_bytes)
        base.ggml_quantize_chunk(type_id, everything.buffer_info()[0], chunk, 0, total // 256, 256, None)
        ggml_bytes = chunk.raw
        ref = ctypes.create_string_buffer(blocks * block_bytes)
        quantize_ref = getattr(base, "quantize_row_%s_ref" % name.lower().replace("_k", "_K"))
        quantize_ref.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
        quantize_ref(everything.buffer_info()[0], ref, total)
        out = os.path.join(work, name + ".blocks")
        run([codec, "--op", "quantize", "--type", name, "--in", src, "--out", out])
        with open(out, "rb") as f:
            ours = f.read()
        for case, begin, length in spans:
            a, b = begin // block_elements * block_bytes, (begin + length) // block_elements * block_bytes
            if ours[a:b] != ggml_bytes[a:b]:
                block = first_difference(ours[a:b], ggml_bytes[a:b], block_bytes)
                fail("%s %s: block %d differs from ggml_quantize_chunk's" % (name, case, block))
            if name not in REF_DIFFERS_FROM_FILES and ours[a:b] != ref.raw[a:b]:
                fail("%s %s: differs from quantize_row_%s_ref" % (name, case, name))
        # Dequantization: ggml's blocks, then random bytes (any code, any
        # f16 scale, NaN and infinity included).
        noise = bytes(rng.getrandbits(8) for _ in range(64 * block_bytes))
        for label, blob in (("ggml's blocks", ggml_bytes), ("random bytes", noise)):
            n = len(blob) // block_bytes * block_elements
            theirs = floats([0.0] * n)
            dequantize = getattr(base, "dequantize_row_%s" % name.lower().replace("_k", "_K"))
            dequantize.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int64]
            dequantize(blob, theirs.buffer_info()[0], n)
            blocks_file = os.path.join(work, name + ".in")
            with open(blocks_file, "wb") as f:
                f.write(blob)
            values_file = os.path.join(work, name + ".out")
            run([codec, "--op", "dequantize", "--type", name, "--in", blocks_file, "--out", values_file])
            mine = floats([])
            with open(values_file, "rb") as f:
                mine.frombytes(f.read())
            if not same_floats(mine, theirs):
                element = first_difference(bytes(mine), bytes(theirs), 4)
                fail("%s: dequantized %s differ from dequantize_row_%s at element %s" %
                     (name, label, name, element))
        checked.append(name)
    print("blocks: %s checked on %d cases (%d values)" % (", ".join(checked), len(cases), len(everything)))


def read_dump(directory):
    """{name: (type, shape, f32 bytes)} from quant_codec --op gguf."""
    tensors = {}
    with open(os.path.join(directory, "tensors.txt")) as index:
        for line in index:
            i, name, type_name, shape = line.split()
            with open(os.path.join(directory, i + ".f32"), "rb") as f:
                tensors[name] = (type_name, shape, f.read())
    return tensors


def gguf_tensor_bytes(path):
    """({name: (ggml type id, raw data bytes)}, general.file_type) of a GGUF file (v2/v3)."""
    with open(path, "rb") as f:
        data = f.read()
    pos = 0

    def take(fmt):
        nonlocal pos
        values = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return values

    def string():
        nonlocal pos
        (length,) = take("Q")
        pos += length
        return data[pos - length:pos].decode()

    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def skip_value(kind):
        nonlocal pos
        if kind == 8:
            string()
        elif kind == 9:
            element, count = take("IQ")
            for _ in range(count):
                skip_value(element)
        else:
            take(scalar[kind])

    magic, _version, n_tensors, n_kv = take("IIQQ")
    assert magic == 0x46554747, path
    alignment, file_type = 32, None
    for _ in range(n_kv):
        key = string()
        (kind,) = take("I")
        if key == "general.alignment":
            (alignment,) = take("I")
        elif key == "general.file_type":
            (file_type,) = take("I")
        else:
            skip_value(kind)
    infos = []
    for _ in range(n_tensors):
        name = string()
        (dims,) = take("I")
        ne = take("Q" * dims)
        type_id, offset = take("IQ")
        infos.append((name, ne, type_id, offset))
    data_begin = (pos + alignment - 1) // alignment * alignment
    tensors = {}
    for name, ne, type_id, offset in infos:
        _, block_elements, block_bytes = TYPES[type_id]
        size = math.prod(ne) // block_elements * block_bytes
        tensors[name] = (type_id, data[data_begin + offset:data_begin + offset + size])
    return tensors, file_type


def dequantize_with_ggml(base, type_id, raw):
    name, block_elements, block_bytes = TYPES[type_id]
    n = len(raw) // block_bytes * block_elements
    out = floats([0.0] * n)
    if type_id == 0:
        return raw
    function = {1: "ggml_fp16_to_fp32_row", 30: "ggml_bf16_to_fp32_row"}.get(
        type_id, "dequantize_row_%s" % name.lower().replace("_k", "_K"))
    dequantize = getattr(base, function)
    dequantize.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int64]
    dequantize(raw, out.buffer_info()[0], n)
    return bytes(out)


def check_files(base, llama, codec, make_toy, convert, work):
    f32 = os.path.join(work, "toy_f32.gguf")
    # dim 256 and a hidden size of 352 (not a multiple of 256): attn and
    # ffn_gate/up rows are whole super-blocks, ffn_down rows are not.
    shape = ["--dim", "256", "--hidden", "352", "--layers", "4", "--heads", "4", "--kv-heads", "2", "--vocab",
             "320", "--seed", "7"]
    run([make_toy, "--format", "gguf", "--out", f32] + shape)
    # The same weights as a Hugging Face folder (f32 safetensors).
    folder = os.path.join(work, "toy_safetensors")
    run([make_toy, "--out", folder] + shape)
    llama.llama_backend_init()
    llama.llama_model_quantize_default_params.restype = QuantizeParams
    llama.llama_model_quantize.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(QuantizeParams)]
    llama.llama_model_quantize.restype = ctypes.c_uint32

    def quantize(source, out, ftype, pure=False):
        params = llama.llama_model_quantize_default_params()
        params.ftype = ftype
        params.pure = pure
        params.nthread = 1
        return llama.llama_model_quantize(source.encode(), out.encode(), ctypes.byref(params)) == 0

    types_seen = set()
    for label, ftype, pure, dtype in FILES:
        theirs_path = os.path.join(work, "llama.gguf")
        if not quantize(f32, theirs_path, ftype, pure):
            fail("llama_model_quantize %s failed" % label)
            continue
        theirs, their_file_type = gguf_tensor_bytes(theirs_path)
        types_seen.update(check_read(base, codec, theirs_path, "llama_model_quantize " + label, work))
        if dtype is None:
            continue
        for source in (f32, folder):
            compare_converted(convert, source, dtype, theirs, their_file_type, work)
    for needed, _, _ in TYPES.values():
        if needed not in types_seen:
            fail("no %s tensor in llama.cpp's files: the shapes no longer exercise it" % needed)
    # From 16-bit sources: llama.cpp's F16 and BF16 files of the model, each
    # quantized to Q4_K_M by llama.cpp and by convert_to_gguf.
    for label, ftype in (("f16", 1), ("bf16", 32)):
        source = os.path.join(work, "toy_%s.gguf" % label)
        theirs_path = os.path.join(work, "llama.gguf")
        if not quantize(f32, source, ftype) or not quantize(source, theirs_path, 15):
            fail("llama_model_quantize of the %s model failed" % label)
            continue
        theirs, their_file_type = gguf_tensor_bytes(theirs_path)
        compare_converted(convert, source, "q4_k_m", theirs, their_file_type, work)
    # Mixtures of experts (qwen3moe, 8 layers): the experts' down stack gets
    # ffn_down's extra bits, and with exactly 8 experts llama.cpp also
    # raises attention's k, v and output.
    for experts in ("8", "4"):
        source = os.path.join(work, "toy_moe%s_f32.gguf" % experts)
        run([make_toy, "--format", "gguf", "--out", source, "--dim", "256", "--hidden", "512", "--layers", "8",
             "--heads", "4", "--kv-heads", "2", "--vocab", "320", "--architecture", "qwen3_moe", "--experts",
             experts, "--experts-per-token", "2", "--expert-hidden", "256", "--norm-topk-prob"])
        for dtype, ftype in (("q4_k_m", 15), ("q5_k_m", 17)):
            theirs_path = os.path.join(work, "llama.gguf")
            if not quantize(source, theirs_path, ftype):
                fail("llama_model_quantize %s of the %s-expert toy failed" % (dtype, experts))
                continue
            theirs, their_file_type = gguf_tensor_bytes(theirs_path)
            compare_converted(convert, source, dtype, theirs, their_file_type, work)
    # stories260K (../shared/models, when present): tied embeddings, so
    # token_embd.weight is the output, and rows of 64 and 172 elements, so
    # Q5_0, Q8_0 and F16 fallbacks.
    checkout = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    stories = os.path.join(os.environ.get("INFERNO_SHARED_MODELS") or os.path.join(checkout, "shared", "models"),
                           "stories260K.bin")
    if os.path.isfile(stories):
        source = os.path.join(work, "stories260K.gguf")
        run([convert, "--model", stories, "--out", source])
        for dtype, ftype in (("q4_k_m", 15), ("q8_0", 7)):
            theirs_path = os.path.join(work, "llama.gguf")
            if not quantize(source, theirs_path, ftype):
                fail("llama_model_quantize %s of stories260K failed" % dtype)
                continue
            check_read(base, codec, theirs_path, "llama_model_quantize %s of stories260K" % dtype, work)
            theirs, their_file_type = gguf_tensor_bytes(theirs_path)
            compare_converted(convert, source, dtype, theirs, their_file_type, work)
    else:
        print("%s absent: its checks skipped" % stories)
    # The Q8_0 and Q4_0 toy files of infer_gguf_test (make_toy_model's
    # default shape), read by us and by ggml.
    for dtype in ("q8_0", "q4_0"):
        path = os.path.join(work, "toy_%s.gguf" % dtype)
        run([make_toy, "--format", "gguf", "--dtype", dtype, "--out", path])
        check_read(base, codec, path, "make_toy_model --dtype " + dtype, work)


def check_read(base, codec, path, what, work):
    """Every tensor of the GGUF `path` as inferno's loader reads it against ggml's dequantization of its bytes;
    returns the type names the file holds."""
    tensors, _ = gguf_tensor_bytes(path)
    dump = tempfile.mkdtemp(dir=work)
    try:
        run([codec, "--op", "gguf", "--in", path, "--out", dump])
    except RuntimeError as error:
        fail("%s: inferno's loader refused it: %s" % (what, error))
        return set()
    ours = read_dump(dump)
    counts = {}
    for name, (type_id, raw) in tensors.items():
        type_name = TYPES[type_id][0]
        counts[type_name] = counts.get(type_name, 0) + 1
        if name not in ours:
            fail("%s: tensor %s missing from inferno's reading" % (what, name))
            continue
        if ours[name][0] != type_name:
            fail("%s: %s read as %s, written as %s" % (what, name, ours[name][0], type_name))
        reference = dequantize_with_ggml(base, type_id, raw)
        if ours[name][2] != reference:
            element = first_difference(ours[name][2], reference, 4)
            fail("%s: %s (%s) differs from ggml's dequantization at element %s" % (what, name, type_name, element))
    print("%s: %d tensors bit-equal to ggml's dequantization (%s)" %
          (what, len(tensors), ", ".join("%s x%d" % kv for kv in sorted(counts.items()))))
    return set(counts)


def compare_converted(convert, source, dtype, theirs, their_file_type, work):
    """convert_to_gguf --dtype `dtype` of `source` against llama_model_quantize's tensors `theirs`."""
    what = "convert_to_gguf --dtype %s of %s" % (dtype, os.path.basename(source))
    mine_path = os.path.join(work, "inferno.gguf")
    try:
        run([convert, "--model", source, "--dtype", dtype, "--out", mine_path])
    except RuntimeError as error:
        fail("%s: %s" % (what, error))
        return
    mine, my_file_type = gguf_tensor_bytes(mine_path)
    if my_file_type != their_file_type:
        fail("%s: general.file_type %s, llama.cpp's %s" % (what, my_file_type, their_file_type))
    if sorted(mine) != sorted(theirs):
        fail("%s: tensors %s, llama.cpp's %s" % (what, sorted(mine), sorted(theirs)))
        return
    same = 0
    for name, (type_id, raw) in theirs.items():
        if mine[name][0] != type_id:
            fail("%s: %s is %s, llama_model_quantize makes it %s" %
                 (what, name, TYPES[mine[name][0]][0], TYPES[type_id][0]))
        elif mine[name][1] != raw:
            block = first_difference(mine[name][1], raw, TYPES[type_id][2])
            fail("%s: %s (%s) block %s differs from llama_model_quantize's" % (what, name, TYPES[type_id][0], block))
        else:
            same += 1
    print("%s: %d of %d tensors of llama.cpp's types and bytes" % (what, same, len(theirs)))


def main():
    codec, make_toy, convert = (os.path.abspath(p) for p in sys.argv[1:4])
    bins = os.path.join(package_dir(), "node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64")
    if not os.path.isfile(os.path.join(bins, "libllama.v0.4.0.so")):
        print("SKIP: %s absent (run tools/yardsticks/fetch_llama_cpp.sh)" % bins)
        return 0
    base, llama = load_llama_cpp(bins)
    with tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR")) as work:
        check_blocks(base, codec, work)
        check_files(base, llama, codec, make_toy, convert, work)
    if FAILURES:
        print("%d failures" % len(FAILURES), file=sys.stderr)
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
