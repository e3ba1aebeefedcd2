// RenderTemplate: evaluates a parsed chat template (ast.h) with Jinja's
// semantics (Python's, for values) and returns the text it prints.
//
// Scoping as in Jinja: `{% set %}` at the top level or in an if assigns a
// template-wide variable; inside a for loop it assigns a variable of the
// current iteration, invisible after it (use a namespace to carry state out
// of a loop). Each loop iteration sees `loop` with index, index0, revindex,
// revindex0, first, last and length. A global function's name that no
// variable shadows is a function value (so `strftime_now is defined`).
// Missing variables, keys and attributes
// are undefined: printing one prints nothing, testing it is false, but
// arithmetic on it, or an attribute or item of it, is an error.
//
// Errors name the line and column of the expression that failed:
// InvalidArgument for type errors and raise_exception(), Unimplemented for
// values this interpreter does not model (printing a list, floats). Output
// or a string longer than kMaxOutputBytes, a list longer than kMaxListItems
// and more than kMaxLoopIterations loop iterations in all (render_limits.h)
// are errors, so a runaway template stops (memory is bounded only through
// these).
//
// Thread-safety: a pure function of its arguments (namespaces it creates are
// its own).
#pragma once

#include <string>

#include "base/error.h"
#include "text/chat_template/ast.h"
#include "text/chat_template/render_limits.h"
#include "text/chat_template/value.h"

namespace inferno::chat {

// Renders `nodes` with `variables` as the template's global variables.
Result<std::string> RenderTemplate(const NodeList& nodes, const ValueDict& variables);

}  // namespace inferno::chat
