#include "text/chat_template/expression_parser.h"

#include <charconv>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text/chat_template/builtins.h"

namespace inferno::chat {
namespace {

using ExprPtr = std::unique_ptr<Expr>;

ExprPtr NewExpr(Expr::Kind kind, const Token& token) {
  auto expr = std::make_unique<Expr>();
  expr->kind = kind;
  expr->line = token.line;
  expr->column = token.column;
  return expr;
}

ExprPtr Literal(const Token& token, Value value) {
  ExprPtr expr = NewExpr(Expr::Kind::kLiteral, token);
  expr->value = std::move(value);
  return expr;
}

ExprPtr Combine(Expr::Kind kind, const Token& op, ExprPtr left, ExprPtr right) {
  ExprPtr expr = NewExpr(kind, op);
  expr->children.push_back(std::move(left));
  expr->children.push_back(std::move(right));
  return expr;
}

// operand {operator operand}, left-associative: while `is_operator()` holds
// at the current token, joins the expression so far and the next operand in
// an Expr of `kind`; kBinary ones are named after their operator.
template <typename IsOperator, typename ParseOperand>
Result<ExprPtr> ParseLeftAssociative(TokenStream& tokens, Expr::Kind kind, IsOperator is_operator,
                                     ParseOperand parse_operand) {
  Result<ExprPtr> left = parse_operand();
  while (left && is_operator()) {
    const Token& op = tokens.Advance();
    Result<ExprPtr> right = parse_operand();
    if (!right) return right;
    left = Combine(kind, op, std::move(*left), std::move(*right));
    if (kind == Expr::Kind::kBinary) (*left)->name = op.text;
  }
  return left;
}

// item {',' item} [','] `close`, after the opening bracket: `parse_item()`
// parses one item and returns its Status.
template <typename ParseItem>
Status ParseItems(TokenStream& tokens, std::string_view close, ParseItem parse_item) {
  while (!tokens.Accept(close)) {
    if (Status status = parse_item(); !status) return status;
    if (!tokens.PeekOperator(close) && !tokens.Accept(",")) return TokenStream::Unexpected(tokens.Peek());
  }
  return {};
}

}  // namespace

ExpressionParser::ExpressionParser(TokenStream& tokens) : tokens_(tokens) {}

// expression := or ['if' or ['else' expression]]
Result<ExprPtr> ExpressionParser::ParseExpression() {
  TokenStream::Nesting nesting(tokens_);
  if (nesting.too_deep()) return tokens_.TooDeep();
  Result<ExprPtr> expr = ParseOr();
  if (!expr) return expr;
  if (!tokens_.PeekName("if")) return expr;
  ExprPtr node = NewExpr(Expr::Kind::kConditional, tokens_.Advance());
  Result<ExprPtr> condition = ParseOr();
  if (!condition) return condition;
  node->children.push_back(std::move(*expr));
  node->children.push_back(std::move(*condition));
  if (tokens_.AcceptName("else")) {
    Result<ExprPtr> otherwise = ParseExpression();
    if (!otherwise) return otherwise;
    node->children.push_back(std::move(*otherwise));
  } else {
    node->children.push_back(nullptr);
  }
  return node;
}

Status ExpressionParser::ParseExpressionInto(std::vector<ExprPtr>& into) {
  Result<ExprPtr> expr = ParseExpression();
  if (!expr) return expr.error();
  into.push_back(std::move(*expr));
  return {};
}

Result<ExprPtr> ExpressionParser::ParseOr() {
  return ParseLeftAssociative(
      tokens_, Expr::Kind::kOr, [&] { return tokens_.PeekName("or"); }, [&] { return ParseAnd(); });
}

Result<ExprPtr> ExpressionParser::ParseAnd() {
  return ParseLeftAssociative(
      tokens_, Expr::Kind::kAnd, [&] { return tokens_.PeekName("and"); }, [&] { return ParseNot(); });
}

Result<ExprPtr> ExpressionParser::ParseNot() {
  if (!tokens_.PeekName("not")) return ParseCompare();
  TokenStream::Nesting nesting(tokens_);
  if (nesting.too_deep()) return tokens_.TooDeep();
  ExprPtr node = NewExpr(Expr::Kind::kNot, tokens_.Advance());
  Result<ExprPtr> operand = ParseNot();
  if (!operand) return operand;
  node->children.push_back(std::move(*operand));
  return node;
}

Result<ExprPtr> ExpressionParser::ParseCompare() {
  Result<ExprPtr> left = ParseMath1();
  if (!left) return left;
  bool compared = false;
  while (true) {
    const Token& token = tokens_.Peek();
    std::string op;
    if (token.kind == TokenKind::kOperator &&
        (token.text == "==" || token.text == "!=" || token.text == "<" || token.text == "<=" ||
         token.text == ">" || token.text == ">=")) {
      op = token.text;
    } else if (token.kind == TokenKind::kName && token.text == "in") {
      op = "in";
    } else if (token.kind == TokenKind::kName && token.text == "not" &&
               tokens_.Peek(1).kind == TokenKind::kName && tokens_.Peek(1).text == "in") {
      op = "not in";
      tokens_.Advance();
    } else {
      return left;
    }
    if (compared) {
      return Error::Unimplemented(Where(token) + ": chained comparisons ('a < b < c') are not supported");
    }
    compared = true;
    const Token& op_token = tokens_.Advance();
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

Result<ExprPtr> ExpressionParser::ParseMath1() {
  return ParseLeftAssociative(
      tokens_, Expr::Kind::kBinary, [&] { return tokens_.PeekOperator("+") || tokens_.PeekOperator("-"); },
      [&] { return ParseConcat(); });
}

Result<ExprPtr> ExpressionParser::ParseConcat() {
  return ParseLeftAssociative(
      tokens_, Expr::Kind::kBinary, [&] { return tokens_.PeekOperator("~"); }, [&] { return ParseMath2(); });
}

Result<ExprPtr> ExpressionParser::ParseMath2() {
  Result<ExprPtr> product = ParseLeftAssociative(
      tokens_, Expr::Kind::kBinary,
      [&] { return tokens_.PeekOperator("*") || tokens_.PeekOperator("//") || tokens_.PeekOperator("%"); },
      [&] { return ParseUnary(); });
  if (!product) return product;
  const Token& next = tokens_.Peek();
  if (tokens_.PeekOperator("/")) {
    return Error::Unimplemented(Where(next) + ": '/' (true division, a float) is not supported");
  }
  if (tokens_.PeekOperator("**")) return Error::Unimplemented(Where(next) + ": '**' is not supported");
  return product;
}

// unary := '-' unary-without-filters | postfix; then filters and tests
// (Jinja's order: -x|f is f(-x)).
Result<ExprPtr> ExpressionParser::ParseUnary(bool with_filters) {
  TokenStream::Nesting nesting(tokens_);
  if (nesting.too_deep()) return tokens_.TooDeep();
  if (tokens_.PeekOperator("+"))
    return Error::Unimplemented(Where(tokens_.Peek()) + ": unary '+' is not supported");
  Result<ExprPtr> operand = ParsePostfixOrNegation();
  if (!operand || !with_filters) return operand;
  return ParseFiltersAndTests(std::move(*operand));
}

Result<ExprPtr> ExpressionParser::ParsePostfixOrNegation() {
  if (!tokens_.PeekOperator("-")) return ParsePostfix();
  ExprPtr node = NewExpr(Expr::Kind::kNegate, tokens_.Advance());
  Result<ExprPtr> inner = ParseUnary(/*with_filters=*/false);
  if (!inner) return inner;
  node->children.push_back(std::move(*inner));
  return node;
}

Result<ExprPtr> ExpressionParser::ParseFiltersAndTests(ExprPtr operand) {
  while (true) {
    if (tokens_.PeekOperator("|")) {
      tokens_.Advance();
      const Token& name = tokens_.Peek();
      if (name.kind != TokenKind::kName)
        return Error::InvalidArgument(Where(name) + ": expected a filter name");
      if (!IsFilter(name.text)) {
        return Error::Unimplemented(Where(name) + ": unknown or unsupported filter '" + name.text + "'");
      }
      ExprPtr filter = NewExpr(Expr::Kind::kFilter, tokens_.Advance());
      filter->name = name.text;
      filter->children.push_back(std::move(operand));
      if (tokens_.PeekOperator("(")) {
        if (Status status = ParseArguments(*filter); !status) return status.error();
      }
      operand = std::move(filter);
    } else if (tokens_.PeekName("is")) {
      ExprPtr test = NewExpr(Expr::Kind::kTest, tokens_.Advance());
      test->negated = tokens_.AcceptName("not");
      const Token& name = tokens_.Peek();
      if (name.kind != TokenKind::kName)
        return Error::InvalidArgument(Where(name) + ": expected a test name");
      if (!IsTest(name.text)) {
        return Error::Unimplemented(Where(name) + ": unknown or unsupported test '" + name.text + "'");
      }
      test->name = tokens_.Advance().text;
      test->children.push_back(std::move(operand));
      if (tokens_.PeekOperator("(")) {
        if (Status status = ParseArguments(*test); !status) return status.error();
      }
      operand = std::move(test);
    } else {
      return operand;
    }
  }
}

Result<ExprPtr> ExpressionParser::ParsePostfix() {
  Result<ExprPtr> primary = ParsePrimary();
  if (!primary) return primary;
  ExprPtr expr = std::move(*primary);
  while (true) {
    if (tokens_.PeekOperator(".")) {
      const Token& dot = tokens_.Advance();
      const Token& name = tokens_.Peek();
      if (name.kind == TokenKind::kInteger) {
        ExprPtr subscript = NewExpr(Expr::Kind::kSubscript, dot);
        subscript->children.push_back(std::move(expr));
        Result<ExprPtr> index = ParseInteger(tokens_.Advance());
        if (!index) return index;
        subscript->children.push_back(std::move(*index));
        expr = std::move(subscript);
        continue;
      }
      if (name.kind != TokenKind::kName)
        return Error::InvalidArgument(Where(name) + ": expected a name after '.'");
      tokens_.Advance();
      if (tokens_.PeekOperator("(")) {
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
    } else if (tokens_.PeekOperator("[")) {
      Result<ExprPtr> subscript = ParseSubscript(std::move(expr));
      if (!subscript) return subscript;
      expr = std::move(*subscript);
    } else if (tokens_.PeekOperator("(")) {
      if (expr->kind != Expr::Kind::kName) {
        return Error::Unimplemented(Where(tokens_.Peek()) + ": calling this expression is not supported");
      }
      if (!IsFunction(expr->name)) {
        return Error::Unimplemented(Where(expr->line, expr->column) + ": unknown or unsupported function '" +
                                    expr->name + "'");
      }
      expr->kind = Expr::Kind::kCall;
      if (Status status = ParseArguments(*expr); !status) return status.error();
    } else {
      return expr;
    }
  }
}

// `[` index `]` or `[` [start] `:` [stop] [`:` [step]] `]`.
Result<ExprPtr> ExpressionParser::ParseSubscript(ExprPtr object) {
  const Token& open = tokens_.Advance();
  std::vector<ExprPtr> parts(1);
  int colons = 0;
  while (!tokens_.PeekOperator("]")) {
    if (tokens_.PeekOperator(":")) {
      if (++colons > 2) return Error::InvalidArgument(Where(tokens_.Peek()) + ": too many ':' in a slice");
      tokens_.Advance();
      parts.emplace_back();
      continue;
    }
    if (parts.back() != nullptr) return TokenStream::Unexpected(tokens_.Peek());
    Result<ExprPtr> part = ParseExpression();
    if (!part) return part;
    parts.back() = std::move(*part);
  }
  tokens_.Advance();
  ExprPtr node = NewExpr(colons == 0 ? Expr::Kind::kSubscript : Expr::Kind::kSlice, open);
  node->children.push_back(std::move(object));
  if (colons == 0 && parts[0] == nullptr)
    return Error::InvalidArgument(Where(open) + ": empty subscript '[]'");
  for (ExprPtr& part : parts) node->children.push_back(std::move(part));
  while (colons > 0 && node->children.size() < 4) node->children.push_back(nullptr);
  return node;
}

// `(` [argument {`,` argument}] [`,`] `)` where argument is expression or name=expression.
Status ExpressionParser::ParseArguments(Expr& call) {
  tokens_.Advance();
  return ParseItems(tokens_, ")", [&]() -> Status {
    std::string keyword;
    if (tokens_.Peek().kind == TokenKind::kName && tokens_.Peek(1).kind == TokenKind::kOperator &&
        tokens_.Peek(1).text == "=") {
      keyword = tokens_.Advance().text;
      tokens_.Advance();
    } else if (!call.keywords.empty() && !call.keywords.back().empty()) {
      return Error::InvalidArgument(Where(tokens_.Peek()) +
                                    ": a positional argument follows a keyword argument");
    }
    if (Status argument = ParseExpressionInto(call.arguments); !argument) return argument;
    call.keywords.push_back(std::move(keyword));
    return {};
  });
}

Result<ExprPtr> ExpressionParser::ParsePrimary() {
  const Token& token = tokens_.Peek();
  switch (token.kind) {
    case TokenKind::kName: {
      tokens_.Advance();
      if (token.text == "true" || token.text == "True") return Literal(token, Value::Bool(true));
      if (token.text == "false" || token.text == "False") return Literal(token, Value::Bool(false));
      if (token.text == "none" || token.text == "None") return Literal(token, Value::None());
      ExprPtr name = NewExpr(Expr::Kind::kName, token);
      name->name = token.text;
      return name;
    }
    case TokenKind::kString: {
      std::string text = tokens_.Advance().text;
      while (tokens_.Peek().kind == TokenKind::kString) text += tokens_.Advance().text;
      return Literal(token, Value::String(std::move(text)));
    }
    case TokenKind::kInteger:
      return ParseInteger(tokens_.Advance());
    case TokenKind::kOperator:
      if (token.text == "(") return ParseParenthesized();
      if (token.text == "[") return ParseList();
      if (token.text == "{") return ParseDict();
      return TokenStream::Unexpected(token);
    default:
      return TokenStream::Unexpected(token);
  }
}

Result<ExprPtr> ExpressionParser::ParseInteger(const Token& token) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(token.text.data(), token.text.data() + token.text.size(), value);
  if (error != std::errc() || end != token.text.data() + token.text.size()) {
    return Error::InvalidArgument(Where(token) + ": integer literal " + token.text + " is out of range");
  }
  return Literal(token, Value::Int(value));
}

// `(` expression `)`, or a tuple `(a, b, ...)`, which is a list here.
Result<ExprPtr> ExpressionParser::ParseParenthesized() {
  const Token& open = tokens_.Advance();
  if (tokens_.Accept(")")) return NewExpr(Expr::Kind::kList, open);
  Result<ExprPtr> first = ParseExpression();
  if (!first) return first;
  if (tokens_.Accept(")")) return first;
  if (!tokens_.PeekOperator(",")) return TokenStream::Unexpected(tokens_.Peek());
  ExprPtr tuple = NewExpr(Expr::Kind::kList, open);
  tuple->children.push_back(std::move(*first));
  while (tokens_.Accept(",")) {
    if (tokens_.PeekOperator(")")) break;
    if (Status item = ParseExpressionInto(tuple->children); !item) return item.error();
  }
  if (!tokens_.Accept(")")) return TokenStream::Unexpected(tokens_.Peek());
  return tuple;
}

Result<ExprPtr> ExpressionParser::ParseList() {
  ExprPtr list = NewExpr(Expr::Kind::kList, tokens_.Advance());
  Status items = ParseItems(tokens_, "]", [&] { return ParseExpressionInto(list->children); });
  if (!items) return items.error();
  return list;
}

Result<ExprPtr> ExpressionParser::ParseDict() {
  ExprPtr dict = NewExpr(Expr::Kind::kDict, tokens_.Advance());
  Status entries = ParseItems(tokens_, "}", [&]() -> Status {
    if (Status key = ParseExpressionInto(dict->children); !key) return key;
    if (!tokens_.Accept(":")) return TokenStream::Unexpected(tokens_.Peek());
    return ParseExpressionInto(dict->children);
  });
  if (!entries) return entries.error();
  return dict;
}

}  // namespace inferno::chat
