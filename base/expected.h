// Expected<T, E>: a value of type T, or an error of type E. The project's own
// stand-in for std::expected, which clang 14 cannot compile with libstdc++ 12.
//
// Errors that a peer, a file, a flag or the network can cause travel as values
// of this type; no exception crosses a package boundary.
//
//   Expected<std::vector<float>, Error> r = group.recv_f32(1, 7);
//   if (!r) return r.error();
//   use(*r);
//
// Thread-safety: like any value type; distinct objects may be used from
// distinct threads, one object needs external synchronization.
#pragma once

#include <utility>
#include <variant>

#include <glog/logging.h>

namespace inferno {

template <typename T, typename E>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : state_(std::in_place_index<0>, std::move(value)) {}
  Expected(E error) : state_(std::in_place_index<1>, std::move(error)) {}

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  // Precondition: ok(). Calling these on an error is a programmer error.
  T& value() & {
    CHECK(ok()) << "Expected::value() on an error";
    return std::get<0>(state_);
  }
  const T& value() const& {
    CHECK(ok()) << "Expected::value() on an error";
    return std::get<0>(state_);
  }
  T&& value() && {
    CHECK(ok()) << "Expected::value() on an error";
    return std::get<0>(std::move(state_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // Precondition: !ok().
  const E& error() const& {
    CHECK(!ok()) << "Expected::error() on a value";
    return std::get<1>(state_);
  }
  E&& error() && {
    CHECK(!ok()) << "Expected::error() on a value";
    return std::get<1>(std::move(state_));
  }

 private:
  std::variant<T, E> state_;
};

// Expected<void, E>: success, or an error.
template <typename E>
class [[nodiscard]] Expected<void, E> {
 public:
  Expected() = default;
  Expected(E error) : error_(std::move(error)), ok_(false) {}

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }

  // Precondition: !ok().
  const E& error() const& {
    CHECK(!ok_) << "Expected::error() on success";
    return error_;
  }
  E&& error() && {
    CHECK(!ok_) << "Expected::error() on success";
    return std::move(error_);
  }

 private:
  E error_{};
  bool ok_ = true;
};

}  // namespace inferno
