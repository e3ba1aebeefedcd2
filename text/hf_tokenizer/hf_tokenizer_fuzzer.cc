// libFuzzer target over HfTokenizer::Parse (tokenizer.json) and the encoder
// and decoders of whatever file it accepts. Any input either fails with a
// one-line error naming the source, or gives a tokenizer whose Encode returns
// only ids inside its vocabulary, whose streamed output is valid UTF-8, and
// whose Decode takes every id (and a few outside) without crashing.
//
//   bazel build --config=fuzz //text/hf_tokenizer:hf_tokenizer_fuzzer
//   hf_tokenizer_fuzzer text/hf_tokenizer/testdata/fuzz -max_total_time=30
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <glog/logging.h>

#include "text/hf_tokenizer/hf_tokenizer.h"
#include "text/hf_tokenizer/streaming_decoder.h"
#include "text/utf8.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferno;
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  Result<std::unique_ptr<HfTokenizer>> tokenizer = HfTokenizer::Parse(json, "fuzz.json");
  if (!tokenizer) {
    CHECK_EQ(tokenizer.error().message.find('\n'), std::string::npos) << tokenizer.error().message;
    CHECK(tokenizer.error().message.starts_with("fuzz.json: ")) << tokenizer.error().message;
    return 0;
  }
  const HfTokenizer& hf = **tokenizer;
  const int32_t vocab = hf.vocab_size();
  for (const char* text :
       {"Once upon a time", " a  b\n", "\xC3\xBC\xE6\x97\xA5 <0x41>\x01", "\xFF\xFE", "<s></s>"}) {
    const std::vector<int32_t> ids = hf.Encode(text);
    for (const int32_t id : ids) {
      CHECK(id >= 0 && id < vocab) << "Encode(\"" << text << "\") gave id " << id << " of a " << vocab
                                   << "-token vocabulary";
    }
    hf::StreamingDecoder stream(hf, /*skip_special_tokens=*/false);
    for (const int32_t id : ids) {
      const std::string chunk = stream.Push(id);
      CHECK_EQ(Utf8Lossy(chunk), chunk) << "a streamed chunk is not valid UTF-8";
    }
    (void)stream.Finish();
  }
  for (int32_t id = -1; id <= vocab; ++id) (void)hf.Decode(id - 1, id);
  return 0;
}
