// ValueFromJson: a JSON value (an OpenAI request's tools, a tool call's
// arguments, a golden file's variables) as a chat-template Value, the way
// transformers hands Python's json.loads result to the template: objects
// keep their keys' order (tojson prints them in it), null is none.
//
// Thread-safety: pure function.
#pragma once

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "text/chat_template/value.h"

namespace inferno::chat {

// Errors (InvalidArgument): a number with a fraction or out of int64 range,
// which Value cannot hold ("a floating-point number 0.5 at /parameters/x/minimum").
Result<Value> ValueFromJson(const nlohmann::ordered_json& json);

}  // namespace inferno::chat
