#include "loader/digest_memo.h"

#include <cstring>
#include <filesystem>
#include <system_error>

#include "base/byte_codec.h"
#include "loader/atomic_file.h"
#include "loader/mapped_file.h"

namespace inferno {
namespace {

constexpr char kMagic[] = "inferno-digests1";
constexpr size_t kMagicBytes = sizeof(kMagic) - 1;

std::span<const std::byte> AsBytes(const std::string& text) {
  return std::as_bytes(std::span(text.data(), text.size()));
}

}  // namespace

Result<DigestMemo> DigestMemo::Open(const std::string& folder) {
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec) return Error::Io(folder + ": cannot make the digest memo's folder: " + ec.message());
  return DigestMemo(folder);
}

std::string DigestMemo::PathOf(const std::string& key) const {
  return folder_ + "/" + DigestHex(DigestOf(AsBytes(key))) + ".digests";
}

std::optional<PieceDigests> DigestMemo::Find(const std::string& key) const {
  std::error_code ec;
  const std::string path = PathOf(key);
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  Result<std::unique_ptr<MappedFile>> file = MappedFile::Open(path);
  if (!file) return std::nullopt;
  ByteReader reader((*file)->bytes());
  std::span<const std::byte> view;
  uint32_t key_bytes = 0;
  if (!reader.GetBytes(kMagicBytes, view) || std::memcmp(view.data(), kMagic, kMagicBytes) != 0 ||
      !reader.Get(key_bytes) || !reader.GetBytes(key_bytes, view) ||
      std::string_view(reinterpret_cast<const char*>(view.data()), view.size()) != key) {
    return std::nullopt;
  }
  PieceDigests digests;
  uint32_t pieces = 0;
  if (!reader.Get(digests.bytes) || !reader.GetBytes(kContentDigestBytes, view)) return std::nullopt;
  std::memcpy(digests.digest.data(), view.data(), kContentDigestBytes);
  if (!reader.Get(pieces) || pieces != (digests.bytes + kContentPieceBytes - 1) / kContentPieceBytes ||
      reader.remaining() != uint64_t{pieces} * kContentDigestBytes) {
    return std::nullopt;
  }
  digests.pieces.resize(pieces);
  for (ContentDigest& piece : digests.pieces) {
    if (!reader.GetBytes(kContentDigestBytes, view)) return std::nullopt;
    std::memcpy(piece.data(), view.data(), kContentDigestBytes);
  }
  if (DigestOfPieces(digests.pieces) != digests.digest) return std::nullopt;
  return digests;
}

Status DigestMemo::Store(const std::string& key, const PieceDigests& digests) const {
  std::vector<std::byte> bytes(kMagicBytes + sizeof(uint32_t) + key.size() + sizeof(uint64_t) +
                               (digests.pieces.size() + 1) * kContentDigestBytes + sizeof(uint32_t));
  ByteWriter writer(bytes);
  writer.PutString(std::string_view(kMagic, kMagicBytes));
  writer.Put<uint32_t>(static_cast<uint32_t>(key.size()));
  writer.PutString(key);
  writer.Put<uint64_t>(digests.bytes);
  writer.PutBytes(digests.digest);
  writer.Put<uint32_t>(static_cast<uint32_t>(digests.pieces.size()));
  for (const ContentDigest& piece : digests.pieces) writer.PutBytes(piece);
  Result<AtomicFile> file = AtomicFile::Create(PathOf(key));
  if (!file) return file.error();
  if (Status s = file->Write(bytes); !s) return s;
  return file->Commit();
}

}  // namespace inferno
