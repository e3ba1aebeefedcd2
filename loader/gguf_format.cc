#include "loader/gguf_format.h"

#include <bit>
#include <limits>
#include <set>
#include <unordered_set>

#include <glog/logging.h>

#include "base/byte_codec.h"

namespace inferno {
namespace {

constexpr const char* kGgmlTypeNames[] = {
    "F32",   "F16",        "Q4_0",       "Q4_1",       "Q4_2",     "Q4_3",     "Q5_0",
    "Q5_1",  "Q8_0",       "Q8_1",       "Q2_K",       "Q3_K",     "Q4_K",     "Q5_K",
    "Q6_K",  "Q8_K",       "IQ2_XXS",    "IQ2_XS",     "IQ3_XXS",  "IQ1_S",    "IQ4_NL",
    "IQ3_S", "IQ2_S",      "IQ4_XS",     "I8",         "I16",      "I32",      "I64",
    "F64",   "IQ1_M",      "BF16",       "Q4_0_4_4",   "Q4_0_4_8", "Q4_0_8_8", "TQ1_0",
    "TQ2_0", "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4",    "NVFP4",    "Q1_0"};

constexpr const char* kValueTypeNames[] = {"uint8",  "int8",    "uint16", "int16",  "uint32",
                                           "int32",  "float32", "bool",   "string", "array",
                                           "uint64", "int64",   "float64"};

bool IsValueType(uint32_t type) { return type <= static_cast<uint32_t>(GgufValueType::kFloat64); }

std::string ValueTypeName(GgufValueType type) { return kValueTypeNames[static_cast<uint32_t>(type)]; }

std::string Printable(std::string_view text) { return PrintableInMessage(text); }

// Reads the file front to back; every error names the source and the byte
// offset where the faulty field starts.
class GgufReader {
 public:
  GgufReader(std::span<const std::byte> file, const std::string& source) : reader_(file), source_(source) {}

  Error Fail(size_t at, const std::string& what) const {
    return Error::Corruption(source_ + ": byte " + std::to_string(at) + ": " + what);
  }
  size_t offset() const { return reader_.offset(); }
  size_t remaining() const { return reader_.remaining(); }

  template <WireScalar T>
  Status Read(T& value, const char* what) {
    const size_t at = offset();
    if (!reader_.Get(value)) {
      return Fail(at, std::string("truncated: ") + what + " needs " + std::to_string(sizeof(T)) + " bytes, " +
                          std::to_string(remaining()) + " left");
    }
    return {};
  }

  Status ReadString(std::string& out, const char* what) {
    const size_t at = offset();
    uint64_t length = 0;
    if (Status s = Read(length, what); !s) return s;
    std::span<const std::byte> bytes;
    if (length > remaining() || !reader_.GetBytes(static_cast<size_t>(length), bytes)) {
      return Fail(at, std::string(what) + " of " + std::to_string(length) + " bytes exceeds the " +
                          std::to_string(remaining()) + " bytes left");
    }
    out.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return {};
  }

  // One scalar of `type` (not an array).
  Status ReadScalar(GgufValueType type, GgufValue::Scalar& out) {
    const size_t at = offset();
    switch (type) {
      case GgufValueType::kUint8:
        return ReadAs<uint8_t, uint64_t>(out);
      case GgufValueType::kInt8:
        return ReadAs<int8_t, int64_t>(out);
      case GgufValueType::kUint16:
        return ReadAs<uint16_t, uint64_t>(out);
      case GgufValueType::kInt16:
        return ReadAs<int16_t, int64_t>(out);
      case GgufValueType::kUint32:
        return ReadAs<uint32_t, uint64_t>(out);
      case GgufValueType::kInt32:
        return ReadAs<int32_t, int64_t>(out);
      case GgufValueType::kUint64:
        return ReadAs<uint64_t, uint64_t>(out);
      case GgufValueType::kInt64:
        return ReadAs<int64_t, int64_t>(out);
      case GgufValueType::kFloat32:
        return ReadAs<float, double>(out);
      case GgufValueType::kFloat64:
        return ReadAs<double, double>(out);
      case GgufValueType::kBool: {
        uint8_t b = 0;
        if (Status s = Read(b, "bool"); !s) return s;
        if (b > 1) return Fail(at, "bool value " + std::to_string(b) + " is neither 0 nor 1");
        out = b == 1;
        return {};
      }
      case GgufValueType::kString: {
        std::string text;
        if (Status s = ReadString(text, "string value"); !s) return s;
        out = std::move(text);
        return {};
      }
      case GgufValueType::kArray:
        break;
    }
    return Fail(at, "value type " + ValueTypeName(type) + " is not a scalar");
  }

