// CPU reference of the direct convolution: output blocks held in registers, contraction in blocks of 256.
#include <algorithm>
#include <vector>

#include "tally/error.hpp"
#include "convolve_shapes.hpp"
#include "tally/gpu/convolve.hpp"

namespace tally::gpu::cpu {
namespace {

// GCC compiles the inner loop for AVX-512, AVX2+FMA and plain x86-64 and picks one at load time; clang (14) has no
// target_clones on function templates, so it builds one plain version (as on other architectures).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define TALLY_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2,fma", "default")))
#else
#define TALLY_VECTOR_CLONES
#endif

// Tuning knobs, in one place.
constexpr std::size_t output_block = 32;        // outputs accumulated in registers at once
constexpr std::size_t contraction_block = 256;  // terms summed before a partial sum is added to r (accuracy)

// r = x (*) y with y the shorter operand (length s) and x the longer (length l).
// With x padded by s-1 zeros in front and s-1+output_block behind (xp), every output is a dot product of y with
// a window of xp:  r_k = sum_{j=0}^{s-1} y_j xp_{k+s-1-j},  k in [0, l+s-2],  and the windows of
// output_block consecutive k are contiguous in xp, so the inner loop over t is a vector FMA.
template <class T>
TALLY_VECTOR_CLONES
void convolve_padded(const T* xp, const T* y, std::size_t s, std::size_t outputs, T* r) {
  std::fill(r, r + outputs, T(0));
  for (std::size_t j0 = 0; j0 < s; j0 += contraction_block) {
    const std::size_t j1 = std::min(s, j0 + contraction_block);
    for (std::size_t k0 = 0; k0 < outputs; k0 += output_block) {
      T acc[output_block] = {};
      const T* base = xp + k0 + (s - 1);  // xp index of (k0 + t) + s - 1 - j is base + t - j
      for (std::size_t j = j0; j < j1; ++j) {
        const T yj = y[j];
        const T* w = base - j;
        for (std::size_t t = 0; t < output_block; ++t) acc[t] += yj * w[t];
      }
      const std::size_t width = std::min(output_block, outputs - k0);
      for (std::size_t t = 0; t < width; ++t) r[k0 + t] += acc[t];
    }
  }
}

template <class T>
void convolve_any(std::span<const T> p, std::span<const T> q, std::span<T> r) {
  detail::check_convolution_shapes(p.size(), q.size(), r.size(), "tally::gpu::cpu::convolve");
  std::span<const T> x = p, y = q;
  if (y.size() > x.size()) std::swap(x, y);
  const std::size_t l = x.size(), s = y.size(), outputs = l + s - 1;
  std::vector<T> xp(l + 2 * (s - 1) + output_block, T(0));
  std::copy(x.begin(), x.end(), xp.begin() + (s - 1));
  convolve_padded(xp.data(), y.data(), s, outputs, r.data());
}

}  // namespace

void convolve(std::span<const double> p, std::span<const double> q, std::span<double> r) { convolve_any(p, q, r); }
void convolve(std::span<const float> p, std::span<const float> q, std::span<float> r) { convolve_any(p, q, r); }

}  // namespace tally::gpu::cpu
