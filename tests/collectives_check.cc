// collectives_check: one rank of the multi-process collective tests. Run under
// //tools:launch; every rank joins from the environment and runs every
// ProcessGroup call with exact expectations (integer-valued floats), at lengths
// {0, 1, W-1, W+1, 100003}, with every ReduceKind, every broadcast/gather/scatter
// root, point-to-point in a ring (f32, i32, bytes, same-tag ordering, from a
// second thread while collectives run), sub-groups, and the argument errors.
//
// Prints "rank R: OK (N checks)" and exits 0, or one line per failed check and
// exits 1. Flags: --ipc: peers on this host talk over ipc:// (default tcp://).
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "distributed/process_group.h"
#include "distributed/rendezvous.h"

namespace inferno {
namespace {

class Checker {
 public:
  explicit Checker(int rank) : rank_(rank) {}

  void Expect(bool ok, const std::string& what) {
    ++checks_;
    if (ok) return;
    ++failures_;
    std::printf("rank %d: FAILED: %s\n", rank_, what.c_str());
    std::fflush(stdout);
  }

  // Records a failure if `result` is an error; returns whether it is a value.
  template <typename R>
  bool Succeeded(const R& result, const std::string& what) {
    Expect(result.ok(), result.ok() ? what : what + ": " + result.error().ToString());
    return result.ok();
  }

  // Expects `result` to fail with `kind`.
  template <typename R>
  void ExpectError(const R& result, ErrorKind kind, const std::string& what) {
    Expect(!result.ok() && result.error().kind == kind,
           what + ": expected " + ErrorKindName(kind) + ", got " +
               (result.ok() ? std::string("success") : result.error().ToString()));
  }

  // Compares element by element, reporting the first difference.
  template <typename T>
  void ExpectEqual(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
    if (got.size() != want.size()) {
      Expect(false,
             what + ": length " + std::to_string(got.size()) + ", expected " + std::to_string(want.size()));
      return;
    }
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] != want[i]) {
        Expect(false, what + ": element " + std::to_string(i) + " is " +
                          std::to_string(static_cast<double>(got[i])) + ", expected " +
                          std::to_string(static_cast<double>(want[i])));
        return;
      }
    }
    Expect(true, what);
  }

  int checks() const { return checks_; }
  int failures() const { return failures_; }

 private:
  int rank_;
  int checks_ = 0;
  int failures_ = 0;
};

// Rank r's all_reduce input: (r + 1) × (i % 7 + 1).
float ReduceInput(int rank, size_t i) { return static_cast<float>((rank + 1) * (i % 7 + 1)); }

float ReduceExpected(ReduceKind kind, int world, size_t i) {
  const float k = static_cast<float>(i % 7 + 1);
  switch (kind) {
    case ReduceKind::kSum:
      return k * world * (world + 1) / 2;
    case ReduceKind::kProd: {
      float product = 1;
      for (int r = 0; r < world; ++r) product *= (r + 1) * k;
      return product;
    }
    case ReduceKind::kMin:
      return k;
    case ReduceKind::kMax:
      return k * world;
    case ReduceKind::kMean:
      return k * (world + 1) / 2;
  }
  return 0;
}

// A blob whose size and bytes identify `rank` (sizes differ across ranks).
std::vector<std::byte> BlobOf(int rank, size_t length) {
  std::vector<std::byte> blob(length % 5 + 3 * rank + 1);
  for (size_t j = 0; j < blob.size(); ++j) blob[j] = static_cast<std::byte>((rank * 7 + j) & 0xFF);
  return blob;
}

