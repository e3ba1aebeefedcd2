// The kernels built for AVX-512 F/BW/VL + VNNI (flags in engine/BUILD).
#include "engine/isa_kernels.h"
#include "engine/matmul_kernels.inc"
#include "engine/vector_kernels.inc"

namespace inferno::isa_internal {

IsaKernels Avx512VnniKernels() {
  return {"avx512vnni", matmul_internal::ThisIsaMatMulKernels(), vector_internal::ThisIsaVectorKernels()};
}

}  // namespace inferno::isa_internal
