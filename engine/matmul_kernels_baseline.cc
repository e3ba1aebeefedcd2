// MatMul's row loops built for the baseline instruction set (flags in engine/BUILD).
#define INFERNO_ISA_KERNELS BaselineKernels
#define INFERNO_ISA_NAME "baseline"
#include "engine/matmul_kernels.inc"
