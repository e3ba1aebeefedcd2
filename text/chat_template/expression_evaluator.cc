#include "text/chat_template/expression_evaluator.h"

#include <utility>

#include "text/chat_template/lexer.h"
#include "text/chat_template/render_limits.h"
#include "text/chat_template/value_operators.h"

namespace inferno::chat {
namespace {

// "line L, column C: ", to put in front of an error message.
std::string Prefix(const Expr& expr) { return Where(expr.line, expr.column) + ": "; }

// `result`, with an error's message prefixed by where `expr` is.
Result<Value> Located(const Expr& expr, Result<Value> result) {
  if (!result) return result.error().Prefixed(Prefix(expr));
  return result;
}

}  // namespace

ExpressionEvaluator::ExpressionEvaluator(const Scopes& scopes) : scopes_(scopes) {}

Result<Value> ExpressionEvaluator::Evaluate(const Expr& expr) const {
  Result<Value> value = EvaluateUnbounded(expr);
  if (!value) return value;
  if (value->kind() == Value::Kind::kString && value->as_string().size() > kMaxOutputBytes) {
    return Error::InvalidArgument(Prefix(expr) + "a string longer than " + std::to_string(kMaxOutputBytes) +
                                  " bytes");
  }
  if (value->kind() == Value::Kind::kList && value->as_list().size() > kMaxListItems) {
    return Error::InvalidArgument(Prefix(expr) + "a list longer than " + std::to_string(kMaxListItems) +
                                  " items");
  }
  return value;
}

Value ExpressionEvaluator::Lookup(const std::string& name) const {
  for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
    const auto it = scope->find(name);
    if (it != scope->end()) return it->second;
  }
  return IsFunction(name) ? Value::Function(name) : Value();
}

Result<Value> ExpressionEvaluator::EvaluateUnbounded(const Expr& expr) const {
  switch (expr.kind) {
    case Expr::Kind::kLiteral:
      return expr.value;
    case Expr::Kind::kName:
      return Lookup(expr.name);
    case Expr::Kind::kList: {
      ValueList items;
      for (const auto& child : expr.children) {
        Result<Value> item = Evaluate(*child);
        if (!item) return item;
        items.push_back(std::move(*item));
      }
      return Value::List(std::move(items));
    }
    case Expr::Kind::kDict: {
      ValueDict entries;
      for (size_t i = 0; i + 1 < expr.children.size(); i += 2) {
        Result<Value> key = Evaluate(*expr.children[i]);
        if (!key) return key;
        if (key->kind() != Value::Kind::kString) {
          return Error::Unimplemented(Prefix(expr) + "dict keys other than strings are not supported");
        }
        Result<Value> value = Evaluate(*expr.children[i + 1]);
        if (!value) return value;
        entries.emplace_back(key->as_string(), std::move(*value));
      }
      return Value::Dict(std::move(entries));
    }
    case Expr::Kind::kAttribute: {
      Result<Value> object = Evaluate(*expr.children[0]);
      if (!object) return object;
      if (object->is_undefined())
        return Error::InvalidArgument(Prefix(expr) + "attribute '" + expr.name + "' of an undefined value");
      return object->Get(expr.name);
    }
    case Expr::Kind::kSubscript: {
      Result<Value> object = Evaluate(*expr.children[0]);
      if (!object) return object;
      Result<Value> key = Evaluate(*expr.children[1]);
      if (!key) return key;
      return Located(expr, Subscript(*object, *key));
    }
    case Expr::Kind::kSlice:
      return EvaluateSlice(expr);
    case Expr::Kind::kCall:
    case Expr::Kind::kMethodCall:
    case Expr::Kind::kFilter:
    case Expr::Kind::kTest:
      return EvaluateCall(expr);
    case Expr::Kind::kNot: {
      Result<Value> operand = Evaluate(*expr.children[0]);
      if (!operand) return operand;
      return Value::Bool(!operand->Truthy());
    }
    case Expr::Kind::kNegate: {
      Result<Value> operand = Evaluate(*expr.children[0]);
      if (!operand) return operand;
      return Located(expr, Negate(*operand));
    }
    case Expr::Kind::kAnd:
    case Expr::Kind::kOr: {
      Result<Value> left = Evaluate(*expr.children[0]);
      if (!left) return left;
      if (left->Truthy() == (expr.kind == Expr::Kind::kOr)) return left;
      return Evaluate(*expr.children[1]);
    }
    case Expr::Kind::kConditional: {
      Result<Value> condition = Evaluate(*expr.children[1]);
      if (!condition) return condition;
      if (condition->Truthy()) return Evaluate(*expr.children[0]);
      if (expr.children[2] == nullptr) return Value();
      return Evaluate(*expr.children[2]);
    }
    case Expr::Kind::kBinary: {
      Result<Value> left = Evaluate(*expr.children[0]);
      if (!left) return left;
      Result<Value> right = Evaluate(*expr.children[1]);
      if (!right) return right;
      return Located(expr, ApplyBinaryOperator(expr.name, *left, *right));
    }
  }
  return Value();
}

Result<Value> ExpressionEvaluator::EvaluateCall(const Expr& expr) const {
  Result<Arguments> arguments = EvaluateArguments(expr);
  if (!arguments) return arguments.error();
  if (expr.kind == Expr::Kind::kCall) {
    return Located(expr, CallFunction(expr.name, *arguments));
  }
  Result<Value> operand = Evaluate(*expr.children[0]);
  if (!operand) return operand;
  if (expr.kind == Expr::Kind::kTest) {
    Result<bool> passed = ApplyTest(expr.name, *operand, *arguments);
    if (!passed) return passed.error().Prefixed(Prefix(expr));
    return Value::Bool(*passed != expr.negated);
  }
  if (expr.kind == Expr::Kind::kMethodCall && operand->is_undefined()) {
    return Error::InvalidArgument(Prefix(expr) + "calling '" + expr.name + "' on an undefined value");
  }
  return Located(expr, expr.kind == Expr::Kind::kFilter ? ApplyFilter(expr.name, *operand, *arguments)
                                                        : CallMethod(*operand, expr.name, *arguments));
}

Result<Arguments> ExpressionEvaluator::EvaluateArguments(const Expr& call) const {
  Arguments arguments;
  for (size_t i = 0; i < call.arguments.size(); ++i) {
    Result<Value> value = Evaluate(*call.arguments[i]);
    if (!value) return value.error();
    if (call.keywords[i].empty()) {
      arguments.positional.push_back(std::move(*value));
    } else {
      arguments.keywords.emplace_back(call.keywords[i], std::move(*value));
    }
  }
  return arguments;
}

Result<Value> ExpressionEvaluator::EvaluateSlice(const Expr& expr) const {
  Value parts[4];  // the object, start, stop and step; absent bounds stay undefined
  for (size_t i = 0; i < 4; ++i) {
    if (expr.children[i] == nullptr) continue;
    Result<Value> part = Evaluate(*expr.children[i]);
    if (!part) return part;
    parts[i] = std::move(*part);
  }
  return Located(expr, Slice(parts[0], parts[1], parts[2], parts[3]));
}

}  // namespace inferno::chat
