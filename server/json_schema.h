// JsonSchemaMatcher: a JSON-schema subset compiled into a character-level
// recognizer, for constrained decoding (server/json_constraint.h): it says
// whether a text can still grow into a JSON document that validates, and
// whether it is one.
//
// Supported keywords: type (object, array, string, number, integer,
// boolean, null; one type, not a list), properties, required,
// additionalProperties (false only), items, enum (of any JSON values),
// minLength/maxLength, minItems/maxItems, and the annotations title,
// description, $schema and default (ignored). Any other keyword is refused
// naming it, so a schema is never enforced only in part. A schema without
// "type" (nor enum) is any JSON value; json_object mode is
// {"type": "object"}, whose properties are any.
//
// The recognized text is compact JSON: no white space but one optional
// space after ':' and ','; an object's properties come in the schema's
// order, each required one present (so additional properties never
// appear).
//
// Thread-safety: a compiled JsonSchema is immutable and may be shared;
// a JsonSchemaMatcher is one sequence's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace inferno {

struct SchemaNode;

class JsonSchema {
 public:
  // Errors (InvalidArgument) name the keyword and where: "'response_format.
  // json_schema.schema/properties/age': unsupported keyword 'minimum'".
  // `where` prefixes the path in messages.
  static Result<JsonSchema> Compile(const nlohmann::ordered_json& schema, const std::string& where);
  // Any JSON object (response_format json_object).
  static JsonSchema AnyObject();

  const SchemaNode& root() const { return *root_; }

 private:
  explicit JsonSchema(std::shared_ptr<const SchemaNode> root) : root_(std::move(root)) {}
  std::shared_ptr<const SchemaNode> root_;
};

class JsonSchemaMatcher {
 public:
  // `schema` must outlive this.
  explicit JsonSchemaMatcher(const JsonSchema& schema);

  // Appends `text` if the result is still the start of a valid document;
  // otherwise returns false and stays as it was.
  bool Feed(std::string_view text);
  // Whether the text so far is a complete valid document.
  bool Complete() const;

  // One open value of the text, innermost last (an implementation detail,
  // here so that matchers copy cheaply).
  struct Frame {
    enum class Kind : uint8_t { kValue, kString, kKey, kNumber, kLiteral, kEnum, kObject, kArray };
    Kind kind = Kind::kValue;
    const SchemaNode* node = nullptr;  // this value's schema (kKey: its object's)
    uint8_t stage = 0;                 // where in the value (kind-specific)
    bool space_ok = false;             // one space may come next
    int32_t count = 0;                 // kString: characters; kArray: items; kObject, kKey: a property index
    int32_t pending = 0;               // kString: UTF-8 continuation bytes, or \u hex digits, still due
    std::string text;                  // kKey, kEnum, kLiteral: what must or did match
  };

 private:
  std::vector<Frame> stack_;  // empty: a complete document
};

}  // namespace inferno
