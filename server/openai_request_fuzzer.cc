// libFuzzer target over ParseOpenAiRequest, the parser of every completion
// request body the server receives. Any input either parses into a request
// whose fields are in range, or fails with a one-line error; never a crash
// or a hang.
//
//   bazel build --config=fuzz //server:openai_request_fuzzer
//   openai_request_fuzzer server/testdata/fuzz/openai_request -max_total_time=30
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <glog/logging.h>

#include "server/openai_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace inferno;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  for (Endpoint endpoint : {Endpoint::kCompletions, Endpoint::kChatCompletions}) {
    Result<OpenAiRequest> request = ParseOpenAiRequest(body, endpoint);
    if (!request) {
      CHECK(!request.error().message.empty());
      CHECK_EQ(request.error().message.find('\n'), std::string::npos) << request.error().message;
      continue;
    }
    CHECK(request->temperature >= 0.0f && request->temperature <= 2.0f) << request->temperature;
    CHECK(request->top_p > 0.0f && request->top_p <= 1.0f) << request->top_p;
    CHECK(!request->max_tokens || *request->max_tokens >= 1);
    CHECK_LE(request->stop.size(), 4u);
    CHECK(endpoint == Endpoint::kCompletions || !request->messages.empty());
    CHECK(request->presence_penalty >= -2.0f && request->presence_penalty <= 2.0f);
    CHECK(request->frequency_penalty >= -2.0f && request->frequency_penalty <= 2.0f);
    CHECK(request->repetition_penalty > 0.0f && request->repetition_penalty <= 10.0f);
    CHECK(request->logprobs >= -1 && request->logprobs <= 20) << request->logprobs;
  }
  return 0;
}
