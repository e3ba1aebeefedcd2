// The syntax tree of a parsed chat template: statements (Node) holding
// expressions (Expr). Built by ParseTemplate (parser.h), walked by
// RenderTemplate (renderer.h). Every node keeps the line and column where it
// starts, for error messages.
//
// Thread-safety: immutable once built; may be read from any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "text/chat_template/value.h"

namespace inferno::chat {

struct Expr {
  enum class Kind {
    kLiteral,      // value
    kName,         // name
    kList,         // [children...]
    kDict,         // {children[0]: children[1], children[2]: children[3], ...}
    kAttribute,    // children[0].name
    kSubscript,    // children[0][children[1]]
    kSlice,        // children[0][children[1]:children[2]:children[3]], each bound may be null
    kCall,         // name(arguments...): a global function
    kMethodCall,   // children[0].name(arguments...)
    kFilter,       // children[0] | name(arguments...)
    kTest,         // children[0] is [not] name(arguments...); negated
    kNot,          // not children[0]
    kNegate,       // -children[0]
    kBinary,       // children[0] name children[1]; name is the operator: + - * // % ~ == != < <= > >= in
    kAnd,          // children[0] and children[1]
    kOr,           // children[0] or children[1]
    kConditional,  // children[0] if children[1] else children[2] (null: undefined)
  };

  Kind kind = Kind::kLiteral;
  Value value;
  std::string name;
  std::vector<std::unique_ptr<Expr>> children;
  // Calls, filters and tests: their arguments, in order, after the children
  // listed above; keywords[i] names arguments[i], empty when positional.
  std::vector<std::unique_ptr<Expr>> arguments;
  std::vector<std::string> keywords;
  bool negated = false;
  int line = 1;
  int column = 1;
};

struct Node;
using NodeList = std::vector<Node>;

struct Node {
  enum class Kind {
    kText,    // text, printed as it is
    kOutput,  // {{ expr }}
    kIf,   // {% if %}{% elif %}...{% else %}{% endif %}: branches in order; the else branch has no condition
    kFor,  // {% for targets in expr %}body{% else %}else_body{% endfor %}
    kSet,  // {% set targets[0] = expr %}, or {% set targets[0].attribute = expr %}
  };
  struct Branch {
    std::unique_ptr<Expr> condition;  // null for else
    NodeList body;
  };

  Kind kind = Kind::kText;
  std::string text;
  std::unique_ptr<Expr> expr;
  std::vector<Branch> branches;
  std::vector<std::string> targets;  // loop variables (one, or several to unpack), or the set target
  std::string attribute;             // kSet on a namespace attribute
  NodeList body;
  NodeList else_body;
  int line = 1;
  int column = 1;
};

}  // namespace inferno::chat
