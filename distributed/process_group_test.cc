#include "distributed/process_group.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "distributed/testing/rank_threads.h"

namespace inferno {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kTimeout{20000};
// Short enough that error tests whose peers wait in vain finish quickly.
constexpr milliseconds kErrorTimeout{1500};

// Large odd length: spans several 1 MiB segments, and with three ranks each
// ring block spans two.
constexpr size_t kLargeOddLength = 800001;

constexpr ReduceKind kAllKinds[] = {ReduceKind::kSum, ReduceKind::kProd, ReduceKind::kMin, ReduceKind::kMax,
                                    ReduceKind::kMean};

std::vector<size_t> LengthsFor(int world) {
  std::vector<size_t> lengths = {0, 1, static_cast<size_t>(world - 1), static_cast<size_t>(world + 1),
                                 kLargeOddLength};
  std::sort(lengths.begin(), lengths.end());
  lengths.erase(std::unique(lengths.begin(), lengths.end()), lengths.end());
  return lengths;
}

// Integer-valued inputs in ±[1, 5]: sums and products over up to 8 ranks are
// exact in float32, so expectations can be exact.
float InputValue(int rank, size_t index) {
  const float magnitude = static_cast<float>((rank * 5 + index * 3) % 5 + 1);
  return (rank + index) % 2 ? -magnitude : magnitude;
}

// As float32, or as int32 (whose sums and products fit as well).
template <typename T = float>
std::vector<T> Input(int rank, size_t length) {
  std::vector<T> data(length);
  for (size_t i = 0; i < length; ++i) data[i] = static_cast<T>(InputValue(rank, i));
  return data;
}

// `so_far` (the reduction over the ranks before) combined with the next
// rank's `value`; kMean sums, and the caller divides at the end.
template <typename T>
T Combined(ReduceKind kind, T so_far, T value) {
  switch (kind) {
    case ReduceKind::kSum:
    case ReduceKind::kMean:
      return so_far + value;
    case ReduceKind::kProd:
      return so_far * value;
    case ReduceKind::kMin:
      return std::min(so_far, value);
    case ReduceKind::kMax:
      return std::max(so_far, value);
  }
  return so_far;
}

// int32's kMean rounds toward zero.
template <typename T = float>
T ExpectedReduction(int world, size_t index, ReduceKind kind) {
  T result = static_cast<T>(InputValue(0, index));
  for (int rank = 1; rank < world; ++rank)
    result = Combined(kind, result, static_cast<T>(InputValue(rank, index)));
  return kind == ReduceKind::kMean ? result / static_cast<T>(world) : result;
}

std::vector<std::byte> Blob(int rank, size_t size) {
  std::vector<std::byte> blob(size);
  for (size_t i = 0; i < size; ++i) blob[i] = static_cast<std::byte>((rank * 31 + i) % 251);
  return blob;
}

// Every rank's buffer at each length, `make(rank, length)`, and their
// concatenation in rank order: what the collectives' tests send and expect.
// Built on the test's thread before its ranks start, then only read by the
// rank threads. Rank threads that remade these element by element took most
// of the test's time (at world 8, more than the collectives they checked),
// and most of all under the sanitizers.
template <typename T>
class RankBuffers {
 public:
  RankBuffers(int world, const std::vector<size_t>& lengths,
              const std::function<std::vector<T>(int, size_t)>& make) {
    for (size_t length : lengths) {
      if (buffers_.count(length) != 0) continue;
      std::vector<std::vector<T>>& buffers = buffers_[length];
      std::vector<T>& concatenated = concatenated_[length];
      for (int rank = 0; rank < world; ++rank) {
        buffers.push_back(make(rank, length));
        concatenated.insert(concatenated.end(), buffers.back().begin(), buffers.back().end());
      }
    }
  }

  const std::vector<T>& of(int rank, size_t length) const { return buffers_.at(length).at(rank); }
  const std::vector<T>& concatenated(size_t length) const { return concatenated_.at(length); }

 private:
  std::map<size_t, std::vector<std::vector<T>>> buffers_;
  std::map<size_t, std::vector<T>> concatenated_;
};

// Input<T> of every rank at each length, and its reduction over the ranks
// for each kind (as ExpectedReduction gives it, element for element), but
// at kLargeOddLength only kSum unless `every_kind_at_large_length`.
template <typename T = float>
class ReductionCases {
 public:
  ReductionCases(int world, const std::vector<size_t>& lengths, bool every_kind_at_large_length)
      : inputs_(world, lengths, [](int rank, size_t length) { return Input<T>(rank, length); }) {
    for (size_t length : lengths) {
      for (ReduceKind kind : kAllKinds) {
        if (length == kLargeOddLength && !every_kind_at_large_length && kind != ReduceKind::kSum) continue;
        std::vector<T> result = inputs_.of(0, length);
        for (int rank = 1; rank < world; ++rank) {
          const std::vector<T>& values = inputs_.of(rank, length);
          for (size_t i = 0; i < length; ++i) result[i] = Combined(kind, result[i], values[i]);
        }
        if (kind == ReduceKind::kMean) {
          for (T& value : result) value /= static_cast<T>(world);
        }
        reductions_[{length, kind}] = std::move(result);
      }
    }
  }

