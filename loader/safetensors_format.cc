#include "loader/safetensors_format.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/byte_codec.h"

namespace inferno {
namespace {

using nlohmann::json;

Error HeaderError(const std::string& source, const std::string& what) {
  return Error::Corruption(source + ": " + what);
}

std::string Printable(std::string_view text) { return PrintableInMessage(text); }

Error TensorError(const std::string& source, const std::string& name, const std::string& what) {
  return Error::Corruption(source + ": tensor '" + Printable(name) + "': " + what);
}

// Parses `text` as JSON without exceptions; fails on invalid JSON and on
// duplicate keys of the top-level object (nlohmann would keep the last one).
Result<json> ParseHeaderJson(std::string_view text, const std::string& source) {
  std::set<std::string> keys;
  std::string duplicate;
  auto on_event = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && depth == 1 && parsed.is_string()) {
      if (!keys.insert(parsed.get_ref<const std::string&>()).second && duplicate.empty()) {
        duplicate = parsed.get_ref<const std::string&>();
      }
    }
    return true;
  };
  json header;
  try {
    header = json::parse(text.begin(), text.end(), on_event, /*allow_exceptions=*/false);
  } catch (const std::exception& e) {
    return HeaderError(source, std::string("header is not valid JSON: ") + e.what());
  }
  if (header.is_discarded()) return HeaderError(source, "header is not valid JSON");
  if (!duplicate.empty()) return TensorError(source, duplicate, "duplicate tensor name in header");
  if (!header.is_object()) return HeaderError(source, "header is not a JSON object");
  return header;
}

Result<std::map<std::string, std::string>> ParseMetadata(const json& value, const std::string& source) {
  if (!value.is_object()) return HeaderError(source, "__metadata__ is not a JSON object");
  std::map<std::string, std::string> metadata;
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string())
      return HeaderError(source, "__metadata__ '" + Printable(key) + "' is not a string");
    metadata[key] = item.get<std::string>();
  }
  return metadata;
}

// Parses one tensor's entry; offsets are left relative to the data section.
Result<SafetensorsEntry> ParseEntry(const std::string& name, const json& value, const std::string& source) {
  if (name.empty()) return HeaderError(source, "empty tensor name in header");
  if (name.find('\0') != std::string::npos) return TensorError(source, name, "tensor name holds a NUL byte");
  if (!value.is_object()) return TensorError(source, name, "entry is not a JSON object");
  SafetensorsEntry entry;
  entry.info.name = name;

  auto dtype_it = value.find("dtype");
  if (dtype_it == value.end() || !dtype_it->is_string()) {
    return TensorError(source, name, "missing string 'dtype'");
  }
  const std::string& dtype_name = dtype_it->get_ref<const std::string&>();
  std::optional<DType> dtype = ParseDType(dtype_name);
  if (!dtype) {
    return TensorError(source, name,
                       "unknown dtype '" + Printable(dtype_name) + "' (supported: " + DTypeNames() + ")");
  }
  entry.info.dtype = *dtype;

  auto shape_it = value.find("shape");
  if (shape_it == value.end() || !shape_it->is_array()) {
    return TensorError(source, name, "missing array 'shape'");
  }
  uint64_t elements = 1;
  for (const json& dim : *shape_it) {
    if (!dim.is_number_unsigned()) {
      return TensorError(source, name, "shape entry " + dim.dump() + " is not a non-negative integer");
    }
    const uint64_t d = dim.get<uint64_t>();
    if (d > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(elements, d, &elements) ||
        elements > static_cast<uint64_t>(INT64_MAX)) {
      return TensorError(source, name, "shape " + shape_it->dump() + " overflows 64 bits");
    }
    entry.info.shape.push_back(static_cast<int64_t>(d));
  }
  const Result<int64_t> stored_bytes = StoredBytes(entry.info);
  if (!stored_bytes) return TensorError(source, name, stored_bytes.error().message);
  const uint64_t bytes = static_cast<uint64_t>(*stored_bytes);

  auto offsets_it = value.find("data_offsets");
  if (offsets_it == value.end() || !offsets_it->is_array() || offsets_it->size() != 2 ||
      !(*offsets_it)[0].is_number_unsigned() || !(*offsets_it)[1].is_number_unsigned()) {
    return TensorError(source, name, "'data_offsets' is not a pair of non-negative integers");
  }
  entry.begin = (*offsets_it)[0].get<uint64_t>();
  entry.end = (*offsets_it)[1].get<uint64_t>();
  if (entry.end < entry.begin) {
    return TensorError(source, name, "data offsets " + offsets_it->dump() + " end before they begin");
  }
  if (entry.end - entry.begin != bytes) {
    return TensorError(source, name,
                       "data offsets " + offsets_it->dump() + " hold " +
                           std::to_string(entry.end - entry.begin) + " bytes but shape " +
                           ShapeToString(entry.info.shape) + " x " + dtype_name + " = " +
                           std::to_string(bytes) + " bytes");
  }
  return entry;
}

}  // namespace

