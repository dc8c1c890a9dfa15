// The batched joint-law operations of a build without CUDA: device laws cannot exist, and these entry points say so.
#include <string>

#include "joint_cuda.hpp"

namespace tally::gpu::joint_cuda {
namespace {
[[noreturn]] void none(const char* who) {
  throw cuda_error(std::string("tally::gpu::") + who + ": tally was built without CUDA");
}
}  // namespace
void split(const JointLaws&, int, double, JointLaws&) { none("joint_split"); }
void condition_on_thinning(const JointLaws&, int, double, const Column<std::int64_t>&, Column<double>&, JointLaws&) {
  none("joint_condition_on_thinning");
}
void sum_out(const JointLaws&, int, JointLaws&) { none("joint_sum_out"); }
}  // namespace tally::gpu::joint_cuda