  const std::vector<T>& input(int rank, size_t length) const { return inputs_.of(rank, length); }
  // Null where the constructor left the pair out.
  const std::vector<T>* reduction(size_t length, ReduceKind kind) const {
    auto found = reductions_.find({length, kind});
    return found == reductions_.end() ? nullptr : &found->second;
  }

 private:
  RankBuffers<T> inputs_;
  std::map<std::pair<size_t, ReduceKind>, std::vector<T>> reductions_;
};

// A blob size per rank that differs across ranks; rank 1's spans several
// transport chunks.
size_t BlobSize(int rank) { return rank == 1 ? (3u << 20) / 2 + 7 : rank * 3 + 1; }

std::string Describe(const Status& status) { return status ? "ok" : status.error().ToString(); }

template <typename T>
std::string Describe(const Result<T>& result) {
  return result ? "ok" : result.error().ToString();
}

// Parameterized over (transport, world size).
class ProcessGroupTest : public testing::TestWithParam<std::tuple<TransportKind, int>> {
 protected:
  TransportKind kind() const { return std::get<0>(GetParam()); }
  int world() const { return std::get<1>(GetParam()); }
  std::vector<std::shared_ptr<Transport>> Transports() { return MakeTransports(kind(), world(), kTimeout); }

  // Runs `body(group)`, which returns the failures it saw, on every rank,
  // and expects none.
  template <typename Body>
  void ExpectNoRankFails(Body body) {
    const std::vector<std::vector<std::string>> results = RunRanks(Transports(), body);
    for (int rank = 0; rank < world(); ++rank) {
      EXPECT_TRUE(results[rank].empty()) << "rank " << rank << ": " << results[rank].front();
    }
  }
};

// Adds `status`'s error to `failures`, or `what` when it succeeded but its
// result does not match.
void Record(std::vector<std::string>& failures, const Status& status, bool matches, const std::string& what) {
  if (!status) {
    failures.push_back(Describe(status));
  } else if (!matches) {
    failures.push_back(what);
  }
}

// One rank's all_reduce of every length and kind `cases` holds: the
// failures it saw.
template <typename T>
std::vector<std::string> AllReduceFailures(ProcessGroup& group, const std::vector<size_t>& lengths,
                                           const ReductionCases<T>& cases) {
  std::vector<std::string> failures;
  for (size_t length : lengths) {
    for (ReduceKind kind : kAllKinds) {
      const std::vector<T>* expected = cases.reduction(length, kind);
      if (expected == nullptr) continue;
      std::vector<T> data = cases.input(group.rank(), length);
      Status status = group.all_reduce(data, kind);
      if (!status) {
        failures.push_back(Describe(status));
        continue;
      }
      if (data == *expected) continue;
      const size_t i = std::mismatch(data.begin(), data.end(), expected->begin()).first - data.begin();
      failures.push_back("length " + std::to_string(length) + " kind " +
                         std::to_string(static_cast<int>(kind)) + " index " + std::to_string(i) + ": got " +
                         std::to_string(data[i]));
    }
  }
  return failures;
}

TEST_P(ProcessGroupTest, AllReduceGivesEveryRankTheReductionForEveryKindAndLength) {
  const std::vector<size_t> lengths = LengthsFor(world());
  const ReductionCases<float> cases(world(), lengths, true);
  ExpectNoRankFails([&](ProcessGroup& group) { return AllReduceFailures(group, lengths, cases); });
}

TEST_P(ProcessGroupTest, AllGatherConcatenatesInRankOrder) {
  const std::vector<size_t> lengths = LengthsFor(world());
  const RankBuffers<float> inputs(world(), lengths, Input<float>);
  ExpectNoRankFails([&](ProcessGroup& group) {
    std::vector<std::string> failures;
    for (size_t length : lengths) {
      Result<std::vector<float>> gathered = group.all_gather(inputs.of(group.rank(), length));
      if (!gathered) {
        failures.push_back(Describe(gathered));
      } else if (*gathered != inputs.concatenated(length)) {
        failures.push_back("length " + std::to_string(length));
      }
    }
    return failures;
  });
}

TEST_P(ProcessGroupTest, BroadcastCopiesRootBufferFromEveryRoot) {
  const std::vector<size_t> lengths = LengthsFor(world());
  const RankBuffers<float> inputs(world(), lengths, Input<float>);
  ExpectNoRankFails([&](ProcessGroup& group) {
    std::vector<std::string> failures;
    for (size_t length : lengths) {
      for (int root = 0; root < world(); ++root) {
        std::vector<float> data =
            group.rank() == root ? inputs.of(root, length) : std::vector<float>(length, -99.0f);
        Status status = group.broadcast(root, data);
        if (!status) {
          failures.push_back(Describe(status));
        } else if (data != inputs.of(root, length)) {
          failures.push_back("length " + std::to_string(length) + " root " + std::to_string(root));
        }
      }
    }
    return failures;
  });
}

// The large length runs kSum only: the other kinds differ from it only in
// the operator, which the small lengths check.
TEST_P(ProcessGroupTest, Int32AllReduceGivesEveryRankTheReductionForEveryKindAndLength) {
  const std::vector<size_t> lengths = LengthsFor(world());
  const ReductionCases<int32_t> cases(world(), lengths, false);
  ExpectNoRankFails([&](ProcessGroup& group) { return AllReduceFailures(group, lengths, cases); });
}

// Byte buffers of 3 × length + 1 bytes: odd sizes, and at the large length
// several transport chunks and shared-memory slots.
size_t ByteLength(size_t length) { return 3 * length + 1; }

// int32 data moves through the same byte paths as float data of its size,
// which the float tests run at the large length; int32 runs the others.
bool Int32RunsAt(size_t length) { return length != kLargeOddLength; }

std::vector<size_t> Int32Lengths(const std::vector<size_t>& lengths) {
  std::vector<size_t> int32_lengths;
  std::copy_if(lengths.begin(), lengths.end(), std::back_inserter(int32_lengths), Int32RunsAt);
  return int32_lengths;
}

TEST_P(ProcessGroupTest, Int32AndByteAllGatherConcatenateInRankOrder) {
  const std::vector<size_t> lengths = LengthsFor(world());
  const RankBuffers<int32_t> ints_of(world(), Int32Lengths(lengths), Input<int32_t>);
  const RankBuffers<std::byte> bytes_of(
      world(), lengths, [](int rank, size_t length) { return Blob(rank, ByteLength(length)); });
  ExpectNoRankFails([&](ProcessGroup& group) {
    std::vector<std::string> failures;
    for (size_t length : lengths) {
      if (Int32RunsAt(length)) {
        std::vector<int32_t> ints(world() * length);
        Status status = group.all_gather(ints_of.of(group.rank(), length), ints);
        Record(failures, status, ints == ints_of.concatenated(length),
               "int32 length " + std::to_string(length));
      }
      std::vector<std::byte> bytes(world() * ByteLength(length));
      Status status = group.all_gather(bytes_of.of(group.rank(), length), bytes);
      Record(failures, status, bytes == bytes_of.concatenated(length),
             "bytes length " + std::to_string(length));
    }
    return failures;
  });
}

TEST_P(ProcessGroupTest, Int32AndByteBroadcastCopyRootBufferFromEveryRoot) {
  const std::vector<size_t> lengths = LengthsFor(world());
  const RankBuffers<int32_t> ints_of(world(), Int32Lengths(lengths), Input<int32_t>);
  const RankBuffers<std::byte> bytes_of(
      world(), lengths, [](int rank, size_t length) { return Blob(rank, ByteLength(length)); });
  ExpectNoRankFails([&](ProcessGroup& group) {
    std::vector<std::string> failures;
    for (size_t length : lengths) {
      for (int root = 0; root < world(); ++root) {
        const std::string where = " length " + std::to_string(length) + " root " + std::to_string(root);
        if (Int32RunsAt(length)) {
          std::vector<int32_t> ints =
              group.rank() == root ? ints_of.of(root, length) : std::vector<int32_t>(length, -99);
          Status status = group.broadcast(root, ints);
          Record(failures, status, ints == ints_of.of(root, length), "int32" + where);
        }
        std::vector<std::byte> bytes =
            group.rank() == root ? bytes_of.of(root, length) : std::vector<std::byte>(ByteLength(length));
        Status status = group.broadcast(root, bytes);
        Record(failures, status, bytes == bytes_of.of(root, length), "bytes" + where);
      }
    }
    return failures;
  });
}

TEST_P(ProcessGroupTest, ReduceScatterGivesRankItsReducedBlock) {
  const int world_size = world();
  std::vector<size_t> blocks = {0, 1, static_cast<size_t>(world_size + 1), kLargeOddLength / world_size | 1};
  std::vector<size_t> lengths;
  for (size_t block : blocks) lengths.push_back(block * world_size);
  const ReductionCases<float> cases(world_size, lengths, true);
  ExpectNoRankFails([&](ProcessGroup& group) {
    std::vector<std::string> failures;
    for (size_t block : blocks) {
      const size_t length = block * world_size;
      for (ReduceKind kind : kAllKinds) {
        Result<std::vector<float>> mine = group.reduce_scatter(cases.input(group.rank(), length), kind);
        if (!mine) {
          failures.push_back(Describe(mine));
          continue;
        }
        const auto expected = cases.reduction(length, kind)->begin() + group.rank() * block;
        if (!std::equal(mine->begin(), mine->end(), expected, expected + block)) {
          failures.push_back("block " + std::to_string(block));
        }
      }
    }
    return failures;
  });
}

TEST_P(ProcessGroupTest, GatherAndScatterMoveVariableSizeBlobs) {
  const int world_size = world();
  auto results = RunRanks(Transports(), [&](ProcessGroup& group) {
    std::vector<std::string> failures;
    for (int root = 0; root < world_size; ++root) {
      Result<std::vector<std::vector<std::byte>>> gathered =
          group.gather(root, Blob(group.rank(), BlobSize(group.rank())));
      if (!gathered) {
        failures.push_back(Describe(gathered));
        continue;
      }
      if (group.rank() == root) {
        for (int rank = 0; rank < world_size; ++rank) {
          if (gathered->size() != static_cast<size_t>(world_size) ||
              (*gathered)[rank] != Blob(rank, BlobSize(rank))) {
            failures.push_back("gather root " + std::to_string(root) + " blob " + std::to_string(rank));
          }
        }
      } else if (!gathered->empty()) {
        failures.push_back("gather gave a non-root blobs");
      }

      std::vector<std::vector<std::byte>> blobs;
      if (group.rank() == root) {
        for (int rank = 0; rank < world_size; ++rank) blobs.push_back(Blob(rank + 7, BlobSize(rank)));
      }
      Result<std::vector<std::byte>> mine = group.scatter(root, blobs);
      if (!mine) {
        failures.push_back(Describe(mine));
      } else if (*mine != Blob(group.rank() + 7, BlobSize(group.rank()))) {
        failures.push_back("scatter root " + std::to_string(root));
      }
    }
    return failures;
  });
  for (int rank = 0; rank < world_size; ++rank) {
    EXPECT_TRUE(results[rank].empty()) << "rank " << rank << ": " << results[rank].front();
  }
}

TEST_P(ProcessGroupTest, BarrierReturnsOnlyAfterEveryRankEntered) {
  const int world_size = world();
  std::atomic<int> entered{0};
  auto results = RunRanks(Transports(), [&](ProcessGroup& group) {
    std::vector<int> seen;
    for (int round = 1; round <= 3; ++round) {
      if (group.rank() == world_size - 1) std::this_thread::sleep_for(milliseconds(20));
      entered.fetch_add(1);
      Status status = group.barrier();
      if (!status) return std::vector<int>{-1};
      seen.push_back(entered.load());
      // A second barrier so no rank enters the next round before all have read.
      if (!group.barrier()) return std::vector<int>{-1};
    }
    return seen;
  });
  for (int rank = 0; rank < world_size; ++rank) {
    EXPECT_EQ(results[rank], (std::vector<int>{world_size, 2 * world_size, 3 * world_size}))
        << "rank " << rank;
  }
}

TEST_P(ProcessGroupTest, PointToPointKeepsOrderPerTagForEveryType) {
  const int world_size = world();
  constexpr int kMessages = 50;
  auto results = RunRanks(Transports(), [&](ProcessGroup& group) -> std::string {
    const int next = (group.rank() + 1) % world_size;
    const int prev = (group.rank() + world_size - 1) % world_size;
    for (int i = 0; i < kMessages; ++i) {
      const std::vector<float> floats = Input(group.rank(), i % 7);
      const std::vector<int32_t> ints = {group.rank(), i, 1 << 30};
      if (!group.send_f32(next, 1, floats)) return "send_f32";
      if (!group.send_i32(next, 2, ints)) return "send_i32";
      if (!group.send_bytes(next, 3, Blob(group.rank() + i, i))) return "send_bytes";
    }
    for (int i = 0; i < kMessages; ++i) {
      Result<std::vector<float>> floats = group.recv_f32(prev, 1);
      Result<std::vector<int32_t>> ints = group.recv_i32(prev, 2);
      Result<std::vector<std::byte>> bytes = group.recv_bytes(prev, 3);
      if (!floats || !ints || !bytes) return "recv failed at " + std::to_string(i);
      if (*floats != Input(prev, i % 7)) return "f32 #" + std::to_string(i);
      if (*ints != std::vector<int32_t>{prev, i, 1 << 30}) return "i32 #" + std::to_string(i);
      if (*bytes != Blob(prev + i, i)) return "bytes #" + std::to_string(i);
    }
    return "";
  });
  for (int rank = 0; rank < world_size; ++rank) EXPECT_EQ(results[rank], "") << "rank " << rank;
}

// (head, tail) sizes of gather-sent messages: empty parts, a small chunk
// straddling head and tail, a pooled head, and a message whose chunks
// straddle the parts and span several transport chunks.
constexpr std::pair<size_t, size_t> kGatherSizes[] = {{0, 0},    {16, 0},    {0, 24},
                                                      {16, 100}, {40000, 8}, {40000, (3u << 20) / 2 + 3}};

TEST_P(ProcessGroupTest, GatherSendArrivesAsOnePayloadInOrderPerTagWithItsLengthFromTheWire) {
  const int world_size = world();
  constexpr int kRounds = 2;
  auto results = RunRanks(Transports(), [&](ProcessGroup& group) -> std::string {
    const int next = (group.rank() + 1) % world_size;
    const int prev = (group.rank() + world_size - 1) % world_size;
    for (int round = 0; round < kRounds; ++round) {
      for (size_t i = 0; i < std::size(kGatherSizes); ++i) {
        const auto [head, tail] = kGatherSizes[i];
        const int seed = group.rank() + static_cast<int>(i) + round;
        if (!group.send_bytes(next, 4, Blob(seed, head), Blob(seed + 1, tail))) return "gather send";
        if (!group.send_bytes(next, 5, Blob(seed, i))) return "send";
      }
    }
    // Tag 5 first: a tag's messages come in order whatever the other tag holds.
    for (int round = 0; round < kRounds; ++round) {
      for (size_t i = 0; i < std::size(kGatherSizes); ++i) {
        Result<Payload> payload = group.recv_payload(prev, 5);
        if (!payload) return "recv tag 5: " + payload.error().ToString();
        const std::vector<std::byte> expected = Blob(prev + static_cast<int>(i) + round, i);
        if (payload->size() != i || !std::equal(expected.begin(), expected.end(), payload->bytes().begin())) {
          return "tag 5 #" + std::to_string(i);
        }
      }
    }
    for (int round = 0; round < kRounds; ++round) {
      for (size_t i = 0; i < std::size(kGatherSizes); ++i) {
        const auto [head, tail] = kGatherSizes[i];
        const int seed = prev + static_cast<int>(i) + round;
        std::vector<std::byte> expected = Blob(seed, head);
        const std::vector<std::byte> tail_bytes = Blob(seed + 1, tail);
        expected.insert(expected.end(), tail_bytes.begin(), tail_bytes.end());
        // The receiver cannot tell a gather from a concatenation: alternate
        // the view and the copying receive.
        if (i % 2 == 0) {
          Result<Payload> payload = group.recv_payload(prev, 4);
          if (!payload) return "recv_payload: " + payload.error().ToString();
          if (payload->size() != expected.size() ||
              !std::equal(expected.begin(), expected.end(), payload->bytes().begin())) {
            return "gathered #" + std::to_string(i) + " of " + std::to_string(payload->size()) + " bytes";
          }
        } else {
          Result<std::vector<std::byte>> bytes = group.recv_bytes(prev, 4);
          if (!bytes) return "recv_bytes: " + bytes.error().ToString();
          if (*bytes != expected) return "gathered #" + std::to_string(i) + " via recv_bytes";
        }
      }
    }
    return "";
  });
  for (int rank = 0; rank < world_size; ++rank) EXPECT_EQ(results[rank], "") << "rank " << rank;
}

TEST_P(ProcessGroupTest, PayloadStaysValidAfterLaterReceives) {
  const int world_size = world();
  auto results = RunRanks(Transports(), [&](ProcessGroup& group) -> std::string {
    const int next = (group.rank() + 1) % world_size;
    const int prev = (group.rank() + world_size - 1) % world_size;
    for (int i = 0; i < 3; ++i) {
      if (!group.send_bytes(next, 6, Blob(group.rank() + i, 64 + i))) return "send";
    }
    std::vector<Payload> kept;
    for (int i = 0; i < 3; ++i) {
      Result<Payload> payload = group.recv_payload(prev, 6);
      if (!payload) return payload.error().ToString();
      kept.push_back(std::move(*payload));
    }
    for (int i = 0; i < 3; ++i) {
      const std::vector<std::byte> expected = Blob(prev + i, 64 + i);
      if (kept[i].size() != expected.size() ||
          !std::equal(expected.begin(), expected.end(), kept[i].bytes().begin())) {
        return "payload #" + std::to_string(i);
      }
    }
    return "";
  });
  for (int rank = 0; rank < world_size; ++rank) EXPECT_EQ(results[rank], "") << "rank " << rank;
}

TEST_P(ProcessGroupTest, PointToPointThreadsRunWhileCollectivesRun) {
  const int world_size = world();
  constexpr int kThreads = 3;
  constexpr int kRounds = 20;
  auto results = RunRanks(Transports(), [&](ProcessGroup& group) -> std::string {
    const int next = (group.rank() + 1) % world_size;
    const int prev = (group.rank() + world_size - 1) % world_size;
    std::vector<std::string> thread_errors(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        const uint32_t tag = 100 + t;
        for (int round = 0; round < kRounds; ++round) {
          const std::vector<int32_t> sent = {group.rank(), t, round};
          if (!group.send_i32(next, tag, sent)) {
            thread_errors[t] = "send";
            return;
          }
          Result<std::vector<int32_t>> got = group.recv_i32(prev, tag);
          if (!got || *got != std::vector<int32_t>{prev, t, round}) {
            thread_errors[t] = "recv round " + std::to_string(round) + ": " + Describe(got);
            return;
          }
        }
      });
    }
    std::string error;
    for (int round = 0; round < kRounds && error.empty(); ++round) {
      std::vector<float> data = Input(group.rank(), 1000 + round);
      Status status = group.all_reduce(data, ReduceKind::kSum);
      if (!status)
        error = Describe(status);
      else if (data.back() != ExpectedReduction(world_size, data.size() - 1, ReduceKind::kSum)) {
        error = "all_reduce round " + std::to_string(round);
      }
    }
    for (std::thread& thread : threads) thread.join();
    for (const std::string& thread_error : thread_errors) error += thread_error;
    return error;
  });
  for (int rank = 0; rank < world_size; ++rank) EXPECT_EQ(results[rank], "") << "rank " << rank;
}

