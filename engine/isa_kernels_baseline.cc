// The kernels built for the build target's instruction set (flags in engine/BUILD).
#include "engine/isa_kernels.h"
#include "engine/matmul_kernels.inc"
#include "engine/vector_kernels.inc"

namespace inferno::isa_internal {

IsaKernels BaselineKernels() {
  return {"baseline", matmul_internal::ThisIsaMatMulKernels(), vector_internal::ThisIsaVectorKernels()};
}

}  // namespace inferno::isa_internal
