// MatMul's row loops built for the avx512vnni instruction set (flags in engine/BUILD).
#define INFERNO_ISA_KERNELS Avx512VnniKernels
#define INFERNO_ISA_NAME "avx512vnni"
#include "engine/matmul_kernels.inc"
