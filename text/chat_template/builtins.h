// The filters, tests, global functions and methods chat templates may call,
// with Jinja's (Python's) semantics:
//   filters    trim, length/count, tojson(indent=), string, upper, lower,
//              capitalize, first, last, join(sep), default/d(value, boolean),
//              items, list, reverse, replace(old, new), select/reject([test, args...]);
//   tests      defined, undefined, none, string, number, integer, boolean,
//              true, false, mapping, sequence, iterable, odd, even,
//              eq/equalto(x), ne(x);
//   functions  raise_exception(message), namespace(name=value, ...), range(stop | start, stop),
//              strftime_now(format) (the local time, as transformers gives it);
//   methods    on strings strip/lstrip/rstrip([chars]), startswith/endswith(prefix or
//              list of prefixes), split([sep[, maxsplit]]), upper, lower, replace(old, new),
//              capitalize, title; on dicts items(), keys(), values(), get(key[, default]).
// Strings are UTF-8; lengths, indices and whitespace are Unicode code points
// as in Python.
//
// Errors (InvalidArgument: wrong argument kinds or counts, a raised
// exception) carry no position: the caller adds where the call is.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/error.h"
#include "text/chat_template/value.h"

namespace inferno::chat {

struct Arguments {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;
};

bool IsFilter(std::string_view name);
bool IsTest(std::string_view name);
bool IsFunction(std::string_view name);
bool IsMethod(std::string_view name);

Result<Value> ApplyFilter(std::string_view name, const Value& operand, const Arguments& arguments);
Result<bool> ApplyTest(std::string_view name, const Value& operand, const Arguments& arguments);
// raise_exception's error is InvalidArgument "raise_exception: <message>".
Result<Value> CallFunction(std::string_view name, const Arguments& arguments);
Result<Value> CallMethod(const Value& object, std::string_view name, const Arguments& arguments);

// The code points of UTF-8 `text`, as offsets of their first bytes (a byte
// that starts no valid sequence counts as one code point).
std::vector<size_t> CodePointOffsets(std::string_view text);

}  // namespace inferno::chat
