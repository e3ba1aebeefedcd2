// The operators of chat-template expressions on values, with Python's
// semantics as Jinja gives them: binary operators, unary minus, subscripts
// and slices. Booleans count as the integers 0 and 1; strings are UTF-8 and
// are indexed and sliced by Unicode code point.
//
// Errors (InvalidArgument: wrong operand kinds, division by zero, integer
// overflow, results beyond render_limits.h) carry no position: the caller
// adds where the expression is.
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "base/error.h"
#include "text/chat_template/value.h"

namespace inferno::chat {

// left op right for op one of + - * // % ~ == != < <= > >= in. Strings and
// lists longer than kMaxOutputBytes bytes or kMaxListItems items are refused
// before they are built.
Result<Value> ApplyBinaryOperator(const std::string& op, const Value& left, const Value& right);

// -operand, for an integer or a boolean.
Result<Value> Negate(const Value& operand);

// object[key]: a dict's or namespace's entry, a list's item or a string's
// code point (negative indices count from the end); undefined when missing
// or for other kinds of object. An error only for an undefined object.
Result<Value> Subscript(const Value& object, const Value& key);

// object[start:stop:step] of a list or a string; each bound may be undefined
// or none for its default.
Result<Value> Slice(const Value& object, const Value& start, const Value& stop, const Value& step);

}  // namespace inferno::chat