TEST_P(ProcessGroupTest, SubGroupsRunCollectivesIndependentlyOfParent) {
  const int world_size = world();
  std::vector<int> evens, odds;
  for (int rank = 0; rank < world_size; ++rank) (rank % 2 ? odds : evens).push_back(rank);
  auto results = RunRanks(Transports(), [&](ProcessGroup& group) -> std::string {
    const bool even = group.rank() % 2 == 0;
    Result<ProcessGroup> even_group = group.Split(evens);
    Result<ProcessGroup> odd_group = group.Split(odds);
    if (even_group.ok() != even) return "even split: " + Describe(even_group);
    if (odd_group.ok() == even) return "odd split: " + Describe(odd_group);
    const Result<ProcessGroup>& failed = even ? odd_group : even_group;
    if (failed.error().kind != ErrorKind::kInvalidArgument) return failed.error().ToString();
    ProcessGroup sub = even ? *even_group : *odd_group;
    const std::vector<int>& members = even ? evens : odds;
    if (sub.world_size() != static_cast<int>(members.size()) || members[sub.rank()] != group.rank()) {
      return "sub-group numbering";
    }
    for (int round = 0; round < 3; ++round) {
      // Interleave sub-group and parent collectives of different lengths.
      std::vector<float> sub_data(5, static_cast<float>(group.rank() + round));
      Status sub_status = sub.all_reduce(sub_data, ReduceKind::kSum);
      std::vector<float> parent_data(3, 1.0f);
      Status parent_status = group.all_reduce(parent_data, ReduceKind::kSum);
      if (!sub_status || !parent_status) return Describe(sub_status) + Describe(parent_status);
      float expected_sub = 0;
      for (int member : members) expected_sub += static_cast<float>(member + round);
      if (sub_data != std::vector<float>(5, expected_sub)) return "sub all_reduce";
      if (parent_data != std::vector<float>(3, static_cast<float>(world_size))) return "parent";
    }
    // A nested split: the first member of the sub-group alone.
    const int first[] = {0};
    Result<ProcessGroup> nested = sub.Split(first);
    if (nested.ok() != (sub.rank() == 0)) return "nested split: " + Describe(nested);
    if (nested.ok() && (nested->world_size() != 1 || !nested->barrier())) return "nested group";
    return "";
  });
  for (int rank = 0; rank < world_size; ++rank) EXPECT_EQ(results[rank], "") << "rank " << rank;
}

