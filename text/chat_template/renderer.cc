#include "text/chat_template/renderer.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "text/chat_template/builtins.h"
#include "text/chat_template/lexer.h"

namespace inferno::chat {
namespace {

// "line L, column C: ", to put in front of an error message.
std::string Prefix(int line, int column) { return Where(line, column) + ": "; }
std::string Prefix(const Expr& expr) { return Prefix(expr.line, expr.column); }

bool IsNumber(const Value& value) {
  return value.kind() == Value::Kind::kInt || value.kind() == Value::Kind::kBool;
}
int64_t Number(const Value& value) {
  return value.kind() == Value::Kind::kBool ? static_cast<int64_t>(value.as_bool()) : value.as_int();
}

// Python's index normalization: negative counts from the end.
std::optional<size_t> Index(int64_t index, size_t size) {
  const int64_t n = static_cast<int64_t>(size);
  if (index < 0) index += n;
  if (index < 0 || index >= n) return std::nullopt;
  return static_cast<size_t>(index);
}

// The positions Python's seq[start:stop:step] selects from a sequence of `size`.
Result<std::vector<size_t>> SlicePositions(const Value& start_value, const Value& stop_value,
                                           const Value& step_value, size_t size) {
  const auto bound = [](const Value& v, const char* what) -> Result<std::optional<int64_t>> {
    if (v.is_undefined() || v.kind() == Value::Kind::kNone) return std::optional<int64_t>();
    if (!IsNumber(v)) return Error::InvalidArgument(std::string("slice ") + what + " must be an integer");
    return std::optional<int64_t>(Number(v));
  };
  Result<std::optional<int64_t>> start = bound(start_value, "start");
  Result<std::optional<int64_t>> stop = bound(stop_value, "stop");
  Result<std::optional<int64_t>> step = bound(step_value, "step");
  if (!start) return start.error();
  if (!stop) return stop.error();
  if (!step) return step.error();
  const int64_t n = static_cast<int64_t>(size);
  const int64_t by = step->value_or(1);
  if (by == 0) return Error::InvalidArgument("slice step cannot be zero");
  const auto clamp = [&](std::optional<int64_t> v, int64_t if_absent) {
    if (!v) return if_absent;
    int64_t i = *v < 0 ? std::max<int64_t>(*v + n, by > 0 ? 0 : -1) : *v;
    return by > 0 ? std::min(i, n) : std::min(i, n - 1);
  };
  std::vector<size_t> positions;
  if (by > 0) {
    for (int64_t i = clamp(*start, 0), end = clamp(*stop, n); i < end; i += by) {
      positions.push_back(static_cast<size_t>(i));
    }
  } else {
    for (int64_t i = clamp(*start, n - 1), end = clamp(*stop, -1); i > end; i += by) {
      positions.push_back(static_cast<size_t>(i));
    }
  }
  return positions;
}

class Renderer {
 public:
  explicit Renderer(const ValueDict& variables) {
    scopes_.emplace_back();
    for (const auto& [name, value] : variables) scopes_.back()[name] = value;
  }

  Result<std::string> Run(const NodeList& nodes) {
    if (Status status = RenderNodes(nodes); !status) return status.error();
    return std::move(out_);
  }

 private:
  Status RenderNodes(const NodeList& nodes) {
    for (const Node& node : nodes) {
      if (Status status = RenderNode(node); !status) return status;
      if (out_.size() > kMaxOutputBytes) {
        return Error::InvalidArgument(Prefix(node.line, node.column) + "the output exceeds " +
                                      std::to_string(kMaxOutputBytes) + " bytes");
      }
    }
    return {};
  }

