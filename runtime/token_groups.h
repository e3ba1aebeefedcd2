// TokenGroups: how the last stage of a pipeline of W stages forms the groups
// in which sequences travel (pipeline_protocol.h: one message carries the
// token of each sequence of a group, and each stage runs a group's step with
// one pass over its weights). The running sequences travel as up to W groups
// of about equal size (at most max_group), so that every stage has a group
// to work on while the others work on theirs: groups of the target size go
// at once; a smaller rest waits for the next group to come back (and joins
// it) while W groups are on their way, else goes as it is.
//
// Contract: the caller counts every step on its way round the ring that
// will come back to the last stage (each admit and each token group, until
// its classify step is back or it ends there), and sends each group
// NextGroup gives it. Pure bookkeeping: it sends nothing.
//
// Thread-safety: not thread-safe; called from the rank's generator thread.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/pipeline_protocol.h"

namespace inferno {

class TokenGroups {
 public:
  // `stages`: W; `max_group`: the most sequences in one step.
  TokenGroups(int stages, int64_t max_group) : stages_(stages), max_group_(max_group) {}

  // A step left that will come back (an admit).
  void Departed() { ++on_the_way_; }
  // A step came back, or ended before it did.
  void Returned() { --on_the_way_; }
  int64_t on_the_way() const { return on_the_way_; }

  // A sampled token to send to the first stage.
  void Add(const TokenMessage& token) { ready_.push_back(token); }

  // The next group to send now, into `group` (its members' headers), with
  // `running` sequences running (at least the ready ones); counts it as on
  // its way. False, leaving `group` alone, when none is to go now.
  bool NextGroup(int64_t running, std::vector<MessageHeader>& group);

 private:
  const int stages_;
  const int64_t max_group_;
  int64_t on_the_way_ = 0;
  std::vector<TokenMessage> ready_;  // sampled, not sent yet
};

}  // namespace inferno
