#include "text/chat_template/parser.h"

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <utility>

#include "text/chat_template/builtins.h"
#include "text/chat_template/lexer.h"

namespace inferno::chat {
namespace {

using ExprPtr = std::unique_ptr<Expr>;

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

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
    DepthGuard guard(*this);
    if (depth_ > kMaxDepth) return TooDeep();
    while (true) {
      const Token& token = Peek();
      switch (token.kind) {
        case TokenKind::kEnd:
          if (opener == nullptr) return std::string();
          return Error::InvalidArgument(
              Where(*opener) + ": '{% " + std::string(opener->kind == Node::Kind::kIf ? "if" : "for") +
              " %}' is never closed (no '{% " + std::string(*ends.begin()) + " %}')");
        case TokenKind::kText: {
          Node node = At(Node::Kind::kText, token);
          node.text = token.text;
          body.push_back(std::move(node));
          Advance();
          break;
        }
        case TokenKind::kVariableBegin: {
          Node node = At(Node::Kind::kOutput, Advance());
          Result<ExprPtr> expr = ParseExpression();
          if (!expr) return expr.error();
          node.expr = std::move(*expr);
          if (Status status = Expect(TokenKind::kVariableEnd, "}}"); !status) return status.error();
          body.push_back(std::move(node));
          break;
        }
        case TokenKind::kBlockBegin: {
          const Token& begin = Advance();
          const Token& name = Peek();
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
          return Unexpected(token);
      }
    }
  }

  Status ParseStatement(const Token& begin, NodeList& body) {
    const Token& name = Advance();
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
      Result<ExprPtr> condition = ParseExpression();
      if (!condition) return condition.error();
      branch.condition = std::move(*condition);
      if (Status status = Expect(TokenKind::kBlockEnd, "%}"); !status) return status;
      Result<std::string> end = ParseBody({"endif", "elif", "else"}, branch.body, &node);
      if (!end) return end.error();
      node.branches.push_back(std::move(branch));
      Advance();
      if (*end == "elif") continue;
      if (*end == "else") {
        if (Status status = Expect(TokenKind::kBlockEnd, "%}"); !status) return status;
        Node::Branch otherwise;
        Result<std::string> endif = ParseBody({"endif"}, otherwise.body, &node);
        if (!endif) return endif.error();
        node.branches.push_back(std::move(otherwise));
        Advance();
      }
      if (Status status = Expect(TokenKind::kBlockEnd, "%}"); !status) return status;
      body.push_back(std::move(node));
      return {};
    }
  }

  Status ParseFor(const Token& begin, NodeList& body) {
    Node node = At(Node::Kind::kFor, begin);
    do {
      const Token& target = Peek();
      if (target.kind != TokenKind::kName) {
        return Error::InvalidArgument(Where(target) + ": expected a loop variable name");
      }
      node.targets.push_back(Advance().text);
    } while (Accept(","));
    if (!AcceptName("in"))
      return Error::InvalidArgument(Where(Peek()) + ": expected 'in' in the for statement");
    Result<ExprPtr> iterable = ParseOr();
    if (!iterable) return iterable.error();
    node.expr = std::move(*iterable);
    if (Peek().kind == TokenKind::kName && (Peek().text == "if" || Peek().text == "recursive")) {
      return Error::Unimplemented(Where(Peek()) + ": '" + Peek().text +
                                  "' in a for statement is not supported");
    }
    if (Status status = Expect(TokenKind::kBlockEnd, "%}"); !status) return status;
    Result<std::string> end = ParseBody({"endfor", "else"}, node.body, &node);
    if (!end) return end.error();
    Advance();
    if (*end == "else") {
      if (Status status = Expect(TokenKind::kBlockEnd, "%}"); !status) return status;
      Result<std::string> endfor = ParseBody({"endfor"}, node.else_body, &node);
      if (!endfor) return endfor.error();
      Advance();
    }
    if (Status status = Expect(TokenKind::kBlockEnd, "%}"); !status) return status;
    body.push_back(std::move(node));
    return {};
  }

