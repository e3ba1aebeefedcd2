#!/usr/bin/env python3
"""Quantizes a GGUF file with llama.cpp's own quantizer (llama_model_quantize,
what llama-quantize runs), from node-llama-cpp 3.21.1's prebuilt libraries
(tools/yardsticks/fetch_llama_cpp.sh), with no importance matrix: the files
users download, made here as llama.cpp makes them.

  llama_quantize.py --package DIR IN.gguf OUT.gguf TYPE
TYPE: q4_0, q8_0, q4_k_m, q4_k_s, q5_k_m, q5_k_s, q6_k, q2_k, q3_k_m, iq4_nl,
iq4_xs, q4_1, q5_0, q5_1. DIR holds node_modules/@node-llama-cpp/linux-x64.
"""
import argparse
import ctypes
import os
import sys

# llama.h's enum llama_ftype.
FTYPES = {
    "q4_0": 2, "q4_1": 3, "q8_0": 7, "q5_0": 8, "q5_1": 9, "q2_k": 10, "q3_k_s": 11, "q3_k_m": 12,
    "q4_k_s": 14, "q4_k_m": 15, "q5_k_s": 16, "q5_k_m": 17, "q6_k": 18, "iq4_nl": 25, "iq4_xs": 30,
}


class QuantizeParams(ctypes.Structure):
    """llama.h's llama_model_quantize_params (release of node-llama-cpp 3.21.1)."""
    _fields_ = [
        ("nthread", ctypes.c_int32),
        ("ftype", ctypes.c_int),
        ("output_tensor_type", ctypes.c_int),
        ("token_embedding_type", ctypes.c_int),
        ("allow_requantize", ctypes.c_bool),
        ("quantize_output_tensor", ctypes.c_bool),
        ("only_copy", ctypes.c_bool),
        ("pure", ctypes.c_bool),
        ("keep_split", ctypes.c_bool),
        ("dry_run", ctypes.c_bool),
        ("imatrix", ctypes.c_void_p),
        ("kv_overrides", ctypes.c_void_p),
        ("tt_overrides", ctypes.c_void_p),
        ("prune_layers", ctypes.c_void_p),
        ("max_buf_size", ctypes.c_size_t),
    ]


def load_libraries(package):
    bins = os.path.join(package, "node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64")
    for name in ("libggml-base.so", "libggml.v0.4.0.so"):
        ctypes.CDLL(os.path.join(bins, name), mode=ctypes.RTLD_GLOBAL)
    llama = ctypes.CDLL(os.path.join(bins, "libllama.v0.4.0.so"))
    llama.llama_model_quantize_default_params.restype = QuantizeParams
    llama.llama_model_quantize.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(QuantizeParams)]
    llama.llama_model_quantize.restype = ctypes.c_uint32
    return llama


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", required=True)
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("type", choices=sorted(FTYPES))
    args = parser.parse_args()
    llama = load_libraries(args.package)
    llama.llama_backend_init()
    params = llama.llama_model_quantize_default_params()
    params.nthread = 2
    params.ftype = FTYPES[args.type]
    status = llama.llama_model_quantize(args.input.encode(), args.output.encode(), ctypes.byref(params))
    if status != 0:
        sys.exit(f"llama_quantize: llama_model_quantize({args.input}, {args.type}) failed with {status}")


if __name__ == "__main__":
    main()
