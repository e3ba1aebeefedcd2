// TokenStream: the parser's cursor over a template's tokens (lexer.h), with
// the checks and error messages that the statement and expression parsers
// share, and the count of how deep the parse nests.
//
// Thread-safety: not thread-safe; one parse owns one stream.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "text/chat_template/lexer.h"

namespace inferno::chat {

class TokenStream {
 public:
  // `tokens` ends with one kEnd token, as Lex returns them; a parse may nest
  // `max_depth` levels.
  TokenStream(std::vector<Token> tokens, int max_depth);

  // The token `ahead` places after the current one; the final kEnd token
  // when that is past the end.
  const Token& Peek(size_t ahead = 0) const;
  // Returns the current token and moves past it (never past kEnd).
  const Token& Advance();
  // Whether the current token is the operator `op`.
  bool PeekOperator(std::string_view op) const;
  // Whether the current token is the name (or keyword) `name`.
  bool PeekName(std::string_view name) const;
  // Moves past the operator `op` or the name `name` when it is the current
  // token; returns whether it did.
  bool Accept(std::string_view op);
  bool AcceptName(std::string_view name);
  // Moves past the current token when it is of `kind`; otherwise
  // InvalidArgument "expected '<text>', found ...".
  Status Expect(TokenKind kind, std::string_view text);

  // InvalidArgument "unexpected ..." at `token`.
  static Error Unexpected(const Token& token);
  // InvalidArgument at the current token: the template nests too deep.
  Error TooDeep() const;

  // Counts one level of nesting for its lifetime; recursive parse functions
  // hold one and stop with TooDeep() when too_deep().
  class Nesting {
   public:
    explicit Nesting(TokenStream& stream);
    ~Nesting();
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;

    bool too_deep() const;

   private:
    TokenStream& stream_;
  };

 private:
  std::vector<Token> tokens_;
  size_t next_ = 0;
  int depth_ = 0;
  int max_depth_;
};

}  // namespace inferno::chat