void CheckCollectives(ProcessGroup& group, size_t length, Checker& check) {
  const int rank = group.rank();
  const int world = group.world_size();
  const std::string at = " at length " + std::to_string(length);

  for (const ReduceKind kind :
       {ReduceKind::kSum, ReduceKind::kProd, ReduceKind::kMin, ReduceKind::kMax, ReduceKind::kMean}) {
    std::vector<float> data(length);  // (length)
    std::vector<float> want(length);
    for (size_t i = 0; i < length; ++i) {
      data[i] = ReduceInput(rank, i);
      want[i] = ReduceExpected(kind, world, i);
    }
    const std::string what = "all_reduce kind " + std::to_string(static_cast<int>(kind)) + at;
    if (check.Succeeded(group.all_reduce(data, kind), what)) check.ExpectEqual(data, want, what);
  }

  std::vector<float> mine(length);         // (length)
  std::vector<float> all(length * world);  // (world, length)
  for (int r = 0; r < world; ++r) {
    for (size_t i = 0; i < length; ++i) {
      all[r * length + i] = static_cast<float>(r * 1000 + i % 997);
      if (r == rank) mine[i] = all[r * length + i];
    }
  }
  auto gathered = group.all_gather(mine);
  if (check.Succeeded(gathered, "all_gather" + at)) check.ExpectEqual(*gathered, all, "all_gather" + at);

  for (int root = 0; root < world; ++root) {
    std::vector<float> data(length, -1.0f);  // (length)
    std::vector<float> want(length);
    for (size_t i = 0; i < length; ++i) want[i] = static_cast<float>(root * 10 + i % 9 + 1);
    if (rank == root) data = want;
    const std::string what = "broadcast from root " + std::to_string(root) + at;
    if (check.Succeeded(group.broadcast(root, data), what)) check.ExpectEqual(data, want, what);
  }

  {
    std::vector<float> full(length * world);  // (world, length)
    for (size_t i = 0; i < full.size(); ++i) full[i] = ReduceInput(rank, i);
    std::vector<float> want(length);
    for (size_t i = 0; i < length; ++i) want[i] = ReduceExpected(ReduceKind::kSum, world, rank * length + i);
    auto block = group.reduce_scatter(full, ReduceKind::kSum);
    if (check.Succeeded(block, "reduce_scatter" + at)) check.ExpectEqual(*block, want, "reduce_scatter" + at);
  }

  for (const int root : {0, world - 1}) {
    const std::string suffix = " at root " + std::to_string(root) + at;
    auto blobs = group.gather(root, BlobOf(rank, length));
    if (check.Succeeded(blobs, "gather" + suffix)) {
      check.Expect(blobs->size() == (rank == root ? static_cast<size_t>(world) : 0u),
                   "gather" + suffix + ": got " + std::to_string(blobs->size()) + " blobs");
      for (size_t r = 0; r < blobs->size(); ++r) {
        check.Expect((*blobs)[r] == BlobOf(static_cast<int>(r), length),
                     "gather" + suffix + ": blob of rank " + std::to_string(r));
      }
    }
    std::vector<std::vector<std::byte>> to_scatter;
    if (rank == root) {
      for (int r = 0; r < world; ++r) to_scatter.push_back(BlobOf(r + 1, length));
    }
    auto received = group.scatter(root, to_scatter);
    if (check.Succeeded(received, "scatter" + suffix)) {
      check.Expect(*received == BlobOf(rank + 1, length), "scatter" + suffix + ": wrong blob");
    }
  }
}

// A ring: every rank sends to rank+1 and receives from rank-1, with `tag`.
void CheckPointToPoint(ProcessGroup& group, uint32_t tag, int messages, Checker& check) {
  const int rank = group.rank();
  const int world = group.world_size();
  const int next = (rank + 1) % world;
  const int prev = (rank + world - 1) % world;
  const std::string at = " on tag " + std::to_string(tag);
  for (int m = 0; m < messages; ++m) {
    // Message m from rank r holds 100 + m + r floats, each r * 100000 + m + j.
    std::vector<float> out(100 + m + rank);
    for (size_t j = 0; j < out.size(); ++j) out[j] = static_cast<float>(rank * 100000 + m + j);
    check.Succeeded(group.send_f32(next, tag, out), "send_f32 #" + std::to_string(m) + at);
  }
  for (int m = 0; m < messages; ++m) {
    std::vector<float> want(100 + m + prev);
    for (size_t j = 0; j < want.size(); ++j) want[j] = static_cast<float>(prev * 100000 + m + j);
    auto got = group.recv_f32(prev, tag);
    const std::string what = "recv_f32 #" + std::to_string(m) + " (in send order)" + at;
    if (check.Succeeded(got, what)) check.ExpectEqual(*got, want, what);
  }
}

void CheckTypedPointToPoint(ProcessGroup& group, Checker& check) {
  const int rank = group.rank();
  const int world = group.world_size();
  const int next = (rank + 1) % world;
  const int prev = (rank + world - 1) % world;
  // Token ids above 2^24 are not representable as float; they must arrive exactly.
  const std::vector<int32_t> ids = {16777217 + rank, -5, 2147483647, rank};
  check.Succeeded(group.send_i32(next, 11, ids), "send_i32");
  auto got_ids = group.recv_i32(prev, 11);
  if (check.Succeeded(got_ids, "recv_i32")) {
    check.ExpectEqual(*got_ids, std::vector<int32_t>{16777217 + prev, -5, 2147483647, prev}, "recv_i32");
  }
  check.Succeeded(group.send_bytes(next, 12, BlobOf(rank, 4)), "send_bytes");
  auto got_bytes = group.recv_bytes(prev, 12);
  if (check.Succeeded(got_bytes, "recv_bytes"))
    check.Expect(*got_bytes == BlobOf(prev, 4), "recv_bytes: wrong bytes");
  check.Succeeded(group.send_bytes(next, 13, {}), "send_bytes of 0 bytes");
  auto empty = group.recv_bytes(prev, 13);
  if (check.Succeeded(empty, "recv_bytes of 0 bytes"))
    check.Expect(empty->empty(), "recv_bytes of 0 bytes: not empty");
}