std::string ParamName(const testing::TestParamInfo<std::tuple<TransportKind, int>>& info) {
  return TransportKindName(std::get<0>(info.param)) + "_World" + std::to_string(std::get<1>(info.param));
}

// World sizes 1 to 8 cover powers of two, odd sizes and every remainder the
// algorithms split on. INFERNO_TEST_MAX_WORLD lowers the bound where a run
// is slow and looks for something else (the sanitizer passes of CI): their
// cost grows faster than linearly with the world size.
int MaxTestedWorldSize() {
  const char* bound = std::getenv("INFERNO_TEST_MAX_WORLD");
  return bound == nullptr ? 8 : std::clamp(std::atoi(bound), 1, 8);
}

INSTANTIATE_TEST_SUITE_P(AllTransports, ProcessGroupTest,
                         testing::Combine(testing::Values(TransportKind::kInProcess, TransportKind::kZmqTcp,
                                                          TransportKind::kZmqIpc, TransportKind::kShm,
                                                          TransportKind::kMixed),
                                          testing::Range(1, MaxTestedWorldSize() + 1)),
                         ParamName);

// Error cases, parameterized over the transport only.
class ProcessGroupErrorTest : public testing::TestWithParam<TransportKind> {
 protected:
  std::vector<std::shared_ptr<Transport>> Transports(int world, milliseconds timeout = kErrorTimeout) {
    return MakeTransports(GetParam(), world, timeout);
  }
};

