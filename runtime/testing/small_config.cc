#include "runtime/testing/small_config.h"

namespace inferno {

ModelConfig SmallTestConfig() {
  ModelConfig config;
  config.hidden_size = 8;
  config.intermediate_size = 16;
  config.num_hidden_layers = 2;
  config.num_attention_heads = 2;
  config.num_key_value_heads = 2;
  config.vocab_size = 10;
  config.max_position_embeddings = 16;
  return config;
}

}  // namespace inferno
