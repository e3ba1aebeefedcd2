// SmallTestConfig: a tiny model description (width 8, 2 layers, 2 heads,
// vocabulary 10, 16 positions) for the runtime's unit tests that need a
// ShardPlan but no weights.
//
// Thread-safety: a pure function.
#pragma once

#include "model/model_config.h"

namespace inferno {

ModelConfig SmallTestConfig();

}  // namespace inferno
