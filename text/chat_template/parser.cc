#include "text/chat_template/parser.h"

#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/chat_template/expression_parser.h"
#include "text/chat_template/lexer.h"
#include "text/chat_template/token_stream.h"

namespace inferno::chat {
namespace {

Node At(Node::Kind kind, const Token& token) {
  Node node;
  node.kind = kind;
  node.line = token.line;
  node.column = token.column;
  return node;
}

// Parses the statements of a template, and their expressions with an
// ExpressionParser over the same tokens.
class StatementParser {
 public:
  explicit StatementParser(std::vector<Token> tokens)
      : tokens_(std::move(tokens), kMaxDepth), expressions_(tokens_) {}

  Result<NodeList> Run() {
    NodeList body;
    Result<std::string> end = ParseBody({}, body);
    if (!end) return end.error();
    return body;
  }

 private:
  // Statements up to a `{% name %}` tag with `name` in `ends`, which is left
  // to the caller (the current token is then its name); returns that name,
  // or "" at the end of the template when `ends` is empty.
  Result<std::string> ParseBody(std::initializer_list<std::string_view> ends, NodeList& body,
                                const Node* opener = nullptr) {
    TokenStream::Nesting nesting(tokens_);
    if (nesting.too_deep()) return tokens_.TooDeep();
    while (true) {
      const Token& token = tokens_.Peek();
      switch (token.kind) {
        case TokenKind::kEnd:
          if (opener == nullptr) return std::string();
          return Error::InvalidArgument(Where(opener->line, opener->column) + ": '{% " +
                                        std::string(opener->kind == Node::Kind::kIf ? "if" : "for") +
                                        " %}' is never closed (no '{% " + std::string(*ends.begin()) +
                                        " %}')");
        case TokenKind::kText: {
          Node node = At(Node::Kind::kText, token);
          node.text = token.text;
          body.push_back(std::move(node));
          tokens_.Advance();
          break;
        }
        case TokenKind::kVariableBegin: {
          Node node = At(Node::Kind::kOutput, tokens_.Advance());
          Result<std::unique_ptr<Expr>> expr = expressions_.ParseExpression();
          if (!expr) return expr.error();
          node.expr = std::move(*expr);
          if (Status status = tokens_.Expect(TokenKind::kVariableEnd, "}}"); !status) return status.error();
          body.push_back(std::move(node));
          break;
        }
        case TokenKind::kBlockBegin: {
          const Token& begin = tokens_.Advance();
          const Token& name = tokens_.Peek();
          if (name.kind != TokenKind::kName) {
            return Error::InvalidArgument(Where(name) + ": expected a statement name after '{%'");
          }
          for (std::string_view end : ends) {
            if (name.text == end) return name.text;
          }
          Status status = ParseStatement(begin, body);
          if (!status) return status.error();
          break;
        }
        default:
          return TokenStream::Unexpected(token);
      }
    }
  }

  Status ParseStatement(const Token& begin, NodeList& body) {
    const Token& name = tokens_.Advance();
    if (name.text == "if") return ParseIf(begin, body);
    if (name.text == "for") return ParseFor(begin, body);
    if (name.text == "set") return ParseSet(begin, body);
    static constexpr std::string_view kEnds[] = {"elif", "else", "endif", "endfor", "endset"};
    for (std::string_view end : kEnds) {
      if (name.text == end) {
        return Error::InvalidArgument(Where(name) + ": '{% " + name.text +
                                      " %}' without a matching opening tag");
      }
    }
    return Error::Unimplemented(Where(name) + ": the '{% " + name.text + " %}' statement is not supported");
  }

