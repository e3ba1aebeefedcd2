#include "distributed/process_group.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#include <glog/logging.h>

#include "distributed/collectives/all_gather.h"
#include "distributed/collectives/all_reduce.h"
#include "distributed/collectives/barrier.h"
#include "distributed/collectives/broadcast.h"
#include "distributed/collectives/collective_call.h"
#include "distributed/collectives/gather.h"
#include "distributed/collectives/reduce_scatter.h"
#include "distributed/collectives/scatter.h"

namespace inferno {
namespace {

// Group ids live in the low bits of the reserved tags: group g's collectives
// travel under tag kTagReservedBase + g, which no user tag can equal.
constexpr uint32_t kMaxGroupId = ~kTagReservedBase;

constexpr CollectiveSpec kSplitSpec{CollectiveOp::kSplit, /*runs_in_area=*/false};

std::string HexTag(uint32_t tag) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%08x", tag);
  return text;
}

// "send to rank 2 tag 0x00000007": built only when a call fails.
std::string PointToPointWhere(const char* direction, int peer, uint32_t tag) {
  return std::string(direction) + " rank " + std::to_string(peer) + " tag " + HexTag(tag);
}

// Checks a point-to-point call's peer and tag.
Status CheckPointToPoint(const char* direction, int peer, int world, uint32_t tag) {
  if (tag >= kTagReservedBase) {
    return Error::InvalidTag(PointToPointWhere(direction, peer, tag), tag);
  }
  if (peer < 0 || peer >= world) {
    return Error::UnknownRank(PointToPointWhere(direction, peer, tag), peer, world);
  }
  return {};
}

// Copies a received payload into `T`s; its size must be a multiple of sizeof(T).
template <typename T>
Result<std::vector<T>> PayloadAs(Result<Payload> payload, const char* type_name, int from, uint32_t tag) {
  if (!payload) return std::move(payload).error();
  if (payload->size() % sizeof(T) != 0) {
    return Error::InvalidArgument(PointToPointWhere("recv from", from, tag) + ": " +
                                  std::to_string(payload->size()) + " bytes is not a whole number of " +
                                  type_name);
  }
  std::vector<T> values(payload->size() / sizeof(T));
  if (!values.empty()) std::memcpy(values.data(), payload->bytes().data(), payload->size());
  return values;
}

}  // namespace

ProcessGroup::ProcessGroup(std::shared_ptr<Transport> transport) : state_(std::make_shared<GroupState>()) {
  CHECK(transport != nullptr);
  state_->members.resize(transport->world_size());
  for (int i = 0; i < transport->world_size(); ++i) state_->members[i] = i;
  state_->ahead.resize(state_->members.size());
  state_->rank = transport->rank();
  state_->transport = std::move(transport);
  state_->group_ids = std::make_shared<GroupIdAllocator>();
}

int ProcessGroup::rank() const { return state_->rank; }

int ProcessGroup::world_size() const { return state_->size(); }

const std::shared_ptr<Transport>& ProcessGroup::transport() const { return state_->transport; }

Status ProcessGroup::barrier() { return Barrier(*state_); }

Status ProcessGroup::send_bytes(int to, uint32_t tag, std::span<const std::byte> data) {
  return send_bytes(to, tag, data, {});
}

Status ProcessGroup::send_bytes(int to, uint32_t tag, std::span<const std::byte> head,
                                std::span<const std::byte> tail) {
  Status valid = CheckPointToPoint("send to", to, world_size(), tag);
  if (!valid) return valid;
  const FrameKey key{tag, CollectiveOp::kPointToPoint, 0, head.size() + tail.size()};
  Status sent = state_->transport->Send(state_->members[to], key, head, tail, state_->NextDeadline());
  if (!sent) return WithContext(std::move(sent).error(), PointToPointWhere("send to", to, tag));
  return {};
}

Result<Payload> ProcessGroup::recv_payload(int from, uint32_t tag) {
  Status valid = CheckPointToPoint("recv from", from, world_size(), tag);
  if (!valid) return std::move(valid).error();
  Result<Message> received = state_->transport->Recv(state_->members[from], tag, state_->NextDeadline());
  if (!received) {
    return WithContext(std::move(received).error(), PointToPointWhere("recv from", from, tag));
  }
  return std::move(received->payload);
}

Result<std::vector<std::byte>> ProcessGroup::recv_bytes(int from, uint32_t tag) {
  return PayloadAs<std::byte>(recv_payload(from, tag), "bytes", from, tag);
}

Status ProcessGroup::send_f32(int to, uint32_t tag, std::span<const float> data) {
  return send_bytes(to, tag, std::as_bytes(data));
}

Status ProcessGroup::send_i32(int to, uint32_t tag, std::span<const int32_t> data) {
  return send_bytes(to, tag, std::as_bytes(data));
}

