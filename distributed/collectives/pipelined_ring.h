// The pipelined ring shared by all_reduce, reduce_scatter and all_gather over
// messages (and by ProcessGroup::Split's all-gather).
//
// Thread-safety: as the CollectiveCall it runs in.
#pragma once

#include <cstddef>
#include <span>
#include <type_traits>
#include <utility>

#include "base/error.h"
#include "distributed/collectives/collective_call.h"
#include "distributed/collectives/segments.h"
#include "distributed/reduce.h"

namespace inferno {

// Which halves of the ring to run.
struct RingSteps {
  bool reduce_scatter;
  bool all_gather;
};

// `data` (on every rank the same length) is split into call.size() blocks by
// `layout`. With `reduce_scatter`, the first size()-1 steps leave block
// rank() holding op(every rank's block rank()), reduced in ring order (kMean
// then divided by the group size); with `all_gather`, the next size()-1
// steps give every rank every block (each rank starts with its own block
// rank() final). Step j sends the block received in step j-1 to the next
// rank and receives one from the previous rank, segment by segment, so each
// segment moves on as soon as it is reduced. T is float or int32_t (either
// half), or std::byte (all_gather only; `op` unused). Errors: the call's
// (Send, RecvExactly).
template <typename T>
Status RunRing(CollectiveCall& call, std::span<T> data, const BlockLayout& layout, RingSteps halves,
               ReduceKind op) {
  const int world = call.size();
  const int rank = call.rank();
  const int next = (rank + 1) % world;
  const int prev = (rank + world - 1) % world;
  const int reduce_steps = halves.reduce_scatter ? world - 1 : 0;
  const int steps = reduce_steps + (halves.all_gather ? world - 1 : 0);
  constexpr bool kReducible = !std::is_same_v<T, std::byte>;
  if (steps == 0) {
    if constexpr (kReducible) {
      if (op == ReduceKind::kMean && halves.reduce_scatter) {
        DivideBy(data.subspan(layout.offset(rank), layout.size(rank)), static_cast<T>(world));
      }
    }
    return {};
  }
  const int first_send_block = halves.reduce_scatter ? rank - 1 : rank;
  auto send_block = [&](int step) { return ((first_send_block - step) % world + world) % world; };
  auto segment = [&](int block, size_t index) {
    auto [begin, end] = SegmentRange<T>(layout.size(block), index);
    return data.subspan(layout.offset(block) + begin, end - begin);
  };
  const size_t segments = SegmentCount<T>(layout.max_size());

  for (size_t index = 0; index < segments; ++index) {
    Status sent = call.Send(next, std::as_bytes(segment(send_block(0), index)));
    if (!sent) return sent;
  }
  for (int step = 0; step < steps; ++step) {
    const int recv_block = send_block(step + 1);
    for (size_t index = 0; index < segments; ++index) {
      std::span<T> target = segment(recv_block, index);
      Result<Payload> received = call.RecvExactly(prev, target.size_bytes());
      if (!received) return std::move(received).error();
      if constexpr (kReducible) {
        if (step < reduce_steps) {
          ReduceInto(target, received->bytes(), op);
          if (step == reduce_steps - 1 && op == ReduceKind::kMean) DivideBy(target, static_cast<T>(world));
        } else {
          CopyInto(target, received->bytes());
        }
      } else {
        CopyInto(target, received->bytes());
      }
      if (step + 1 < steps) {
        Status sent = call.Send(next, std::as_bytes(target));
        if (!sent) return sent;
      }
    }
  }
  return {};
}

}  // namespace inferno