  Status ParseIf(const Token& begin, NodeList& body) {
    Node node = At(Node::Kind::kIf, begin);
    while (true) {
      Node::Branch branch;
      Result<std::unique_ptr<Expr>> condition = expressions_.ParseExpression();
      if (!condition) return condition.error();
      branch.condition = std::move(*condition);
      if (Status status = tokens_.Expect(TokenKind::kBlockEnd, "%}"); !status) return status;
      Result<std::string> end = ParseBody({"endif", "elif", "else"}, branch.body, &node);
      if (!end) return end.error();
      node.branches.push_back(std::move(branch));
      tokens_.Advance();
      if (*end == "elif") continue;
      if (*end == "else") {
        if (Status status = tokens_.Expect(TokenKind::kBlockEnd, "%}"); !status) return status;
        Node::Branch otherwise;
        Result<std::string> endif = ParseBody({"endif"}, otherwise.body, &node);
        if (!endif) return endif.error();
        node.branches.push_back(std::move(otherwise));
        tokens_.Advance();
      }
      if (Status status = tokens_.Expect(TokenKind::kBlockEnd, "%}"); !status) return status;
      body.push_back(std::move(node));
      return {};
    }
  }

  Status ParseFor(const Token& begin, NodeList& body) {
    Node node = At(Node::Kind::kFor, begin);
    do {
      const Token& target = tokens_.Peek();
      if (target.kind != TokenKind::kName) {
        return Error::InvalidArgument(Where(target) + ": expected a loop variable name");
      }
      node.targets.push_back(tokens_.Advance().text);
    } while (tokens_.Accept(","));
    if (!tokens_.AcceptName("in"))
      return Error::InvalidArgument(Where(tokens_.Peek()) + ": expected 'in' in the for statement");
    Result<std::unique_ptr<Expr>> iterable = expressions_.ParseOr();
    if (!iterable) return iterable.error();
    node.expr = std::move(*iterable);
    if (tokens_.PeekName("if") || tokens_.PeekName("recursive")) {
      return Error::Unimplemented(Where(tokens_.Peek()) + ": '" + tokens_.Peek().text +
                                  "' in a for statement is not supported");
    }
    if (Status status = tokens_.Expect(TokenKind::kBlockEnd, "%}"); !status) return status;
    Result<std::string> end = ParseBody({"endfor", "else"}, node.body, &node);
    if (!end) return end.error();
    tokens_.Advance();
    if (*end == "else") {
      if (Status status = tokens_.Expect(TokenKind::kBlockEnd, "%}"); !status) return status;
      Result<std::string> endfor = ParseBody({"endfor"}, node.else_body, &node);
      if (!endfor) return endfor.error();
      tokens_.Advance();
    }
    if (Status status = tokens_.Expect(TokenKind::kBlockEnd, "%}"); !status) return status;
    body.push_back(std::move(node));
    return {};
  }

  Status ParseSet(const Token& begin, NodeList& body) {
    Node node = At(Node::Kind::kSet, begin);
    const Token& target = tokens_.Peek();
    if (target.kind != TokenKind::kName)
      return Error::InvalidArgument(Where(target) + ": expected a variable name");
    node.targets.push_back(tokens_.Advance().text);
    if (tokens_.Accept(".")) {
      const Token& attribute = tokens_.Peek();
      if (attribute.kind != TokenKind::kName) {
        return Error::InvalidArgument(Where(attribute) + ": expected an attribute name");
      }
      node.attribute = tokens_.Advance().text;
    }
    if (tokens_.Peek().kind == TokenKind::kBlockEnd) {
      return Error::Unimplemented(Where(begin) +
                                  ": block assignment ('{% set x %}...{% endset %}') is not supported");
    }
    if (tokens_.PeekOperator(",")) {
      return Error::Unimplemented(Where(tokens_.Peek()) +
                                  ": assigning to several variables is not supported");
    }
    if (!tokens_.Accept("="))
      return Error::InvalidArgument(Where(tokens_.Peek()) + ": expected '=' in the set statement");
    Result<std::unique_ptr<Expr>> value = expressions_.ParseExpression();
    if (!value) return value.error();
    node.expr = std::move(*value);
    if (Status status = tokens_.Expect(TokenKind::kBlockEnd, "%}"); !status) return status;
    body.push_back(std::move(node));
    return {};
  }

  TokenStream tokens_;
  ExpressionParser expressions_;
};

}  // namespace

Result<NodeList> ParseTemplate(std::string_view source) {
  Result<std::vector<Token>> tokens = Lex(source);
  if (!tokens) return tokens.error();
  return StatementParser(std::move(*tokens)).Run();
}

}  // namespace inferno::chat