  Status ParseSet(const Token& begin, NodeList& body) {
    Node node = At(Node::Kind::kSet, begin);
    const Token& target = Peek();
    if (target.kind != TokenKind::kName)
      return Error::InvalidArgument(Where(target) + ": expected a variable name");
    node.targets.push_back(Advance().text);
    if (Accept(".")) {
      const Token& attribute = Peek();
      if (attribute.kind != TokenKind::kName) {
        return Error::InvalidArgument(Where(attribute) + ": expected an attribute name");
      }
      node.attribute = Advance().text;
    }
    if (Peek().kind == TokenKind::kBlockEnd) {
      return Error::Unimplemented(Where(begin) +
                                  ": block assignment ('{% set x %}...{% endset %}') is not supported");
    }
    if (Peek().kind == TokenKind::kOperator && Peek().text == ",") {
      return Error::Unimplemented(Where(Peek()) + ": assigning to several variables is not supported");
    }
    if (!Accept("=")) return Error::InvalidArgument(Where(Peek()) + ": expected '=' in the set statement");
    Result<ExprPtr> value = ParseExpression();
    if (!value) return value.error();
    node.expr = std::move(*value);
    if (Status status = Expect(TokenKind::kBlockEnd, "%}"); !status) return status;
    body.push_back(std::move(node));
    return {};
  }

  // expression := or ['if' or ['else' expression]]
  Result<ExprPtr> ParseExpression() {
    DepthGuard guard(*this);
    if (depth_ > kMaxDepth) return TooDeep();
    Result<ExprPtr> expr = ParseOr();
    if (!expr) return expr;
    if (Peek().kind != TokenKind::kName || Peek().text != "if") return expr;
    ExprPtr node = NewExpr(Expr::Kind::kConditional, Advance());
    Result<ExprPtr> condition = ParseOr();
    if (!condition) return condition;
    node->children.push_back(std::move(*expr));
    node->children.push_back(std::move(*condition));
    if (AcceptName("else")) {
      Result<ExprPtr> otherwise = ParseExpression();
      if (!otherwise) return otherwise;
      node->children.push_back(std::move(*otherwise));
    } else {
      node->children.push_back(nullptr);
    }
    return node;
  }

  Result<ExprPtr> ParseOr() {
    Result<ExprPtr> left = ParseAnd();
    while (left && Peek().kind == TokenKind::kName && Peek().text == "or") {
      const Token& op = Advance();
      Result<ExprPtr> right = ParseAnd();
      if (!right) return right;
      left = Combine(Expr::Kind::kOr, op, std::move(*left), std::move(*right));
    }
    return left;
  }

  Result<ExprPtr> ParseAnd() {
    Result<ExprPtr> left = ParseNot();
    while (left && Peek().kind == TokenKind::kName && Peek().text == "and") {
      const Token& op = Advance();
      Result<ExprPtr> right = ParseNot();
      if (!right) return right;
      left = Combine(Expr::Kind::kAnd, op, std::move(*left), std::move(*right));
    }
    return left;
  }

  Result<ExprPtr> ParseNot() {
    if (Peek().kind != TokenKind::kName || Peek().text != "not") return ParseCompare();
    DepthGuard guard(*this);
    if (depth_ > kMaxDepth) return TooDeep();
    ExprPtr node = NewExpr(Expr::Kind::kNot, Advance());
    Result<ExprPtr> operand = ParseNot();
    if (!operand) return operand;
    node->children.push_back(std::move(*operand));
    return node;
  }

