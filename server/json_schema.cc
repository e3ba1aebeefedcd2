#include "server/json_schema.h"

#include <algorithm>
#include <cctype>

namespace inferno {

struct SchemaNode {
  enum class Type { kAny, kObject, kArray, kString, kNumber, kInteger, kBoolean, kNull, kEnum };
  Type type = Type::kAny;
  // kObject: each property's name as JSON-escaped text (no quotes), its
  // schema and whether it is required; none: any keys and values.
  std::vector<std::string> names;
  std::vector<std::shared_ptr<const SchemaNode>> values;
  std::vector<bool> required;
  bool any_properties = true;
  std::shared_ptr<const SchemaNode> items;  // kArray; null: any
  std::vector<std::string> enum_texts;      // kEnum: each value as compact JSON
  int64_t min_length = 0, max_length = -1;  // kString
  int64_t min_items = 0, max_items = -1;    // kArray
};

namespace {

using Json = nlohmann::ordered_json;
using Frame = JsonSchemaMatcher::Frame;
using Kind = Frame::Kind;
using Type = SchemaNode::Type;

const SchemaNode& AnyNode() {
  static const SchemaNode* const node = new SchemaNode();
  return *node;
}

const SchemaNode& AnyObjectNode() {
  static const SchemaNode* const node = [] {
    auto* object = new SchemaNode();
    object->type = Type::kObject;
    return object;
  }();
  return *node;
}

Error Invalid(const std::string& where, const std::string& what) {
  return Error::InvalidArgument("'" + where + "': " + what);
}

Result<int64_t> Count(const Json& value, const std::string& where, const std::string& key) {
  if (!value.is_number_unsigned()) return Invalid(where, "'" + key + "' must be a non-negative integer");
  return static_cast<int64_t>(std::min<uint64_t>(value.get<uint64_t>(), INT32_MAX));
}

Result<std::shared_ptr<const SchemaNode>> CompileNode(const Json& schema, const std::string& where,
                                                      int depth) {
  if (depth > 32) return Invalid(where, "the schema nests deeper than 32 levels");
  if (!schema.is_object()) return Invalid(where, "a schema must be an object");
  auto node = std::make_shared<SchemaNode>();
  for (const auto& [key, value] : schema.items()) {
    if (key == "type") {
      static const std::pair<const char*, Type> kTypes[] = {
          {"object", Type::kObject}, {"array", Type::kArray},     {"string", Type::kString},
          {"number", Type::kNumber}, {"integer", Type::kInteger}, {"boolean", Type::kBoolean},
          {"null", Type::kNull}};
      const Json& type = value;  // clang 14's lambdas cannot capture a structured binding
      const auto found = std::find_if(std::begin(kTypes), std::end(kTypes),
                                      [&](const auto& t) { return type.is_string() && type == t.first; });
      if (found == std::end(kTypes)) {
        return Invalid(where, "'type' must be one of object, array, string, number, integer, boolean, null");
      }
      if (node->type != Type::kEnum) node->type = found->second;
    } else if (key == "enum") {
      if (!value.is_array() || value.empty()) return Invalid(where, "'enum' must be a non-empty array");
      for (const Json& item : value) node->enum_texts.push_back(item.dump());
      node->type = Type::kEnum;
    } else if (key == "properties") {
      if (!value.is_object()) return Invalid(where, "'properties' must be an object");
      node->any_properties = false;
      for (const auto& [name, property] : value.items()) {
        Result<std::shared_ptr<const SchemaNode>> compiled =
            CompileNode(property, where + "/properties/" + PrintableInMessage(name), depth + 1);
        if (!compiled) return compiled.error();
        const std::string quoted = Json(name).dump();
        node->names.push_back(quoted.substr(1, quoted.size() - 2));
        node->values.push_back(std::move(*compiled));
      }
    } else if (key == "required") {
      if (!value.is_array()) return Invalid(where, "'required' must be an array of names");
    } else if (key == "additionalProperties") {
      if (value != false) return Invalid(where, "'additionalProperties' is supported only as false");
    } else if (key == "items") {
      Result<std::shared_ptr<const SchemaNode>> items = CompileNode(value, where + "/items", depth + 1);
      if (!items) return items.error();
      node->items = std::move(*items);
    } else if (key == "minLength" || key == "maxLength" || key == "minItems" || key == "maxItems") {
      Result<int64_t> count = Count(value, where, key);
      if (!count) return count.error();
      (key == "minLength"   ? node->min_length
       : key == "maxLength" ? node->max_length
       : key == "minItems"  ? node->min_items
                            : node->max_items) = *count;
    } else if (key != "title" && key != "description" && key != "$schema" && key != "default") {
      return Invalid(where, "unsupported keyword '" + PrintableInMessage(key) + "'");
    }
  }
  node->required.assign(node->names.size(), false);
  if (schema.contains("required")) {
    for (const Json& name : schema["required"]) {
      const auto found = std::find_if(node->names.begin(), node->names.end(), [&](const std::string& n) {
        return name.is_string() && Json(name.get<std::string>()).dump() == "\"" + n + "\"";
      });
      if (found == node->names.end()) {
        return Invalid(where, "'required' names " + name.dump() + ", which 'properties' does not hold");
      }
      node->required[found - node->names.begin()] = true;
    }
  }
  if (node->type == Type::kEnum) return std::shared_ptr<const SchemaNode>(std::move(node));
  const bool string_keys = schema.contains("minLength") || schema.contains("maxLength");
  const bool array_keys =
      schema.contains("items") || schema.contains("minItems") || schema.contains("maxItems");
  const bool object_keys = schema.contains("properties") || schema.contains("required");
  if ((string_keys && node->type != Type::kString) || (array_keys && node->type != Type::kArray) ||
      (object_keys && node->type != Type::kObject)) {
    return Invalid(where, "a keyword of another type than 'type' says");
  }
  if (node->max_length >= 0 && node->min_length > node->max_length) {
    return Invalid(where, "'minLength' is above 'maxLength'");
  }
  if (node->max_items >= 0 && node->min_items > node->max_items) {
    return Invalid(where, "'minItems' is above 'maxItems'");
  }
  return std::shared_ptr<const SchemaNode>(std::move(node));
}

// Number stages: which of them end a complete number.
enum NumberStage : uint8_t { kSign, kZero, kInteger, kDot, kFraction, kE, kExponentSign, kExponent };
bool NumberComplete(uint8_t stage) {
  return stage == kZero || stage == kInteger || stage == kFraction || stage == kExponent;
}

bool EnumComplete(const Frame& frame) {
  const std::vector<std::string>& texts = frame.node->enum_texts;
  return std::find(texts.begin(), texts.end(), frame.text) != texts.end();
}

// Whether the top frame is a value that is complete as it stands but could
// go on (a number, an enum value that is a prefix of another).
bool CompleteIfEnded(const Frame& frame) {
  return (frame.kind == Kind::kNumber && NumberComplete(frame.stage)) ||
         (frame.kind == Kind::kEnum && EnumComplete(frame));
}

// Object stages.
enum ObjectStage : uint8_t { kOpened, kInKey, kAfterKey, kInValue, kAfterValue, kAfterComma };
// Array stages.
enum ArrayStage : uint8_t { kArrayOpened, kArrayInValue, kArrayAfterValue, kArrayAfterComma };

// The first property index after `next` that must come (properties.size() if none).
size_t NextRequired(const SchemaNode& node, size_t next) {
  while (next < node.names.size() && !node.required[next]) ++next;
  return next;
}

Frame ValueFrame(const SchemaNode& node, bool space_ok) {
  Frame frame;
  frame.kind = Kind::kValue;
  frame.node = &node;
  frame.space_ok = space_ok;
  return frame;
}

// The top frame's value is complete: pops it and moves its parent on.
void PopComplete(std::vector<Frame>& stack) {
  const Frame done = std::move(stack.back());
  stack.pop_back();
  if (stack.empty()) return;
  Frame& parent = stack.back();
  if (parent.kind == Kind::kObject) {
    if (parent.stage == kInKey) {
      if (done.kind == Kind::kKey) parent.count = done.count;  // the property chosen
      parent.stage = kAfterKey;
    } else {
      if (!parent.node->any_properties) ++parent.count;
      parent.stage = kAfterValue;
    }
  } else if (parent.kind == Kind::kArray) {
    ++parent.count;
    parent.stage = kArrayAfterValue;
  }
}

// The frames a value of `node` opens with `c`; false if none.
bool StartValue(std::vector<Frame>& stack, unsigned char c) {
  Frame& frame = stack.back();
  const SchemaNode& node = *frame.node;
  if (c == ' ' && frame.space_ok) {
    frame.space_ok = false;
    return true;
  }
  const Type type = node.type;
  const bool any = type == Type::kAny;
  Frame next;
  next.node = &node;
  if (type == Type::kEnum) {
    for (const std::string& text : node.enum_texts) {
      if (!text.empty() && static_cast<unsigned char>(text[0]) == c) {
        next.kind = Kind::kEnum;
        next.text.assign(1, static_cast<char>(c));
        frame = std::move(next);
        if (EnumComplete(frame) &&
            std::none_of(node.enum_texts.begin(), node.enum_texts.end(), [&](const std::string& t) {
              return t.size() > frame.text.size() && t.compare(0, frame.text.size(), frame.text) == 0;
            })) {
          PopComplete(stack);
        }
        return true;
      }
    }
    return false;
  }
  if (c == '"' && (any || type == Type::kString)) {
    next.kind = Kind::kString;
  } else if ((c == '-' || (c >= '0' && c <= '9')) &&
             (any || type == Type::kNumber || type == Type::kInteger)) {
    next.kind = Kind::kNumber;
    next.stage = c == '-' ? kSign : c == '0' ? kZero : kInteger;
  } else if ((c == 't' || c == 'f') && (any || type == Type::kBoolean)) {
    next.kind = Kind::kLiteral;
    next.text = c == 't' ? "true" : "false";
    next.count = 1;
  } else if (c == 'n' && (any || type == Type::kNull)) {
    next.kind = Kind::kLiteral;
    next.text = "null";
    next.count = 1;
  } else if (c == '{' && (any || type == Type::kObject)) {
    next.kind = Kind::kObject;
    next.node = any ? &AnyObjectNode() : &node;
    next.stage = kOpened;
  } else if (c == '[' && (any || type == Type::kArray)) {
    next.kind = Kind::kArray;
    next.stage = kArrayOpened;
  } else {
    return false;
  }
  frame = std::move(next);
  return true;
}

bool FeedString(std::vector<Frame>& stack, unsigned char c) {
  Frame& s = stack.back();
  const SchemaNode& node = *s.node;
  const bool room = node.max_length < 0 || s.count < node.max_length;
  if (s.stage == 1) {  // after a backslash
    if (c == 'u') {
      s.stage = 2;
      s.pending = 4;
      return true;
    }
    if (std::string_view("\"\\/bfnrt").find(static_cast<char>(c)) == std::string_view::npos) return false;
    s.stage = 0;
    return true;
  }
  if (s.stage == 2) {  // \uXXXX
    if (!std::isxdigit(c)) return false;
    if (--s.pending == 0) s.stage = 0;
    return true;
  }
  if (s.pending > 0) {  // inside a UTF-8 character
    if (c < 0x80 || c > 0xBF) return false;
    --s.pending;
    return true;
  }
  if (c == '"') {
    if (s.count < node.min_length) return false;
    PopComplete(stack);
    return true;
  }
  if (c < 0x20 || !room || c == 0x7F) return false;
  if (c >= 0x80) {
    if (c >= 0xC2 && c <= 0xDF) {
      s.pending = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      s.pending = 2;
    } else if (c >= 0xF0 && c <= 0xF4) {
      s.pending = 3;
    } else {
      return false;
    }
  }
  ++s.count;
  if (c == '\\') s.stage = 1;
  return true;
}

bool FeedKey(std::vector<Frame>& stack, unsigned char c) {
  Frame& key = stack.back();
  const SchemaNode& object = *key.node;
  const size_t last = std::min(NextRequired(object, static_cast<size_t>(key.count)), object.names.size() - 1);
  if (c == '"') {
    for (size_t j = static_cast<size_t>(key.count); j <= last; ++j) {
      if (object.names[j] == key.text) {
        key.count = static_cast<int32_t>(j);
        PopComplete(stack);
        return true;
      }
    }
    return false;
  }
  const std::string grown = key.text + static_cast<char>(c);
  for (size_t j = static_cast<size_t>(key.count); j <= last; ++j) {
    if (object.names[j].compare(0, grown.size(), grown) == 0 && object.names[j].size() >= grown.size()) {
      key.text = grown;
      return true;
    }
  }
  return false;
}

bool FeedObject(std::vector<Frame>& stack, unsigned char c) {
  Frame& o = stack.back();
  const SchemaNode& node = *o.node;
  const size_t next = static_cast<size_t>(o.count);
  const bool can_close = node.any_properties || NextRequired(node, next) == node.names.size();
  const bool more = node.any_properties || next < node.names.size();
  switch (o.stage) {
    case kOpened:
    case kAfterComma:
      if (c == ' ' && o.space_ok) {
        o.space_ok = false;
        return true;
      }
      if (c == '}' && o.stage == kOpened && can_close) {
        PopComplete(stack);
        return true;
      }
      if (c != '"' || !more) return false;
      o.stage = kInKey;
      {
        Frame key;
        key.node = &node;
        if (node.any_properties) {
          key.kind = Kind::kString;
          key.node = &AnyNode();
        } else {
          key.kind = Kind::kKey;
          key.count = o.count;
        }
        stack.push_back(std::move(key));
      }
      return true;
    case kAfterKey:
      if (c != ':') return false;
      o.stage = kInValue;
      stack.push_back(ValueFrame(node.any_properties ? AnyNode() : *node.values[next], true));
      return true;
    case kAfterValue:
      if (c == '}' && can_close) {
        PopComplete(stack);
        return true;
      }
      if (c != ',' || !more) return false;
      o.stage = kAfterComma;
      o.space_ok = true;
      return true;
    default:
      return false;
  }
}

bool FeedArray(std::vector<Frame>& stack, unsigned char c) {
  Frame& a = stack.back();
  const SchemaNode& node = *a.node;
  const SchemaNode& items = node.items ? *node.items : AnyNode();
  const bool can_close = a.count >= node.min_items;
  const bool more = node.max_items < 0 || a.count < node.max_items;
  if (a.stage == kArrayAfterValue) {
    if (c == ']' && can_close) {
      PopComplete(stack);
      return true;
    }
    if (c != ',' || !more) return false;
    a.stage = kArrayInValue;
    stack.push_back(ValueFrame(items, true));
    return true;
  }
  // Just opened.
  if (c == ']' && can_close) {
    PopComplete(stack);
    return true;
  }
  if (!more) return false;
  a.stage = kArrayInValue;
  stack.push_back(ValueFrame(items, false));
  if (StartValue(stack, c)) return true;
  stack.pop_back();
  stack.back().stage = kArrayOpened;
  return false;
}

bool FeedNumber(Frame& n, unsigned char c) {
  const bool integer = n.node->type == Type::kInteger;
  const bool digit = c >= '0' && c <= '9';
  switch (n.stage) {
    case kSign:
      if (!digit) return false;
      n.stage = c == '0' ? kZero : kInteger;
      return true;
    case kZero:
    case kInteger:
      if (digit && n.stage == kInteger) return true;
      if (c == '.' && !integer) {
        n.stage = kDot;
        return true;
      }
      if ((c == 'e' || c == 'E') && !integer) {
        n.stage = kE;
        return true;
      }
      return false;
    case kDot:
    case kFraction:
      if (digit) {
        n.stage = kFraction;
        return true;
      }
      if ((c == 'e' || c == 'E') && n.stage == kFraction) {
        n.stage = kE;
        return true;
      }
      return false;
    case kE:
      if (c == '+' || c == '-') {
        n.stage = kExponentSign;
        return true;
      }
      [[fallthrough]];
    case kExponentSign:
    case kExponent:
      if (!digit) return false;
      n.stage = kExponent;
      return true;
  }
  return false;
}

bool FeedEnum(std::vector<Frame>& stack, unsigned char c) {
  Frame& e = stack.back();
  const std::string grown = e.text + static_cast<char>(c);
  const std::vector<std::string>& texts = e.node->enum_texts;
  const auto extends = [&](const std::string& prefix) {
    return std::any_of(texts.begin(), texts.end(), [&](const std::string& t) {
      return t.size() >= prefix.size() && t.compare(0, prefix.size(), prefix) == 0;
    });
  };
  if (!extends(grown)) return false;
  e.text = grown;
  const bool longer = std::any_of(texts.begin(), texts.end(), [&](const std::string& t) {
    return t.size() > grown.size() && t.compare(0, grown.size(), grown) == 0;
  });
  if (EnumComplete(e) && !longer) PopComplete(stack);
  return true;
}

bool FeedChar(std::vector<Frame>& stack, unsigned char c) {
  while (!stack.empty()) {
    Frame& top = stack.back();
    bool fed = false;
    switch (top.kind) {
      case Kind::kValue:
        return StartValue(stack, c);
      case Kind::kString:
        return FeedString(stack, c);
      case Kind::kKey:
        return FeedKey(stack, c);
      case Kind::kObject:
        return FeedObject(stack, c);
      case Kind::kArray:
        return FeedArray(stack, c);
      case Kind::kLiteral:
        if (static_cast<unsigned char>(top.text[top.count]) != c) return false;
        if (++top.count == static_cast<int32_t>(top.text.size())) PopComplete(stack);
        return true;
      case Kind::kNumber:
        fed = FeedNumber(top, c);
        break;
      case Kind::kEnum:
        fed = FeedEnum(stack, c);
        break;
    }
    if (fed) return true;
    // A number or enum value that ends here: the character is its parent's.
    if (!CompleteIfEnded(stack.back())) return false;
    PopComplete(stack);
  }
  return false;  // after the end of the document
}

}  // namespace

Result<JsonSchema> JsonSchema::Compile(const Json& schema, const std::string& where) {
  Result<std::shared_ptr<const SchemaNode>> root = CompileNode(schema, where, 0);
  if (!root) return root.error();
  return JsonSchema(std::move(*root));
}

JsonSchema JsonSchema::AnyObject() {
  return JsonSchema(std::shared_ptr<const SchemaNode>(&AnyObjectNode(), [](const SchemaNode*) {}));
}

JsonSchemaMatcher::JsonSchemaMatcher(const JsonSchema& schema) {
  stack_.push_back(ValueFrame(schema.root(), false));
}

bool JsonSchemaMatcher::Feed(std::string_view text) {
  std::vector<Frame> trial = stack_;
  for (char c : text) {
    if (!FeedChar(trial, static_cast<unsigned char>(c))) return false;
  }
  stack_ = std::move(trial);
  return true;
}

bool JsonSchemaMatcher::Complete() const {
  std::vector<Frame> trial = stack_;
  while (!trial.empty() && CompleteIfEnded(trial.back())) PopComplete(trial);
  return trial.empty();
}

}  // namespace inferno