TEST_P(ProcessGroupErrorTest, ReservedTagIsInvalidTag) {
  auto results = RunRanks(Transports(2), [](ProcessGroup& group) {
    const std::vector<float> data = {1.0f};
    Status sent = group.send_f32(1 - group.rank(), kTagReservedBase, data);
    Result<std::vector<std::byte>> received = group.recv_bytes(1 - group.rank(), 0xFFFFFFFFu);
    return std::make_pair(sent ? ErrorKind::kClosed : sent.error().kind,
                          received ? ErrorKind::kClosed : received.error().kind);
  });
  for (const auto& [send_kind, recv_kind] : results) {
    EXPECT_EQ(send_kind, ErrorKind::kInvalidTag);
    EXPECT_EQ(recv_kind, ErrorKind::kInvalidTag);
  }
}

TEST_P(ProcessGroupErrorTest, UnknownRankIsRejected) {
  auto results = RunRanks(Transports(2), [](ProcessGroup& group) {
    const std::vector<int32_t> data = {1};
    std::vector<ErrorKind> kinds;
    Status sent = group.send_i32(2, 1, data);
    kinds.push_back(sent ? ErrorKind::kClosed : sent.error().kind);
    Result<std::vector<int32_t>> received = group.recv_i32(-1, 1);
    kinds.push_back(received ? ErrorKind::kClosed : received.error().kind);
    std::vector<float> buffer(4);
    Status broadcast = group.broadcast(5, buffer);
    kinds.push_back(broadcast ? ErrorKind::kClosed : broadcast.error().kind);
    return kinds;
  });
  for (const auto& kinds : results) {
    EXPECT_EQ(kinds, std::vector<ErrorKind>(3, ErrorKind::kUnknownRank));
  }
}

