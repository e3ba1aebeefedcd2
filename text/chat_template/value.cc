#include "text/chat_template/value.h"

#include <algorithm>
#include <cstdio>

#include <glog/logging.h>

namespace inferno::chat {
namespace {

// Adds `entries` to `into`, a later duplicate replacing the earlier value in place.
void MergeEntries(ValueDict entries, ValueDict& into) {
  for (auto& entry : entries) {
    auto it =
        std::find_if(into.begin(), into.end(), [&](const auto& old) { return old.first == entry.first; });
    if (it != into.end()) {
      it->second = std::move(entry.second);
    } else {
      into.push_back(std::move(entry));
    }
  }
}

void AppendJsonString(std::string_view text, std::string& out) {
  out += '"';
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned>(c));
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

Status AppendJson(const Value& value, int indent, int depth, std::string& out) {
  // Python's layout: items on their own lines, indented one level deeper than
  // the brackets, when indent > 0; otherwise ", " between items.
  const auto newline = [&](int level) {
    if (indent > 0) out += '\n' + std::string(static_cast<size_t>(indent * level), ' ');
  };
  const std::string_view separator = indent > 0 ? "," : ", ";
  switch (value.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNamespace:
    case Value::Kind::kFunction:
      return Error::InvalidArgument(std::string("tojson: a ") + KindName(value.kind()) +
                                    " value is not JSON serializable");
    case Value::Kind::kNone:
      out += "null";
      return {};
    case Value::Kind::kBool:
      out += value.as_bool() ? "true" : "false";
      return {};
    case Value::Kind::kInt:
      out += std::to_string(value.as_int());
      return {};
    case Value::Kind::kString:
      AppendJsonString(value.as_string(), out);
      return {};
    case Value::Kind::kList: {
      const ValueList& items = value.as_list();
      out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += separator;
        newline(depth + 1);
        if (Status status = AppendJson(items[i], indent, depth + 1, out); !status) return status;
      }
      if (!items.empty()) newline(depth);
      out += ']';
      return {};
    }
    case Value::Kind::kDict: {
      const ValueDict& entries = value.as_dict();
      out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i > 0) out += separator;
        newline(depth + 1);
        AppendJsonString(entries[i].first, out);
        out += ": ";
        if (Status status = AppendJson(entries[i].second, indent, depth + 1, out); !status) return status;
      }
      if (!entries.empty()) newline(depth);
      out += '}';
      return {};
    }
  }
  return {};
}

}  // namespace

Value Value::None() { return Value(Storage(nullptr)); }
Value Value::Bool(bool value) { return Value(Storage(value)); }
Value Value::Int(int64_t value) { return Value(Storage(value)); }
Value Value::String(std::string value) {
  return Value(Storage(std::shared_ptr<const std::string>(std::make_shared<std::string>(std::move(value)))));
}
Value Value::List(ValueList items) {
  return Value(Storage(std::shared_ptr<const ValueList>(std::make_shared<ValueList>(std::move(items)))));
}
Value Value::Dict(ValueDict entries) {
  auto dict = std::make_shared<ValueDict>();
  MergeEntries(std::move(entries), *dict);
  return Value(Storage(std::shared_ptr<const ValueDict>(std::move(dict))));
}
Value Value::Namespace(ValueDict attributes) {
  auto attrs = std::make_shared<ValueDict>();
  MergeEntries(std::move(attributes), *attrs);
  return Value(Storage(std::move(attrs)));
}

Value Value::Function(std::string name) { return Value(Storage(FunctionName{std::move(name)})); }

Value::Kind Value::kind() const { return static_cast<Kind>(storage_.index()); }

