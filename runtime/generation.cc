#include "runtime/generation.h"

#include <algorithm>
#include <string>

namespace inferno {

Status ValidatePrompts(const std::vector<std::vector<int32_t>>& prompts, const ModelConfig& config,
                       int64_t context_length) {
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::string which = "prompt " + std::to_string(i);
    if (prompts[i].empty()) return Error::InvalidArgument(which + " is empty");
    if (static_cast<int64_t>(prompts[i].size()) > context_length) {
      return Error::InvalidArgument(which + " has " + std::to_string(prompts[i].size()) +
                                    " tokens, longer than the context of " + std::to_string(context_length) +
                                    " positions");
    }
    for (int32_t id : prompts[i]) {
      if (id < 0 || id >= config.vocab_size) {
        return Error::InvalidArgument(which + ": token id " + std::to_string(id) +
                                      " is outside the vocabulary [0, " + std::to_string(config.vocab_size) +
                                      ")");
      }
    }
  }
  return {};
}

int64_t ContextLength(const std::vector<std::vector<int32_t>>& prompts, int64_t max_new_tokens,
                      int64_t limit) {
  int64_t longest = 0;
  for (const std::vector<int32_t>& prompt : prompts) longest = std::max<int64_t>(longest, prompt.size());
  return std::min(limit, longest + std::max<int64_t>(max_new_tokens, 1));
}

}  // namespace inferno