// Runs `body` on 3 ranks and checks every rank failed, at least one with
// `kind` (the others may time out waiting for the rank that stopped).
template <typename Body>
void ExpectEveryRankFailsOneWith(std::vector<std::shared_ptr<Transport>> transports, ErrorKind kind,
                                 Body body) {
  auto results = RunRanks(transports, [&](ProcessGroup& group) {
    Status status = body(group);
    return status ? std::string("ok") : status.error().ToString();
  });
  bool any_of_kind = false;
  for (const std::string& result : results) {
    EXPECT_NE(result, "ok");
    any_of_kind |= result.rfind(ErrorKindName(kind), 0) == 0;
  }
  EXPECT_TRUE(any_of_kind) << ErrorKindName(kind) << " not among: " << results[0] << " | " << results[1]
                           << " | " << results[2];
}

TEST_P(ProcessGroupErrorTest, AllReduceOfDifferentLengthsIsLengthMismatch) {
  ExpectEveryRankFailsOneWith(Transports(3), ErrorKind::kLengthMismatch, [](ProcessGroup& group) {
    std::vector<float> data(group.rank() == 1 ? 5 : 4, 1.0f);
    return group.all_reduce(data, ReduceKind::kSum);
  });
}

TEST_P(ProcessGroupErrorTest, LargeAllReduceOfDifferentLengthsIsLengthMismatch) {
  ExpectEveryRankFailsOneWith(Transports(3), ErrorKind::kLengthMismatch, [](ProcessGroup& group) {
    std::vector<float> data(group.rank() == 2 ? 300001 : 300000, 1.0f);
    return group.all_reduce(data, ReduceKind::kMax);
  });
}