  Status ReadValueType(GgufValueType& type, const char* what) {
    const size_t at = offset();
    uint32_t raw = 0;
    if (Status s = Read(raw, what); !s) return s;
    if (!IsValueType(raw)) return Fail(at, std::string("unknown ") + what + " " + std::to_string(raw));
    type = static_cast<GgufValueType>(raw);
    return {};
  }

  Status ReadValue(GgufValue& value) {
    if (Status s = ReadValueType(value.type, "value type"); !s) return s;
    if (!value.is_array()) {
      value.element_type = value.type;
      value.values.resize(1);
      return ReadScalar(value.type, value.values[0]);
    }
    const size_t at = offset();
    if (Status s = ReadValueType(value.element_type, "array element type"); !s) return s;
    if (value.element_type == GgufValueType::kArray) return Fail(at, "nested arrays are not supported");
    const size_t count_at = offset();
    uint64_t count = 0;
    if (Status s = Read(count, "array length"); !s) return s;
    // Every element takes at least one byte: a count above the bytes left
    // is corrupt, and is refused before anything is allocated for it.
    if (count > remaining()) {
      return Fail(count_at, "array of " + std::to_string(count) + " elements exceeds the " +
                                std::to_string(remaining()) + " bytes left");
    }
    value.values.resize(static_cast<size_t>(count));
    for (GgufValue::Scalar& element : value.values) {
      if (Status s = ReadScalar(value.element_type, element); !s) return s;
    }
    return {};
  }

 private:
  template <typename Stored, typename Held>
  Status ReadAs(GgufValue::Scalar& out) {
    Stored v{};
    if (Status s = Read(v, "value"); !s) return s;
    out = static_cast<Held>(v);
    return {};
  }