Result<std::vector<float>> ProcessGroup::recv_f32(int from, uint32_t tag) {
  return PayloadAs<float>(recv_payload(from, tag), "float32", from, tag);
}

Result<std::vector<int32_t>> ProcessGroup::recv_i32(int from, uint32_t tag) {
  return PayloadAs<int32_t>(recv_payload(from, tag), "int32", from, tag);
}

Status ProcessGroup::all_reduce(std::span<float> data, ReduceKind op) { return AllReduce(*state_, data, op); }

Status ProcessGroup::all_reduce(std::span<int32_t> data, ReduceKind op) {
  return AllReduce(*state_, data, op);
}

Status ProcessGroup::all_gather(std::span<const float> data, std::span<float> out) {
  return AllGather(*state_, data, out);
}

Status ProcessGroup::all_gather(std::span<const int32_t> data, std::span<int32_t> out) {
  return AllGather(*state_, data, out);
}

Status ProcessGroup::all_gather(std::span<const std::byte> data, std::span<std::byte> out) {
  return AllGather(*state_, data, out);
}

Result<std::vector<float>> ProcessGroup::all_gather(std::span<const float> data) {
  std::vector<float> gathered(static_cast<size_t>(world_size()) * data.size());
  Status status = all_gather(data, gathered);
  if (!status) return std::move(status).error();
  return gathered;
}

Status ProcessGroup::broadcast(int root, std::span<float> data) { return Broadcast(*state_, root, data); }

Status ProcessGroup::broadcast(int root, std::span<int32_t> data) { return Broadcast(*state_, root, data); }

Status ProcessGroup::broadcast(int root, std::span<std::byte> data) { return Broadcast(*state_, root, data); }

Result<std::vector<float>> ProcessGroup::reduce_scatter(std::span<const float> data, ReduceKind op) {
  return ReduceScatter(*state_, data, op);
}

Result<std::vector<std::vector<std::byte>>> ProcessGroup::gather(int root, std::span<const std::byte> data) {
  return Gather(*state_, root, data);
}

Result<std::vector<std::byte>> ProcessGroup::scatter(int root,
                                                     const std::vector<std::vector<std::byte>>& blobs) {
  return Scatter(*state_, root, blobs);
}

Result<ProcessGroup> ProcessGroup::Split(std::span<const int> ranks) {
  const int world = world_size();
  std::vector<bool> listed(world, false);
  for (int member : ranks) {
    if (member < 0 || member >= world) return Error::UnknownRank("split", member, world);
    if (listed[member]) {
      return Error::InvalidArgument("split: rank " + std::to_string(member) + " is listed twice");
    }
    listed[member] = true;
  }
  // Agree on a group id above every id any rank has handed out, and check that
  // every rank passed the same list (by a 24-bit hash, exact in a float).
  uint32_t list_hash = 2166136261u;
  for (int member : ranks) list_hash = (list_hash ^ static_cast<uint32_t>(member)) * 16777619u;
  list_hash &= 0xFFFFFF;
  uint32_t proposal;
  {
    std::lock_guard<std::mutex> lock(state_->group_ids->mutex);
    proposal = state_->group_ids->next;
  }
  const float mine[2] = {static_cast<float>(proposal), static_cast<float>(list_hash)};
  CollectiveCall call(*state_, kSplitSpec, 2);
  std::vector<float> all(2 * static_cast<size_t>(world));
  std::copy(mine, mine + 2, all.begin() + 2 * rank());
  Status ring = call.Run([&] { return RingAllGather(call, std::as_writable_bytes(std::span(all))); });
  if (!ring) return std::move(ring).error();
  uint32_t group_id = 0;
  for (int peer = 0; peer < world; ++peer) {
    if (all[2 * peer + 1] != static_cast<float>(list_hash)) {
      return Error::InvalidArgument(call.Describe() + ": rank " + std::to_string(peer) +
                                    " passed a different rank list");
    }
    group_id = std::max(group_id, static_cast<uint32_t>(all[2 * peer]));
  }
  if (group_id > kMaxGroupId) {
    return Error::InvalidArgument(call.Describe() + ": out of group ids");
  }
  {
    std::lock_guard<std::mutex> lock(state_->group_ids->mutex);
    state_->group_ids->next = std::max(state_->group_ids->next, group_id + 1);
  }
  auto position = std::find(ranks.begin(), ranks.end(), rank());
  if (position == ranks.end()) {
    return Error::InvalidArgument(call.Describe() + ": rank " + std::to_string(rank()) +
                                  " is not in the split list");
  }
  ProcessGroup child(state_->transport);
  child.state_->members.clear();
  for (int member : ranks) child.state_->members.push_back(state_->members[member]);
  child.state_->ahead.resize(child.state_->members.size());
  child.state_->rank = static_cast<int>(position - ranks.begin());
  child.state_->group_id = group_id;
  child.state_->group_ids = state_->group_ids;
  return child;
}

}  // namespace inferno
