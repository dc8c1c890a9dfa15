// The dispatch points of reachability: boolean products and transitive closures on the CPU or the device.
#include "tally/gpu/backend.hpp"
#include "tally/gpu/transitive_closure.hpp"

namespace tally::gpu {

BitMatrix boolean_product(const BitMatrix& a, const BitMatrix& b) {
  const double n = static_cast<double>(a.size());
  return select(true, n, static_cast<double>(cuda_min_product_nodes)) == Backend::cuda ? cuda::boolean_product(a, b)
                                                                                       : cpu::boolean_product(a, b);
}

BitMatrix transitive_closure(const BitMatrix& adjacency) {
  const double n = static_cast<double>(adjacency.size());
  return select(true, n, static_cast<double>(cuda_min_closure_nodes)) == Backend::cuda
             ? cuda::transitive_closure(adjacency)
             : cpu::transitive_closure(adjacency);
}

}  // namespace tally::gpu