bool Value::as_bool() const {
  CHECK(kind() == Kind::kBool);
  return std::get<bool>(storage_);
}
int64_t Value::as_int() const {
  CHECK(kind() == Kind::kInt);
  return std::get<int64_t>(storage_);
}
const std::string& Value::as_string() const {
  if (kind() == Kind::kFunction) return std::get<FunctionName>(storage_).name;
  CHECK(kind() == Kind::kString);
  return *std::get<std::shared_ptr<const std::string>>(storage_);
}
const ValueList& Value::as_list() const {
  CHECK(kind() == Kind::kList);
  return *std::get<std::shared_ptr<const ValueList>>(storage_);
}
const ValueDict& Value::as_dict() const {
  if (kind() == Kind::kNamespace) return *std::get<std::shared_ptr<ValueDict>>(storage_);
  CHECK(kind() == Kind::kDict);
  return *std::get<std::shared_ptr<const ValueDict>>(storage_);
}

Value Value::Get(std::string_view key) const {
  if (kind() != Kind::kDict && kind() != Kind::kNamespace) return Value();
  for (const auto& [name, value] : as_dict()) {
    if (name == key) return value;
  }
  return Value();
}

void Value::SetAttribute(const std::string& name, Value value) const {
  CHECK(kind() == Kind::kNamespace);
  ValueDict entry;
  entry.emplace_back(name, std::move(value));
  MergeEntries(std::move(entry), *std::get<std::shared_ptr<ValueDict>>(storage_));
}

bool Value::Truthy() const {
  switch (kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return as_bool();
    case Kind::kInt:
      return as_int() != 0;
    case Kind::kString:
      return !as_string().empty();
    case Kind::kList:
      return !as_list().empty();
    case Kind::kDict:
      return !as_dict().empty();
    case Kind::kNamespace:
    case Kind::kFunction:
      return true;
  }
  return false;
}

bool operator==(const Value& a, const Value& b) {
  const auto is_number = [](const Value& v) {
    return v.kind() == Value::Kind::kBool || v.kind() == Value::Kind::kInt;
  };
  const auto number = [](const Value& v) {
    return v.kind() == Value::Kind::kBool ? static_cast<int64_t>(v.as_bool()) : v.as_int();
  };
  if (is_number(a) && is_number(b)) return number(a) == number(b);
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
    case Value::Kind::kFunction:
      return a.as_string() == b.as_string();
    case Value::Kind::kList:
      return a.as_list() == b.as_list();
    case Value::Kind::kDict: {
      if (a.as_dict().size() != b.as_dict().size()) return false;
      for (const auto& [key, value] : a.as_dict()) {
        const Value other = b.Get(key);
        if (other.is_undefined() || !(other == value)) return false;
      }
      return true;
    }
    case Value::Kind::kNamespace:
      return &a.as_dict() == &b.as_dict();
    case Value::Kind::kBool:
    case Value::Kind::kInt:
      break;
  }
  return false;
}

const char* KindName(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::kUndefined:
      return "undefined";
    case Value::Kind::kNone:
      return "none";
    case Value::Kind::kBool:
      return "boolean";
    case Value::Kind::kInt:
      return "integer";
    case Value::Kind::kString:
      return "string";
    case Value::Kind::kList:
      return "list";
    case Value::Kind::kDict:
      return "dict";
    case Value::Kind::kNamespace:
      return "namespace";
    case Value::Kind::kFunction:
      return "function";
  }
  return "?";
}

Result<std::string> ToText(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      return std::string();
    case Value::Kind::kNone:
      return std::string("None");
    case Value::Kind::kBool:
      return std::string(value.as_bool() ? "True" : "False");
    case Value::Kind::kInt:
      return std::to_string(value.as_int());
    case Value::Kind::kString:
      return value.as_string();
    case Value::Kind::kList:
    case Value::Kind::kDict:
    case Value::Kind::kNamespace:
    case Value::Kind::kFunction:
      break;
  }
  return Error::Unimplemented(std::string("printing a ") + KindName(value.kind()) +
                              " (Python's repr) is not supported; use tojson");
}

Result<std::string> ToJson(const Value& value, int indent) {
  std::string out;
  if (Status status = AppendJson(value, indent, 0, out); !status) return status.error();
  return out;
}

}  // namespace inferno::chat
