#include "loader/mapped_checkpoint.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>

#include <glog/logging.h>

#include "loader/gguf_format.h"
#include "loader/gguf_llama.h"
#include "loader/llama2c_format.h"
#include "loader/safetensors_format.h"
#include "model/llama_layout.h"

namespace inferno {

namespace {

// Rows of a 1-D tensor are its elements, which a block type cannot address
// one by one (ggml keeps such tensors, the norms, in F32).
Status CheckRowsAddressable(const TensorInfo& info, const std::string& path) {
  if (info.shape.size() == 1 && DTypeBlockElements(info.dtype) > 1) {
    return Error::Unimplemented(path + ": tensor '" + info.name + "' is 1-D in block type " +
                                std::string(DTypeName(info.dtype)) +
                                "; store 1-D tensors as F32, F16 or BF16");
  }
  return {};
}

}  // namespace

MappedCheckpoint::MappedCheckpoint(ModelConfig config, std::vector<std::unique_ptr<MappedFile>> files,
                                   std::vector<Storage> tensors)
    : config_(std::move(config)),
      files_(std::make_move_iterator(files.begin()), std::make_move_iterator(files.end())),
      storage_(std::move(tensors)) {
  for (size_t i = 0; i < storage_.size(); ++i) {
    CHECK_LT(storage_[i].file, files_.size()) << storage_[i].info.name;
    CHECK(index_.emplace(storage_[i].info.name, i).second) << "duplicate tensor " << storage_[i].info.name;
    infos_.push_back(storage_[i].info);
  }
}

Result<std::unique_ptr<MappedCheckpoint>> MappedCheckpoint::OpenSafetensors(
    const std::vector<std::string>& paths, ModelConfig config) {
  std::vector<std::unique_ptr<MappedFile>> files;
  for (const std::string& path : paths) {
    Result<std::unique_ptr<MappedFile>> file = MappedFile::Open(path);
    if (!file) return file.error();
    files.push_back(std::move(*file));
  }
  return FromSafetensorsFiles(std::move(files), std::move(config));
}

Result<std::unique_ptr<MappedCheckpoint>> MappedCheckpoint::FromSafetensorsFiles(
    std::vector<std::unique_ptr<MappedFile>> files, ModelConfig config) {
  std::vector<Storage> tensors;
  std::unordered_map<std::string, size_t> file_of;
  for (size_t f = 0; f < files.size(); ++f) {
    const std::string& path = files[f]->path();
    Result<SafetensorsHeader> header = ParseSafetensorsHeader(files[f]->bytes(), path);
    if (!header) return header.error();
    for (SafetensorsEntry& entry : header->tensors) {
      if (Status s = CheckRowsAddressable(entry.info, path); !s) return s.error();
      auto [it, inserted] = file_of.emplace(entry.info.name, f);
      if (!inserted) {
        return Error::Corruption(path + ": tensor '" + entry.info.name + "' is also in " +
                                 files[it->second]->path());
      }
      tensors.push_back({std::move(entry.info), f, entry.begin, 0});
    }
  }
  return std::make_unique<MappedCheckpoint>(std::move(config), std::move(files), std::move(tensors));
}

Result<std::unique_ptr<MappedCheckpoint>> MappedCheckpoint::OpenLlama2c(const std::string& path) {
  Result<std::unique_ptr<MappedFile>> file = MappedFile::Open(path);
  if (!file) return file.error();
  Result<Llama2cLayout> layout = ParseLlama2cFile((*file)->bytes(), path);
  if (!layout) return layout.error();
  std::vector<Storage> tensors;
  for (Llama2cTensor& t : layout->tensors) {
    tensors.push_back({TensorInfo{std::move(t.spec.name), DType::kF32, std::move(t.spec.shape)}, 0, t.offset,
                       t.rope_heads});
  }
  std::vector<std::unique_ptr<MappedFile>> files;
  files.push_back(std::move(*file));
  return std::make_unique<MappedCheckpoint>(std::move(layout->config), std::move(files), std::move(tensors));
}

Result<std::unique_ptr<MappedCheckpoint>> MappedCheckpoint::OpenGguf(const std::string& path) {
  Result<std::unique_ptr<MappedFile>> file = MappedFile::Open(path);
  if (!file) return file.error();
  Result<GgufFile> gguf = ParseGgufFile((*file)->bytes(), path);
  if (!gguf) return gguf.error();
  Result<GgufLlamaModel> model = ReadGgufLlama(*gguf, (*file)->bytes(), path);
  if (!model) return model.error();
  std::vector<Storage> tensors;
  for (GgufLlamaTensor& t : model->tensors) {
    if (Status s = CheckRowsAddressable(t.info, path); !s) return s.error();
    tensors.push_back({std::move(t.info), 0, t.begin, t.interleaved_heads});
  }
  std::vector<std::unique_ptr<MappedFile>> files;
  files.push_back(std::move(*file));
  return std::make_unique<MappedCheckpoint>(std::move(model->config), std::move(files), std::move(tensors));
}

std::optional<size_t> MappedCheckpoint::IndexOf(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

const std::string& MappedCheckpoint::FilePathOf(size_t index) const {
  return files_[storage_[index].file]->path();
}

Status MappedCheckpoint::ExposeFusedParts(std::span<const FusedTensor> fused, const std::string& source) {
  std::unordered_map<std::string_view, const FusedTensor*> by_name;
  for (const FusedTensor& f : fused) by_name.emplace(f.stored.name, &f);
  std::vector<Storage> storage;
  std::vector<std::string_view> stored_in;  // per new entry: the fused tensor it came from, or ""
  for (const Storage& whole : storage_) {
    const auto found = by_name.find(whole.info.name);
    if (found == by_name.end()) {
      storage.push_back(whole);
      stored_in.push_back("");
      continue;
    }
    const FusedTensor& f = *found->second;
    if (whole.info.shape != f.stored.shape || whole.interleaved_rope_heads != 0) {
      return Error::Corruption(source + ": tensor '" + whole.info.name + "' has shape " +
                               ShapeToString(whole.info.shape) + " where the config needs " +
                               ShapeToString(f.stored.shape));
    }
    const uint64_t row_bytes = static_cast<uint64_t>(DTypeBytes(whole.info.dtype, f.stored.shape[1]).value());
    uint64_t begin = whole.begin;
    for (const TensorSpec& part : f.parts) {
      storage.push_back({{part.name, whole.info.dtype, part.shape}, whole.file, begin, 0});
      stored_in.push_back(f.stored.name);
      begin += static_cast<uint64_t>(part.shape[0]) * row_bytes;
    }
  }
  std::unordered_map<std::string, size_t> index;
  std::vector<TensorInfo> infos;
  for (size_t i = 0; i < storage.size(); ++i) {
    if (!index.emplace(storage[i].info.name, i).second) {
      return Error::Corruption(
          source + ": tensor '" + storage[i].info.name + "' is stored both alone and in '" +
          std::string(stored_in[i].empty() ? stored_in[index.at(storage[i].info.name)] : stored_in[i]) + "'");
    }
    infos.push_back(storage[i].info);
  }
  storage_ = std::move(storage);
  index_ = std::move(index);
  infos_ = std::move(infos);
  return {};
}

int64_t MappedCheckpoint::NumRows(size_t index) const {
  const std::vector<int64_t>& shape = storage_[index].info.shape;
  return shape.empty() ? 1 : shape[0];
}

int64_t MappedCheckpoint::RowElements(size_t index) const {
  const TensorInfo& info = storage_[index].info;
  int64_t elements = 1;
  for (size_t d = 1; d < info.shape.size(); ++d) elements *= info.shape[d];
  return elements;
}

int64_t MappedCheckpoint::RowBytes(size_t index) const {
  return DTypeBytes(storage_[index].info.dtype, RowElements(index)).value();
}

std::span<const std::byte> MappedCheckpoint::Row(size_t index, int64_t row) const {
  const Storage& s = storage_[index];
  DCHECK_GE(row, 0);
  DCHECK_LT(row, NumRows(index));
  int64_t stored_row = row;
  if (s.interleaved_rope_heads > 0)
    stored_row = InterleavedRopeRow(row, NumRows(index) / s.interleaved_rope_heads);
  const int64_t row_bytes = RowBytes(index);
  return files_[s.file]->bytes().subspan(s.begin + static_cast<uint64_t>(stored_row * row_bytes),
                                         static_cast<size_t>(row_bytes));
}

std::span<const std::byte> MappedCheckpoint::StoredTensorBytes(size_t index) const {
  const Storage& s = storage_[index];
  return files_[s.file]->bytes().subspan(s.begin, TensorByteSize(s.info));
}

void MappedCheckpoint::WillNeed(size_t index) const {
  const Storage& s = storage_[index];
  files_[s.file]->WillNeed(s.begin, s.begin + TensorByteSize(s.info));
}

void MappedCheckpoint::Release(size_t index) const {
  const Storage& s = storage_[index];
  files_[s.file]->Release(s.begin, s.begin + TensorByteSize(s.info));
}

Status MappedCheckpoint::CheckRows(const std::string& name, int64_t row_begin, int64_t row_end,
                                   size_t out_size, OutUnit unit, size_t* index) const {
  std::optional<size_t> found = IndexOf(name);
  if (!found) return Error::NotFound("checkpoint has no tensor '" + name + "'");
  *index = *found;
  const int64_t rows = NumRows(*found);
  if (row_begin < 0 || row_end < row_begin || row_end > rows) {
    return Error::InvalidArgument(FilePathOf(*found) + ": tensor '" + name + "': rows [" +
                                  std::to_string(row_begin) + ", " + std::to_string(row_end) +
                                  ") out of its " + std::to_string(rows) + " rows");
  }
  const int64_t per_row = unit == OutUnit::kFloats ? RowElements(*found) : RowBytes(*found);
  if (static_cast<int64_t>(out_size) != (row_end - row_begin) * per_row) {
    const char* what = unit == OutUnit::kFloats ? " floats" : " bytes";
    return Error::InvalidArgument(FilePathOf(*found) + ": tensor '" + name + "': output holds " +
                                  std::to_string(out_size) + what + ", rows [" + std::to_string(row_begin) +
                                  ", " + std::to_string(row_end) + ") hold " +
                                  std::to_string((row_end - row_begin) * per_row) + what);
  }
  return {};
}

void MappedCheckpoint::ForEachRowRun(
    size_t index, int64_t row_begin, int64_t row_end,
    const std::function<void(const std::byte* stored, int64_t first_row, int64_t count)>& run) const {
  const Storage& s = storage_[index];
  if (row_begin == row_end) return;
  // The bytes read are mapped in a run at a time and unmapped after (the page
  // cache keeps them): no fault per page, and a loading rank's resident set
  // holds its weights plus at most one run of the file's pages, not the
  // whole tensor's pages as well.
  constexpr int64_t kRunBytes = int64_t{16} << 20;
  const MappedFile& file = *files_[s.file];
  const int64_t row_bytes = RowBytes(index);
  if (s.interleaved_rope_heads != 0) {
    // Rows permuted within the tensor (a q or k projection): mapped whole.
    file.WillNeed(s.begin, s.begin + TensorByteSize(s.info));
    for (int64_t row = row_begin; row < row_end; ++row) run(Row(index, row).data(), row, 1);
    file.Release(s.begin, s.begin + TensorByteSize(s.info));
    return;
  }
  const int64_t rows_per_run = std::max<int64_t>(1, kRunBytes / std::max<int64_t>(row_bytes, 1));
  for (int64_t first = row_begin; first < row_end; first += rows_per_run) {
    const int64_t count = std::min(rows_per_run, row_end - first);
    const uint64_t begin = s.begin + static_cast<uint64_t>(first * row_bytes);
    const uint64_t end = begin + static_cast<uint64_t>(count * row_bytes);
    file.WillNeed(begin, end);
    run(Row(index, first).data(), first, count);
    file.Release(begin, end);
  }
}

Status MappedCheckpoint::ReadF32(const std::string& name, std::span<float> out) const {
  std::optional<size_t> index = IndexOf(name);
  if (!index) return Error::NotFound("checkpoint has no tensor '" + name + "'");
  return ReadRowsF32(name, 0, NumRows(*index), out);
}

Status MappedCheckpoint::ReadRowsF32(const std::string& name, int64_t row_begin, int64_t row_end,
                                     std::span<float> out) const {
  size_t index;
  if (Status s = CheckRows(name, row_begin, row_end, out.size(), OutUnit::kFloats, &index); !s) return s;
  const DType dtype = storage_[index].info.dtype;
  const size_t row_elements = static_cast<size_t>(RowElements(index));
  ForEachRowRun(index, row_begin, row_end, [&](const std::byte* stored, int64_t first_row, int64_t count) {
    ConvertToF32(dtype, stored,
                 out.subspan(static_cast<size_t>(first_row - row_begin) * row_elements,
                             static_cast<size_t>(count) * row_elements));
  });
  return {};
}

Status MappedCheckpoint::ReadRowsStored(const std::string& name, int64_t row_begin, int64_t row_end,
                                        std::span<std::byte> out) const {
  size_t index;
  if (Status s = CheckRows(name, row_begin, row_end, out.size(), OutUnit::kBytes, &index); !s) return s;
  const int64_t row_bytes = RowBytes(index);
  ForEachRowRun(index, row_begin, row_end, [&](const std::byte* stored, int64_t first_row, int64_t count) {
    std::memcpy(out.data() + (first_row - row_begin) * row_bytes, stored,
                static_cast<size_t>(count * row_bytes));
  });
  return {};
}

std::optional<Checkpoint::MappedRows> MappedCheckpoint::MapRows(const std::string& name, int64_t row_begin,
                                                                int64_t row_end) const {
  const std::optional<size_t> index = IndexOf(name);
  if (!index) return std::nullopt;
  const Storage& s = storage_[*index];
  if (s.interleaved_rope_heads != 0) return std::nullopt;
  if (DTypeBlockElements(s.info.dtype) > 1 && s.info.shape.size() < 2)
    return std::nullopt;  // not whole blocks
  if (row_begin < 0 || row_end <= row_begin || row_end > NumRows(*index)) return std::nullopt;
  const std::shared_ptr<const MappedFile>& file = files_[s.file];
  const uint64_t first = s.begin + static_cast<uint64_t>(row_begin * RowBytes(*index));
  const uint64_t last = s.begin + static_cast<uint64_t>(row_end * RowBytes(*index));
  const std::byte* bytes = file->bytes().data() + first;
  const uintptr_t alignment = s.info.dtype == DType::kF32 ? alignof(float) : alignof(uint16_t);
  if (reinterpret_cast<uintptr_t>(bytes) % alignment != 0) return std::nullopt;
  file->KeepMapped(first, last);
  return MappedRows{
      .dtype = s.info.dtype, .bytes = {bytes, static_cast<size_t>(last - first)}, .mapping = file};
}

std::string MappedCheckpoint::FilesIdentity() const {
  std::string identity;
  for (const std::shared_ptr<const MappedFile>& file : files_) {
    if (file->identity().empty()) return "";
    identity += file->identity() + "\n";
  }
  return identity;
}

}  // namespace inferno
