#include "runtime/weight_transfer.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <vector>

#include "base/byte_codec.h"
#include "loader/content_hash.h"
#include "loader/digest_memo.h"
#include "loader/manifest.h"
#include "loader/shard_stream.h"
#include "loader/weight_cache.h"

namespace inferno {
namespace {

using Clock = std::chrono::steady_clock;

// Shorter byte ranges (norms, a row at a time) are gathered up to this.
constexpr size_t kGatherBytes = size_t{1} << 20;

struct Offer {
  uint64_t bytes = 0;
  ContentDigest digest{};
  std::vector<ContentDigest> pieces;
  std::map<std::string, std::string> fingerprint;
};

std::vector<std::byte> EncodeOffer(const Offer& offer) {
  size_t size = sizeof(uint64_t) + (offer.pieces.size() + 1) * kContentDigestBytes + 2 * sizeof(uint32_t);
  for (const auto& [name, value] : offer.fingerprint)
    size += 2 * sizeof(uint32_t) + name.size() + value.size();
  std::vector<std::byte> bytes(size);
  ByteWriter writer(bytes);
  writer.Put<uint64_t>(offer.bytes);
  writer.PutBytes(offer.digest);
  writer.Put<uint32_t>(static_cast<uint32_t>(offer.pieces.size()));
  for (const ContentDigest& piece : offer.pieces) writer.PutBytes(piece);
  writer.Put<uint32_t>(static_cast<uint32_t>(offer.fingerprint.size()));
  for (const auto& [name, value] : offer.fingerprint) {
    for (const std::string* text : {&name, &value}) {
      writer.Put<uint32_t>(static_cast<uint32_t>(text->size()));
      writer.PutString(*text);
    }
  }
  return bytes;
}

Result<Offer> DecodeOffer(std::span<const std::byte> bytes) {
  const Error malformed = Error::Corruption("weights from rank 0: a malformed offer of " +
                                            std::to_string(bytes.size()) + " bytes");
  ByteReader reader(bytes);
  Offer offer;
  std::span<const std::byte> digest;
  uint32_t pieces = 0;
  if (!reader.Get(offer.bytes) || !reader.GetBytes(kContentDigestBytes, digest) || !reader.Get(pieces) ||
      pieces != (offer.bytes + kContentPieceBytes - 1) / kContentPieceBytes) {
    return malformed;
  }
  std::memcpy(offer.digest.data(), digest.data(), kContentDigestBytes);
  offer.pieces.resize(pieces);
  for (ContentDigest& piece : offer.pieces) {
    if (!reader.GetBytes(kContentDigestBytes, digest)) return malformed;
    std::memcpy(piece.data(), digest.data(), kContentDigestBytes);
  }
  uint32_t count = 0;
  if (!reader.Get(count) || DigestOfPieces(offer.pieces) != offer.digest) return malformed;
  for (uint32_t i = 0; i < count; ++i) {
    std::string texts[2];
    for (std::string& text : texts) {
      uint32_t length = 0;
      std::span<const std::byte> view;
      if (!reader.Get(length) || !reader.GetBytes(length, view)) return malformed;
      text.assign(reinterpret_cast<const char*>(view.data()), view.size());
    }
    offer.fingerprint[texts[0]] = texts[1];
  }
  if (reader.remaining() != 0) return malformed;
  return offer;
}

Status SendU64(ProcessGroup& group, int to, uint32_t tag, uint64_t value) {
  std::array<std::byte, sizeof(uint64_t)> bytes;
  StoreLittleEndian<uint64_t>(bytes, value);
  return group.send_bytes(to, tag, bytes);
}

struct SendCounters {
  std::atomic<uint64_t> asked_bytes{0};  // of the ranks that asked to be sent their shard
  std::atomic<uint64_t> sent_bytes{0};
  std::atomic<int> ranks_sent{0};
  std::atomic<int> ranks_from_cache{0};
  std::atomic<int> digests_remembered{0};  // shards whose digests the memo held
  std::atomic<int64_t> first_piece_ns{0};  // Clock time of the first piece, 0 before it
};

// Sets `offer`'s digest and pieces of rank `rank`'s shard: one pass over
// its bytes.
Status DigestRankShard(const MappedCheckpoint& checkpoint, const ShardPlan& plan, int rank, Offer& offer) {
  PiecewiseHash hash;
  ChunkedSink sink(kGatherBytes, kContentPieceBytes, [&](std::span<const std::byte> chunk) {
    hash.Update(chunk);
    return Status{};
  });
  if (Status s = StreamRankShard(checkpoint, plan, rank, std::nullopt, sink); !s) return s;
  offer.digest = hash.Finish();
  offer.pieces = hash.pieces();
  return {};
}

// What rank `rank`'s shard bytes are made of, as the memo's key: the shard
// file format, the checkpoint's files as mapped, the plan and the rank.
// Empty when a file has no identity.
std::string MemoKey(const MappedCheckpoint& checkpoint, const ShardPlan& plan, int rank) {
  const std::string files = checkpoint.FilesIdentity();
  if (files.empty()) return "";
  return std::string(kManifestFormat) + " " + std::to_string(kManifestFormatVersion) + "\n" + files +
         "plan " + PlanDigest(plan) + "\nrank " + std::to_string(rank) + "\n";
}

// Sets `offer`'s digest and pieces of rank `rank`'s shard: from `memo` when
// it remembers them, else by one pass over the shard's bytes (then
// remembered there).
Status OfferDigests(const MappedCheckpoint& checkpoint, const ShardPlan& plan, int rank,
                    const DigestMemo* memo, Offer& offer, SendCounters& counters) {
  const std::string key = memo != nullptr ? MemoKey(checkpoint, plan, rank) : "";
  if (!key.empty()) {
    if (std::optional<PieceDigests> known = memo->Find(key); known && known->bytes == offer.bytes) {
      offer.digest = known->digest;
      offer.pieces = std::move(known->pieces);
      ++counters.digests_remembered;
      return {};
    }
  }
  if (Status s = DigestRankShard(checkpoint, plan, rank, offer); !s) return s;
  if (!key.empty()) {
    if (Status s = memo->Store(key, {offer.bytes, offer.digest, offer.pieces}); !s) {
      return s.error().Prefixed("--cache: remembering the shard's digests: ");
    }
  }
  return {};
}

Status SendToRank(ProcessGroup& group, const MappedCheckpoint& checkpoint, const ShardPlan& plan, int rank,
                  const DigestMemo* memo, const std::map<std::string, std::string>& fingerprint,
                  SendCounters& counters) {
  Offer offer;
  offer.bytes = RankShardBytes(checkpoint, plan, rank, std::nullopt);
  if (Status s = OfferDigests(checkpoint, plan, rank, memo, offer, counters); !s) return s;
  offer.fingerprint = fingerprint;
  if (Status s = group.send_bytes(rank, kWeightOfferTag, EncodeOffer(offer)); !s) return s;
  Result<Payload> answer = group.recv_payload(rank, kWeightAnswerTag);
  if (!answer) return answer.error();
  if (answer->size() != 1) return Error::Corruption("a malformed answer to the offer");
  if (answer->bytes()[0] == std::byte{0}) {
    ++counters.ranks_from_cache;
    return {};
  }
  counters.asked_bytes += offer.bytes;
  int64_t expected = 0;
  counters.first_piece_ns.compare_exchange_strong(expected, Clock::now().time_since_epoch().count());
  uint64_t offset = 0;
  int unanswered = 0;
  const auto await_credit = [&]() -> Status {
    Result<Payload> credit = group.recv_payload(rank, kWeightAnswerTag);
    if (!credit) return credit.error();
    --unanswered;
    return {};
  };
  // The stream cut again at the pieces' fixed bounds (one copy).
  std::vector<std::byte> piece;
  piece.reserve(kContentPieceBytes);
  const auto send_piece = [&]() -> Status {
    if (unanswered == kWeightWindow) {
      if (Status s = await_credit(); !s) return s;
    }
    std::array<std::byte, sizeof(uint64_t)> head;
    StoreLittleEndian<uint64_t>(head, offset);
    if (Status s = group.send_bytes(rank, kWeightPieceTag, head, piece); !s) return s;
    offset += piece.size();
    counters.sent_bytes += piece.size();
    ++unanswered;
    piece.clear();
    return {};
  };
  ChunkedSink sink(kGatherBytes, kContentPieceBytes, [&](std::span<const std::byte> chunk) -> Status {
    while (!chunk.empty()) {
      const size_t size = std::min(chunk.size(), kContentPieceBytes - piece.size());
      piece.insert(piece.end(), chunk.begin(), chunk.begin() + static_cast<ptrdiff_t>(size));
      chunk = chunk.subspan(size);
      if (piece.size() == kContentPieceBytes) {
        if (Status s = send_piece(); !s) return s;
      }
    }
    return {};
  });
  if (Status s = StreamRankShard(checkpoint, plan, rank, std::nullopt, sink); !s) return s;
  if (!piece.empty()) {
    if (Status s = send_piece(); !s) return s;
  }
  while (unanswered > 0) {
    if (Status s = await_credit(); !s) return s;
  }
  ++counters.ranks_sent;
  return {};
}

double Megabytes(uint64_t bytes) { return static_cast<double>(bytes) / 1e6; }

}  // namespace

Status SendRankWeights(ProcessGroup& group, const MappedCheckpoint& checkpoint, const ShardPlan& plan,
                       const std::optional<std::string>& cache_folder,
                       const std::map<std::string, std::string>& fingerprint, const char* program) {
  if (group.world_size() == 1) return {};
  const Clock::time_point start = Clock::now();
  std::optional<DigestMemo> memo;
  if (cache_folder) {
    Result<DigestMemo> opened = DigestMemo::Open(*cache_folder + "/" + kDigestMemoFolder);
    if (!opened) return opened.error().Prefixed("--cache: ");
    memo = std::move(*opened);
  }
  SendCounters counters;
  std::vector<std::future<Status>> sends;
  for (int rank = 1; rank < group.world_size(); ++rank) {
    sends.push_back(std::async(std::launch::async, [&, rank] {
      ProcessGroup own = group;
      Status s = SendToRank(own, checkpoint, plan, rank, memo ? &*memo : nullptr, fingerprint, counters);
      return s ? s : s.error().Prefixed("sending weights to rank " + std::to_string(rank) + ": ");
    }));
  }
  const auto transfer_seconds = [&] {
    const int64_t first = counters.first_piece_ns.load();
    if (first == 0) return 0.0;
    return std::chrono::duration<double>(Clock::now() - Clock::time_point(Clock::duration(first))).count();
  };
  Status result;
  for (std::future<Status>& send : sends) {
    while (send.wait_for(std::chrono::seconds(1)) != std::future_status::ready) {
      const double seconds = transfer_seconds();
      std::fprintf(stderr, "%s: rank 0: sending weights: %.1f of %.1f MB (%.1f MB/s)\n", program,
                   Megabytes(counters.sent_bytes), Megabytes(counters.asked_bytes),
                   seconds > 0 ? Megabytes(counters.sent_bytes) / seconds : 0.0);
    }
    if (Status s = send.get(); !s && result) result = s;
  }
  if (!result) return result;
  const double seconds = transfer_seconds();
  const double hashing = std::chrono::duration<double>(Clock::now() - start).count() - seconds;
  std::fprintf(stderr,
               "%s: rank 0: sent %llu bytes of weights to %d rank(s) in %.2f s (%.1f MB/s, %.0f Mbit/s), "
               "after %.2f s of digests and cache checks (%d shard digest(s) remembered from --cache); %d "
               "rank(s) read "
               "theirs from their cache\n",
               program, static_cast<unsigned long long>(counters.sent_bytes.load()),
               counters.ranks_sent.load(), seconds,
               seconds > 0 ? Megabytes(counters.sent_bytes) / seconds : 0.0,
               seconds > 0 ? 8 * Megabytes(counters.sent_bytes) / seconds : 0.0, hashing,
               counters.digests_remembered.load(), counters.ranks_from_cache.load());
  return {};
}

Result<ReceivedWeights> ReceiveRankWeights(ProcessGroup& group,
                                           const std::optional<std::string>& cache_folder,
                                           const char* program) {
  const int rank = group.rank();
  Result<Payload> offer_bytes = group.recv_payload(0, kWeightOfferTag);
  if (!offer_bytes) return offer_bytes.error().Prefixed("waiting for rank 0's offer of weights: ");
  Result<Offer> offer = DecodeOffer(offer_bytes->bytes());
  if (!offer) return offer.error();
  ReceivedWeights received;
  received.leader_fingerprint = offer->fingerprint;
  std::optional<WeightCache> cache;
  if (cache_folder) {
    Result<WeightCache> opened = WeightCache::Open(*cache_folder);
    if (!opened) return opened.error().Prefixed("--cache: ");
    cache = std::move(*opened);
    const std::string path = cache->PathOf(offer->digest);
    const Status held = cache->Verify(offer->digest, offer->bytes);
    if (held) {
      Result<std::unique_ptr<MappedFile>> file = MappedFile::Open(path);
      if (!file) return file.error().Prefixed("--cache: ");
      if (Status s = group.send_bytes(0, kWeightAnswerTag, std::array{std::byte{0}}); !s) return s.error();
      std::fprintf(stderr, "%s: rank %d: weights: received 0 bytes; read %llu bytes from the cache: %s\n",
                   program, rank, static_cast<unsigned long long>(offer->bytes), path.c_str());
      received.file = std::move(*file);
      return received;
    }
    if (held.error().kind == ErrorKind::kCorruption) {
      std::fprintf(stderr, "%s: rank %d: --cache: a damaged entry (%s): fetching it again\n", program, rank,
                   held.error().message.c_str());
    } else if (held.error().kind != ErrorKind::kNotFound) {
      return held.error().Prefixed("--cache: ");
    }
  }
  std::optional<WeightCacheWriter> writer;
  std::vector<std::byte> memory;
  if (cache) {
    Result<WeightCacheWriter> begun = cache->Begin(offer->digest, offer->bytes);
    if (!begun) return begun.error().Prefixed("--cache: ");
    writer.emplace(std::move(*begun));
  } else {
    memory.resize(offer->bytes);
  }
  if (Status s = group.send_bytes(0, kWeightAnswerTag, std::array{std::byte{1}}); !s) return s.error();
  const std::string total = " of " + std::to_string(offer->bytes);
  for (uint64_t offset = 0, piece = 0; offset < offer->bytes; ++piece) {
    Result<Payload> message = group.recv_payload(0, kWeightPieceTag);
    if (!message) {
      return message.error().Prefixed("weights from rank 0: cut after " + std::to_string(offset) + total +
                                      " bytes: ");
    }
    ByteReader reader(message->bytes());
    uint64_t at = 0;
    if (!reader.Get(at) || at != offset ||
        reader.remaining() != std::min<uint64_t>(kContentPieceBytes, offer->bytes - offset)) {
      return Error::Corruption("weights from rank 0: piece " + std::to_string(piece) + " (" +
                               std::to_string(message->size()) + " bytes, at offset " + std::to_string(at) +
                               ") does not follow byte " + std::to_string(offset) + total);
    }
    const std::span<const std::byte> bytes = reader.rest();
    const std::string where = "piece " + std::to_string(piece) + " (bytes " + std::to_string(offset) + "-" +
                              std::to_string(offset + bytes.size() - 1) + total + ")";
    ContentDigest found;
    if (writer) {
      if (Status s = writer->Append(bytes); !s) return s.error().Prefixed("--cache: " + where + ": ");
      found = writer->pieces().back();
    } else {
      found = DigestOf(bytes);
      std::memcpy(memory.data() + offset, bytes.data(), bytes.size());
    }
    if (found != offer->pieces[piece]) {
      return Error::Corruption("weights from rank 0: " + where + " does not hash to its offered digest");
    }
    offset += bytes.size();
    received.bytes_received += bytes.size();
    if (Status s = SendU64(group, 0, kWeightAnswerTag, at); !s) return s.error();
  }
  std::string where = "memory";
  if (writer) {
    if (Status s = writer->Commit(); !s) return s.error().Prefixed("weights from rank 0: ");
    where = "the cache: " + cache->PathOf(offer->digest);
    Result<std::unique_ptr<MappedFile>> file = MappedFile::Open(cache->PathOf(offer->digest));
    if (!file) return file.error().Prefixed("--cache: ");
    received.file = std::move(*file);
  } else {
    received.file =
        MappedFile::FromBytes("rank " + std::to_string(rank) + "'s weights from rank 0", std::move(memory));
  }
  std::fprintf(stderr, "%s: rank %d: weights: received %llu bytes from rank 0, kept in %s\n", program, rank,
               static_cast<unsigned long long>(received.bytes_received), where.c_str());
  return received;
}

}  // namespace inferno
