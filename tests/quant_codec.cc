// quant_codec: inferno's side of tests/llama_cpp_quant_test.py, which holds
// it against llama.cpp's own libraries. Three operations on raw files:
//
//   quant_codec --op quantize --type Q4_K --in VALUES.f32 --out BLOCKS
//       little-endian f32 values -> blocks (ConvertFromF32)
//   quant_codec --op dequantize --type Q4_K --in BLOCKS --out VALUES.f32
//       blocks -> f32 values (ConvertToF32)
//   quant_codec --op gguf --in MODEL.gguf --out DIR
//       every tensor of a GGUF file, read by the loader's parser and
//       converted by ConvertToF32, as DIR/<index>.f32, with one line
//       "<index> <name> <ggml type> <ne0>,<ne1>,..." per tensor in
//       DIR/tensors.txt (file order).
//
// Errors are one line on stderr and exit 1 (2 for a bad command line).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "base/command_line.h"
#include "loader/gguf_format.h"
#include "loader/mapped_file.h"
#include "tensor/dtype.h"

namespace inferno {
namespace {

Result<std::vector<std::byte>> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::Io("cannot read '" + path + "'");
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  std::transform(chars.begin(), chars.end(), bytes.begin(), [](char c) { return std::byte(c); });
  return bytes;
}

Status WriteBytes(const std::string& path, const void* data, size_t size) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out.flush()) return Error::Io("cannot write '" + path + "'");
  return {};
}

Result<DType> TypeFlag(const CommandLine& flags) {
  const std::optional<std::string> name = flags.Last("type");
  if (!name) return Error::InvalidArgument("--type is required for this --op");
  const std::optional<DType> dtype = ParseDType(*name);
  if (!dtype) return Error::InvalidArgument("--type: '" + *name + "' is not one of " + DTypeNames());
  return *dtype;
}

Status Quantize(const CommandLine& flags) {
  Result<DType> dtype = TypeFlag(flags);
  if (!dtype) return dtype.error();
  Result<std::vector<std::byte>> in = ReadBytes(*flags.Last("in"));
  if (!in) return in.error();
  std::vector<float> values(in->size() / sizeof(float));
  std::memcpy(values.data(), in->data(), values.size() * sizeof(float));
  Result<int64_t> bytes = DTypeBytes(*dtype, static_cast<int64_t>(values.size()));
  if (!bytes) return bytes.error();
  std::vector<std::byte> blocks(static_cast<size_t>(*bytes));
  if (Status s = ConvertFromF32(*dtype, values, blocks.data()); !s) return s;
  return WriteBytes(*flags.Last("out"), blocks.data(), blocks.size());
}

Status Dequantize(const CommandLine& flags) {
  Result<DType> dtype = TypeFlag(flags);
  if (!dtype) return dtype.error();
  Result<std::vector<std::byte>> in = ReadBytes(*flags.Last("in"));
  if (!in) return in.error();
  const auto blocks = static_cast<int64_t>(in->size()) / DTypeBlockBytes(*dtype);
  if (blocks * DTypeBlockBytes(*dtype) != static_cast<int64_t>(in->size())) {
    return Error::InvalidArgument(*flags.Last("in") + ": " + std::to_string(in->size()) +
                                  " bytes are not whole " + std::string(DTypeName(*dtype)) + " blocks");
  }
  std::vector<float> values(static_cast<size_t>(blocks * DTypeBlockElements(*dtype)));
  ConvertToF32(*dtype, in->data(), values);
  return WriteBytes(*flags.Last("out"), values.data(), values.size() * sizeof(float));
}

Status DumpGguf(const CommandLine& flags) {
  const std::string path = *flags.Last("in"), dir = *flags.Last("out");
  Result<std::unique_ptr<MappedFile>> file = MappedFile::Open(path);
  if (!file) return file.error();
  Result<GgufFile> gguf = ParseGgufFile((*file)->bytes(), path);
  if (!gguf) return gguf.error();
  std::string index;
  std::vector<float> values;
  for (size_t i = 0; i < gguf->tensors.size(); ++i) {
    const GgufTensor& tensor = gguf->tensors[i];
    int64_t elements = 1;
    std::string shape;
    for (int64_t n : tensor.info.ne) {
      elements *= n;
      shape += (shape.empty() ? "" : ",") + std::to_string(n);
    }
    values.resize(static_cast<size_t>(elements));
    ConvertToF32(GgmlTypeDType(tensor.info.type), (*file)->bytes().data() + tensor.begin, values);
    if (Status s =
            WriteBytes(dir + "/" + std::to_string(i) + ".f32", values.data(), values.size() * sizeof(float));
        !s) {
      return s;
    }
    index += std::to_string(i) + " " + tensor.info.name + " " +
             GgmlTypeName(static_cast<uint32_t>(tensor.info.type)) + " " + shape + "\n";
  }
  return WriteBytes(dir + "/tensors.txt", index.data(), index.size());
}

}  // namespace
}  // namespace inferno

int main(int argc, char** argv) {
  using namespace inferno;
  const CommandSpec spec{"quant_codec",
                         "--op quantize|dequantize|gguf [--type T] --in FILE --out FILE|DIR",
                         "Quantizes raw f32 values, dequantizes raw blocks, or writes every tensor of a\n"
                         "GGUF file as f32 (for tests/llama_cpp_quant_test.py).",
                         {{"op", "quantize|dequantize|gguf", "what to do"},
                          {"type", "T", "quantize, dequantize: the block type (Q4_K, Q8_0, ...)"},
                          {"in", "FILE", "the input"},
                          {"out", "FILE|DIR", "the output (gguf: an existing folder)"}},
                         false,
                         {"op", "in", "out"}};
  const CommandLine flags = ParseCommandLineOrExit(argc, argv, spec);
  const std::string op = *flags.Last("op");
  const Status status =
      op == "quantize"     ? Quantize(flags)
      : op == "dequantize" ? Dequantize(flags)
      : op == "gguf"
          ? DumpGguf(flags)
          : Status(Error::InvalidArgument("--op: '" + op + "' is not quantize, dequantize or gguf"));
  if (!status) {
    std::fprintf(stderr, "quant_codec: %s\n", status.error().ToString().c_str());
    return 1;
  }
  return 0;
}
