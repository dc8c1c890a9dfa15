// Everything in distributions/ in one include: the pmf types, the ten families, and the exact algebra.
#pragma once

/// \namespace tally
/// Everything of tally. Directly in it: the exact algebra of discrete laws (distributions/): Pmf and SparsePmf,
/// the ten families with pdf, log_pdf, cdf, quantile, support, mean, variance and to_pmf, sums, differences,
/// affine maps, child laws and their marginals, conditioning, joint laws (JointPmf) and sampling; and the
/// exceptions every layer throws (tally/error.hpp). The runtime is tally::runtime, the arrays and kernels
/// tally::gpu.

#include "tally/distributions/algebra.hpp"
#include "tally/distributions/bernoulli.hpp"
#include "tally/distributions/beta_binomial.hpp"
#include "tally/distributions/binomial.hpp"
#include "tally/distributions/categorical.hpp"
#include "tally/distributions/child_laws.hpp"
#include "tally/distributions/closed_forms.hpp"
#include "tally/distributions/condition.hpp"
#include "tally/distributions/delta.hpp"
#include "tally/distributions/geometric.hpp"
#include "tally/distributions/hypergeometric.hpp"
#include "tally/distributions/joint.hpp"
#include "tally/distributions/log_pmf.hpp"
#include "tally/distributions/negative_binomial.hpp"
#include "tally/distributions/pmf.hpp"
#include "tally/distributions/poisson.hpp"
#include "tally/distributions/sample.hpp"
#include "tally/distributions/sparse_pmf.hpp"
#include "tally/distributions/truncation.hpp"
#include "tally/distributions/uniform_int.hpp"
#include "tally/distributions/weighted_bernoulli_sum.hpp"
