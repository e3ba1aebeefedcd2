// Value: what a chat-template expression evaluates to — Jinja's data model,
// cut down to what chat templates use: undefined, none, booleans, integers,
// strings, lists, dicts (keys are strings, kept in insertion order, as in
// Python), namespaces (a dict whose attributes `{% set ns.x = ... %}` can
// change) and global functions (by name: what `strftime_now` is when tested
// with `is defined`; calls go through builtins.h). There are no floats: a
// template that needs one is refused.
//
//   Value message = Value::Dict({{"role", Value::String("user")}, {"content", Value::String("Hi")}});
//   Value messages = Value::List({message});
//   if (messages.Truthy()) ...
//
// Thread-safety: strings, lists and dicts are immutable and shared between copies, so
// copies are cheap and may be read from any thread. A namespace's attributes
// are shared by every copy of it and change through SetAttribute: a value that
// holds a namespace needs external synchronization.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "base/error.h"

namespace inferno::chat {

class Value;
using ValueList = std::vector<Value>;
// Key, value pairs in insertion order; keys are unique.
using ValueDict = std::vector<std::pair<std::string, Value>>;

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kString, kList, kDict, kNamespace, kFunction };

  // Undefined: what a missing variable, key or attribute evaluates to.
  Value() = default;
  static Value None();
  static Value Bool(bool value);
  static Value Int(int64_t value);
  static Value String(std::string value);
  static Value List(ValueList items);
  // Later duplicates of a key replace the earlier value, keeping its place.
  static Value Dict(ValueDict entries);
  // A fresh namespace with `attributes` (same duplicate rule as Dict).
  static Value Namespace(ValueDict attributes);
  // The global function `name` (builtins.h's IsFunction).
  static Value Function(std::string name);

  Kind kind() const;
  bool is_undefined() const { return kind() == Kind::kUndefined; }

  // Preconditions (CHECKed): the matching kind; as_dict accepts a dict or a
  // namespace, as_string a string or a function (its name).
  bool as_bool() const;
  int64_t as_int() const;
  const std::string& as_string() const;
  const ValueList& as_list() const;
  const ValueDict& as_dict() const;

  // The value under `key` of a dict or namespace; undefined when absent or
  // when this is neither.
  Value Get(std::string_view key) const;

  // Precondition: a namespace. Sets (or adds) the attribute for every copy.
  void SetAttribute(const std::string& name, Value value) const;

  // Python's truth: undefined, none, false, 0 and empty strings, lists and
  // dicts are false; namespaces and functions are true.
  bool Truthy() const;

 private:
  struct FunctionName {
    std::string name;
  };
  // Alternatives in the order of Kind.
  using Storage = std::variant<std::monostate, std::nullptr_t, bool, int64_t,
                               std::shared_ptr<const std::string>, std::shared_ptr<const ValueList>,
                               std::shared_ptr<const ValueDict>, std::shared_ptr<ValueDict>, FunctionName>;
  explicit Value(Storage storage) : storage_(std::move(storage)) {}

  Storage storage_;
};

// Jinja's equality: booleans and integers compare as numbers, strings by
// bytes, lists and dicts element by element (dicts regardless of order),
// undefined equals undefined, none equals none, namespaces only themselves,
// functions by name; values of other different kinds are unequal.
bool operator==(const Value& a, const Value& b);

// "undefined", "none", "boolean", "integer", "string", "list", "dict", "namespace", "function".
const char* KindName(Value::Kind kind);

// What `{{ value }}` prints (Python's str()): undefined prints nothing, none
// "None", booleans "True"/"False", integers in decimal, strings as they are.
// Lists, dicts, namespaces and functions are Unimplemented (Python would
// print its repr).
Result<std::string> ToText(const Value& value);

// Python's json.dumps(value, ensure_ascii=False, indent=indent) as Hugging
// Face's `tojson` filter calls it: separators ", " and ": ", or "," and ": "
// with one line per item when indent > 0; strings escape '"', '\\' and
// control characters only. Undefined, namespaces and functions are
// InvalidArgument (not JSON serializable).
Result<std::string> ToJson(const Value& value, int indent);

}  // namespace inferno::chat