  Status RenderNode(const Node& node) {
    switch (node.kind) {
      case Node::Kind::kText:
        out_ += node.text;
        return {};
      case Node::Kind::kOutput: {
        Result<Value> value = Evaluate(*node.expr);
        if (!value) return value.error();
        Result<std::string> text = ToText(*value);
        if (!text) return text.error().Prefixed(Prefix(node.expr->line, node.expr->column));
        out_ += *text;
        return {};
      }
      case Node::Kind::kIf:
        for (const Node::Branch& branch : node.branches) {
          bool taken = branch.condition == nullptr;
          if (!taken) {
            Result<Value> condition = Evaluate(*branch.condition);
            if (!condition) return condition.error();
            taken = condition->Truthy();
          }
          if (taken) return RenderNodes(branch.body);
        }
        return {};
      case Node::Kind::kFor:
        return RenderFor(node);
      case Node::Kind::kSet: {
        Result<Value> value = Evaluate(*node.expr);
        if (!value) return value.error();
        if (node.attribute.empty()) {
          scopes_.back()[node.targets[0]] = std::move(*value);
          return {};
        }
        const Value target = Lookup(node.targets[0]);
        if (target.kind() != Value::Kind::kNamespace) {
          return Error::InvalidArgument(Prefix(node.line, node.column) + "cannot set an attribute of '" +
                                        node.targets[0] + "', a " + KindName(target.kind()) +
                                        " (only namespace() objects have settable attributes)");
        }
        target.SetAttribute(node.attribute, std::move(*value));
        return {};
      }
    }
    return {};
  }

  Status RenderFor(const Node& node) {
    Result<Value> iterable = Evaluate(*node.expr);
    if (!iterable) return iterable.error();
    ValueList items;
    switch (iterable->kind()) {
      case Value::Kind::kUndefined:
        break;
      case Value::Kind::kList:
        items = iterable->as_list();
        break;
      case Value::Kind::kString:
      case Value::Kind::kDict: {
        Result<Value> list = ApplyFilter("list", *iterable, Arguments());
        if (!list) return list.error();
        items = list->as_list();
        break;
      }
      default:
        return Error::InvalidArgument(Prefix(node.expr->line, node.expr->column) + "cannot loop over a " +
                                      KindName(iterable->kind()));
    }
    if (items.empty()) return RenderNodes(node.else_body);
    const int64_t length = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < length; ++i) {
      if (++iterations_ > kMaxLoopIterations) {
        return Error::InvalidArgument(Prefix(node.line, node.column) + "the template loops more than " +
                                      std::to_string(kMaxLoopIterations) + " times");
      }
      std::map<std::string, Value> scope;
      const Value& item = items[static_cast<size_t>(i)];
      if (node.targets.size() == 1) {
        scope[node.targets[0]] = item;
      } else {
        if (item.kind() != Value::Kind::kList || item.as_list().size() != node.targets.size()) {
          return Error::InvalidArgument(Prefix(node.line, node.column) + "cannot unpack a " +
                                        KindName(item.kind()) + " into " +
                                        std::to_string(node.targets.size()) + " loop variables");
        }
        for (size_t t = 0; t < node.targets.size(); ++t) scope[node.targets[t]] = item.as_list()[t];
      }
      scope["loop"] = Value::Dict({
          {"index0", Value::Int(i)},
          {"index", Value::Int(i + 1)},
          {"revindex0", Value::Int(length - i - 1)},
          {"revindex", Value::Int(length - i)},
          {"first", Value::Bool(i == 0)},
          {"last", Value::Bool(i == length - 1)},
          {"length", Value::Int(length)},
      });
      scopes_.push_back(std::move(scope));
      Status status = RenderNodes(node.body);
      scopes_.pop_back();
      if (!status) return status;
    }
    return {};
  }

  Value Lookup(const std::string& name) const {
    for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
      const auto it = scope->find(name);
      if (it != scope->end()) return it->second;
    }
    return IsFunction(name) ? Value::Function(name) : Value();
  }

