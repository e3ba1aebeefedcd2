// MappedCheckpoint: the Checkpoint behind every supported format. Each tensor
// is a byte range of a memory-mapped file (a safetensors file, a llama2.c
// .bin or a GGUF file), stored row-major, possibly with its rows in Meta's
// interleaved RoPE order (llama2.c's and GGUF's).
// Beyond Checkpoint it hands out the stored bytes of each row (Hugging Face row
// order), so tensors can be copied without conversion, and lets a streaming
// reader drop the pages it has finished with.
//
// A tensor's "rows" are its first dimension (a 1-D tensor's rows are its
// elements; a scalar is one row).
//
// Thread-safety: const methods may be called from several threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "loader/checkpoint.h"
#include "loader/mapped_file.h"
#include "model/llama_layout.h"
#include "model/model_config.h"
#include "tensor/tensor_info.h"

namespace inferno {

class MappedCheckpoint final : public Checkpoint {
 public:
  // Where one tensor's bytes live.
  struct Storage {
    TensorInfo info;
    size_t file = 0;     // index into the checkpoint's files
    uint64_t begin = 0;  // byte offset of the tensor in that file
    // 0: rows stored in order. > 0: a (heads * head_dim, in) projection
    // stored in Meta's interleaved RoPE order, as llama2.c and GGUF store
    // q and k (pairs (2i, 2i+1) of each head), with this many heads; rows
    // are handed out in Hugging Face order (pairs (i, i + head_dim/2)).
    int64_t interleaved_rope_heads = 0;
  };

  // Precondition: every Storage lies inside its file and names are unique.
  MappedCheckpoint(ModelConfig config, std::vector<std::unique_ptr<MappedFile>> files,
                   std::vector<Storage> tensors);

  // Like Checkpoint::Open.
  static Result<std::unique_ptr<MappedCheckpoint>> Open(const std::string& path);
  // The safetensors files `paths` as one checkpoint with `config`, without
  // checking the tensors against the config (for shards, whose tensors are
  // slices). Fails on a bad file or a name found in two files.
  static Result<std::unique_ptr<MappedCheckpoint>> OpenSafetensors(const std::vector<std::string>& paths,
                                                                   ModelConfig config);
  // Like OpenSafetensors, over files already opened (or held in memory).
  static Result<std::unique_ptr<MappedCheckpoint>> FromSafetensorsFiles(
      std::vector<std::unique_ptr<MappedFile>> files, ModelConfig config);
  // A llama2.c v0 .bin file (see llama2c_format.h).
  static Result<std::unique_ptr<MappedCheckpoint>> OpenLlama2c(const std::string& path);
  // A GGUF file of the llama architecture (see gguf_llama.h).
  static Result<std::unique_ptr<MappedCheckpoint>> OpenGguf(const std::string& path);

  const ModelConfig& config() const override { return config_; }
  const std::vector<TensorInfo>& tensors() const override { return infos_; }
  // The identities (MappedFile::identity) of the files read, in order, one
  // per line; empty when one of them has none (held in memory).
  std::string FilesIdentity() const;
  Status ReadF32(const std::string& name, std::span<float> out) const override;
  Status ReadRowsF32(const std::string& name, int64_t row_begin, int64_t row_end,
                     std::span<float> out) const override;
  Status ReadRowsStored(const std::string& name, int64_t row_begin, int64_t row_end,
                        std::span<std::byte> out) const override;
  std::optional<MappedRows> MapRows(const std::string& name, int64_t row_begin,
                                    int64_t row_end) const override;

  // The index of `name` in tensors(), or nullopt.
  std::optional<size_t> IndexOf(const std::string& name) const;
  // The file holding tensors()[index].
  const std::string& FilePathOf(size_t index) const;
  // Rows of tensors()[index], elements per row and stored bytes per row (a
  // row of a block type is whole blocks: 1-D tensors of block types are
  // refused when a file is opened).
  int64_t NumRows(size_t index) const;
  int64_t RowElements(size_t index) const;
  int64_t RowBytes(size_t index) const;
  // The stored bytes of row `row` (Hugging Face order) of tensors()[index].
  // Precondition: index < tensors().size(), 0 <= row < NumRows(index).
  std::span<const std::byte> Row(size_t index, int64_t row) const;
  // All stored bytes of tensors()[index] in the mapping, as they lie in the
  // file (rows in file order: Meta's interleaved order when
  // interleaved_rope_heads > 0). Valid while the checkpoint lives.
  std::span<const std::byte> StoredTensorBytes(size_t index) const;
  // Replaces each tensor `f.stored` of `fused` by its parts, each the next
  // rows of the stored bytes (Phi-3's qkv_proj as q_proj, k_proj, v_proj):
  // the parts are then read, mapped and listed as tensors of their own. A
  // fused tensor the checkpoint does not hold is passed over (a shard holds
  // the parts). Fails, naming the tensor, when its shape is not the parts'
  // rows back to back or a part is also stored alone; then nothing changes.
  // Not thread-safe: call before sharing the checkpoint.
  Status ExposeFusedParts(std::span<const FusedTensor> fused, const std::string& source);
  // Read-ahead hint for, and release of the resident pages of, the tensor.
  void WillNeed(size_t index) const;
  void Release(size_t index) const;

 private:
  enum class OutUnit { kFloats, kBytes };
  // Checks that `name` exists, has rows [row_begin, row_end), and that an
  // output of `out_size` units holds exactly them; sets `index`.
  Status CheckRows(const std::string& name, int64_t row_begin, int64_t row_end, size_t out_size, OutUnit unit,
                   size_t* index) const;
  // Calls `run` on the stored bytes of rows [row_begin, row_end) of
  // tensors()[index] in Hugging Face order, in runs of consecutive stored
  // rows of at most 16 MiB (single rows when the rows are permuted), with
  // their pages mapped in for the call and released after.
  void ForEachRowRun(
      size_t index, int64_t row_begin, int64_t row_end,
      const std::function<void(const std::byte* stored, int64_t first_row, int64_t count)>& run) const;

  ModelConfig config_;
  std::vector<std::shared_ptr<const MappedFile>> files_;
  std::vector<Storage> storage_;
  std::vector<TensorInfo> infos_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace inferno
