#include "text/chat_template/builtins.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <ctime>
#include <functional>
#include <map>

#include "text/chat_template/value.h"

namespace inferno::chat {
namespace {

// The longest list range() builds.
constexpr int64_t kMaxRange = 1'000'000;

// The code point at `offset` of UTF-8 `text` and its length in bytes; a byte
// that starts no valid sequence is U+FFFD of length 1.
std::pair<uint32_t, size_t> DecodeAt(std::string_view text, size_t offset) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(offset);
  if (lead < 0x80) return {lead, 1};
  const size_t length = lead >= 0xF0 && lead < 0xF5 ? 4
                        : lead >= 0xE0              ? (lead < 0xF0 ? 3 : 0)
                        : lead >= 0xC2              ? 2
                                                    : 0;
  if (length == 0 || offset + length > text.size()) return {0xFFFD, 1};
  uint32_t code_point = lead & (0xFF >> (length + 1));
  for (size_t i = 1; i < length; ++i) {
    if ((byte(offset + i) & 0xC0) != 0x80) return {0xFFFD, 1};
    code_point = (code_point << 6) | (byte(offset + i) & 0x3F);
  }
  const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code_point < min[length] || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)) {
    return {0xFFFD, 1};
  }
  return {code_point, length};
}

// Python's str.isspace() for one code point.
bool IsUnicodeSpace(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

// The code points of `text`, each as its bytes.
std::vector<std::string_view> Characters(std::string_view text) {
  std::vector<std::string_view> characters;
  for (size_t offset = 0; offset < text.size();) {
    const size_t length = DecodeAt(text, offset).second;
    characters.push_back(text.substr(offset, length));
    offset += length;
  }
  return characters;
}

Error WrongKind(std::string_view function, std::string_view expected, const Value& got) {
  return Error::InvalidArgument(std::string(function) + ": expected " + std::string(expected) + ", got a " +
                                KindName(got.kind()));
}

// The arguments of one call, bound to parameter names Python-style.
class Binder {
 public:
  Binder(std::string_view function, const Arguments& arguments)
      : function_(function), arguments_(arguments) {}

  // Binds the parameters in order; `required` of them must be present. An
  // absent optional parameter is undefined.
  Result<std::vector<Value>> Bind(std::initializer_list<std::string_view> parameters, size_t required) const {
    if (arguments_.positional.size() > parameters.size()) {
      return Error::InvalidArgument(std::string(function_) + ": takes at most " +
                                    std::to_string(parameters.size()) + " arguments, got " +
                                    std::to_string(arguments_.positional.size()));
    }
    std::vector<Value> bound(arguments_.positional);
    bound.resize(parameters.size());
    for (const auto& [name, value] : arguments_.keywords) {
      const auto it = std::find(parameters.begin(), parameters.end(), name);
      if (it == parameters.end()) {
        return Error::InvalidArgument(std::string(function_) + ": unexpected keyword argument '" + name +
                                      "'");
      }
      bound[static_cast<size_t>(it - parameters.begin())] = value;
    }
    for (size_t i = 0; i < required; ++i) {
      if (bound[i].is_undefined()) {
        return Error::InvalidArgument(std::string(function_) + ": missing argument '" +
                                      std::string(*(parameters.begin() + i)) + "'");
      }
    }
    return bound;
  }

 private:
  std::string_view function_;
  const Arguments& arguments_;
};

Result<std::string> StringOperand(std::string_view function, const Value& value) {
  if (value.kind() != Value::Kind::kString) return WrongKind(function, "a string", value);
  return value.as_string();
}

// Python's str.strip/lstrip/rstrip(chars): whitespace when `chars` is undefined or none.
Result<Value> Strip(std::string_view function, const Value& operand, const Value& chars, bool left,
                    bool right) {
  Result<std::string> text = StringOperand(function, operand);
  if (!text) return text.error();
  std::vector<std::string_view> set;
  const bool whitespace = chars.is_undefined() || chars.kind() == Value::Kind::kNone;
  if (!whitespace) {
    if (chars.kind() != Value::Kind::kString) return WrongKind(function, "a string of characters", chars);
    set = Characters(chars.as_string());
  }
  const auto strippable = [&](std::string_view character) {
    if (whitespace) return IsUnicodeSpace(DecodeAt(character, 0).first);
    return std::find(set.begin(), set.end(), character) != set.end();
  };
  const std::vector<std::string_view> characters = Characters(*text);
  size_t begin = 0;
  size_t end = characters.size();
  while (left && begin < end && strippable(characters[begin])) ++begin;
  while (right && end > begin && strippable(characters[end - 1])) --end;
  std::string out;
  for (size_t i = begin; i < end; ++i) out += characters[i];
  return Value::String(std::move(out));
}

// ASCII case mapping; other text is refused rather than mapped wrongly.
Result<std::string> MapAsciiCase(std::string_view function, const Value& operand, int (*map)(int),
                                 bool capitalize) {
  Result<std::string> text = StringOperand(function, operand);
  if (!text) return text;
  for (char& c : *text) {
    if (static_cast<unsigned char>(c) >= 0x80) {
      return Error::Unimplemented(std::string(function) + " of non-ASCII text is not supported");
    }
    c = static_cast<char>(map(c));
  }
  if (capitalize && !text->empty()) (*text)[0] = static_cast<char>(std::toupper((*text)[0]));
  return text;
}

Result<Value> Affix(std::string_view function, const Value& operand, const Value& affix, bool prefix) {
  Result<std::string> text = StringOperand(function, operand);
  if (!text) return text.error();
  std::vector<Value> candidates;
  if (affix.kind() == Value::Kind::kList) {
    candidates = affix.as_list();
  } else {
    candidates.push_back(affix);
  }
  for (const Value& candidate : candidates) {
    if (candidate.kind() != Value::Kind::kString)
      return WrongKind(function, "a string or a list of strings", candidate);
    const std::string& s = candidate.as_string();
    if (s.size() <= text->size() && (prefix ? text->compare(0, s.size(), s) == 0
                                            : text->compare(text->size() - s.size(), s.size(), s) == 0)) {
      return Value::Bool(true);
    }
  }
  return Value::Bool(false);
}

// Python's str.split(sep, maxsplit).
Result<Value> Split(const Value& operand, const Value& separator, const Value& max_split) {
  Result<std::string> text = StringOperand("split", operand);
  if (!text) return text.error();
  int64_t limit = -1;
  if (!max_split.is_undefined()) {
    if (max_split.kind() != Value::Kind::kInt) return WrongKind("split", "an integer maxsplit", max_split);
    limit = max_split.as_int();
  }
  ValueList parts;
  if (separator.is_undefined() || separator.kind() == Value::Kind::kNone) {
    const std::vector<std::string_view> characters = Characters(*text);
    const auto space = [&](size_t i) { return IsUnicodeSpace(DecodeAt(characters[i], 0).first); };
    size_t i = 0;
    while (true) {
      while (i < characters.size() && space(i)) ++i;
      if (i == characters.size()) break;
      std::string part;
      if (limit >= 0 && static_cast<int64_t>(parts.size()) == limit) {
        // The last part keeps its trailing whitespace, as in Python.
        while (i < characters.size()) part += characters[i++];
        parts.push_back(Value::String(std::move(part)));
        break;
      }
      while (i < characters.size() && !space(i)) part += characters[i++];
      parts.push_back(Value::String(std::move(part)));
    }
    return Value::List(std::move(parts));
  }
  if (separator.kind() != Value::Kind::kString) return WrongKind("split", "a string separator", separator);
  const std::string& sep = separator.as_string();
  if (sep.empty()) return Error::InvalidArgument("split: empty separator");
  size_t start = 0;
  while (limit < 0 || static_cast<int64_t>(parts.size()) < limit) {
    const size_t found = text->find(sep, start);
    if (found == std::string::npos) break;
    parts.push_back(Value::String(text->substr(start, found - start)));
    start = found + sep.size();
  }
  parts.push_back(Value::String(text->substr(start)));
  return Value::List(std::move(parts));
}

// Python's str.replace(old, new, count).
Result<Value> Replace(const Value& operand, const Value& old_value, const Value& new_value,
                      const Value& count) {
  Result<std::string> text = StringOperand("replace", operand);
  if (!text) return text.error();
  if (old_value.kind() != Value::Kind::kString) return WrongKind("replace", "a string", old_value);
  if (new_value.kind() != Value::Kind::kString) return WrongKind("replace", "a string", new_value);
  int64_t remaining = -1;
  if (!count.is_undefined() && count.kind() != Value::Kind::kNone) {
    if (count.kind() != Value::Kind::kInt) return WrongKind("replace", "an integer count", count);
    remaining = count.as_int();
  }
  const std::string& from = old_value.as_string();
  const std::string& to = new_value.as_string();
  std::string out;
  if (from.empty()) {
    for (std::string_view character : Characters(*text)) {
      if (remaining != 0) {
        out += to;
        --remaining;
      }
      out += character;
    }
    if (remaining != 0) out += to;
    return Value::String(std::move(out));
  }
  size_t start = 0;
  while (remaining != 0) {
    const size_t found = text->find(from, start);
    if (found == std::string::npos) break;
    out.append(*text, start, found - start);
    out += to;
    start = found + from.size();
    --remaining;
  }
  out.append(*text, start);
  return Value::String(std::move(out));
}

Result<Value> Items(std::string_view function, const Value& operand) {
  if (operand.kind() != Value::Kind::kDict) return WrongKind(function, "a dict", operand);
  ValueList items;
  for (const auto& [key, value] : operand.as_dict())
    items.push_back(Value::List({Value::String(key), value}));
  return Value::List(std::move(items));
}

Result<Value> Length(const Value& operand) {
  switch (operand.kind()) {
    case Value::Kind::kUndefined:
      return Value::Int(0);
    case Value::Kind::kString:
      return Value::Int(static_cast<int64_t>(CodePointOffsets(operand.as_string()).size()));
    case Value::Kind::kList:
      return Value::Int(static_cast<int64_t>(operand.as_list().size()));
    case Value::Kind::kDict:
      return Value::Int(static_cast<int64_t>(operand.as_dict().size()));
    default:
      return WrongKind("length", "a string, list or dict", operand);
  }
}

// A string's code points or a list's items, for first/last/reverse/list.
Result<ValueList> Sequence(std::string_view function, const Value& operand) {
  if (operand.kind() == Value::Kind::kList) return operand.as_list();
  if (operand.kind() == Value::Kind::kString) {
    ValueList characters;
    for (std::string_view c : Characters(operand.as_string()))
      characters.push_back(Value::String(std::string(c)));
    return characters;
  }
  if (operand.kind() == Value::Kind::kDict) {
    ValueList keys;
    for (const auto& entry : operand.as_dict()) keys.push_back(Value::String(entry.first));
    return keys;
  }
  return WrongKind(function, "a string, list or dict", operand);
}

// Joins a list rebuilt from Sequence back into the operand's kind.
Value Rejoin(const Value& operand, ValueList items) {
  if (operand.kind() != Value::Kind::kString) return Value::List(std::move(items));
  std::string text;
  for (const Value& item : items) text += item.as_string();
  return Value::String(std::move(text));
}

// select(test, args...) / reject(test, args...): the items of a sequence that
// pass (keep) or fail the test (truthiness without one).
Result<Value> Select(std::string_view function, const Value& operand, const Arguments& arguments, bool keep) {
  if (!arguments.keywords.empty())
    return Error::InvalidArgument(std::string(function) + ": takes no keyword arguments");
  Result<ValueList> items = Sequence(function, operand);
  if (!items) return items.error();
  std::string test;
  Arguments test_arguments;
  if (!arguments.positional.empty()) {
    if (arguments.positional[0].kind() != Value::Kind::kString ||
        !IsTest(arguments.positional[0].as_string())) {
      return Error::Unimplemented(std::string(function) + ": the first argument must name a supported test");
    }
    test = arguments.positional[0].as_string();
    test_arguments.positional.assign(arguments.positional.begin() + 1, arguments.positional.end());
  }
  ValueList selected;
  for (const Value& item : *items) {
    bool passed = item.Truthy();
    if (!test.empty()) {
      Result<bool> result = ApplyTest(test, item, test_arguments);
      if (!result) return result.error();
      passed = *result;
    }
    if (passed == keep) selected.push_back(item);
  }
  return Value::List(std::move(selected));
}

using FilterFunction = std::function<Result<Value>(const Value&, const Arguments&)>;

const std::map<std::string_view, FilterFunction>& Filters() {
  static const auto* filters = new std::map<std::string_view, FilterFunction>{
      {"trim",
       [](const Value& operand, const Arguments& arguments) -> Result<Value> {
         Result<std::vector<Value>> bound = Binder("trim", arguments).Bind({"chars"}, 0);
         if (!bound) return bound.error();
         Result<std::string> text = ToText(operand);
         if (!text) return text.error();
         return Strip("trim", Value::String(std::move(*text)), (*bound)[0], true, true);
       }},
      {"length", [](const Value& operand, const Arguments&) { return Length(operand); }},
      {"count", [](const Value& operand, const Arguments&) { return Length(operand); }},
      {"tojson",
       [](const Value& operand, const Arguments& arguments) -> Result<Value> {
         Result<std::vector<Value>> bound = Binder("tojson", arguments).Bind({"indent"}, 0);
         if (!bound) return bound.error();
         const Value& indent = (*bound)[0];
         if (!indent.is_undefined() && indent.kind() != Value::Kind::kNone &&
             indent.kind() != Value::Kind::kInt) {
           return WrongKind("tojson", "an integer indent", indent);
         }
         Result<std::string> json =
             ToJson(operand, indent.kind() == Value::Kind::kInt ? static_cast<int>(indent.as_int()) : 0);
         if (!json) return json.error();
         return Value::String(std::move(*json));
       }},
      {"string",
       [](const Value& operand, const Arguments&) -> Result<Value> {
         Result<std::string> text = ToText(operand);
         if (!text) return text.error();
         return Value::String(std::move(*text));
       }},
      {"upper",
       [](const Value& operand, const Arguments&) -> Result<Value> {
         Result<std::string> text = MapAsciiCase("upper", operand, ::toupper, false);
         if (!text) return text.error();
         return Value::String(std::move(*text));
       }},
      {"lower",
       [](const Value& operand, const Arguments&) -> Result<Value> {
         Result<std::string> text = MapAsciiCase("lower", operand, ::tolower, false);
         if (!text) return text.error();
         return Value::String(std::move(*text));
       }},
      {"capitalize",
       [](const Value& operand, const Arguments&) -> Result<Value> {
         Result<std::string> text = MapAsciiCase("capitalize", operand, ::tolower, true);
         if (!text) return text.error();
         return Value::String(std::move(*text));
       }},
      {"first",
       [](const Value& operand, const Arguments&) -> Result<Value> {
         Result<ValueList> items = Sequence("first", operand);
         if (!items) return items.error();
         return items->empty() ? Value() : items->front();
       }},
      {"last",
       [](const Value& operand, const Arguments&) -> Result<Value> {
         Result<ValueList> items = Sequence("last", operand);
         if (!items) return items.error();
         return items->empty() ? Value() : items->back();
       }},
      {"reverse",
       [](const Value& operand, const Arguments&) -> Result<Value> {
         Result<ValueList> items = Sequence("reverse", operand);
         if (!items) return items.error();
         std::reverse(items->begin(), items->end());
         return Rejoin(operand, std::move(*items));
       }},
      {"list",
       [](const Value& operand, const Arguments&) -> Result<Value> {
         Result<ValueList> items = Sequence("list", operand);
         if (!items) return items.error();
         return Value::List(std::move(*items));
       }},
      {"join",
       [](const Value& operand, const Arguments& arguments) -> Result<Value> {
         Result<std::vector<Value>> bound = Binder("join", arguments).Bind({"d"}, 0);
         if (!bound) return bound.error();
         Result<std::string> separator = ToText((*bound)[0]);
         if (!separator) return separator.error();
         Result<ValueList> items = Sequence("join", operand);
         if (!items) return items.error();
         std::string out;
         for (size_t i = 0; i < items->size(); ++i) {
           Result<std::string> text = ToText((*items)[i]);
           if (!text) return text.error();
           out += (i > 0 ? *separator : "") + *text;
         }
         return Value::String(std::move(out));
       }},
      {"default",
       [](const Value& operand, const Arguments& arguments) -> Result<Value> {
         Result<std::vector<Value>> bound =
             Binder("default", arguments).Bind({"default_value", "boolean"}, 0);
         if (!bound) return bound.error();
         const bool use_default = operand.is_undefined() || ((*bound)[1].Truthy() && !operand.Truthy());
         if (!use_default) return operand;
         return (*bound)[0].is_undefined() ? Value::String("") : (*bound)[0];
       }},
      {"items", [](const Value& operand, const Arguments&) { return Items("items", operand); }},
      {"select", [](const Value& operand,
                    const Arguments& arguments) { return Select("select", operand, arguments, true); }},
      {"reject", [](const Value& operand,
                    const Arguments& arguments) { return Select("reject", operand, arguments, false); }},
      {"replace",
       [](const Value& operand, const Arguments& arguments) -> Result<Value> {
         Result<std::vector<Value>> bound = Binder("replace", arguments).Bind({"old", "new", "count"}, 2);
         if (!bound) return bound.error();
         return Replace(operand, (*bound)[0], (*bound)[1], (*bound)[2]);
       }},
  };
  return *filters;
}

using TestFunction = std::function<Result<bool>(const Value&, const Arguments&)>;

TestFunction KindTest(std::initializer_list<Value::Kind> kinds) {
  std::vector<Value::Kind> accepted(kinds);
  return [accepted](const Value& operand, const Arguments&) -> Result<bool> {
    return std::find(accepted.begin(), accepted.end(), operand.kind()) != accepted.end();
  };
}

TestFunction ParityTest(std::string_view name, int64_t remainder) {
  return [name, remainder](const Value& operand, const Arguments&) -> Result<bool> {
    if (operand.kind() != Value::Kind::kInt) return WrongKind(name, "an integer", operand);
    return operand.as_int() % 2 == remainder || operand.as_int() % 2 == -remainder;
  };
}

TestFunction EqualityTest(std::string_view name, bool equal) {
  return [name, equal](const Value& operand, const Arguments& arguments) -> Result<bool> {
    Result<std::vector<Value>> bound = Binder(name, arguments).Bind({"other"}, 1);
    if (!bound) return bound.error();
    return (operand == (*bound)[0]) == equal;
  };
}

const std::map<std::string_view, TestFunction>& Tests() {
  using Kind = Value::Kind;
  static const auto* tests = new std::map<std::string_view, TestFunction>{
      {"defined", KindTest({Kind::kNone, Kind::kBool, Kind::kInt, Kind::kString, Kind::kList, Kind::kDict,
                            Kind::kNamespace, Kind::kFunction})},
      {"undefined", KindTest({Kind::kUndefined})},
      {"none", KindTest({Kind::kNone})},
      {"string", KindTest({Kind::kString})},
      {"number", KindTest({Kind::kInt, Kind::kBool})},
      {"integer", KindTest({Kind::kInt})},
      {"boolean", KindTest({Kind::kBool})},
      {"mapping", KindTest({Kind::kDict})},
      {"sequence", KindTest({Kind::kString, Kind::kList, Kind::kDict})},
      {"iterable", KindTest({Kind::kString, Kind::kList, Kind::kDict})},
      {"true",
       [](const Value& v, const Arguments&) -> Result<bool> {
         return v.kind() == Value::Kind::kBool && v.as_bool();
       }},
      {"false",
       [](const Value& v, const Arguments&) -> Result<bool> {
         return v.kind() == Value::Kind::kBool && !v.as_bool();
       }},
      {"odd", ParityTest("odd", 1)},
      {"even", ParityTest("even", 0)},
      {"eq", EqualityTest("eq", true)},
      {"equalto", EqualityTest("equalto", true)},
      {"ne", EqualityTest("ne", false)},
  };
  return *tests;
}

using MethodFunction = std::function<Result<Value>(const Value&, const Arguments&)>;

MethodFunction StripMethod(std::string_view name, bool left, bool right) {
  return [name, left, right](const Value& object, const Arguments& arguments) -> Result<Value> {
    Result<std::vector<Value>> bound = Binder(name, arguments).Bind({"chars"}, 0);
    if (!bound) return bound.error();
    return Strip(name, object, (*bound)[0], left, right);
  };
}

MethodFunction AffixMethod(std::string_view name, bool prefix) {
  return [name, prefix](const Value& object, const Arguments& arguments) -> Result<Value> {
    Result<std::vector<Value>> bound = Binder(name, arguments).Bind({"prefix"}, 1);
    if (!bound) return bound.error();
    return Affix(name, object, (*bound)[0], prefix);
  };
}

// A method that is also a filter (upper, lower, capitalize, items, replace).
MethodFunction FilterMethod(std::string_view name) {
  return [name](const Value& object, const Arguments& arguments) {
    return ApplyFilter(name, object, arguments);
  };
}

// dict.keys() when `keys`, else dict.values().
MethodFunction DictView(std::string_view name, bool keys) {
  return [name, keys](const Value& object, const Arguments&) -> Result<Value> {
    if (object.kind() != Value::Kind::kDict) return WrongKind(name, "a dict", object);
    ValueList out;
    for (const auto& [key, value] : object.as_dict()) out.push_back(keys ? Value::String(key) : value);
    return Value::List(std::move(out));
  };
}

const std::map<std::string_view, MethodFunction>& Methods() {
  static const auto* methods = new std::map<std::string_view, MethodFunction>{
      {"strip", StripMethod("strip", true, true)},
      {"lstrip", StripMethod("lstrip", true, false)},
      {"rstrip", StripMethod("rstrip", false, true)},
      {"startswith", AffixMethod("startswith", true)},
      {"endswith", AffixMethod("endswith", false)},
      {"split",
       [](const Value& object, const Arguments& arguments) -> Result<Value> {
         Result<std::vector<Value>> bound = Binder("split", arguments).Bind({"sep", "maxsplit"}, 0);
         if (!bound) return bound.error();
         return Split(object, (*bound)[0], (*bound)[1]);
       }},
      {"upper", FilterMethod("upper")},
      {"lower", FilterMethod("lower")},
      {"capitalize", FilterMethod("capitalize")},
      {"replace", FilterMethod("replace")},
      {"items", FilterMethod("items")},
      {"keys", DictView("keys", true)},
      {"values", DictView("values", false)},
      {"get",
       [](const Value& object, const Arguments& arguments) -> Result<Value> {
         if (object.kind() != Value::Kind::kDict) return WrongKind("get", "a dict", object);
         Result<std::vector<Value>> bound = Binder("get", arguments).Bind({"key", "default"}, 1);
         if (!bound) return bound.error();
         if ((*bound)[0].kind() != Value::Kind::kString) return Value::None();
         const Value found = object.Get((*bound)[0].as_string());
         if (!found.is_undefined()) return found;
         return (*bound)[1].is_undefined() ? Value::None() : (*bound)[1];
       }},
  };
  return *methods;
}

}  // namespace

