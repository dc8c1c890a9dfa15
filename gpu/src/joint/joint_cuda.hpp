// Private: the CUDA forms of the batched joint-law operations (joint_*_cuda.cu; joint_laws_none.cpp without CUDA).
#pragma once

#include "joint_likelihood.hpp"
#include "tally/gpu/joint_laws.hpp"

namespace tally::gpu::joint_cuda {

/// Each writes `out` (allocated on its boxes) from x, one block per law; the arguments are checked by the caller.
/// thinning: a binomial child (law i's q: thinning.at(i).q), its scalars in device memory.
void split(const JointLaws& x, int axis, const detail::ChildView& thinning, JointLaws& out);
/// Y appended with log p(y | x) = joint_log_likelihood(l, ...) (l's pointers device memory; its child law i's own).
void add(const JointLaws& x, const detail::JointLikelihood& l, JointLaws& out);
void sum_out(const JointLaws& x, int axis, JointLaws& out);
void add_independent(const JointLaws& x, int axis, const JointLaws& y, JointLaws& out);
void outer(const JointLaws& x, const JointLaws& y, JointLaws& out);
void linear_combination(const JointLaws& x, const detail::JointLinear& f, JointLaws& out);
void markov_step(const JointLaws& x, int axis, const Table& t, JointLaws& out);
/// l's table pointer (a child's) is device memory.
void condition(const JointLaws& x, const detail::JointLikelihood& l, const Column<std::int64_t>& v,
               Column<double>& log_likelihood, JointLaws& out);
void sample(const JointLaws& x, const Column<double>& uniforms, Column<std::int64_t>& out);
/// rest: the laws of the other coordinates (allocated on their boxes), or nullptr for rank 1.
void sample_coordinate(const JointLaws& x, int axis, const Column<double>& uniforms, Column<std::int64_t>& value,
                       JointLaws* rest);

/// out's law j: x's law index[j], its weights at offset source[j] (joint_gather).
void gather(const JointLaws& x, const Column<std::int64_t>& source, const Column<std::int64_t>& index,
            JointLaws& out);
/// joint_trim's first pass: each law's marginals (into marginals, law i's at marginal_offset[i], axis after axis),
/// the kept box (kept_lo, kept_shape: count x rank) and sums[3 i ..]: M_i, C_i and the largest kept weight.
void trim_cuts(const JointLaws& x, double tolerance, const Column<std::int64_t>& marginal_offset,
               Column<double>& marginals, Column<std::int64_t>& kept_lo, Column<std::int64_t>& kept_shape,
               Column<double>& sums);
/// joint_trim's second pass: out (allocated on the kept boxes) from x's weights over top[3 i + 2].
void trim_copy(const JointLaws& x, const Column<double>& sums, JointLaws& out);

}  // namespace tally::gpu::joint_cuda
