// The kernels built for AVX2 + FMA + F16C (flags in engine/BUILD).
#define INFERNO_ISA_KERNELS Avx2Kernels
#define INFERNO_ISA_NAME "avx2"
#include "kernels/isa_kernels.inc"