  Result<ExprPtr> ParseCompare() {
    Result<ExprPtr> left = ParseMath1();
    if (!left) return left;
    bool compared = false;
    while (true) {
      const Token& token = Peek();
      std::string op;
      if (token.kind == TokenKind::kOperator &&
          (token.text == "==" || token.text == "!=" || token.text == "<" || token.text == "<=" ||
           token.text == ">" || token.text == ">=")) {
        op = token.text;
      } else if (token.kind == TokenKind::kName && token.text == "in") {
        op = "in";
      } else if (token.kind == TokenKind::kName && token.text == "not" && Peek(1).kind == TokenKind::kName &&
                 Peek(1).text == "in") {
        op = "not in";
        Advance();
      } else {
        return left;
      }
      if (compared) {
        return Error::Unimplemented(Where(token) + ": chained comparisons ('a < b < c') are not supported");
      }
      compared = true;
      const Token& op_token = Advance();
      Result<ExprPtr> right = ParseMath1();
      if (!right) return right;
      if (op == "not in") {
        ExprPtr in = Combine(Expr::Kind::kBinary, op_token, std::move(*left), std::move(*right));
        in->name = "in";
        ExprPtr negation = NewExpr(Expr::Kind::kNot, op_token);
        negation->children.push_back(std::move(in));
        left = std::move(negation);
      } else {
        left = Combine(Expr::Kind::kBinary, op_token, std::move(*left), std::move(*right));
        (*left)->name = op;
      }
    }
  }

  Result<ExprPtr> ParseMath1() {
    Result<ExprPtr> left = ParseConcat();
    while (left && (PeekOperator("+") || PeekOperator("-"))) {
      const Token& op = Advance();
      Result<ExprPtr> right = ParseConcat();
      if (!right) return right;
      left = Combine(Expr::Kind::kBinary, op, std::move(*left), std::move(*right));
      (*left)->name = op.text;
    }
    return left;
  }

  Result<ExprPtr> ParseConcat() {
    Result<ExprPtr> left = ParseMath2();
    while (left && PeekOperator("~")) {
      const Token& op = Advance();
      Result<ExprPtr> right = ParseMath2();
      if (!right) return right;
      left = Combine(Expr::Kind::kBinary, op, std::move(*left), std::move(*right));
      (*left)->name = "~";
    }
    return left;
  }

  Result<ExprPtr> ParseMath2() {
    Result<ExprPtr> left = ParseUnary();
    while (left && (PeekOperator("*") || PeekOperator("//") || PeekOperator("%") || PeekOperator("/") ||
                    PeekOperator("**"))) {
      const Token& op = Advance();
      if (op.text == "/")
        return Error::Unimplemented(Where(op) + ": '/' (true division, a float) is not supported");
      if (op.text == "**") return Error::Unimplemented(Where(op) + ": '**' is not supported");
      Result<ExprPtr> right = ParseUnary();
      if (!right) return right;
      left = Combine(Expr::Kind::kBinary, op, std::move(*left), std::move(*right));
      (*left)->name = op.text;
    }
    return left;
  }

  // unary := '-' unary-without-filters | postfix; then filters and tests
  // (Jinja's order: -x|f is f(-x)).
  Result<ExprPtr> ParseUnary(bool with_filters = true) {
    DepthGuard guard(*this);
    if (depth_ > kMaxDepth) return TooDeep();
    if (PeekOperator("+")) return Error::Unimplemented(Where(Peek()) + ": unary '+' is not supported");
    Result<ExprPtr> operand = ParsePostfixOrNegation();
    if (!operand || !with_filters) return operand;
    return ParseFiltersAndTests(std::move(*operand));
  }

  Result<ExprPtr> ParsePostfixOrNegation() {
    if (!PeekOperator("-")) return ParsePostfix();
    ExprPtr node = NewExpr(Expr::Kind::kNegate, Advance());
    Result<ExprPtr> inner = ParseUnary(/*with_filters=*/false);
    if (!inner) return inner;
    node->children.push_back(std::move(*inner));
    return node;
  }

