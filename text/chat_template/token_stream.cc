#include "text/chat_template/token_stream.h"

#include <algorithm>
#include <utility>

namespace inferno::chat {
namespace {

std::string Describe(const Token& token) {
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

}  // namespace

TokenStream::TokenStream(std::vector<Token> tokens, int max_depth)
    : tokens_(std::move(tokens)), max_depth_(max_depth) {}

const Token& TokenStream::Peek(size_t ahead) const {
  return tokens_[std::min(next_ + ahead, tokens_.size() - 1)];
}

const Token& TokenStream::Advance() {
  const Token& token = tokens_[next_];
  if (next_ + 1 < tokens_.size()) ++next_;
  return token;
}

bool TokenStream::PeekOperator(std::string_view op) const {
  return Peek().kind == TokenKind::kOperator && Peek().text == op;
}

bool TokenStream::PeekName(std::string_view name) const {
  return Peek().kind == TokenKind::kName && Peek().text == name;
}

bool TokenStream::Accept(std::string_view op) {
  if (!PeekOperator(op)) return false;
  Advance();
  return true;
}

bool TokenStream::AcceptName(std::string_view name) {
  if (!PeekName(name)) return false;
  Advance();
  return true;
}

Status TokenStream::Expect(TokenKind kind, std::string_view text) {
  if (Peek().kind != kind) {
    return Error::InvalidArgument(Where(Peek()) + ": expected '" + std::string(text) + "', found " +
                                  Describe(Peek()));
  }
  Advance();
  return {};
}

Error TokenStream::Unexpected(const Token& token) {
  return Error::InvalidArgument(Where(token) + ": unexpected " + Describe(token));
}

Error TokenStream::TooDeep() const {
  return Error::InvalidArgument(Where(Peek()) + ": the template nests deeper than " +
                                std::to_string(max_depth_) + " levels");
}

TokenStream::Nesting::Nesting(TokenStream& stream) : stream_(stream) { ++stream_.depth_; }

TokenStream::Nesting::~Nesting() { --stream_.depth_; }

bool TokenStream::Nesting::too_deep() const { return stream_.depth_ > stream_.max_depth_; }

}  // namespace inferno::chat