TEST_P(ProcessGroupErrorTest, BroadcastOfDifferentLengthIsLengthMismatchOnEveryRankRootIncluded) {
  for (const size_t root_length : {size_t{8}, size_t{100000}}) {  // tree and chain over messages
    auto results = RunRanks(Transports(3), [&](ProcessGroup& group) {
      std::vector<float> data(group.rank() == 0 ? root_length : root_length + 1, 1.0f);
      Status status = group.broadcast(0, data);
      return status ? std::string("ok") : status.error().ToString();
    });
    // The root hears from every receiver: in the shared segment from its
    // stamp; over messages from its answer, here a notice of the receiver's
    // failure. Over the chain, rank 2 hears of it from rank 1.
    for (int rank = 0; rank < 3; ++rank) {
      EXPECT_NE(results[rank].find("LengthMismatch: broadcast #"), std::string::npos) << results[rank];
      EXPECT_NE(results[rank].find("length mismatch, expected "), std::string::npos) << results[rank];
    }
    EXPECT_NE(results[0].find("rank 1"), std::string::npos) << results[0];
  }
}

// Frames that peers sent for a collective that failed are dropped, not
// taken for the next collective's, so the group goes on working.
TEST_P(ProcessGroupErrorTest, CollectivesAfterAFailedOneSucceed) {
  auto results = RunRanks(Transports(3), [](ProcessGroup& group) -> std::string {
    std::vector<float> odd(group.rank() == 2 ? 300001 : 300000, 1.0f);
    if (group.all_reduce(odd, ReduceKind::kSum)) return "the mismatched all_reduce succeeded";
    std::vector<float> root_longer(group.rank() == 0 ? 9 : 8, 1.0f);
    if (group.broadcast(0, root_longer)) return "the mismatched broadcast succeeded";
    // Rank 1 fails before sending anything (its output buffer is too short);
    // the others hear of it over messages, or wait out their deadline in
    // the shared segment.
    std::vector<float> gathered(group.rank() == 1 ? 5 : 6);
    if (group.all_gather(std::vector<float>(2, 1.0f), gathered)) return "the bad all_gather succeeded";
    std::vector<float> data = Input(group.rank(), kLargeOddLength);
    if (Status status = group.all_reduce(data, ReduceKind::kSum); !status) return status.error().ToString();
    for (size_t i = 0; i < data.size(); ++i) {
      if (data[i] != ExpectedReduction(3, i, ReduceKind::kSum)) return "wrong sum at " + std::to_string(i);
    }
    std::vector<float> small = Input(group.rank(), 5);
    if (Status status = group.broadcast(1, small); !status) return status.error().ToString();
    if (small != Input(1, 5)) return "wrong broadcast";
    return Describe(group.barrier());
  });
  for (int rank = 0; rank < 3; ++rank) EXPECT_EQ(results[rank], "ok") << "rank " << rank;
}

TEST_P(ProcessGroupErrorTest, DifferentCollectivesAreCollectiveMismatch) {
  ExpectEveryRankFailsOneWith(Transports(3), ErrorKind::kCollectiveMismatch,
                              [](ProcessGroup& group) -> Status {
                                std::vector<float> data(4, 1.0f);
                                if (group.rank() == 0) {
                                  Result<std::vector<float>> gathered = group.all_gather(data);
                                  if (!gathered) return std::move(gathered).error();
                                  return {};
                                }
                                return group.all_reduce(data, ReduceKind::kSum);
                              });
}

TEST_P(ProcessGroupErrorTest, CollectiveMismatchNamesBothOps) {
  auto results = RunRanks(Transports(2), [](ProcessGroup& group) {
    std::vector<float> data(4, 1.0f);
    Status status = group.rank() == 0 ? group.barrier() : group.broadcast(1, data);
    return status ? std::string("ok") : status.error().ToString();
  });
  // Rank 0 receives rank 1's broadcast frame while in its barrier.
  EXPECT_EQ(results[0],
            "CollectiveMismatch: this rank is in barrier #0 of group 0 (rank 0 of 2) but the "
            "peer sent broadcast #0 (rank 1)");
}

