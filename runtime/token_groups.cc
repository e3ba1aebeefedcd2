#include "runtime/token_groups.h"

#include <algorithm>

namespace inferno {

bool TokenGroups::NextGroup(int64_t running, std::vector<MessageHeader>& group) {
  const size_t target = static_cast<size_t>(std::min<int64_t>(max_group_, (running + stages_ - 1) / stages_));
  if (ready_.empty() || (ready_.size() < target && on_the_way_ >= stages_)) return false;
  const size_t size = std::min(target, ready_.size());
  group.assign(ready_.begin(), ready_.begin() + size);
  ready_.erase(ready_.begin(), ready_.begin() + size);
  ++on_the_way_;
  return true;
}

}  // namespace inferno
