#include "text/chat_template/value_operators.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "text/chat_template/builtins.h"
#include "text/chat_template/render_limits.h"

namespace inferno::chat {
namespace {

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

// a + b, refused before it is built when longer than kMaxOutputBytes.
Result<Value> Concatenate(std::string_view a, std::string_view b) {
  if (a.size() + b.size() > kMaxOutputBytes) {
    return Error::InvalidArgument("a string longer than " + std::to_string(kMaxOutputBytes) + " bytes");
  }
  std::string joined;
  joined.reserve(a.size() + b.size());
  joined.append(a).append(b);
  return Value::String(std::move(joined));
}

}  // namespace

Result<Value> ApplyBinaryOperator(const std::string& op, const Value& left, const Value& right) {
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

Result<Value> Negate(const Value& operand) {
  if (!IsNumber(operand) || Number(operand) == INT64_MIN) {
    return Error::InvalidArgument("cannot negate a " + std::string(KindName(operand.kind())));
  }
  return Value::Int(-Number(operand));
}

Result<Value> Subscript(const Value& object, const Value& key) {
  switch (object.kind()) {
    case Value::Kind::kUndefined:
      return Error::InvalidArgument("subscript of an undefined value");
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

Result<Value> Slice(const Value& object, const Value& start, const Value& stop, const Value& step) {
  if (object.kind() == Value::Kind::kList) {
    Result<std::vector<size_t>> positions = SlicePositions(start, stop, step, object.as_list().size());
    if (!positions) return positions.error();
    ValueList items;
    for (size_t p : *positions) items.push_back(object.as_list()[p]);
    return Value::List(std::move(items));
  }
  if (object.kind() == Value::Kind::kString) {
    const std::string& text = object.as_string();
    const std::vector<size_t> offsets = CodePointOffsets(text);
    Result<std::vector<size_t>> positions = SlicePositions(start, stop, step, offsets.size());
    if (!positions) return positions.error();
    std::string out;
    for (size_t p : *positions) {
      const size_t end = p + 1 < offsets.size() ? offsets[p + 1] : text.size();
      out.append(text, offsets[p], end - offsets[p]);
    }
    return Value::String(std::move(out));
  }
  return Error::InvalidArgument("cannot slice a " + std::string(KindName(object.kind())));
}

}  // namespace inferno::chat
