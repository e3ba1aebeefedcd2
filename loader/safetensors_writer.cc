#include "loader/safetensors_writer.h"

#include <set>

#include "loader/atomic_file.h"
#include "loader/safetensors_format.h"
#include "tensor/tensor_info.h"

namespace inferno {

Status WriteSafetensorsF32(const std::string& path, const std::vector<NamedTensorF32>& tensors,
                           const std::map<std::string, std::string>& metadata) {
  std::vector<TensorInfo> infos;
  std::set<std::string> names;
  for (const NamedTensorF32& tensor : tensors) {
    TensorInfo info{tensor.name, DType::kF32, tensor.shape};
    if (tensor.name.empty() || !names.insert(tensor.name).second) {
      return Error::InvalidArgument(path + ": tensor '" + tensor.name + "': empty or duplicate name");
    }
    for (int64_t d : tensor.shape) {
      if (d < 0)
        return Error::InvalidArgument(path + ": tensor '" + tensor.name + "': negative dimension in shape " +
                                      ShapeToString(tensor.shape));
    }
    if (info.num_elements() != static_cast<int64_t>(tensor.data.size())) {
      return Error::InvalidArgument(
          path + ": tensor '" + tensor.name + "': shape " + ShapeToString(tensor.shape) + " needs " +
          std::to_string(info.num_elements()) + " floats, data has " + std::to_string(tensor.data.size()));
    }
    infos.push_back(std::move(info));
  }
  Result<AtomicFile> file = AtomicFile::Create(path);
  if (!file) return file.error();
  if (Status s = file->Write(EncodeSafetensorsHeader(infos, metadata)); !s) return s;
  for (const NamedTensorF32& tensor : tensors) {
    if (Status s = file->Write(std::as_bytes(tensor.data)); !s) return s;
  }
  return file->Commit();
}

}  // namespace inferno
