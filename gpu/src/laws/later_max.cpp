// Upper bounds of integer columns known on the host (tally/gpu/later_max.hpp): host columns' maxima at once, device
// columns' by the pass of later_max_cuda.cu.
#include "tally/gpu/later_max.hpp"

#include <algorithm>
#include <limits>

#include "population_cuda.hpp"

namespace tally::gpu {

std::vector<LaterMax> largest_later(std::span<const Column<std::int64_t>* const> columns) {
  std::vector<LaterMax> out(columns.size());
  std::vector<const Column<std::int64_t>*> device;
  std::vector<std::size_t> at;
  for (std::size_t k = 0; k < columns.size(); ++k) {
    const Column<std::int64_t>& c = *columns[k];
    if (c.where() == Backend::cuda && !c.empty()) {
      device.push_back(&c);
      at.push_back(k);
      continue;
    }
    const std::vector<std::int64_t>& v = c.host();  // a host column, or an empty one of either place
    out[k] = LaterMax(v.empty() ? std::numeric_limits<std::int64_t>::min() : *std::max_element(v.begin(), v.end()));
  }
  if (device.empty()) return out;
  std::vector<LaterMax> later = population_cuda::largest_later(device);
  for (std::size_t j = 0; j < at.size(); ++j) out[at[j]] = std::move(later[j]);
  return out;
}

}  // namespace tally::gpu