  Result<ExprPtr> ParseFiltersAndTests(ExprPtr operand) {
    while (true) {
      if (PeekOperator("|")) {
        Advance();
        const Token& name = Peek();
        if (name.kind != TokenKind::kName)
          return Error::InvalidArgument(Where(name) + ": expected a filter name");
        if (!IsFilter(name.text)) {
          return Error::Unimplemented(Where(name) + ": unknown or unsupported filter '" + name.text + "'");
        }
        ExprPtr filter = NewExpr(Expr::Kind::kFilter, Advance());
        filter->name = name.text;
        filter->children.push_back(std::move(operand));
        if (PeekOperator("(")) {
          if (Status status = ParseArguments(*filter); !status) return status.error();
        }
        operand = std::move(filter);
      } else if (Peek().kind == TokenKind::kName && Peek().text == "is") {
        ExprPtr test = NewExpr(Expr::Kind::kTest, Advance());
        test->negated = AcceptName("not");
        const Token& name = Peek();
        if (name.kind != TokenKind::kName)
          return Error::InvalidArgument(Where(name) + ": expected a test name");
        if (!IsTest(name.text)) {
          return Error::Unimplemented(Where(name) + ": unknown or unsupported test '" + name.text + "'");
        }
        test->name = Advance().text;
        test->children.push_back(std::move(operand));
        if (PeekOperator("(")) {
          if (Status status = ParseArguments(*test); !status) return status.error();
        }
        operand = std::move(test);
      } else {
        return operand;
      }
    }
  }

  Result<ExprPtr> ParsePostfix() {
    Result<ExprPtr> primary = ParsePrimary();
    if (!primary) return primary;
    ExprPtr expr = std::move(*primary);
    while (true) {
      if (PeekOperator(".")) {
        const Token& dot = Advance();
        const Token& name = Peek();
        if (name.kind == TokenKind::kInteger) {
          ExprPtr subscript = NewExpr(Expr::Kind::kSubscript, dot);
          subscript->children.push_back(std::move(expr));
          Result<ExprPtr> index = ParseInteger(Advance());
          if (!index) return index;
          subscript->children.push_back(std::move(*index));
          expr = std::move(subscript);
          continue;
        }
        if (name.kind != TokenKind::kName)
          return Error::InvalidArgument(Where(name) + ": expected a name after '.'");
        Advance();
        if (PeekOperator("(")) {
          if (!IsMethod(name.text)) {
            return Error::Unimplemented(Where(name) + ": unknown or unsupported method '" + name.text + "'");
          }
          ExprPtr call = NewExpr(Expr::Kind::kMethodCall, name);
          call->name = name.text;
          call->children.push_back(std::move(expr));
          if (Status status = ParseArguments(*call); !status) return status.error();
          expr = std::move(call);
        } else {
          ExprPtr attribute = NewExpr(Expr::Kind::kAttribute, name);
          attribute->name = name.text;
          attribute->children.push_back(std::move(expr));
          expr = std::move(attribute);
        }
      } else if (PeekOperator("[")) {
        Result<ExprPtr> subscript = ParseSubscript(std::move(expr));
        if (!subscript) return subscript;
        expr = std::move(*subscript);
      } else if (PeekOperator("(")) {
        if (expr->kind != Expr::Kind::kName) {
          return Error::Unimplemented(Where(Peek()) + ": calling this expression is not supported");
        }
        if (!IsFunction(expr->name)) {
          return Error::Unimplemented(Where(*expr) + ": unknown or unsupported function '" + expr->name +
                                      "'");
        }
        expr->kind = Expr::Kind::kCall;
        if (Status status = ParseArguments(*expr); !status) return status.error();
      } else {
        return expr;
      }
    }
  }

  // `[` index `]` or `[` [start] `:` [stop] [`:` [step]] `]`.
  Result<ExprPtr> ParseSubscript(ExprPtr object) {
    const Token& open = Advance();
    std::vector<ExprPtr> parts(1);
    int colons = 0;
    while (!PeekOperator("]")) {
      if (PeekOperator(":")) {
        if (++colons > 2) return Error::InvalidArgument(Where(Peek()) + ": too many ':' in a slice");
        Advance();
        parts.emplace_back();
        continue;
      }
      if (parts.back() != nullptr) return Unexpected(Peek());
      Result<ExprPtr> part = ParseExpression();
      if (!part) return part;
      parts.back() = std::move(*part);
    }
    Advance();
    ExprPtr node = NewExpr(colons == 0 ? Expr::Kind::kSubscript : Expr::Kind::kSlice, open);
    node->children.push_back(std::move(object));
    if (colons == 0 && parts[0] == nullptr)
      return Error::InvalidArgument(Where(open) + ": empty subscript '[]'");
    for (ExprPtr& part : parts) node->children.push_back(std::move(part));
    while (colons > 0 && node->children.size() < 4) node->children.push_back(nullptr);
    return node;
  }

