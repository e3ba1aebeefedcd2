#include "text/chat_template/lexer.h"

#include <algorithm>
#include <cctype>

#include "text/utf8.h"

namespace inferno::chat {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

class Lexer {
 public:
  explicit Lexer(std::string_view source) : source_(source) {
    if (!source_.empty() && source_.back() == '\n') source_.remove_suffix(1);
    line_starts_.push_back(0);
    for (size_t i = 0; i < source_.size(); ++i) {
      if (source_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  Result<std::vector<Token>> Run() {
    while (pos_ < source_.size()) {
      const size_t tag = FindTagStart(pos_);
      std::string text(source_.substr(pos_, tag - pos_));
      if (tag == source_.size()) {
        Push(TokenKind::kText, std::move(text), pos_);
        break;
      }
      const char type = source_[tag + 1];  // '{', '%' or '#'
      const char next = tag + 2 < source_.size() ? source_[tag + 2] : '\0';
      const char modifier = next == '-' || (next == '+' && type != '{') ? next : '\0';
      if (modifier == '-') {
        while (!text.empty() && IsSpace(text.back())) text.pop_back();
      } else if (type != '{' && modifier != '+') {
        StripLineStart(pos_, text);
      }
      if (!text.empty()) Push(TokenKind::kText, std::move(text), pos_);
      pos_ = tag + 2 + (modifier != '\0' ? 1 : 0);
      Status status = type == '#' ? SkipComment(tag) : LexTag(tag, type == '%');
      if (!status) return status.error();
    }
    Push(TokenKind::kEnd, "", source_.size());
    return std::move(tokens_);
  }

 private:
  // Offset of the next "{{", "{%" or "{#" at or after `from`, or the end.
  size_t FindTagStart(size_t from) const {
    for (size_t i = from; i + 1 < source_.size(); ++i) {
      if (source_[i] == '{' && (source_[i + 1] == '{' || source_[i + 1] == '%' || source_[i + 1] == '#')) {
        return i;
      }
    }
    return source_.size();
  }

  // lstrip_blocks: drops the spaces and tabs that `text` (which starts at
  // `text_start`) ends with when they begin a line.
  void StripLineStart(size_t text_start, std::string& text) const {
    const size_t newline = text.rfind('\n');
    const size_t line_start = newline == std::string::npos ? 0 : newline + 1;
    const bool at_line_start =
        newline != std::string::npos || text_start == 0 || source_[text_start - 1] == '\n';
    if (at_line_start &&
        std::all_of(text.begin() + line_start, text.end(), [](char c) { return c == ' ' || c == '\t'; })) {
      text.resize(line_start);
    }
  }

  // After a closing tag: `-` strips all following whitespace; otherwise a
  // block or comment drops one newline unless closed with `+`.
  void AfterClose(char modifier, bool trim_newline) {
    if (modifier == '-') {
      while (pos_ < source_.size() && IsSpace(source_[pos_])) ++pos_;
    } else if (trim_newline && modifier != '+' && pos_ < source_.size() && source_[pos_] == '\n') {
      ++pos_;
    }
  }

  Status SkipComment(size_t tag) {
    const size_t close = source_.find("#}", pos_);
    if (close == std::string_view::npos) return Unclosed(tag, "comment '{#'");
    const char modifier = close > pos_ ? source_[close - 1] : '\0';
    pos_ = close + 2;
    AfterClose(modifier, /*trim_newline=*/true);
    return {};
  }

  Status LexTag(size_t tag, bool block) {
    Push(block ? TokenKind::kBlockBegin : TokenKind::kVariableBegin, block ? "{%" : "{{", tag);
    int brace_depth = 0;
    while (true) {
      while (pos_ < source_.size() && IsSpace(source_[pos_])) ++pos_;
      if (pos_ >= source_.size()) return Unclosed(tag, block ? "tag '{%'" : "expression '{{'");
      const std::string_view rest = source_.substr(pos_);
      const std::string_view close = block ? "%}" : "}}";
      for (const char modifier : {'-', '+', '\0'}) {
        if (modifier == '+' && !block) continue;
        const bool with_modifier = modifier != '\0';
        if ((with_modifier && rest.size() > 2 && rest[0] == modifier && rest.substr(1, 2) == close) ||
            (!with_modifier && rest.substr(0, 2) == close && (block || brace_depth == 0))) {
          Push(block ? TokenKind::kBlockEnd : TokenKind::kVariableEnd, std::string(close), pos_);
          pos_ += with_modifier ? 3 : 2;
          AfterClose(modifier, /*trim_newline=*/block);
          return {};
        }
      }
      const char c = rest[0];
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t end = 1;
        while (end < rest.size() &&
               (std::isalnum(static_cast<unsigned char>(rest[end])) || rest[end] == '_')) {
          ++end;
        }
        Push(TokenKind::kName, std::string(rest.substr(0, end)), pos_);
        pos_ += end;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        size_t end = 1;
        while (end < rest.size() && std::isdigit(static_cast<unsigned char>(rest[end]))) ++end;
        if (end + 1 < rest.size() && rest[end] == '.' &&
            std::isdigit(static_cast<unsigned char>(rest[end + 1]))) {
          return Error::Unimplemented(WhereAt(pos_) + ": float literals are not supported");
        }
        Push(TokenKind::kInteger, std::string(rest.substr(0, end)), pos_);
        pos_ += end;
      } else if (c == '\'' || c == '"') {
        if (Status status = LexString(); !status) return status;
      } else if (Status status = LexOperator(brace_depth); !status) {
        return status;
      }
    }
  }

  Status LexString() {
    const size_t start = pos_;
    const char quote = source_[pos_++];
    std::string decoded;
    while (true) {
      if (pos_ >= source_.size()) return Unclosed(start, "string literal");
      const char c = source_[pos_++];
      if (c == quote) break;
      if (c != '\\') {
        decoded += c;
        continue;
      }
      if (pos_ >= source_.size()) return Unclosed(start, "string literal");
      const char escape = source_[pos_++];
      switch (escape) {
        case 'n':
          decoded += '\n';
          break;
        case 't':
          decoded += '\t';
          break;
        case 'r':
          decoded += '\r';
          break;
        case 'b':
          decoded += '\b';
          break;
        case 'f':
          decoded += '\f';
          break;
        case 'v':
          decoded += '\v';
          break;
        case 'a':
          decoded += '\a';
          break;
        case '\\':
        case '\'':
        case '"':
          decoded += escape;
          break;
        case '\n':  // a line continuation
          break;
        case 'x':
        case 'u':
        case 'U': {
          const size_t digits = escape == 'x' ? 2 : escape == 'u' ? 4 : 8;
          const std::string_view hex = source_.substr(pos_, digits);
          uint32_t code_point = 0;
          for (const char h : hex) {
            if (!std::isxdigit(static_cast<unsigned char>(h))) break;
            code_point = code_point * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h))
                                                                     ? h - '0'
                                                                     : std::tolower(h) - 'a' + 10);
          }
          const bool all_hex = hex.size() == digits && std::all_of(hex.begin(), hex.end(), [](char h) {
                                 return std::isxdigit(static_cast<unsigned char>(h));
                               });
          if (!all_hex || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)) {
            return Error::InvalidArgument(WhereAt(pos_ - 2) + ": bad \\" + escape +
                                          " escape in a string literal");
          }
          Utf8Append(code_point, decoded);
          pos_ += digits;
          break;
        }
        default:
          if (escape >= '0' && escape <= '7') {
            return Error::Unimplemented(WhereAt(pos_ - 2) +
                                        ": octal escapes in string literals are not supported");
          }
          if (escape == 'N') {
            return Error::Unimplemented(WhereAt(pos_ - 2) + ": \\N{...} escapes are not supported");
          }
          // Python keeps an unknown escape as it is.
          decoded += '\\';
          decoded += escape;
      }
    }
    Push(TokenKind::kString, std::move(decoded), start);
    return {};
  }

  Status LexOperator(int& brace_depth) {
    static constexpr std::string_view kTwoChar[] = {"**", "//", "==", "!=", "<=", ">="};
    const std::string_view rest = source_.substr(pos_);
    for (const std::string_view op : kTwoChar) {
      if (rest.substr(0, 2) == op) {
        Push(TokenKind::kOperator, std::string(op), pos_);
        pos_ += 2;
        return {};
      }
    }
    const char c = rest[0];
    if (std::string_view("+-*/%~<>=|.,:()[]{}").find(c) == std::string_view::npos) {
      return Error::InvalidArgument(WhereAt(pos_) + ": unexpected character '" + std::string(1, c) +
                                    "' in a tag");
    }
    if (c == '{') ++brace_depth;
    if (c == '}' && brace_depth > 0) --brace_depth;
    Push(TokenKind::kOperator, std::string(1, c), pos_);
    ++pos_;
    return {};
  }

  Error Unclosed(size_t start, std::string_view what) const {
    return Error::InvalidArgument(WhereAt(start) + ": " + std::string(what) + " is never closed");
  }

  void Push(TokenKind kind, std::string text, size_t offset) {
    Token token{kind, std::move(text), 1, 1};
    Locate(offset, token.line, token.column);
    tokens_.push_back(std::move(token));
  }

  void Locate(size_t offset, int& line, int& column) const {
    const auto next_line = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    line = static_cast<int>(next_line - line_starts_.begin());
    column = 1 + static_cast<int>(offset - *(next_line - 1));
  }

  std::string WhereAt(size_t offset) const {
    Token token;
    Locate(offset, token.line, token.column);
    return Where(token);
  }

  std::string_view source_;
  std::vector<size_t> line_starts_;  // offsets where lines begin
  size_t pos_ = 0;
  std::vector<Token> tokens_;
};

}  // namespace

Result<std::vector<Token>> Lex(std::string_view source) { return Lexer(source).Run(); }

std::string Where(int line, int column) {
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

}  // namespace inferno::chat
