// ExpressionEvaluator: evaluates a chat template's expressions (ast.h's Expr)
// against the variables in scope, with Jinja's semantics (renderer.h
// describes them): names look through the scopes innermost first, then are
// global functions (builtins.h), else undefined; and/or short-circuit;
// calls, filters, tests and methods go to builtins.h, operators to
// value_operators.h.
//
// Errors name the line and column of the expression that failed:
// InvalidArgument for type errors, raise_exception() and a string or list
// beyond render_limits.h, Unimplemented for what this interpreter does not
// model (dict keys other than strings).
//
// Thread-safety: not thread-safe; it reads the scopes it was given, which
// its owner changes between evaluations.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "text/chat_template/ast.h"
#include "text/chat_template/builtins.h"
#include "text/chat_template/value.h"

namespace inferno::chat {

// The variables of a render, by name: the template's globals first, then one
// scope for each loop iteration being rendered, innermost last.
using Scopes = std::vector<std::map<std::string, Value>>;

class ExpressionEvaluator {
 public:
  // `scopes` must outlive the evaluator; each evaluation sees its current
  // contents.
  explicit ExpressionEvaluator(const Scopes& scopes);

  // The value of `expr`; a string longer than kMaxOutputBytes or a list
  // longer than kMaxListItems is an error.
  Result<Value> Evaluate(const Expr& expr) const;

  // The variable `name` in the innermost scope that has it; else the global
  // function `name`, if there is one; else undefined.
  Value Lookup(const std::string& name) const;

 private:
  Result<Value> EvaluateUnbounded(const Expr& expr) const;
  // kCall, kMethodCall, kFilter and kTest.
  Result<Value> EvaluateCall(const Expr& expr) const;
  Result<Arguments> EvaluateArguments(const Expr& call) const;
  Result<Value> EvaluateSlice(const Expr& expr) const;

  const Scopes& scopes_;
};

}  // namespace inferno::chat
