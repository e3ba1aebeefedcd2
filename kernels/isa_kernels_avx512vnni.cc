// The kernels built for AVX-512 F/BW/VL + VNNI (flags in engine/BUILD).
#define INFERNO_ISA_KERNELS Avx512VnniKernels
#define INFERNO_ISA_NAME "avx512vnni"
#include "kernels/isa_kernels.inc"
