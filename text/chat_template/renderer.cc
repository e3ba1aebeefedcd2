#include "text/chat_template/renderer.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "text/chat_template/builtins.h"
#include "text/chat_template/expression_evaluator.h"
#include "text/chat_template/lexer.h"

namespace inferno::chat {
namespace {

// "line L, column C: ", to put in front of an error message.
std::string Prefix(int line, int column) { return Where(line, column) + ": "; }

// Executes a template's statements, printing into its output, with an
// ExpressionEvaluator over its scopes for their expressions.
class StatementRenderer {
 public:
  explicit StatementRenderer(const ValueDict& variables) : evaluator_(scopes_) {
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
        Result<Value> value = evaluator_.Evaluate(*node.expr);
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
            Result<Value> condition = evaluator_.Evaluate(*branch.condition);
            if (!condition) return condition.error();
            taken = condition->Truthy();
          }
          if (taken) return RenderNodes(branch.body);
        }
        return {};
      case Node::Kind::kFor:
        return RenderFor(node);
      case Node::Kind::kSet: {
        Result<Value> value = evaluator_.Evaluate(*node.expr);
        if (!value) return value.error();
        if (node.attribute.empty()) {
          scopes_.back()[node.targets[0]] = std::move(*value);
          return {};
        }
        const Value target = evaluator_.Lookup(node.targets[0]);
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
    Result<Value> iterable = evaluator_.Evaluate(*node.expr);
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

  Scopes scopes_;
  ExpressionEvaluator evaluator_;
  std::string out_;
  int64_t iterations_ = 0;  // of all loops so far
};

}  // namespace

Result<std::string> RenderTemplate(const NodeList& nodes, const ValueDict& variables) {
  return StatementRenderer(variables).Run(nodes);
}

}  // namespace inferno::chat