uint64_t TensorByteSize(const TensorInfo& tensor) {
  return static_cast<uint64_t>(StoredBytes(tensor).value());
}

Result<SafetensorsHeader> ParseSafetensorsHeader(std::span<const std::byte> file, const std::string& source) {
  if (file.size() < kSafetensorsLengthBytes) {
    return HeaderError(source, "truncated: " + std::to_string(file.size()) +
                                   " bytes, shorter than the 8-byte header length");
  }
  const uint64_t header_length = LoadLittleEndian<uint64_t>(file);
  const uint64_t available = file.size() - kSafetensorsLengthBytes;
  if (header_length > available) {
    return HeaderError(source, "header length " + std::to_string(header_length) + " exceeds the " +
                                   std::to_string(available) + " bytes after the length field");
  }
  if (header_length > kSafetensorsMaxHeaderBytes) {
    return HeaderError(source, "header length " + std::to_string(header_length) + " exceeds the limit of " +
                                   std::to_string(kSafetensorsMaxHeaderBytes) + " bytes");
  }
  const std::string_view text(reinterpret_cast<const char*>(file.data()) + kSafetensorsLengthBytes,
                              header_length);
  Result<json> header = ParseHeaderJson(text, source);
  if (!header) return header.error();

  SafetensorsHeader result;
  result.data_begin = kSafetensorsLengthBytes + header_length;
  const uint64_t data_bytes = file.size() - result.data_begin;
  for (const auto& [name, value] : header->items()) {
    if (name == kSafetensorsMetadataKey) {
      Result<std::map<std::string, std::string>> metadata = ParseMetadata(value, source);
      if (!metadata) return metadata.error();
      result.metadata = std::move(*metadata);
      continue;
    }
    Result<SafetensorsEntry> entry = ParseEntry(name, value, source);
    if (!entry) return entry.error();
    if (entry->end > data_bytes) {
      return TensorError(source, name,
                         "data offsets [" + std::to_string(entry->begin) + ", " + std::to_string(entry->end) +
                             ") exceed the " + std::to_string(data_bytes) +
                             "-byte data section (truncated file?)");
    }
    result.tensors.push_back(std::move(*entry));
  }

  std::sort(result.tensors.begin(), result.tensors.end(), [](const auto& a, const auto& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t expected_begin = 0;
  std::string previous = "the start of the data";
  for (SafetensorsEntry& entry : result.tensors) {
    if (entry.begin < expected_begin) {
      return TensorError(source, entry.info.name,
                         "data offset " + std::to_string(entry.begin) + " overlaps " + previous +
                             ", which ends at " + std::to_string(expected_begin));
    }
    if (entry.begin > expected_begin) {
      return TensorError(source, entry.info.name,
                         "data offset " + std::to_string(entry.begin) + " leaves a gap after " + previous +
                             ", which ends at " + std::to_string(expected_begin));
    }
    expected_begin = entry.end;
    previous = "tensor '" + Printable(entry.info.name) + "'";
    entry.begin += result.data_begin;
    entry.end += result.data_begin;
  }
  if (expected_begin != data_bytes) {
    return HeaderError(source, "the data section holds " + std::to_string(data_bytes) +
                                   " bytes but its tensors end at " + std::to_string(expected_begin) +
                                   " (trailing bytes)");
  }
  return result;
}

std::string EncodeSafetensorsHeader(const std::vector<TensorInfo>& tensors,
                                    const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header[kSafetensorsMetadataKey] = metadata;
  uint64_t offset = 0;
  for (const TensorInfo& tensor : tensors) {
    const uint64_t bytes = TensorByteSize(tensor);
    header[tensor.name] = {{"dtype", std::string(DTypeName(tensor.dtype))},
                           {"shape", tensor.shape},
                           {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump(-1, ' ', false, json::error_handler_t::replace);
  const uint64_t padded = (kSafetensorsLengthBytes + text.size() + kSafetensorsAlignment - 1) /
                              kSafetensorsAlignment * kSafetensorsAlignment -
                          kSafetensorsLengthBytes;
  text.resize(padded, ' ');
  std::string encoded(kSafetensorsLengthBytes, '\0');
  StoreLittleEndian<uint64_t>(std::as_writable_bytes(std::span(encoded)), padded);
  return encoded + text;
}

}  // namespace inferno
