// ParseTemplate: a chat template's source to its syntax tree (ast.h), for the
// Jinja subset that Hugging Face chat templates use:
//   statements  {% if %}/{% elif %}/{% else %}/{% endif %},
//               {% for x in xs %} and {% for a, b in xs %} with {% else %},
//               {% set x = e %}, {% set ns.attr = e %};
//   expressions literals (strings, integers, true/false/none, lists, dicts),
//               variables, .attr, [index], [start:stop:step], calls of the
//               global functions, string and dict methods, filters (|) and
//               tests (is, is not) that builtins.h lists, not/and/or,
//               comparisons, in/not in, + - * // % ~, unary -, x if c else y.
// Anything else — macros, call/filter blocks, block set, include/extends,
// break/continue, unknown filters, tests, functions or methods, float
// literals — is an error naming the construct, its line and its column:
// Unimplemented for valid Jinja this interpreter does not support,
// InvalidArgument for malformed templates. Never crashes on any input
// (nesting is limited to kMaxDepth).
//
// Thread-safety: a pure function.
#pragma once

#include <string_view>

#include "base/error.h"
#include "text/chat_template/ast.h"

namespace inferno::chat {

// Deepest nesting of blocks plus expressions a template may have.
inline constexpr int kMaxDepth = 200;

Result<NodeList> ParseTemplate(std::string_view source);

}  // namespace inferno::chat