TEST_P(ProcessGroupErrorTest, ClosedPeerIsPeerLostOrTimeout) {
  auto transports = Transports(3);
  auto results = RunRanks(transports, [](ProcessGroup& group) {
    if (group.rank() == 2) {
      group.transport()->Close();
      return ErrorKind::kClosed;
    }
    std::vector<float> data(1000, 1.0f);
    Status status = group.all_reduce(data, ReduceKind::kSum);
    return status ? ErrorKind::kClosed : status.error().kind;
  });
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(results[rank] == ErrorKind::kPeerLost || results[rank] == ErrorKind::kTimeout)
        << "rank " << rank << ": " << ErrorKindName(results[rank]);
  }
}

TEST_P(ProcessGroupErrorTest, PayloadReceiveAndGatherSendErrorsNameThePeerAndTag) {
  auto results = RunRanks(Transports(2), [](ProcessGroup& group) -> std::vector<std::string> {
    if (group.rank() == 1) {
      group.transport()->Close();
      return {};
    }
    const std::vector<std::byte> bytes(8);
    std::vector<std::string> errors;
    Result<Payload> lost = group.recv_payload(1, 9);
    errors.push_back(lost ? "ok" : lost.error().message);
    Result<Payload> reserved = group.recv_payload(1, kTagReservedBase);
    errors.push_back(reserved ? "ok" : reserved.error().ToString());
    Result<Payload> unknown = group.recv_payload(2, 9);
    errors.push_back(unknown ? "ok" : ErrorKindName(unknown.error().kind));
    Status unknown_send = group.send_bytes(-1, 9, bytes, bytes);
    errors.push_back(unknown_send ? "ok" : ErrorKindName(unknown_send.error().kind));
    return errors;
  });
  ASSERT_EQ(results[0].size(), 4u);
  EXPECT_EQ(results[0][0].rfind("recv from rank 1 tag 0x00000009", 0), 0u) << results[0][0];
  EXPECT_EQ(results[0][0].find("recv from rank 1 tag 0x00000009", 1), std::string::npos)
      << "the call named twice: " << results[0][0];
  EXPECT_EQ(results[0][1].rfind("InvalidTag: recv from rank 1 tag 0xfff00000", 0), 0u) << results[0][1];
  EXPECT_EQ(results[0][2], "UnknownRank");
  EXPECT_EQ(results[0][3], "UnknownRank");
}

TEST_P(ProcessGroupErrorTest, AbortEndsWaitsBetweenOtherRanksWithItsReason) {
  // Nothing here waits in vain unless the notice is lost, so a long timeout
  // costs nothing; at 1.5 s this case timed out twice under ASan on a loaded
  // machine before the notice arrived.
  auto results = RunRanks(Transports(3, kTimeout), [](ProcessGroup& group) -> std::string {
    if (group.rank() == 2) {
      // Let the others start waiting on each other first.
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      group.transport()->Abort("rank 2 lost rank 9 in all_reduce #4");
      return "aborted";
    }
    // Ranks 0 and 1 wait on each other: only the notice can end this early.
    Result<std::vector<float>> got = group.recv_f32(1 - group.rank(), 5);
    return got ? std::string("ok") : got.error().ToString();
  });
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(results[rank].rfind("PeerLost: ", 0), 0u) << results[rank];
    EXPECT_NE(results[rank].find("rank 2 gave up on the job: rank 2 lost rank 9 in all_reduce #4"),
              std::string::npos)
        << results[rank];
  }
}

// The root's InvalidArgument reaches every other rank at once, quoted in a
// CollectiveMismatch, instead of leaving them to time out.
TEST_P(ProcessGroupErrorTest, ScatterWithWrongBlobCountFailsOnEveryRankNamingTheRootsError) {
  auto results = RunRanks(Transports(3, kTimeout), [](ProcessGroup& group) {
    std::vector<std::vector<std::byte>> blobs(group.rank() == 0 ? 2 : 0);
    Result<std::vector<std::byte>> mine = group.scatter(0, blobs);
    return mine ? std::string("ok") : mine.error().ToString();
  });
  EXPECT_EQ(results[0].rfind("InvalidArgument: ", 0), 0u) << results[0];
  EXPECT_NE(results[0].find("root passed 2 blobs, expected 3"), std::string::npos) << results[0];
  for (int rank = 1; rank < 3; ++rank) {
    EXPECT_EQ(results[rank].rfind("CollectiveMismatch: ", 0), 0u) << results[rank];
    EXPECT_NE(results[rank].find("rank 0 failed it: InvalidArgument: "), std::string::npos) << results[rank];
    EXPECT_NE(results[rank].find("root passed 2 blobs, expected 3"), std::string::npos) << results[rank];
  }
}

INSTANTIATE_TEST_SUITE_P(AllTransports, ProcessGroupErrorTest,
                         testing::Values(TransportKind::kInProcess, TransportKind::kZmqTcp,
                                         TransportKind::kZmqIpc, TransportKind::kShm, TransportKind::kMixed),
                         [](const auto& info) { return TransportKindName(info.param); });

}  // namespace
}  // namespace inferno
