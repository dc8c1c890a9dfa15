// The subset-sum dynamic programme on the device: packed rows, ping-ponged, several weights per pass; and the
// seed-002 baseline (a byte per total, a launch per weight).
#include <algorithm>
#include <vector>

#include "cuda_check.cuh"
#include "reachable_check.hpp"
#include "tally/gpu/reachable_sums.hpp"

namespace tally::gpu::cuda {
namespace kernels {

// ---- tuning knobs -------------------------------------------------------------------------------------------------
constexpr int pass_threads = 256;
constexpr int words_per_thread = 8;  // words per thread: loads in flight
/// Weights fused per pass by `automatic` (a pass reads the row at 2^K shifts and writes it once).
constexpr int default_weights_per_pass = 2;
constexpr int max_weights_per_pass = 3;

/// The shifts of one pass: every subset sum s of its K weights (0 included), as word and bit offsets.
struct Shifts {
  int count;
  std::uint64_t words[1 << max_weights_per_pass];
  unsigned bits[1 << max_weights_per_pass];
};

/// Bit i of (row << s), for the word holding bits 64 w .. 64 w + 63: words w - q and w - q - 1 of the row
/// (q = s / 64, r = s % 64), zero below word 0.
__device__ inline std::uint64_t shifted_word(const std::uint64_t* __restrict__ row, std::uint64_t w, std::uint64_t q, unsigned r) {
  if (w < q) return 0;
  std::uint64_t v = row[w - q] << r;
  if (r != 0 && w > q) v |= row[w - q - 1] >> (64 - r);
  return v;
}

/// out[w] = OR over the pass's shifts s of (in << s)[w], for words w < active; the last word of the row keeps only
/// totals <= c (top_mask). A thread's words are words_per_thread apart by pass_threads (each load of a warp is
/// coalesced), and all its loads are issued before its stores (in and out never alias).
__global__ void __launch_bounds__(pass_threads)
    shift_or_pass(const std::uint64_t* __restrict__ in, std::uint64_t* __restrict__ out, std::uint64_t active,
                  std::uint64_t last_word, std::uint64_t top_mask, Shifts shifts) {
  const std::uint64_t base =
      (static_cast<std::uint64_t>(blockIdx.x) * pass_threads * words_per_thread) + threadIdx.x;
  std::uint64_t v[words_per_thread];
#pragma unroll
  for (int k = 0; k < words_per_thread; ++k) {
    const std::uint64_t w = base + static_cast<std::uint64_t>(k) * pass_threads;
    v[k] = w < active ? in[w] : 0;  // shift 0
  }
  for (int s = 1; s < shifts.count; ++s) {
#pragma unroll
    for (int k = 0; k < words_per_thread; ++k) {
      const std::uint64_t w = base + static_cast<std::uint64_t>(k) * pass_threads;
      if (w < active) v[k] |= shifted_word(in, w, shifts.words[s], shifts.bits[s]);
    }
  }
#pragma unroll
  for (int k = 0; k < words_per_thread; ++k) {
    const std::uint64_t w = base + static_cast<std::uint64_t>(k) * pass_threads;
    if (w < active) out[w] = w == last_word ? (v[k] & top_mask) : v[k];
  }
}

/// The largest index of a non-zero word, for the optimization answer without copying the row: a warp's maximum by
/// shuffles, then one atomicMax per warp (not per word: most words are non-zero, and one address would serialize).
__global__ void last_nonzero_word(const std::uint64_t* row, std::uint64_t words, unsigned long long* last) {
  unsigned long long best = 0;
  for (std::uint64_t w = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; w < words;
       w += static_cast<std::uint64_t>(gridDim.x) * blockDim.x)
    if (row[w] != 0) best = w;  // increasing w: the last one found is the largest
  for (int d = 16; d > 0; d /= 2) best = max(best, __shfl_down_sync(0xffffffffu, best, d));
  if ((threadIdx.x & 31) == 0 && best != 0) atomicMax(last, best);
}

// ---- the seed-002 baseline ----------------------------------------------------------------------------------------
/// out[t] = in[t] | in[t - w] over totals t <= c, one byte each; a thread handles 8 consecutive totals (the seed's
/// unrolled kernel).
__global__ void byte_pass(const unsigned char* in, unsigned char* out, std::uint64_t cells, std::uint64_t w) {
  const std::uint64_t first = (static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * 8;
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const std::uint64_t t = first + k;
    if (t >= cells) return;
    out[t] = in[t] | (t >= w ? in[t - w] : 0);
  }
}

/// Packs the byte row into bits: word w gets bytes 64 w .. 64 w + 63.
__global__ void pack_bytes(const unsigned char* bytes, std::uint64_t cells, std::uint64_t* words, std::uint64_t count) {
  const std::uint64_t w = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (w >= count) return;
  std::uint64_t v = 0;
  for (int b = 0; b < 64; ++b) {
    const std::uint64_t t = w * 64 + b;
    if (t < cells && bytes[t]) v |= std::uint64_t{1} << b;
  }
  words[w] = v;
}

}  // namespace kernels

namespace {

using detail::DeviceBuffer;

unsigned blocks_for(std::uint64_t items, std::uint64_t per_block) {
  return static_cast<unsigned>((items + per_block - 1) / per_block);
}

/// The weights that can change the row (0 < w <= c), in increasing order: the active prefix grows slowly.
std::vector<std::int64_t> useful_weights(std::span<const std::int64_t> w, std::int64_t c) {
  std::vector<std::int64_t> out;
  for (const auto x : w)
    if (x > 0 && x <= c) out.push_back(x);
  std::sort(out.begin(), out.end());
  return out;
}

/// The device row after the programme (bit_packed), or after stopping once c is reachable (stop_early).
struct DeviceRow {
  DeviceBuffer<std::uint64_t> row;
  std::uint64_t words;
};

DeviceRow packed_programme(const std::vector<std::int64_t>& w, std::int64_t c, int per_pass, bool stop_early,
                           const char* who) {
  const std::uint64_t words = static_cast<std::uint64_t>(c / 64 + 1), last = words - 1;
  detail::require_device_memory(16.0 * double(words), who, "the two packed rows");
  DeviceBuffer<std::uint64_t> a(words), b(words);
  TALLY_CUDA_CHECK(cudaMemset(a.data(), 0, words * 8));
  TALLY_CUDA_CHECK(cudaMemset(b.data(), 0, words * 8));
  const std::uint64_t one = 1;
  TALLY_CUDA_CHECK(cudaMemcpy(a.data(), &one, 8, cudaMemcpyHostToDevice));
  std::uint64_t* in = a.data();
  std::uint64_t* out = b.data();
  const std::uint64_t top_mask = detail::top_word_mask(c);
  std::int64_t reach = 0;
  int passes = 0;
  for (std::size_t i = 0; i < w.size(); i += per_pass) {
    const std::size_t k = std::min<std::size_t>(per_pass, w.size() - i);
    kernels::Shifts shifts{};
    std::vector<std::int64_t> sums{0};
    for (std::size_t j = 0; j < k; ++j) {
      const std::size_t before = sums.size();
      for (std::size_t s = 0; s < before; ++s) sums.push_back(sums[s] + w[i + j]);
      reach = std::min(c, reach + w[i + j]);
    }
    std::sort(sums.begin(), sums.end());
    sums.erase(std::unique(sums.begin(), sums.end()), sums.end());
    for (const auto s : sums)
      if (s <= c) {
        shifts.words[shifts.count] = static_cast<std::uint64_t>(s / 64);
        shifts.bits[shifts.count] = static_cast<unsigned>(s % 64);
        ++shifts.count;
      }
    const std::uint64_t active = static_cast<std::uint64_t>(reach / 64 + 1);
    kernels::shift_or_pass<<<blocks_for(active, kernels::pass_threads * kernels::words_per_thread),
                             kernels::pass_threads>>>(in, out, active, last, top_mask, shifts);
    TALLY_CUDA_CHECK(cudaGetLastError());
    std::swap(in, out);
    if (stop_early && (++passes % 8 == 0 || i + k >= w.size()) && reach >= c) {
      std::uint64_t word = 0;
      TALLY_CUDA_CHECK(cudaMemcpy(&word, in + last, 8, cudaMemcpyDeviceToHost));
      if ((word >> (c % 64)) & 1u) break;
    }
  }
  if (in == a.data()) return {std::move(a), words};
  return {std::move(b), words};
}

DeviceRow byte_programme(const std::vector<std::int64_t>& w, std::int64_t c, const char* who) {
  const std::uint64_t cells = static_cast<std::uint64_t>(c) + 1, words = static_cast<std::uint64_t>(c / 64 + 1);
  detail::require_device_memory(2.0 * double(cells) + 8.0 * double(words), who, "the two byte rows");
  DeviceBuffer<unsigned char> a(cells), b(cells);
  TALLY_CUDA_CHECK(cudaMemset(a.data(), 0, cells));
  TALLY_CUDA_CHECK(cudaMemset(a.data(), 1, 1));
  unsigned char* in = a.data();
  unsigned char* out = b.data();
  for (const auto x : w) {
    kernels::byte_pass<<<blocks_for(cells, 256 * 8), 256>>>(in, out, cells, static_cast<std::uint64_t>(x));
    TALLY_CUDA_CHECK(cudaGetLastError());
    std::swap(in, out);
  }
  DeviceBuffer<std::uint64_t> row(words);
  kernels::pack_bytes<<<blocks_for(words, 256), 256>>>(in, cells, row.data(), words);
  TALLY_CUDA_CHECK(cudaGetLastError());
  return {std::move(row), words};
}

DeviceRow programme(std::span<const std::int64_t> w, std::int64_t c, DpKernel kernel, int per_pass, bool stop_early,
                    const char* who) {
  detail::check_reachable_input(w, c, who);
  if (per_pass < 0 || per_pass > kernels::max_weights_per_pass)
    detail::fail<domain_error>(who, ": weights_per_pass = ", per_pass, " must be in [0, ",
                               kernels::max_weights_per_pass, "]");
  detail::require_device(who);
  const auto useful = useful_weights(w, c);
  if (kernel == DpKernel::byte_per_cell) return byte_programme(useful, c, who);
  return packed_programme(useful, c, per_pass == 0 ? kernels::default_weights_per_pass : per_pass, stop_early, who);
}

}  // namespace

ReachableSums reachable_sums(std::span<const std::int64_t> w, std::int64_t c, DpKernel kernel, int weights_per_pass) {
  auto device = programme(w, c, kernel, weights_per_pass, false, "tally::gpu::cuda::reachable_sums");
  std::vector<std::uint64_t> words(device.words);
  TALLY_CUDA_CHECK(cudaMemcpy(words.data(), device.row.data(), words.size() * 8, cudaMemcpyDeviceToHost));
  return ReachableSums(c, std::move(words));
}

SubsetSumAnswer subset_sum(std::span<const std::int64_t> w, std::int64_t c, DpKernel kernel, int weights_per_pass) {
  auto device = programme(w, c, kernel, weights_per_pass, true, "tally::gpu::cuda::subset_sum");
  DeviceBuffer<unsigned long long> last(1);
  TALLY_CUDA_CHECK(cudaMemset(last.data(), 0, sizeof(unsigned long long)));
  kernels::last_nonzero_word<<<1024, 256>>>(device.row.data(), device.words, last.data());
  TALLY_CUDA_CHECK(cudaGetLastError());
  unsigned long long index = 0;
  TALLY_CUDA_CHECK(cudaMemcpy(&index, last.data(), sizeof index, cudaMemcpyDeviceToHost));
  std::uint64_t word = 0, top = 0;
  TALLY_CUDA_CHECK(cudaMemcpy(&word, device.row.data() + index, 8, cudaMemcpyDeviceToHost));
  TALLY_CUDA_CHECK(cudaMemcpy(&top, device.row.data() + device.words - 1, 8, cudaMemcpyDeviceToHost));
  const std::int64_t best = static_cast<std::int64_t>(index) * 64 + 63 - __builtin_clzll(word);  // word != 0: bit 0
  return {((top >> (c % 64)) & 1u) != 0, best};
}

}  // namespace tally::gpu::cuda
