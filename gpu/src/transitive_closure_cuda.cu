// Boolean products and transitive closures on the device: the packed tile kernel, squaring with a changed flag per
// product, the topological relabelling, and the seed-001 byte-per-entry baseline.
#include <algorithm>
#include <vector>

#include "closure_check.hpp"
#include "closure_kernels.cuh"
#include "cuda_check.cuh"
#include "tally/gpu/transitive_closure.hpp"

namespace tally::gpu::cuda {
namespace {

using detail::DeviceBuffer;
using Words = DeviceBuffer<std::uint64_t>;
using Bytes = DeviceBuffer<unsigned char>;

constexpr int launch_threads = 256;

double packed_bytes(std::size_t n) { return 8.0 * double(n) * double(BitMatrix::words_per_row(n)); }

unsigned grid_for(std::uint64_t items, std::uint64_t per_block, std::uint64_t most = 1u << 30) {
  return static_cast<unsigned>(std::max<std::uint64_t>(1, std::min(most, (items + per_block - 1) / per_block)));
}

void upload(const BitMatrix& m, Words& d) {
  if (!m.words().empty())
    TALLY_CUDA_CHECK(cudaMemcpy(d.data(), m.words().data(), m.words().size() * 8, cudaMemcpyHostToDevice));
}

BitMatrix download(Words& d, std::size_t n) {
  std::vector<std::uint64_t> words(n * BitMatrix::words_per_row(n));
  if (!words.empty()) TALLY_CUDA_CHECK(cudaMemcpy(words.data(), d.data(), words.size() * 8, cudaMemcpyDeviceToHost));
  return BitMatrix(n, std::move(words));
}

void launch_transpose(const std::uint64_t* in, std::uint64_t* out, std::size_t n, cudaStream_t stream) {
  const std::uint64_t words = BitMatrix::words_per_row(n);
  if (n == 0) return;
  kernels::transpose<<<grid_for(words * words * 32, launch_threads, 1u << 20), launch_threads, 0, stream>>>(
      in, out, n, words);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

void launch_product(const kernels::ProductArgs& args, cudaStream_t stream, const char* who) {
  if (args.n == 0) return;
  const std::uint64_t row_tiles = (args.n + kernels::tile_rows - 1) / kernels::tile_rows;
  const std::uint64_t col_tiles = (args.n + kernels::tile_cols - 1) / kernels::tile_cols;
  if (row_tiles > 0x7fffffffu || col_tiles > 65535)
    tally::detail::fail<overflow_error>(who, ": n = ", args.n, " is too large for one launch");
  const dim3 grid(static_cast<unsigned>(row_tiles), static_cast<unsigned>(col_tiles));
  kernels::packed_product<<<grid, kernels::product_threads, 0, stream>>>(args);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

/// The relabelling maps of the topological order: `order` (new label -> old) and its inverse, as device arrays.
struct Relabel {
  DeviceBuffer<std::uint32_t> to_old, to_new;
};

Relabel relabelling(const BitMatrix& adjacency, const char* who) {
  const auto order = detail::topological_order(adjacency, who);  // throws on a cycle, before any device work
  const std::size_t n = order.size();
  std::vector<std::uint32_t> to_old(n), to_new(n);
  for (std::size_t p = 0; p < n; ++p) {
    to_old[p] = static_cast<std::uint32_t>(order[p]);
    to_new[order[p]] = static_cast<std::uint32_t>(p);
  }
  Relabel r{DeviceBuffer<std::uint32_t>(n), DeviceBuffer<std::uint32_t>(n)};
  if (n > 0) {
    TALLY_CUDA_CHECK(cudaMemcpy(r.to_old.data(), to_old.data(), n * 4, cudaMemcpyHostToDevice));
    TALLY_CUDA_CHECK(cudaMemcpy(r.to_new.data(), to_new.data(), n * 4, cudaMemcpyHostToDevice));
  }
  return r;
}

void launch_permute(const std::uint64_t* in, std::uint64_t* out, const std::uint32_t* map, std::size_t n) {
  if (n == 0) return;
  kernels::permute<<<grid_for(std::uint64_t(n) * 32, launch_threads, 1u << 16), launch_threads>>>(
      in, out, map, n, BitMatrix::words_per_row(n));
  TALLY_CUDA_CHECK(cudaGetLastError());
}

void launch_byte_product(const unsigned char* a, const unsigned char* b, const unsigned char* old, unsigned char* c,
                         std::size_t n, bool triangular, unsigned* changed) {
  if (n == 0) return;
  const dim3 grid(grid_for(n, launch_threads), static_cast<unsigned>(std::min<std::size_t>(n, 65535)));
  kernels::byte_product<<<grid, launch_threads>>>(a, b, old, c, n, triangular, changed);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

void launch_unpack(const std::uint64_t* in, unsigned char* out, std::size_t n) {
  if (n == 0) return;
  kernels::unpack<<<grid_for(std::uint64_t(n) * n, launch_threads, 1u << 16), launch_threads>>>(
      in, out, n, BitMatrix::words_per_row(n));
  TALLY_CUDA_CHECK(cudaGetLastError());
}

void launch_pack(const unsigned char* in, std::uint64_t* out, std::size_t n) {
  if (n == 0) return;
  const std::uint64_t words = BitMatrix::words_per_row(n);
  kernels::pack<<<grid_for(n * words, launch_threads, 1u << 16), launch_threads>>>(in, out, n, words);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

bool read_flag(DeviceBuffer<unsigned>& flag) {
  unsigned host = 0;
  TALLY_CUDA_CHECK(cudaMemcpy(&host, flag.data(), sizeof host, cudaMemcpyDeviceToHost));
  return host != 0;
}

/// Squares the packed matrix in `r` (with `s` and `t` as scratch) until nothing changes or `bound` squarings are
/// done; returns the buffer holding the result and counts the products in *count.
Words* square_packed(Words& r, Words& s, Words& t, std::size_t n, bool triangular, int bound, int* count,
                     const char* who) {
  DeviceBuffer<unsigned> flag(1);
  Words* cur = &r;
  Words* next = &s;
  for (*count = 0; *count < bound;) {
    launch_transpose(cur->data(), t.data(), n, nullptr);
    TALLY_CUDA_CHECK(cudaMemset(flag.data(), 0, sizeof(unsigned)));
    launch_product({cur->data(), t.data(), cur->data(), next->data(), n, BitMatrix::words_per_row(n), triangular,
                    flag.data()},
                   nullptr, who);
    ++*count;
    std::swap(cur, next);
    if (!read_flag(flag)) break;
  }
  return cur;
}

/// The same on byte matrices: `r` holds the packed matrix in and out.
void square_bytes(Words& r, std::size_t n, bool triangular, int bound, int* count) {
  Bytes x(n * n), y(n * n);
  DeviceBuffer<unsigned> flag(1);
  launch_unpack(r.data(), x.data(), n);
  unsigned char* cur = x.data();
  unsigned char* next = y.data();
  for (*count = 0; *count < bound;) {
    TALLY_CUDA_CHECK(cudaMemset(flag.data(), 0, sizeof(unsigned)));
    launch_byte_product(cur, cur, cur, next, n, triangular, flag.data());
    ++*count;
    std::swap(cur, next);
    if (!read_flag(flag)) break;
  }
  launch_pack(cur, r.data(), n);
}

}  // namespace

void boolean_product_device(const std::uint64_t* a, const std::uint64_t* bt, std::uint64_t* c, std::size_t n,
                            void* stream) {
  const char* who = "tally::gpu::cuda::boolean_product_device";
  if (n > max_bit_matrix_size) tally::detail::fail<overflow_error>(who, ": n = ", n, " is above 2^24");
  launch_product({a, bt, nullptr, c, n, BitMatrix::words_per_row(n), false, nullptr},
                 static_cast<cudaStream_t>(stream), who);
}

void transpose_device(const std::uint64_t* in, std::uint64_t* out, std::size_t n, void* stream) {
  if (n > max_bit_matrix_size)
    tally::detail::fail<overflow_error>("tally::gpu::cuda::transpose_device: n = ", n, " is above 2^24");
  launch_transpose(in, out, n, static_cast<cudaStream_t>(stream));
}

BitMatrix boolean_product(const BitMatrix& a, const BitMatrix& b, BoolKernel kernel) {
  const char* who = "tally::gpu::cuda::boolean_product";
  detail::check_same_size(a, b, who);
  detail::require_device(who);
  const std::size_t n = a.size(), words = a.words().size();
  if (kernel == BoolKernel::byte_per_entry) {
    detail::require_device_memory(3.0 * packed_bytes(n) + 3.0 * double(n) * double(n), who, "the matrices");
    Words da(words), db(words), dc(words);
    upload(a, da);
    upload(b, db);
    Bytes ba(n * n), bb(n * n), bc(n * n);
    launch_unpack(da.data(), ba.data(), n);
    launch_unpack(db.data(), bb.data(), n);
    launch_byte_product(ba.data(), bb.data(), nullptr, bc.data(), n, false, nullptr);
    launch_pack(bc.data(), dc.data(), n);
    return download(dc, n);
  }
  detail::require_device_memory(4.0 * packed_bytes(n), who, "the matrices");
  Words da(words), db(words), dbt(words), dc(words);
  upload(a, da);
  upload(b, db);
  launch_transpose(db.data(), dbt.data(), n, nullptr);
  launch_product({da.data(), dbt.data(), nullptr, dc.data(), n, BitMatrix::words_per_row(n), false, nullptr}, nullptr,
                 who);
  return download(dc, n);
}

BitMatrix transitive_closure(const BitMatrix& adjacency, BoolKernel kernel, ClosureOrder order, int* squarings) {
  const char* who = "tally::gpu::cuda::transitive_closure";
  detail::require_device(who);
  const std::size_t n = adjacency.size(), words = adjacency.words().size();
  const bool bytes = kernel == BoolKernel::byte_per_entry, topological = order == ClosureOrder::topological;
  const double need = (bytes ? 2.0 * packed_bytes(n) + 2.0 * double(n) * double(n) : 3.0 * packed_bytes(n)) + 8.0 * n;
  detail::require_device_memory(need, who, "the matrices");
  Relabel relabel{DeviceBuffer<std::uint32_t>(0), DeviceBuffer<std::uint32_t>(0)};
  if (topological) relabel = relabelling(adjacency, who);
  const int bound = detail::squaring_bound(n);
  int count = 0;
  BitMatrix result;
  if (bytes) {
    Words r(words), s(words);
    upload(adjacency, topological ? s : r);
    if (topological) launch_permute(s.data(), r.data(), relabel.to_old.data(), n);
    square_bytes(r, n, topological, bound, &count);
    if (topological) launch_permute(r.data(), s.data(), relabel.to_new.data(), n);
    result = download(topological ? s : r, n);
  } else {
    Words r(words), s(words), t(words);
    upload(adjacency, topological ? s : r);
    if (topological) launch_permute(s.data(), r.data(), relabel.to_old.data(), n);
    Words* out = square_packed(r, s, t, n, topological, bound, &count, who);
    Words* back = out == &r ? &s : &r;
    if (topological) launch_permute(out->data(), back->data(), relabel.to_new.data(), n);
    result = download(topological ? *back : *out, n);
  }
  if (squarings) *squarings = count;
  if (!topological) detail::check_diagonal(result, who);  // the topological order has reported a cycle already
  return result;
}

}  // namespace tally::gpu::cuda