  ByteReader reader_;
  const std::string& source_;
};

bool IsSupported(uint32_t type) {
  for (GgmlType t : kGgmlSupportedTypes) {
    if (static_cast<uint32_t>(t) == type) return true;
  }
  return false;
}

Status ReadTensorInfo(GgufReader& in, std::unordered_set<std::string>& names, GgufTensorInfo& info,
                      uint64_t& offset) {
  const size_t at = in.offset();
  if (Status s = in.ReadString(info.name, "tensor name"); !s) return s;
  const std::string what = "tensor '" + Printable(info.name) + "'";
  if (info.name.empty()) return in.Fail(at, "empty tensor name");
  if (info.name.size() > kGgmlMaxNameBytes) {
    return in.Fail(at, what + ": name of " + std::to_string(info.name.size()) + " bytes exceeds ggml's " +
                           std::to_string(kGgmlMaxNameBytes));
  }
  if (!names.insert(info.name).second) return in.Fail(at, what + ": duplicate tensor name");
  const size_t dims_at = in.offset();
  uint32_t n_dims;
  if (Status s = in.Read(n_dims, "tensor dimension count"); !s) return s;
  if (n_dims > kGgmlMaxDims) {
    return in.Fail(dims_at, what + ": " + std::to_string(n_dims) + " dimensions, more than ggml's " +
                                std::to_string(kGgmlMaxDims));
  }
  for (uint32_t d = 0; d < n_dims; ++d) {
    const size_t dim_at = in.offset();
    uint64_t ne;
    if (Status s = in.Read(ne, "tensor dimension"); !s) return s;
    if (ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return in.Fail(dim_at, what + ": dimension " + std::to_string(ne) + " exceeds int64");
    }
    info.ne.push_back(static_cast<int64_t>(ne));
  }
  const size_t type_at = in.offset();
  uint32_t type;
  if (Status s = in.Read(type, "tensor type"); !s) return s;
  if (!IsSupported(type)) {
    return Error::Unimplemented(in.Fail(type_at, what + " has ggml type " + GgmlTypeName(type) +
                                                     ", which inferno does not read (it reads " +
                                                     DTypeNames() + ")")
                                    .message);
  }
  info.type = static_cast<GgmlType>(type);
  const DType dtype = GgmlTypeDType(info.type);
  const int64_t block = DTypeBlockElements(dtype);
  const int64_t row = info.ne.empty() ? 1 : info.ne[0];
  if (row % block != 0) {
    return in.Fail(dims_at, what + ": row length ne[0] = " + std::to_string(row) + " is not a multiple of " +
                                GgmlTypeName(type) + "'s block of " + std::to_string(block));
  }
  int64_t elements = 1;
  for (int64_t ne : info.ne) {
    if (__builtin_mul_overflow(elements, ne, &elements)) {
      return in.Fail(dims_at, what + ": element count overflows int64");
    }
  }
  if (Result<int64_t> bytes = DTypeBytes(dtype, elements); !bytes) {
    return in.Fail(dims_at, what + ": " + bytes.error().message);
  }
  return in.Read(offset, "tensor offset");
}

}  // namespace

DType GgmlTypeDType(GgmlType type) {
  // ggml's names are DTypeName's.
  const std::optional<DType> dtype = ParseDType(GgmlTypeName(static_cast<uint32_t>(type)));
  CHECK(dtype.has_value()) << "ggml type " << GgmlTypeName(static_cast<uint32_t>(type)) << " has no DType";
  return *dtype;
}

GgmlType DTypeGgmlType(DType dtype) {
  for (GgmlType type : kGgmlSupportedTypes) {
    if (GgmlTypeDType(type) == dtype) return type;
  }
  LOG(FATAL) << "no ggml type for " << DTypeName(dtype);
}

std::string GgmlTypeName(uint32_t type) {
  if (type < std::size(kGgmlTypeNames)) return kGgmlTypeNames[type];
  return "unknown type " + std::to_string(type);
}

std::optional<int64_t> GgufValue::AsInt() const {
  if (is_array() || values.size() != 1) return std::nullopt;
  if (const int64_t* i = std::get_if<int64_t>(&values[0])) return *i;
  if (const uint64_t* u = std::get_if<uint64_t>(&values[0])) {
    if (*u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return static_cast<int64_t>(*u);
  }
  return std::nullopt;
}

std::optional<double> GgufValue::AsFloat() const {
  if (is_array() || values.size() != 1) return std::nullopt;
  if (const double* d = std::get_if<double>(&values[0])) return *d;
  return std::nullopt;
}

const std::string* GgufValue::AsString() const {
  if (is_array() || values.size() != 1) return nullptr;
  return std::get_if<std::string>(&values[0]);
}

std::string GgufValue::TypeName() const {
  return is_array() ? "array of " + ValueTypeName(element_type) : ValueTypeName(type);
}

const GgufValue* GgufFile::Find(std::string_view key) const {
  for (const GgufKeyValue& kv : metadata) {
    if (kv.key == key) return &kv.value;
  }
  return nullptr;
}

uint64_t GgufTensorBytes(const GgufTensorInfo& tensor) {
  int64_t elements = 1;
  for (int64_t ne : tensor.ne) elements *= ne;
  return static_cast<uint64_t>(DTypeBytes(GgmlTypeDType(tensor.type), elements).value());
}

uint64_t GgufPadded(uint64_t bytes, uint64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

Result<GgufFile> ParseGgufFile(std::span<const std::byte> file, const std::string& source) {
  GgufReader in(file, source);
  GgufFile result;
  uint32_t magic;
  if (Status s = in.Read(magic, "magic"); !s) return s.error();
  if (magic != kGgufMagic) return in.Fail(0, "bad magic number (not a GGUF file)");
  if (Status s = in.Read(result.version, "version"); !s) return s.error();
  if (result.version < kGgufOldestReadVersion || result.version > kGgufVersion) {
    return in.Fail(4, "GGUF version " + std::to_string(result.version) + " is not supported (2 and 3 are)");
  }
  uint64_t tensor_count, kv_count;
  if (Status s = in.Read(tensor_count, "tensor count"); !s) return s.error();
  if (Status s = in.Read(kv_count, "metadata count"); !s) return s.error();
  // A key-value pair takes at least 8 + 4 + 1 bytes and a tensor info
  // 8 + 4 + 4 + 8: larger counts are refused before anything is allocated.
  if (kv_count > in.remaining() / 13) {
    return in.Fail(16, "metadata count " + std::to_string(kv_count) + " exceeds what the " +
                           std::to_string(in.remaining()) + " bytes left can hold");
  }
  if (tensor_count > in.remaining() / 24) {
    return in.Fail(8, "tensor count " + std::to_string(tensor_count) + " exceeds what the " +
                          std::to_string(in.remaining()) + " bytes left can hold");
  }

  std::set<std::string, std::less<>> keys;
  result.metadata.resize(static_cast<size_t>(kv_count));
  for (GgufKeyValue& kv : result.metadata) {
    const size_t at = in.offset();
    if (Status s = in.ReadString(kv.key, "metadata key"); !s) return s.error();
    if (kv.key.empty()) return in.Fail(at, "empty metadata key");
    if (!keys.insert(kv.key).second) return in.Fail(at, "duplicate metadata key '" + Printable(kv.key) + "'");
    if (Status s = in.ReadValue(kv.value); !s) {
      return Error{s.error().kind, s.error().message + " (in the value of '" + Printable(kv.key) + "')"};
    }
    if (kv.key == kGgufAlignmentKey) {
      const std::optional<int64_t> alignment = kv.value.AsInt();
      if (kv.value.type != GgufValueType::kUint32 || !alignment || *alignment == 0 ||
          !std::has_single_bit(static_cast<uint64_t>(*alignment))) {
        return in.Fail(at, std::string(kGgufAlignmentKey) + " must be a uint32 power of two");
      }
      result.alignment = static_cast<uint64_t>(*alignment);
    }
  }

  std::unordered_set<std::string> names;
  std::vector<uint64_t> offsets;
  std::vector<size_t> info_at;
  result.tensors.resize(static_cast<size_t>(tensor_count));
  for (GgufTensor& tensor : result.tensors) {
    info_at.push_back(in.offset());
    uint64_t offset;
    if (Status s = ReadTensorInfo(in, names, tensor.info, offset); !s) return s.error();
    offsets.push_back(offset);
  }
  result.data_begin = GgufPadded(in.offset(), result.alignment);
  if (result.data_begin > file.size()) {
    return in.Fail(in.offset(), "truncated: the data section would start at byte " +
                                    std::to_string(result.data_begin) + ", past the end of the " +
                                    std::to_string(file.size()) + "-byte file");
  }
  for (uint64_t i = in.offset(); i < result.data_begin; ++i) {
    if (file[i] != std::byte{0}) return in.Fail(i, "non-zero padding before the data section");
  }
  const uint64_t data_bytes = file.size() - result.data_begin;
  uint64_t expected = 0;  // where the next tensor must start, relative to the data section
  for (size_t t = 0; t < result.tensors.size(); ++t) {
    GgufTensor& tensor = result.tensors[t];
    const std::string what = "tensor '" + Printable(tensor.info.name) + "'";
    const uint64_t offset = offsets[t];
    if (offset % result.alignment != 0) {
      return in.Fail(info_at[t], what + ": data offset " + std::to_string(offset) +
                                     " is not a multiple of the alignment " +
                                     std::to_string(result.alignment));
    }
    if (offset != expected) {
      return in.Fail(info_at[t], what + ": data offset " + std::to_string(offset) +
                                     (offset < expected ? " overlaps" : " leaves a gap after") +
                                     " the previous tensor's padded data, which ends at " +
                                     std::to_string(expected));
    }
    const uint64_t bytes = GgufTensorBytes(tensor.info);
    if (bytes > data_bytes || offset > data_bytes - bytes) {
      return in.Fail(info_at[t], what + ": data [" + std::to_string(offset) + ", " +
                                     std::to_string(offset + bytes) + ") exceeds the " +
                                     std::to_string(data_bytes) + "-byte data section (truncated file?)");
    }
    tensor.begin = result.data_begin + offset;
    tensor.end = tensor.begin + bytes;
    expected = GgufPadded(offset + bytes, result.alignment);
  }
  if (data_bytes > expected) {
    return in.Fail(result.data_begin + expected,
                   "trailing bytes: the data section holds " + std::to_string(data_bytes) +
                       " bytes but its padded tensors end at " + std::to_string(expected));
  }
  return result;
}

std::string EncodeGgufHeader(const std::vector<GgufKeyValue>& metadata,
                             const std::vector<GgufTensorInfo>& tensors, uint64_t alignment) {
  CHECK(std::has_single_bit(alignment)) << alignment;
  std::string out;
  auto put = [&out](auto value) {
    char bytes[sizeof(value)];
    StoreLittleEndian(std::as_writable_bytes(std::span(bytes)), value);
    out.append(bytes, sizeof(bytes));
  };
  auto put_string = [&](const std::string& text) {
    put(static_cast<uint64_t>(text.size()));
    out += text;
  };
  auto put_scalar = [&](GgufValueType type, const GgufValue::Scalar& scalar) {
    auto u = [&] { return std::get<uint64_t>(scalar); };
    auto i = [&] { return std::get<int64_t>(scalar); };
    auto f = [&] { return std::get<double>(scalar); };
    switch (type) {
      case GgufValueType::kUint8:
        return put(static_cast<uint8_t>(u()));
      case GgufValueType::kInt8:
        return put(static_cast<int8_t>(i()));
      case GgufValueType::kUint16:
        return put(static_cast<uint16_t>(u()));
      case GgufValueType::kInt16:
        return put(static_cast<int16_t>(i()));
      case GgufValueType::kUint32:
        return put(static_cast<uint32_t>(u()));
      case GgufValueType::kInt32:
        return put(static_cast<int32_t>(i()));
      case GgufValueType::kUint64:
        return put(u());
      case GgufValueType::kInt64:
        return put(i());
      case GgufValueType::kFloat32:
        return put(static_cast<float>(f()));
      case GgufValueType::kFloat64:
        return put(f());
      case GgufValueType::kBool:
        return put(static_cast<uint8_t>(std::get<bool>(scalar)));
      case GgufValueType::kString:
        return put_string(std::get<std::string>(scalar));
      case GgufValueType::kArray:
        break;
    }
    LOG(FATAL) << "not a scalar type " << static_cast<uint32_t>(type);
  };
  put(kGgufMagic);
  put(kGgufVersion);
  put(static_cast<uint64_t>(tensors.size()));
  put(static_cast<uint64_t>(metadata.size()));
  for (const GgufKeyValue& kv : metadata) {
    put_string(kv.key);
    put(static_cast<uint32_t>(kv.value.type));
    if (kv.value.is_array()) {
      put(static_cast<uint32_t>(kv.value.element_type));
      put(static_cast<uint64_t>(kv.value.values.size()));
      for (const GgufValue::Scalar& element : kv.value.values) put_scalar(kv.value.element_type, element);
    } else {
      CHECK_EQ(kv.value.values.size(), 1u) << kv.key;
      put_scalar(kv.value.type, kv.value.values[0]);
    }
  }
  uint64_t offset = 0;
  for (const GgufTensorInfo& tensor : tensors) {
    put_string(tensor.name);
    put(static_cast<uint32_t>(tensor.ne.size()));
    for (int64_t ne : tensor.ne) put(static_cast<uint64_t>(ne));
    put(static_cast<uint32_t>(tensor.type));
    put(offset);
    offset += GgufPadded(GgufTensorBytes(tensor), alignment);
  }
  out.resize(GgufPadded(out.size(), alignment), '\0');
  return out;
}

}  // namespace inferno
