// The CUDA forms of laws chosen from a table by an index per particle: one thread a particle (and, for the draws,
// one thread a law of the table for its draw table); an index outside the table is a deferred check.
#include <algorithm>
#include <bit>
#include <string>
#include <vector>

#include "cuda_check.cuh"
#include "population_cuda.hpp"
#include "population_kernels.cuh"
#include "population_reference.hpp"
#include "tally/gpu/philox.hpp"

namespace tally::gpu::population_cuda {

using namespace kernels;

namespace {

/// The error of an index outside the table (the host's message).
detail::CheckFailure bad_index(const char* who) {
  return [who](std::size_t i, long long j, long long k) { detail::fail_state(who, i, j, static_cast<std::size_t>(k)); };
}

/// The payload of that error: particle i's index and the table's size.
struct IndexPayload {
  const std::int64_t* index;
  long long laws;
  __device__ CheckPayload operator()(long long i) const { return CheckPayload{index[i], laws}; }
};

/// Where law j's draw table starts in the tile arrays (carry: T_j + 1 entries, last_positive: T_j): offset_j / 256 +
/// 2 j. Law j + 1's start is at least T_j + 1 further on, since floor((o + m) / 256) - floor(o / 256) >=
/// floor(m / 256) >= ceil(m / 256) - 1, so the arrays need total / 256 + 2 K + 2 entries.
__device__ inline std::int64_t tile_base(std::int64_t offset, long long j) {
  return offset / detail::scan_tile + 2 * j;
}

}  // namespace

Laws indexed(const Laws& host_or_device_table, const Column<std::int64_t>& index) {
  constexpr const char* who = "tally::gpu::indexed";
  Laws uploaded;  // a host table goes to the device first
  if (host_or_device_table.where() == Backend::cpu) uploaded = Laws::from_host(host_or_device_table.host(), Backend::cuda);
  const Laws& table = host_or_device_table.where() == Backend::cpu ? uploaded : host_or_device_table;
  const std::size_t p = index.size(), k = table.size(), length = table.max_length();
  const PmfBatchView t = table.view();
  const std::int64_t* ix = index.data();
  const auto laws = static_cast<long long>(k);
  if (k == 0 && p > 0) tally::detail::fail<domain_error>(who, ": a table without laws");
  if (k * length <= 2 * table.total()) {  // laws of about one length: law i at i * length, nothing read back
    Laws out = Laws::allocate(Backend::cuda, p, p * length, length, who);
    const MutablePmfBatchView o = out.mutable_view();
    const auto m = static_cast<std::int64_t>(length);
    FirstBad bad(p);
    unsigned long long* flag = bad.data();
    bad.each<block>(
        p,
        [=] __device__(long long i) {
          const std::int64_t j = ix[i];
          const bool ok = j >= 0 && j < laws;
          if (!ok) atomicMin(flag, static_cast<unsigned long long>(i));
          const double* w = t.weights + (ok ? t.offset[j] : 0);
          const std::int64_t own = ok ? t.offset[j + 1] - t.offset[j] : 0;  // (<= length; zeros after it)
          for (std::int64_t e = 0; e < m; ++e) o.weights[i * m + e] = e < own ? w[e] : 0.0;
          if (i == 0) o.offset[0] = 0;
          o.offset[i + 1] = (i + 1) * m;
          o.lo[i] = ok ? t.lo[j] : 0;
          o.log_scale[i] = ok ? t.log_scale[j] : -INFINITY;
        },
        IndexPayload{ix, laws}, bad_index(who));
    return out;
  }
  // laws of several lengths: the index checked as ancestors, then gather's lengths, scan and read-back
  auto ancestors = Column<std::size_t>::allocate(Backend::cuda, p, who);
  std::size_t* a = ancestors.data();
  FirstBad bad(p);
  unsigned long long* flag = bad.data();
  bad.each<block>(
      p,
      [=] __device__(long long i) {
        const std::int64_t j = ix[i];
        const bool ok = j >= 0 && j < laws;
        if (!ok) atomicMin(flag, static_cast<unsigned long long>(i));
        a[i] = ok ? static_cast<std::size_t>(j) : 0;
      },
      IndexPayload{ix, laws}, bad_index(who));
  return population_cuda::gather(table, ancestors);
}

namespace {

/// Where the arrays of K draw tables lie in one buffer of 8-byte words (doubles as their bits): carry and
/// last_positive (tile_words each, law j's at tile_base), c (total, law j's at its offset), last_tile (K), then
/// the table's offsets (K + 1) and lower ends (K).
struct DrawLayout {
  std::int64_t laws, total, tile_words;
  __host__ __device__ std::int64_t carry() const { return 0; }
  __host__ __device__ std::int64_t last_positive() const { return tile_words; }
  __host__ __device__ std::int64_t c() const { return 2 * tile_words; }
  __host__ __device__ std::int64_t last_tile() const { return 2 * tile_words + total; }
  __host__ __device__ std::int64_t offset() const { return last_tile() + laws; }
  __host__ __device__ std::int64_t lo() const { return offset() + laws + 1; }
  __host__ __device__ std::int64_t words() const { return lo() + laws; }
};
DrawLayout draw_layout(std::size_t laws, std::size_t total) {
  const auto k = static_cast<std::int64_t>(laws), t = static_cast<std::int64_t>(total);
  return {k, t, t / detail::scan_tile + 2 * k + 2};
}

/// Law j's draw by u from the tables in `words` (DrawLayout).
__device__ inline std::int64_t layout_draw(const std::int64_t* words, const DrawLayout& d, std::int64_t j, double u) {
  const auto* carry = reinterpret_cast<const double*>(words + d.carry());
  const auto* c = reinterpret_cast<const double*>(words + d.c());
  const std::int64_t begin = words[d.offset() + j], m = words[d.offset() + j + 1] - begin, base = tile_base(begin, j);
  return words[d.lo() + j] +
         detail::table_draw(carry + base, c + begin, words + d.last_positive() + base, detail::draw_tiles(m), m,
                            words[d.last_tile() + j], u);
}

/// The draws from tables in device memory (words) or, when Inline, from `small`, put in shared memory first.
template <bool Inline>
__global__ void indexed_draws_kernel(const std::int64_t* words, const __grid_constant__ InlineValues<std::int64_t> small,
                                     DrawLayout d, const std::int64_t* index, std::size_t count, std::uint64_t seed,
                                     std::uint64_t counter, std::uint64_t first_stream, std::int64_t* out,
                                     unsigned long long* first_bad) {
  if constexpr (Inline) {
    __shared__ std::int64_t shared_words[inline_words];
    words = to_shared(small, d.words(), shared_words);
  }
  const long long i = thread_index();
  if (i >= static_cast<long long>(count)) return;
  const std::int64_t j = index[i];
  if (j < 0 || j >= d.laws) {
    atomicMin(first_bad, static_cast<unsigned long long>(i));
    out[i] = 0;
    return;
  }
  out[i] = layout_draw(words, d, j, philox_uniform(seed, first_stream + static_cast<std::uint64_t>(i), counter));
}

}  // namespace

Column<std::int64_t> sample_indexed(const Laws& table, const Column<std::int64_t>& index, std::uint64_t seed,
                                    std::uint64_t counter, std::uint64_t first_stream) {
  constexpr const char* who = "tally::gpu::sample_indexed";
  const std::size_t p = index.size(), k = table.size();
  if (k == 0 && p > 0) tally::detail::fail<domain_error>(who, ": a table without laws");
  auto out = Column<std::int64_t>::allocate(Backend::cuda, p, who);
  if (p == 0) return out;
  const DrawLayout d = draw_layout(k, table.total());
  std::vector<std::int64_t> host_words;  // a host table's draw tables, made here (fill_draw_table, as the kernel does)
  Column<std::int64_t> device_words;
  if (table.where() == Backend::cpu) {
    const PmfBatch& t = table.host();
    std::vector<double> carry(static_cast<std::size_t>(d.tile_words)), c(table.total());
    std::vector<std::int64_t> last_positive(carry.size());
    host_words.assign(static_cast<std::size_t>(d.words()), 0);
    for (std::size_t j = 0; j < k; ++j) {
      const std::int64_t begin = t.offset[j], base = begin / detail::scan_tile + 2 * static_cast<std::int64_t>(j);
      host_words[static_cast<std::size_t>(d.last_tile()) + j] = detail::fill_draw_table(
          t.weights.data() + begin, t.offset[j + 1] - begin, carry.data() + base, c.data() + begin,
          last_positive.data() + base);
      host_words[static_cast<std::size_t>(d.lo()) + j] = t.lo[j];
    }
    const auto bits = [](double v) { return std::bit_cast<std::int64_t>(v); };
    std::transform(carry.begin(), carry.end(), host_words.begin() + d.carry(), bits);
    std::transform(c.begin(), c.end(), host_words.begin() + d.c(), bits);
    std::copy(last_positive.begin(), last_positive.end(), host_words.begin() + d.last_positive());
    std::copy(t.offset.begin(), t.offset.end(), host_words.begin() + d.offset());
    if (host_words.size() > inline_words) device_words = Column<std::int64_t>::from_host(host_words, Backend::cuda);
  } else {  // each law's draw table on the device, one thread a law
    device_words = Column<std::int64_t>::allocate(Backend::cuda, static_cast<std::size_t>(d.words()), who);
    const PmfBatchView t = table.view();
    std::int64_t* words = device_words.data();
    each(k, [=] __device__(long long j) {
      const std::int64_t begin = t.offset[j], base = tile_base(begin, j);
      words[d.last_tile() + j] = detail::fill_draw_table(
          t.weights + begin, t.offset[j + 1] - begin, reinterpret_cast<double*>(words + d.carry()) + base,
          reinterpret_cast<double*>(words + d.c()) + begin, words + d.last_positive() + base);
      words[d.offset() + j] = begin;
      words[d.lo() + j] = t.lo[j];
      if (j == 0) words[d.offset() + d.laws] = t.offset[d.laws];
    });
  }
  FirstBad bad(p);
  InlineValues<std::int64_t> small{};
  const bool in_launch = device_words.empty();
  if (in_launch) std::copy(host_words.begin(), host_words.end(), small.values);
  if (in_launch)
    indexed_draws_kernel<true><<<thread_blocks(p), block>>>(nullptr, small, d, index.data(), p, seed, counter,
                                                            first_stream, out.data(), bad.data());
  else
    indexed_draws_kernel<false><<<thread_blocks(p), block>>>(device_words.data(), small, d, index.data(), p, seed,
                                                             counter, first_stream, out.data(), bad.data());
  launched();
  bad.check(IndexPayload{index.data(), static_cast<long long>(k)}, bad_index(who));
  return out;
}

namespace {
/// add_indexed with x's K <= inline_words values sent in the launch's parameters.
void add_indexed_inline(Column<double>& acc, const std::vector<double>& x, const Column<std::int64_t>& index) {
  InlineValues<double> small{};
  std::copy(x.begin(), x.end(), small.values);
  double* a = acc.data();
  const std::int64_t* ix = index.data();
  const auto laws = static_cast<long long>(x.size());
  FirstBad bad(index.size());
  unsigned long long* flag = bad.data();
  bad.each<block>(
      index.size(),
      [=] __device__(long long i) {
        const std::int64_t j = ix[i];
        if (j < 0 || j >= laws) {
          atomicMin(flag, static_cast<unsigned long long>(i));
          return;
        }
        a[i] += small.values[j];
      },
      IndexPayload{ix, laws}, bad_index("tally::gpu::add_indexed"));
}
}  // namespace

void add_indexed(Column<double>& acc, const Column<double>& host_or_device_x, const Column<std::int64_t>& index) {
  constexpr const char* who = "tally::gpu::add_indexed";
  const std::size_t p = index.size();
  if (p == 0) return;
  // host values go over with the launch where they fit (into a device column otherwise)
  Column<double> uploaded;
  const bool in_launch = host_or_device_x.where() == Backend::cpu && host_or_device_x.size() <= inline_words;
  if (host_or_device_x.where() == Backend::cpu && !in_launch)
    uploaded = Column<double>::from_host(host_or_device_x.host(), Backend::cuda);
  const Column<double>& x = host_or_device_x.where() == Backend::cpu ? uploaded : host_or_device_x;
  if (in_launch) return add_indexed_inline(acc, host_or_device_x.host(), index);
  double* a = acc.data();
  const double* xp = x.data();
  const std::int64_t* ix = index.data();
  const auto laws = static_cast<long long>(x.size());
  FirstBad bad(p);
  unsigned long long* flag = bad.data();
  bad.each<block>(
      p,
      [=] __device__(long long i) {
        const std::int64_t j = ix[i];
        if (j < 0 || j >= laws) {
          atomicMin(flag, static_cast<unsigned long long>(i));
          return;
        }
        a[i] += xp[j];
      },
      IndexPayload{ix, laws}, bad_index(who));
}

void check_indices(const Column<std::int64_t>& index, std::size_t laws, const char* who) {
  const std::size_t p = index.size();
  if (p == 0) return;
  const std::int64_t* ix = index.data();
  const auto k = static_cast<long long>(laws);
  FirstBad bad(p);
  unsigned long long* flag = bad.data();
  bad.each<block>(
      p,
      [=] __device__(long long i) {
        if (ix[i] < 0 || ix[i] >= k) atomicMin(flag, static_cast<unsigned long long>(i));
      },
      IndexPayload{ix, k}, bad_index(who));
}

}  // namespace tally::gpu::population_cuda