  // `(` [argument {`,` argument}] [`,`] `)` where argument is expression or name=expression.
  Status ParseArguments(Expr& call) {
    Advance();
    while (!Accept(")")) {
      std::string keyword;
      if (Peek().kind == TokenKind::kName && Peek(1).kind == TokenKind::kOperator && Peek(1).text == "=") {
        keyword = Advance().text;
        Advance();
      } else if (!call.keywords.empty() && !call.keywords.back().empty()) {
        return Error::InvalidArgument(Where(Peek()) + ": a positional argument follows a keyword argument");
      }
      Result<ExprPtr> argument = ParseExpression();
      if (!argument) return argument.error();
      call.arguments.push_back(std::move(*argument));
      call.keywords.push_back(std::move(keyword));
      if (!PeekOperator(")") && !Accept(",")) return Unexpected(Peek());
    }
    return {};
  }

  Result<ExprPtr> ParsePrimary() {
    const Token& token = Peek();
    switch (token.kind) {
      case TokenKind::kName: {
        Advance();
        if (token.text == "true" || token.text == "True") return Literal(token, Value::Bool(true));
        if (token.text == "false" || token.text == "False") return Literal(token, Value::Bool(false));
        if (token.text == "none" || token.text == "None") return Literal(token, Value::None());
        ExprPtr name = NewExpr(Expr::Kind::kName, token);
        name->name = token.text;
        return name;
      }
      case TokenKind::kString: {
        std::string text = Advance().text;
        while (Peek().kind == TokenKind::kString) text += Advance().text;
        return Literal(token, Value::String(std::move(text)));
      }
      case TokenKind::kInteger:
        return ParseInteger(Advance());
      case TokenKind::kOperator:
        if (token.text == "(") return ParseParenthesized();
        if (token.text == "[") return ParseList();
        if (token.text == "{") return ParseDict();
        return Unexpected(token);
      default:
        return Unexpected(token);
    }
  }

  Result<ExprPtr> ParseInteger(const Token& token) {
    int64_t value = 0;
    const auto [end, error] =
        std::from_chars(token.text.data(), token.text.data() + token.text.size(), value);
    if (error != std::errc() || end != token.text.data() + token.text.size()) {
      return Error::InvalidArgument(Where(token) + ": integer literal " + token.text + " is out of range");
    }
    return Literal(token, Value::Int(value));
  }

  // `(` expression `)`, or a tuple `(a, b, ...)`, which is a list here.
  Result<ExprPtr> ParseParenthesized() {
    const Token& open = Advance();
    if (Accept(")")) return NewExpr(Expr::Kind::kList, open);
    Result<ExprPtr> first = ParseExpression();
    if (!first) return first;
    if (Accept(")")) return first;
    if (!PeekOperator(",")) return Unexpected(Peek());
    ExprPtr tuple = NewExpr(Expr::Kind::kList, open);
    tuple->children.push_back(std::move(*first));
    while (Accept(",")) {
      if (PeekOperator(")")) break;
      Result<ExprPtr> item = ParseExpression();
      if (!item) return item;
      tuple->children.push_back(std::move(*item));
    }
    if (!Accept(")")) return Unexpected(Peek());
    return tuple;
  }

  Result<ExprPtr> ParseList() {
    ExprPtr list = NewExpr(Expr::Kind::kList, Advance());
    while (!Accept("]")) {
      Result<ExprPtr> item = ParseExpression();
      if (!item) return item;
      list->children.push_back(std::move(*item));
      if (!PeekOperator("]") && !Accept(",")) return Unexpected(Peek());
    }
    return list;
  }

