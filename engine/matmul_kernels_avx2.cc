// MatMul's row loops built for the avx2 instruction set (flags in engine/BUILD).
#define INFERNO_ISA_KERNELS Avx2Kernels
#define INFERNO_ISA_NAME "avx2"
#include "engine/matmul_kernels.inc"
