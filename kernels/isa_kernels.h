// Internal to //kernels:kernels: the kernels built once per instruction set —
// MatMul's row loops (matmul_kernels.inc) and the vector kernels
// (vector_kernels.inc) — each set in its own translation unit
// (isa_kernels_<isa>.cc, with its own -m flags in engine/BUILD), chosen once
// at run time by what the CPU supports (kernels.cc), so a plain `-c opt`
// build runs the same AVX2 / AVX-512 code as a -march=native one.
//
// Thread-safety: pure functions.
#pragma once

#include "kernels/matmul_kernels.h"
#include "kernels/vector_kernels.h"

namespace inferno::isa_internal {

struct IsaKernels {
  const char* name;  // "baseline", "avx2", "avx512vnni"
  matmul_internal::MatMulKernels matmul;
  vector_internal::VectorKernels vector;
};

// The build target's code (baseline x86-64 unless -march says more).
IsaKernels BaselineKernels();
// AVX2 + FMA + F16C. Precondition: the CPU has them.
IsaKernels Avx2Kernels();
// AVX-512 F/BW/VL + VNNI (512-bit vectors; the block types with VPDPBUSD,
// one row per lane). Precondition: the CPU has them. Not linked in a build
// with --define=inferno_avx512_kernels=off (kernels/BUILD), where
// INFERNO_HAS_AVX512VNNI_KERNELS is not defined.
IsaKernels Avx512VnniKernels();

}  // namespace inferno::isa_internal
