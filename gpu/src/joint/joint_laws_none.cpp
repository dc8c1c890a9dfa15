// The batched joint-law operations of a build without CUDA: device laws cannot exist, and these entry points say so.
#include <string>

#include "joint_cuda.hpp"

namespace tally::gpu::joint_cuda {
namespace {
[[noreturn]] void none(const char* who) {
  throw cuda_error(std::string("tally::gpu::") + who + ": tally was built without CUDA");
}
}  // namespace
void split(const JointLaws&, int, const detail::ChildView&, JointLaws&) { none("joint_split"); }
void add(const JointLaws&, const detail::JointLikelihood&, JointLaws&) { none("joint_add_child"); }
void sum_out(const JointLaws&, int, JointLaws&) { none("joint_sum_out"); }
void add_independent(const JointLaws&, int, const JointLaws&, JointLaws&) { none("joint_add_independent"); }
void outer(const JointLaws&, const JointLaws&, JointLaws&) { none("joint_outer"); }
void linear_combination(const JointLaws&, const detail::JointLinear&, JointLaws&) { none("joint_linear_combination"); }
void markov_step(const JointLaws&, int, const Table&, JointLaws&) { none("joint_markov_step"); }
void condition(const JointLaws&, const detail::JointLikelihood&, const Column<std::int64_t>&, Column<double>&,
               JointLaws&) {
  none("joint conditioning");
}
void sample(const JointLaws&, const Column<double>&, Column<std::int64_t>&) { none("joint_sample"); }
void sample_coordinate(const JointLaws&, int, const Column<double>&, Column<std::int64_t>&, JointLaws*) {
  none("joint_sample_coordinate");
}
void gather(const JointLaws&, const Column<std::int64_t>&, const Column<std::int64_t>&, JointLaws&) {
  none("joint_gather");
}
void trim_cuts(const JointLaws&, double, const Column<std::int64_t>&, Column<double>&, Column<std::int64_t>&,
               Column<std::int64_t>&, Column<double>&) {
  none("joint_trim");
}
void trim_copy(const JointLaws&, const Column<double>&, JointLaws&) { none("joint_trim"); }
}  // namespace tally::gpu::joint_cuda
