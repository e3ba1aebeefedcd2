// The one byte codec of the tree: fixed-width integers and IEEE floats in
// little-endian order, whatever the host's order, for every format the
// project writes — the transport's frame header, the pipeline's message
// headers, the gathered timelines, the checkpoint headers.
//
//   std::vector<std::byte> bytes(16);
//   ByteWriter writer(bytes);
//   writer.Put<uint32_t>(7);
//   writer.Put<double>(0.5);
//
//   ByteReader reader(bytes);
//   uint32_t tag;
//   if (!reader.Get(tag)) return Error::Corruption("short header");
//
// Thread-safety: a writer or reader is used by one thread at a time; the
// bytes it views must outlive it.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <type_traits>

#include <glog/logging.h>

namespace inferno {

template <typename T>
concept WireScalar = (std::is_integral_v<T> || std::is_same_v<T, float> ||
                      std::is_same_v<T, double>)&&!std::is_same_v<T, bool>;

// Stores `value` at out[0, sizeof(T)) in little-endian order.
// Precondition: out.size() >= sizeof(T).
template <WireScalar T>
void StoreLittleEndian(std::span<std::byte> out, T value) {
  using Bits =
      std::make_unsigned_t<std::conditional_t<std::is_floating_point_v<T>,
                                              std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>, T>>;
  const Bits bits = std::bit_cast<Bits>(value);
  for (size_t i = 0; i < sizeof(T); ++i) out[i] = static_cast<std::byte>(bits >> (8 * i));
}

// Loads a little-endian T from in[0, sizeof(T)). Precondition: in.size() >= sizeof(T).
template <WireScalar T>
T LoadLittleEndian(std::span<const std::byte> in) {
  using Bits =
      std::make_unsigned_t<std::conditional_t<std::is_floating_point_v<T>,
                                              std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>, T>>;
  Bits bits = 0;
  for (size_t i = 0; i < sizeof(T); ++i) bits |= static_cast<Bits>(static_cast<Bits>(in[i]) << (8 * i));
  return std::bit_cast<T>(bits);
}

// Writes values one after another into a buffer the caller sized up front.
// Writing past the end is a programmer error (CHECK).
class ByteWriter {
 public:
  explicit ByteWriter(std::span<std::byte> out) : out_(out) {}

  template <WireScalar T>
  void Put(T value) {
    StoreLittleEndian(Next(sizeof(T)), value);
  }
  void PutBytes(std::span<const std::byte> bytes) {
    if (!bytes.empty()) std::memcpy(Next(bytes.size()).data(), bytes.data(), bytes.size());
  }
  void PutString(std::string_view text) { PutBytes(std::as_bytes(std::span<const char>(text))); }

  // Bytes written so far.
  size_t offset() const { return offset_; }

 private:
  std::span<std::byte> Next(size_t size) {
    CHECK_LE(size, out_.size() - offset_) << "ByteWriter: writing past the end of the buffer";
    const std::span<std::byte> next = out_.subspan(offset_, size);
    offset_ += size;
    return next;
  }

  std::span<std::byte> out_;
  size_t offset_ = 0;
};

// Reads values one after another; a read that would pass the end fails
// (returns false) and leaves the reader where it was.
class ByteReader {
 public:
  explicit ByteReader(std::span<const std::byte> in) : in_(in) {}

  template <WireScalar T>
  [[nodiscard]] bool Get(T& value) {
    if (remaining() < sizeof(T)) return false;
    value = LoadLittleEndian<T>(in_.subspan(offset_));
    offset_ += sizeof(T);
    return true;
  }
  // The next `size` bytes, viewed in place.
  [[nodiscard]] bool GetBytes(size_t size, std::span<const std::byte>& bytes) {
    if (remaining() < size) return false;
    bytes = in_.subspan(offset_, size);
    offset_ += size;
    return true;
  }

  size_t offset() const { return offset_; }
  size_t remaining() const { return in_.size() - offset_; }
  // Everything not read yet.
  std::span<const std::byte> rest() const { return in_.subspan(offset_); }

 private:
  std::span<const std::byte> in_;
  size_t offset_ = 0;
};

}  // namespace inferno