  Result<ExprPtr> ParseDict() {
    ExprPtr dict = NewExpr(Expr::Kind::kDict, Advance());
    while (!Accept("}")) {
      Result<ExprPtr> key = ParseExpression();
      if (!key) return key;
      if (!Accept(":")) return Unexpected(Peek());
      Result<ExprPtr> value = ParseExpression();
      if (!value) return value;
      dict->children.push_back(std::move(*key));
      dict->children.push_back(std::move(*value));
      if (!PeekOperator("}") && !Accept(",")) return Unexpected(Peek());
    }
    return dict;
  }

  // Counts nesting for the lifetime of one recursive call.
  class DepthGuard {
   public:
    explicit DepthGuard(Parser& parser) : parser_(parser) { ++parser_.depth_; }
    ~DepthGuard() { --parser_.depth_; }

   private:
    Parser& parser_;
  };

  const Token& Peek(size_t ahead = 0) const { return tokens_[std::min(next_ + ahead, tokens_.size() - 1)]; }
  const Token& Advance() {
    const Token& token = tokens_[next_];
    if (next_ + 1 < tokens_.size()) ++next_;
    return token;
  }
  bool PeekOperator(std::string_view op) const {
    return Peek().kind == TokenKind::kOperator && Peek().text == op;
  }
  bool Accept(std::string_view op) {
    if (!PeekOperator(op)) return false;
    Advance();
    return true;
  }
  bool AcceptName(std::string_view name) {
    if (Peek().kind != TokenKind::kName || Peek().text != name) return false;
    Advance();
    return true;
  }
  Status Expect(TokenKind kind, std::string_view text) {
    if (Peek().kind != kind) {
      return Error::InvalidArgument(Where(Peek()) + ": expected '" + std::string(text) + "', found " +
                                    Describe(Peek()));
    }
    Advance();
    return {};
  }

  static std::string Describe(const Token& token) {
    switch (token.kind) {
      case TokenKind::kEnd:
        return "the end of the template";
      case TokenKind::kText:
        return "template text";
      case TokenKind::kString:
        return "a string literal";
      default:
        return "'" + token.text + "'";
    }
  }
  static Error Unexpected(const Token& token) {
    return Error::InvalidArgument(Where(token) + ": unexpected " + Describe(token));
  }
  static std::string Where(const Expr& expr) { return chat::Where(expr.line, expr.column); }
  static std::string Where(const Token& token) { return chat::Where(token); }
  static std::string Where(const Node& node) { return chat::Where(node.line, node.column); }
  Error TooDeep() const {
    return Error::InvalidArgument(Where(Peek()) + ": the template nests deeper than " +
                                  std::to_string(kMaxDepth) + " levels");
  }

  static Node At(Node::Kind kind, const Token& token) {
    Node node;
    node.kind = kind;
    node.line = token.line;
    node.column = token.column;
    return node;
  }
  static ExprPtr NewExpr(Expr::Kind kind, const Token& token) {
    auto expr = std::make_unique<Expr>();
    expr->kind = kind;
    expr->line = token.line;
    expr->column = token.column;
    return expr;
  }
  static ExprPtr Literal(const Token& token, Value value) {
    ExprPtr expr = NewExpr(Expr::Kind::kLiteral, token);
    expr->value = std::move(value);
    return expr;
  }
  static ExprPtr Combine(Expr::Kind kind, const Token& op, ExprPtr left, ExprPtr right) {
    ExprPtr expr = NewExpr(kind, op);
    expr->children.push_back(std::move(left));
    expr->children.push_back(std::move(right));
    return expr;
  }

  std::vector<Token> tokens_;
  size_t next_ = 0;
  int depth_ = 0;
};

}  // namespace

Result<NodeList> ParseTemplate(std::string_view source) {
  Result<std::vector<Token>> tokens = Lex(source);
  if (!tokens) return tokens.error();
  return Parser(std::move(*tokens)).Run();
}

}  // namespace inferno::chat
