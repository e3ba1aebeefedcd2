// Lexer: splits a Jinja template into text and the tokens of its tags, with
// Jinja's whitespace control applied the way Hugging Face renders chat
// templates (jinja2.Environment(trim_blocks=True, lstrip_blocks=True)):
//   - `{%-`, `{{-`, `{#-` strip the whitespace before the tag, `-%}`, `-}}`,
//     `-#}` the whitespace after it;
//   - trim_blocks: the first newline after `%}` or `#}` is removed (`+%}` keeps it);
//   - lstrip_blocks: spaces and tabs between the start of a line and `{%` or
//     `{#` are removed (`{%+` keeps them);
//   - one newline at the very end of the template is dropped.
// Comments `{# ... #}` produce no tokens.
//
// Thread-safety: a pure function.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace inferno::chat {

enum class TokenKind {
  kText,           // template text outside tags, whitespace control applied
  kBlockBegin,     // {%
  kBlockEnd,       // %}
  kVariableBegin,  // {{
  kVariableEnd,    // }}
  kName,           // identifier or keyword: for, in, not, true, none ...
  kString,         // a string literal; text holds its decoded bytes
  kInteger,        // decimal digits
  kOperator,       // + - * / // % ** ~ == != < <= > >= = | . , : ( ) [ ] { }
  kEnd,            // end of the template (always the last token)
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;
  // Where the token starts in the template, 1-based.
  int line = 1;
  int column = 1;
};

// The tokens of `source`, ending with one kEnd. InvalidArgument, naming the
// line and column, for a tag or comment that is never closed, an unterminated
// string literal, a bad escape or a character that starts no token;
// Unimplemented for float literals.
Result<std::vector<Token>> Lex(std::string_view source);

// "line L, column C", for error messages; the one place that spells a
// template position.
std::string Where(int line, int column);
inline std::string Where(const Token& token) { return Where(token.line, token.column); }

}  // namespace inferno::chat
