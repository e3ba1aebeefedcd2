// Weight transfer (infer --fetch-weights): rank 0, the leader, holds the
// checkpoint and streams every other rank its own shard — the bytes of the
// file the sharding job would write for that rank (loader/shard_stream.h) —
// over the job's ProcessGroup, so encrypted and authenticated by CURVE like
// all its traffic (the job's secret; or plain under INFERNO_INSECURE=1).
// A rank with a cache (--cache DIR, loader/weight_cache.h) keeps what it
// received under its content hash and next time receives nothing. Rank 0
// with --cache DIR remembers each shard's digests in DIR/digests
// (loader/digest_memo.h), keyed by the checkpoint's files as mapped, so a
// start with warm caches does not read and hash the model first.
//
// Protocol, between rank 0 and each other rank r, all of them at once:
// 1. 0 -> r, kWeightOfferTag: the shard's size (u64), its content digest
//    (32 bytes, loader/content_hash.h), its pieces' digests (u32 count, 32
//    bytes each), then rank 0's run fingerprint (u32 count; per entry its
//    name and value, each a u32 length and the bytes).
// 2. r -> 0, kWeightAnswerTag: one byte, 1 to be sent the shard, 0 when its
//    cache holds an intact copy (re-hashed before it answers).
// 3. If asked: 0 -> r, kWeightPieceTag, the shard in order in the pieces of
//    content_hash.h (kContentPieceBytes, the last shorter), each [offset
//    u64] followed by the bytes, checked on arrival against its offered
//    digest; r answers each piece, once stored, with a credit
//    (kWeightAnswerTag, its offset), and rank 0 has at most kWeightWindow
//    pieces unanswered, so neither side queues more than that.
// Every integer little-endian (base/byte_codec.h). Every wait is the
// transport's, with its deadline.
//
// Thread-safety: each function is called by one thread of its rank; the
// leader's runs a thread per rank inside.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "base/error.h"
#include "distributed/process_group.h"
#include "loader/mapped_checkpoint.h"
#include "loader/mapped_file.h"
#include "loader/shard_plan.h"

namespace inferno {

inline constexpr uint32_t kWeightOfferTag = 110;
inline constexpr uint32_t kWeightAnswerTag = 111;
inline constexpr uint32_t kWeightPieceTag = 112;
inline constexpr int kWeightWindow = 8;
// Rank 0's digest memo, under its --cache folder.
inline constexpr char kDigestMemoFolder[] = "digests";

// Rank 0: sends every other rank of `group` its shard of `checkpoint` under
// `plan` (the shard job's bytes for that rank, as stored: no conversion),
// offered with `fingerprint` (see ReceiveRankWeights); with `cache_folder`,
// the shards' digests come from (or go to) its digest memo. Prints to stderr, at
// most once a second while it runs, "<program>: rank 0: sending weights: X
// of Y MB (Z MB/s)", and at the end what it sent, at what rate, and how many
// ranks read their cache instead (nothing in a world of one). Fails naming
// the rank: its transport's errors (a lost rank, a timeout).
Status SendRankWeights(ProcessGroup& group, const MappedCheckpoint& checkpoint, const ShardPlan& plan,
                       const std::optional<std::string>& cache_folder,
                       const std::map<std::string, std::string>& fingerprint, const char* program);

struct ReceivedWeights {
  // The shard file: the cache's entry, or (without a cache) the bytes
  // received, held in memory.
  std::unique_ptr<MappedFile> file;
  // Rank 0's run fingerprint, for the rank to compare its own with once it
  // has opened the shard (its rendezvous could not: it had no model then).
  std::map<std::string, std::string> leader_fingerprint;
  uint64_t bytes_received = 0;  // 0 when read from the cache
};

// Every other rank: receives its shard from rank 0 (the counterpart of
// SendRankWeights), or reads it from the cache in `cache_folder` when that
// holds an intact entry of the offered digest. A damaged entry is said on
// stderr and fetched again (its replacement is renamed over it only when
// complete and intact). Prints to stderr how many bytes it received and
// where the shard is. Fails with a one-line error: a piece that does not
// hash to its digest or comes out of order, or a shard that does not hash
// to the offered digest (Corruption, naming the piece and its bytes); a
// transfer cut by a lost rank 0 or a timeout (the transport's kind, saying
// how many bytes had come); the cache's I/O errors. Nothing received is
// ever left under the entry's final name unless complete and intact.
Result<ReceivedWeights> ReceiveRankWeights(ProcessGroup& group,
                                           const std::optional<std::string>& cache_folder,
                                           const char* program);

}  // namespace inferno