bool IsFilter(std::string_view name) { return Filters().count(name) > 0; }
bool IsTest(std::string_view name) { return Tests().count(name) > 0; }
bool IsFunction(std::string_view name) {
  return name == "raise_exception" || name == "namespace" || name == "range" || name == "strftime_now";
}
bool IsMethod(std::string_view name) { return Methods().count(name) > 0; }

Result<Value> ApplyFilter(std::string_view name, const Value& operand, const Arguments& arguments) {
  const auto it = Filters().find(name);
  if (it == Filters().end()) return Error::Unimplemented("unknown filter '" + std::string(name) + "'");
  return it->second(operand, arguments);
}

Result<bool> ApplyTest(std::string_view name, const Value& operand, const Arguments& arguments) {
  const auto it = Tests().find(name);
  if (it == Tests().end()) return Error::Unimplemented("unknown test '" + std::string(name) + "'");
  return it->second(operand, arguments);
}

Result<Value> CallFunction(std::string_view name, const Arguments& arguments) {
  if (name == "raise_exception") {
    Result<std::vector<Value>> bound = Binder(name, arguments).Bind({"message"}, 0);
    if (!bound) return bound.error();
    Result<std::string> message = ToText((*bound)[0]);
    return Error::InvalidArgument(
        "raise_exception: " + (message ? *message : std::string("(a ") + KindName((*bound)[0].kind()) + ")"));
  }
  if (name == "namespace") {
    if (!arguments.positional.empty()) {
      return Error::Unimplemented("namespace: positional arguments are not supported");
    }
    return Value::Namespace(ValueDict(arguments.keywords.begin(), arguments.keywords.end()));
  }
  if (name == "range") {
    Result<std::vector<Value>> bound = Binder(name, arguments).Bind({"start", "stop"}, 1);
    if (!bound) return bound.error();
    for (const Value& bound_value : *bound) {
      if (!bound_value.is_undefined() && bound_value.kind() != Value::Kind::kInt) {
        return WrongKind("range", "integers", bound_value);
      }
    }
    const bool one = (*bound)[1].is_undefined();
    const int64_t start = one ? 0 : (*bound)[0].as_int();
    const int64_t stop = one ? (*bound)[0].as_int() : (*bound)[1].as_int();
    if (stop > start && stop - start > kMaxRange) {
      return Error::Unimplemented("range: more than " + std::to_string(kMaxRange) + " items");
    }
    ValueList items;
    for (int64_t i = start; i < stop; ++i) items.push_back(Value::Int(i));
    return Value::List(std::move(items));
  }
  if (name == "strftime_now") {
    Result<std::vector<Value>> bound = Binder(name, arguments).Bind({"format"}, 1);
    if (!bound) return bound.error();
    if ((*bound)[0].kind() != Value::Kind::kString) return WrongKind(name, "a format string", (*bound)[0]);
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char text[256];
    const size_t length = std::strftime(text, sizeof(text), (*bound)[0].as_string().c_str(), &local);
    if (length == 0 && !(*bound)[0].as_string().empty()) {
      return Error::InvalidArgument("strftime_now: the format gives no text or more than 255 bytes");
    }
    return Value::String(std::string(text, length));
  }
  return Error::Unimplemented("unknown function '" + std::string(name) + "'");
}

Result<Value> CallMethod(const Value& object, std::string_view name, const Arguments& arguments) {
  const auto it = Methods().find(name);
  if (it == Methods().end()) return Error::Unimplemented("unknown method '" + std::string(name) + "'");
  return it->second(object, arguments);
}

std::vector<size_t> CodePointOffsets(std::string_view text) {
  std::vector<size_t> offsets;
  for (size_t offset = 0; offset < text.size(); offset += DecodeAt(text, offset).second)
    offsets.push_back(offset);
  return offsets;
}

}  // namespace inferno::chat
