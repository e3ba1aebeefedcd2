#include "model/architecture.h"

#include <string>

namespace inferno {

const Architecture* FindArchitecture(std::string_view name) {
  for (const Architecture& architecture : kArchitectures) {
    if (architecture.name == name) return &architecture;
  }
  return nullptr;
}

const Architecture* FindGgufArchitecture(std::string_view gguf_name, bool experts) {
  for (const Architecture& architecture : kArchitectures) {
    if (!architecture.gguf_name.empty() && architecture.gguf_name == gguf_name &&
        (!experts || !architecture.experts.count_field.empty())) {
      return &architecture;
    }
  }
  return nullptr;
}

std::string_view ArchitectureNames() {
  static const std::string names = [] {
    std::string joined;
    for (const Architecture& architecture : kArchitectures)
      joined += (joined.empty() ? "" : ", ") + std::string(architecture.name);
    return joined;
  }();
  return names;
}

}  // namespace inferno