  Result<Arguments> EvaluateArguments(const Expr& call) {
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

  // Evaluates `expr`, refusing strings and lists beyond the limits.
  Result<Value> Evaluate(const Expr& expr) {
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

  Result<Value> EvaluateUnbounded(const Expr& expr) {
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
        return Subscript(*object, *key, expr);
      }
      case Expr::Kind::kSlice:
        return Slice(expr);
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
        if (!IsNumber(*operand) || Number(*operand) == INT64_MIN) {
          return Error::InvalidArgument(Prefix(expr) + "cannot negate a " +
                                        std::string(KindName(operand->kind())));
        }
        return Value::Int(-Number(*operand));
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
        Result<Value> result = Binary(expr.name, *left, *right);
        if (!result) return result.error().Prefixed(Prefix(expr));
        return result;
      }
    }
    return Value();
  }

  Result<Value> EvaluateCall(const Expr& expr) {
    Result<Arguments> arguments = EvaluateArguments(expr);
    if (!arguments) return arguments.error();
    if (expr.kind == Expr::Kind::kCall) {
      Result<Value> result = CallFunction(expr.name, *arguments);
      if (!result) return result.error().Prefixed(Prefix(expr));
      return result;
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
    Result<Value> result = expr.kind == Expr::Kind::kFilter ? ApplyFilter(expr.name, *operand, *arguments)
                                                            : CallMethod(*operand, expr.name, *arguments);
    if (!result) return result.error().Prefixed(Prefix(expr));
    return result;
  }

  static Result<Value> Subscript(const Value& object, const Value& key, const Expr& expr) {
    switch (object.kind()) {
      case Value::Kind::kUndefined:
        return Error::InvalidArgument(Prefix(expr) + "subscript of an undefined value");
      case Value::Kind::kDict:
      case Value::Kind::kNamespace:
        return key.kind() == Value::Kind::kString ? object.Get(key.as_string()) : Value();
      case Value::Kind::kList: {
        if (!IsNumber(key)) return Value();
        const std::optional<size_t> index = Index(Number(key), object.as_list().size());
        return index ? object.as_list()[*index] : Value();
      }
      case Value::Kind::kString: {
        if (!IsNumber(key)) return Value();
        const std::vector<size_t> offsets = CodePointOffsets(object.as_string());
        const std::optional<size_t> index = Index(Number(key), offsets.size());
        if (!index) return Value();
        const size_t end = *index + 1 < offsets.size() ? offsets[*index + 1] : object.as_string().size();
        return Value::String(object.as_string().substr(offsets[*index], end - offsets[*index]));
      }
      default:
        return Value();
    }
  }

  Result<Value> Slice(const Expr& expr) {
    Value parts[4];
    for (size_t i = 0; i < 4; ++i) {
      if (expr.children[i] == nullptr) continue;
      Result<Value> part = Evaluate(*expr.children[i]);
      if (!part) return part;
      parts[i] = std::move(*part);
    }
    const Value& object = parts[0];
    if (object.kind() == Value::Kind::kList) {
      Result<std::vector<size_t>> positions =
          SlicePositions(parts[1], parts[2], parts[3], object.as_list().size());
      if (!positions) return positions.error().Prefixed(Prefix(expr));
      ValueList items;
      for (size_t p : *positions) items.push_back(object.as_list()[p]);
      return Value::List(std::move(items));
    }
    if (object.kind() == Value::Kind::kString) {
      const std::string& text = object.as_string();
      const std::vector<size_t> offsets = CodePointOffsets(text);
      Result<std::vector<size_t>> positions = SlicePositions(parts[1], parts[2], parts[3], offsets.size());
      if (!positions) return positions.error().Prefixed(Prefix(expr));
      std::string out;
      for (size_t p : *positions) {
        const size_t end = p + 1 < offsets.size() ? offsets[p + 1] : text.size();
        out.append(text, offsets[p], end - offsets[p]);
      }
      return Value::String(std::move(out));
    }
    return Error::InvalidArgument(Prefix(expr) + "cannot slice a " + std::string(KindName(object.kind())));
  }

  // a + b, refused before it is built when longer than kMaxOutputBytes.
  static Result<Value> Concatenate(std::string_view a, std::string_view b) {
    if (a.size() + b.size() > kMaxOutputBytes) {
      return Error::InvalidArgument("a string longer than " + std::to_string(kMaxOutputBytes) + " bytes");
    }
    std::string joined;
    joined.reserve(a.size() + b.size());
    joined.append(a).append(b);
    return Value::String(std::move(joined));
  }

  static Result<Value> Binary(const std::string& op, const Value& left, const Value& right) {
    const auto mismatch = [&]() {
      return Error::InvalidArgument("unsupported operand kinds for '" + op + "': " + KindName(left.kind()) +
                                    " and " + KindName(right.kind()));
    };
    if (op == "==") return Value::Bool(left == right);
    if (op == "!=") return Value::Bool(!(left == right));
    if (op == "~") {
      Result<std::string> a = ToText(left);
      if (!a) return a.error();
      Result<std::string> b = ToText(right);
      if (!b) return b.error();
      return Concatenate(*a, *b);
    }
    if (op == "in") {
      switch (right.kind()) {
        case Value::Kind::kUndefined:
          return Value::Bool(false);
        case Value::Kind::kString:
          if (left.kind() != Value::Kind::kString) return mismatch();
          return Value::Bool(right.as_string().find(left.as_string()) != std::string::npos);
        case Value::Kind::kList:
          for (const Value& item : right.as_list()) {
            if (item == left) return Value::Bool(true);
          }
          return Value::Bool(false);
        case Value::Kind::kDict:
          return Value::Bool(left.kind() == Value::Kind::kString &&
                             !right.Get(left.as_string()).is_undefined());
        default:
          return mismatch();
      }
    }
    if (op == "<" || op == "<=" || op == ">" || op == ">=") {
      int compared = 0;
      if (IsNumber(left) && IsNumber(right)) {
        compared = Number(left) < Number(right) ? -1 : Number(left) > Number(right) ? 1 : 0;
      } else if (left.kind() == Value::Kind::kString && right.kind() == Value::Kind::kString) {
        compared = left.as_string().compare(right.as_string());
      } else {
        return mismatch();
      }
      if (op == "<") return Value::Bool(compared < 0);
      if (op == "<=") return Value::Bool(compared <= 0);
      if (op == ">") return Value::Bool(compared > 0);
      return Value::Bool(compared >= 0);
    }
    if (op == "+") {
      if (left.kind() == Value::Kind::kString && right.kind() == Value::Kind::kString) {
        return Concatenate(left.as_string(), right.as_string());
      }
      if (left.kind() == Value::Kind::kList && right.kind() == Value::Kind::kList) {
        if (left.as_list().size() + right.as_list().size() > kMaxListItems) {
          return Error::InvalidArgument("a list longer than " + std::to_string(kMaxListItems) + " items");
        }
        ValueList items = left.as_list();
        items.insert(items.end(), right.as_list().begin(), right.as_list().end());
        return Value::List(std::move(items));
      }
    }
    if (!IsNumber(left) || !IsNumber(right)) return mismatch();
    const int64_t a = Number(left);
    const int64_t b = Number(right);
    int64_t result = 0;
    bool overflow = false;
    if (op == "+") {
      overflow = __builtin_add_overflow(a, b, &result);
    } else if (op == "-") {
      overflow = __builtin_sub_overflow(a, b, &result);
    } else if (op == "*") {
      overflow = __builtin_mul_overflow(a, b, &result);
    } else {  // "//" and "%", Python's floor division and modulo.
      if (b == 0) return Error::InvalidArgument("integer division or modulo by zero");
      if (a == INT64_MIN && b == -1) {
        overflow = true;
      } else {
        int64_t quotient = a / b;
        int64_t remainder = a % b;
        if (remainder != 0 && ((remainder < 0) != (b < 0))) {
          --quotient;
          remainder += b;
        }
        result = op == "//" ? quotient : remainder;
      }
    }
    if (overflow) return Error::InvalidArgument("integer overflow in '" + op + "'");
    return Value::Int(result);
  }

  std::vector<std::map<std::string, Value>> scopes_;
  std::string out_;
  int64_t iterations_ = 0;  // of all loops so far
};

}  // namespace

Result<std::string> RenderTemplate(const NodeList& nodes, const ValueDict& variables) {
  return Renderer(variables).Run(nodes);
}

}  // namespace inferno::chat
