// AllReduce: the one collective a tensor-parallel TransformerStage needs —
// an in-place sum of a float vector over the ranks of its stage. The stage
// knows this interface, not how the ranks reach each other;
// runtime/tensor_parallel_group.h implements it over a ProcessGroup.
//
// Thread-safety: an implementation is driven by one thread at a time (the
// stage's owner).
#pragma once

#include <span>

#include "base/error.h"

namespace inferno {

class AllReduce {
 public:
  virtual ~AllReduce() = default;

  // This rank's index in the group: the stage's tensor-parallel index.
  virtual int rank() const = 0;

  // data (n) = the element-wise sum of every rank's `data` (n), the same bits
  // on every rank. A collective: every rank of the group calls it, in the
  // same order, with the same n. Errors: a lost or late peer, naming it and
  // the op; `data` is then unspecified.
  virtual Status Sum(std::span<float> data) = 0;
};

}  // namespace inferno
