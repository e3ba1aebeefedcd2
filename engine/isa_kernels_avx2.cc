// The kernels built for AVX2 + FMA + F16C (flags in engine/BUILD).
#include "engine/isa_kernels.h"
#include "engine/matmul_kernels.inc"
#include "engine/vector_kernels.inc"

namespace inferno::isa_internal {

IsaKernels Avx2Kernels() {
  return {"avx2", matmul_internal::ThisIsaMatMulKernels(), vector_internal::ThisIsaVectorKernels()};
}

}  // namespace inferno::isa_internal
