// Storage reused by index. Flows, bundles and in-flight routes come and go by the million in a
// run, so the index of a freed element is handed out again before the vector grows (and the
// references other structures hold stay plain indices).
#pragma once

#include <cstdint>
#include <vector>

namespace collsim::detail {

/// An index into `items` for a new element: the last one freed (its old contents left for the
/// caller to overwrite), else a default-constructed element appended.
template <class T>
std::uint32_t take_index(std::vector<T>& items, std::vector<std::uint32_t>& freed) {
  if (freed.empty()) {
    items.emplace_back();
    return static_cast<std::uint32_t>(items.size() - 1);
  }
  const std::uint32_t id = freed.back();
  freed.pop_back();
  return id;
}

}  // namespace collsim::detail
