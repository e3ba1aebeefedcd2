// ExpressionParser: parses the expressions of a chat template (ast.h's Expr)
// from a TokenStream, for the statement parser (parser.h), which documents
// the supported syntax. Precedence, loosest first: x if c else y; or; and;
// not; comparisons and in/not in; + -; ~; * // %; unary -; filters (|) and
// tests (is); postfix .attr, [index], [slice] and calls; primaries.
//
// Errors are those parser.h describes: Unimplemented for valid Jinja this
// interpreter does not support, InvalidArgument for malformed expressions,
// each naming its line and column. On an error the stream's position is
// unspecified.
//
// Thread-safety: not thread-safe; it advances the stream it was given.
#pragma once

#include <memory>
#include <vector>

#include "base/error.h"
#include "text/chat_template/ast.h"
#include "text/chat_template/lexer.h"
#include "text/chat_template/token_stream.h"

namespace inferno::chat {

class ExpressionParser {
 public:
  // `tokens` must outlive the parser; parsing advances it past what it reads.
  explicit ExpressionParser(TokenStream& tokens);

  // expression := or ['if' or ['else' expression]]
  Result<std::unique_ptr<Expr>> ParseExpression();
  // An expression without the conditional `x if c else y`: the for
  // statement's iterable, where `if` would start a loop filter.
  Result<std::unique_ptr<Expr>> ParseOr();

 private:
  // Parses an expression onto the end of `into`.
  Status ParseExpressionInto(std::vector<std::unique_ptr<Expr>>& into);
  Result<std::unique_ptr<Expr>> ParseAnd();
  Result<std::unique_ptr<Expr>> ParseNot();
  Result<std::unique_ptr<Expr>> ParseCompare();
  Result<std::unique_ptr<Expr>> ParseMath1();
  Result<std::unique_ptr<Expr>> ParseConcat();
  Result<std::unique_ptr<Expr>> ParseMath2();
  Result<std::unique_ptr<Expr>> ParseUnary(bool with_filters = true);
  Result<std::unique_ptr<Expr>> ParsePostfixOrNegation();
  Result<std::unique_ptr<Expr>> ParseFiltersAndTests(std::unique_ptr<Expr> operand);
  Result<std::unique_ptr<Expr>> ParsePostfix();
  Result<std::unique_ptr<Expr>> ParseSubscript(std::unique_ptr<Expr> object);
  Status ParseArguments(Expr& call);
  Result<std::unique_ptr<Expr>> ParsePrimary();
  Result<std::unique_ptr<Expr>> ParseInteger(const Token& token);
  Result<std::unique_ptr<Expr>> ParseParenthesized();
  Result<std::unique_ptr<Expr>> ParseList();
  Result<std::unique_ptr<Expr>> ParseDict();

  TokenStream& tokens_;
};

}  // namespace inferno::chat