void CheckArgumentErrors(ProcessGroup& group, Checker& check) {
  const std::vector<float> one = {1.0f};
  check.ExpectError(group.send_f32(0, kTagReservedBase, one), ErrorKind::kInvalidTag,
                    "send_f32 with reserved tag");
  check.ExpectError(group.recv_f32(0, 0xFFFFFFFFu), ErrorKind::kInvalidTag, "recv_f32 with reserved tag");
  check.ExpectError(group.send_f32(group.world_size(), 1, one), ErrorKind::kUnknownRank,
                    "send_f32 to rank world_size");
  check.ExpectError(group.recv_f32(-1, 1), ErrorKind::kUnknownRank, "recv_f32 from rank -1");
}

void CheckSubGroups(ProcessGroup& group, Checker& check) {
  const int rank = group.rank();
  std::vector<int> evens, odds;
  for (int r = 0; r < group.world_size(); ++r) (r % 2 == 0 ? evens : odds).push_back(r);
  for (const std::vector<int>* members : {&evens, &odds}) {
    if (members->empty()) continue;  // no odd ranks in a world of one
    const bool member = (rank % 2 == 0) == (members == &evens);
    const std::string name = members == &evens ? "even" : "odd";
    auto sub = group.Split(*members);
    if (!member) {
      check.ExpectError(sub, ErrorKind::kInvalidArgument, "Split(" + name + ") on a non-member");
      continue;
    }
    if (!check.Succeeded(sub, "Split(" + name + ")")) continue;
    check.Expect(sub->rank() == rank / 2 && sub->world_size() == static_cast<int>(members->size()),
                 "Split(" + name + "): rank " + std::to_string(sub->rank()) + " of " +
                     std::to_string(sub->world_size()));
    std::vector<float> value = {static_cast<float>(rank + 1)};
    float want = 0;
    for (const int r : *members) want += static_cast<float>(r + 1);
    if (check.Succeeded(sub->all_reduce(value, ReduceKind::kSum), "all_reduce in " + name + " sub-group")) {
      check.ExpectEqual(value, std::vector<float>{want}, "all_reduce in " + name + " sub-group");
    }
  }
}

}  // namespace
}  // namespace inferno

int main(int argc, char** argv) {
  using namespace inferno;
  RendezvousOptions options;
  options.prefer_ipc_on_same_host = argc > 1 && std::strcmp(argv[1], "--ipc") == 0;
  auto joined = JoinFromEnvironment(options);
  if (!joined) {
    std::printf("FAILED: rendezvous: %s\n", joined.error().ToString().c_str());
    return 1;
  }
  ProcessGroup group = *std::move(joined);
  const int world = group.world_size();
  Checker check(group.rank());

  check.Succeeded(group.barrier(), "barrier");
  CheckArgumentErrors(group, check);
  for (const size_t length : {size_t{0}, size_t{1}, static_cast<size_t>(world - 1),
                              static_cast<size_t>(world + 1), size_t{100003}}) {
    CheckCollectives(group, length, check);
  }
  if (world > 1) {
    CheckPointToPoint(group, /*tag=*/5, /*messages=*/3, check);
    CheckTypedPointToPoint(group, check);
    // Point-to-point from a second thread while this one runs collectives.
    Checker ring_check(group.rank());
    std::thread ring([&] { CheckPointToPoint(group, /*tag=*/9, /*messages=*/50, ring_check); });
    for (int i = 0; i < 20; ++i) CheckCollectives(group, 1000 + i, check);
    ring.join();
    check.Expect(ring_check.failures() == 0, "point-to-point beside collectives");
  }
  CheckSubGroups(group, check);
  check.Succeeded(group.barrier(), "final barrier");

  if (check.failures() > 0) return 1;
  std::printf("rank %d: OK (%d checks)\n", group.rank(), check.checks());
  return 0;
}
