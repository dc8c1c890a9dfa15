// Private: the CUDA forms of the batched joint-law operations (joint_laws_cuda.cu; joint_laws_none.cpp without CUDA).
#pragma once

#include "tally/gpu/joint_laws.hpp"

namespace tally::gpu::joint_cuda {

/// Each writes `out` (allocated on its boxes) from x, one block per law; the arguments are checked by the caller.
void split(const JointLaws& x, int axis, double q, JointLaws& out);
void condition_on_thinning(const JointLaws& x, int axis, double q, const Column<std::int64_t>& v,
                           Column<double>& log_likelihood, JointLaws& out);
void sum_out(const JointLaws& x, int axis, JointLaws& out);

}  // namespace tally::gpu::joint_cuda
