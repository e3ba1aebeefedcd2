// The kernels built for the build target's instruction set (flags in engine/BUILD).
#define INFERNO_ISA_KERNELS BaselineKernels
#define INFERNO_ISA_NAME "baseline"
#include "kernels/isa_kernels.inc"
