// Private: the device kernels of boolean products and closures: the packed tile kernel, bit transposes and
// permutations, and the seed-001 byte-per-entry baseline.
#pragma once

#include <cstdint>

namespace tally::gpu::cuda::kernels {

// ---- tuning knobs of the packed product ----------------------------------------------------------------------------
constexpr int product_threads = 256;  // 8 warps
constexpr int tile_rows = 64;         // rows of C per block: 8 per warp
constexpr int tile_cols = 128;        // columns of C per block: 4 per lane, lane + 32 t
constexpr int rows_per_warp = 8;
constexpr int cols_per_lane = 4;
constexpr int stage_words = 8;  // words of the contraction axis (512 values of k) per shared-memory stage
constexpr int pad = 2;          // words of padding per shared row: rows stay 16-byte aligned, stores spread on banks
constexpr unsigned full_warp = 0xffffffffu;
constexpr unsigned all_cells = 0xffffffffu;  // the 32 cells of a thread (8 rows x 4 columns) all done
static_assert(rows_per_warp * (product_threads / 32) == tile_rows && cols_per_lane * 32 == tile_cols);
static_assert(rows_per_warp * cols_per_lane == 32, "a thread's done mask is one 32-bit word");

/// One packed product C = A * B (A's rows, B's transpose's rows; n x n, `words` words per row), optionally ORed
/// with `old`, whose set cells count as done from the start; `changed` (if not null) is set to 1 when C differs
/// from `old` somewhere. `triangular`: A and B strictly upper triangular, so cell (i, j) needs only k in (i, j).
struct ProductArgs {
  const std::uint64_t* a;
  const std::uint64_t* bt;
  const std::uint64_t* old;  // nullptr: a plain product
  std::uint64_t* c;
  std::uint64_t n, words;
  bool triangular;
  unsigned* changed;  // nullptr: not tracked
};

/// cp.async of one 8-byte word into shared memory; src-size 0 (zero fill) when !valid (src is then not read).
__device__ inline void copy_async(std::uint64_t* dst, const std::uint64_t* src, bool valid) {
  const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(to), "l"(src), "r"(valid ? 8u : 0u) : "memory");
}
__device__ inline void commit_copies() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ inline void wait_copies_but_one() { asm volatile("cp.async.wait_group 1;\n" ::: "memory"); }
__device__ inline void wait_copies() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

/// The packed tile kernel: block (x, y) computes rows 64 x .. 64 x + 63 and columns 128 y .. 128 y + 127 of C.
/// Warp w owns rows 8 w .. 8 w + 7 of the tile, lane l columns l, l + 32, l + 64, l + 96: each thread ORs a & b
/// into 32 accumulators, one per cell. The k words stream through shared memory in stages of stage_words words,
/// double-buffered with cp.async ([k][row] layout: a warp reads one broadcast A word per row and 32 consecutive
/// B words). Early exit: a warp whose 32 x 32 cells are all done skips the arithmetic, and the loop ends for the
/// whole block when a barrier vote (__syncthreads_and) finds all its cells done: every thread reaches every
/// barrier. The result is packed by ballots: (row r, columns 0..31) and (r, 32..63) make one output word.
__global__ void __launch_bounds__(product_threads, 2) packed_product(ProductArgs p) {
  __shared__ __align__(16) std::uint64_t sa[2][stage_words][tile_rows + pad];
  __shared__ __align__(16) std::uint64_t sb[2][stage_words][tile_cols + pad];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const std::uint64_t i0 = static_cast<std::uint64_t>(blockIdx.x) * tile_rows;
  const std::uint64_t j0 = static_cast<std::uint64_t>(blockIdx.y) * tile_cols;
  const std::uint64_t first_row = i0 + static_cast<std::uint64_t>(warp) * rows_per_warp;

  // done: bit 4 r + t for cell (first_row + r, j0 + lane + 32 t); cells outside the matrix (or below the diagonal of
  // a triangular product, which stay zero) count as done
  unsigned done = 0;
#pragma unroll
  for (int r = 0; r < rows_per_warp; ++r) {
    const std::uint64_t i = first_row + r;
    std::uint64_t old_words[2] = {0, 0};
    if (p.old && i < p.n) {
      old_words[0] = p.old[i * p.words + j0 / 64];
      if (j0 / 64 + 1 < p.words) old_words[1] = p.old[i * p.words + j0 / 64 + 1];
    }
#pragma unroll
    for (int t = 0; t < cols_per_lane; ++t) {
      const std::uint64_t j = j0 + static_cast<std::uint64_t>(lane + 32 * t);
      const bool set = (old_words[t / 2] >> ((lane + 32 * t) % 64)) & 1u;
      if (i >= p.n || j >= p.n || (p.triangular && j <= i) || set) done |= 1u << (r * cols_per_lane + t);
    }
  }
  std::uint64_t kb = 0, ke = p.words;
  if (p.triangular) {  // k in (i, j) for i >= i0, j < j0 + 128: words i0 / 64 .. (j0 + 127) / 64
    kb = i0 / 64;
    ke = min(p.words, (j0 + tile_cols) / 64);
  }
  const int stages = ke > kb ? static_cast<int>((ke - kb + stage_words - 1) / stage_words) : 0;

  std::uint64_t acc[rows_per_warp][cols_per_lane];
#pragma unroll
  for (int r = 0; r < rows_per_warp; ++r)
#pragma unroll
    for (int t = 0; t < cols_per_lane; ++t) acc[r][t] = 0;

  // stage s into buffer s & 1: A is 64 rows x 8 words (2 per thread), B^T 128 rows x 8 words (4 per thread); eight
  // consecutive lanes read eight consecutive words of one row
  auto issue = [&](int s) {
    const int buf = s & 1;
    const std::uint64_t k0 = kb + static_cast<std::uint64_t>(s) * stage_words;
#pragma unroll
    for (int q = 0; q < tile_rows * stage_words / product_threads; ++q) {
      const int idx = static_cast<int>(threadIdx.x) + q * product_threads, row = idx / stage_words,
                kk = idx % stage_words;
      const std::uint64_t i = i0 + row, k = k0 + kk;
      const bool valid = i < p.n && k < ke;
      copy_async(&sa[buf][kk][row], valid ? p.a + i * p.words + k : p.a, valid);
    }
#pragma unroll
    for (int q = 0; q < tile_cols * stage_words / product_threads; ++q) {
      const int idx = static_cast<int>(threadIdx.x) + q * product_threads, col = idx / stage_words,
                kk = idx % stage_words;
      const std::uint64_t j = j0 + col, k = k0 + kk;
      const bool valid = j < p.n && k < ke;
      copy_async(&sb[buf][kk][col], valid ? p.bt + j * p.words + k : p.bt, valid);
    }
  };

  if (!__syncthreads_and(done == all_cells) && stages > 0) {
    issue(0);
    commit_copies();
    for (int s = 0; s < stages; ++s) {
      if (s + 1 < stages) issue(s + 1);
      commit_copies();  // an empty group after the last stage: "all but the newest group" is always stage s
      wait_copies_but_one();
      __syncthreads();
      if (!__all_sync(full_warp, done == all_cells)) {
        const int buf = s & 1;
#pragma unroll 1  // unrolled, the compiler hoists the shared loads of several k and spills the accumulators
        for (int kk = 0; kk < stage_words; ++kk) {
          std::uint64_t b[cols_per_lane];
#pragma unroll
          for (int t = 0; t < cols_per_lane; ++t) b[t] = sb[buf][kk][lane + 32 * t];
#pragma unroll
          for (int r = 0; r < rows_per_warp; ++r) {
            const std::uint64_t a = sa[buf][kk][warp * rows_per_warp + r];  // a broadcast
            if (a != 0) {  // the same for the whole warp: zero words of a sparse A cost a test, not 8 operations
#pragma unroll
              for (int t = 0; t < cols_per_lane; ++t) acc[r][t] |= a & b[t];
            }
          }
        }
#pragma unroll
        for (int r = 0; r < rows_per_warp; ++r)
#pragma unroll
          for (int t = 0; t < cols_per_lane; ++t)
            if (acc[r][t] != 0) done |= 1u << (r * cols_per_lane + t);
      }
      if (__syncthreads_and(done == all_cells)) break;  // also: every read of buffer s & 1 is over
    }
    wait_copies();
  }

  // pack: lane 2 r + h keeps word h (columns j0 + 64 h .. + 63) of row first_row + r
  std::uint64_t mine = 0;
#pragma unroll
  for (int r = 0; r < rows_per_warp; ++r) {
    const std::uint64_t w0 = __ballot_sync(full_warp, acc[r][0] != 0) |
                             (static_cast<std::uint64_t>(__ballot_sync(full_warp, acc[r][1] != 0)) << 32);
    const std::uint64_t w1 = __ballot_sync(full_warp, acc[r][2] != 0) |
                             (static_cast<std::uint64_t>(__ballot_sync(full_warp, acc[r][3] != 0)) << 32);
    if (lane == 2 * r) mine = w0;
    if (lane == 2 * r + 1) mine = w1;
  }
  if (lane < 2 * rows_per_warp) {
    const std::uint64_t i = first_row + lane / 2, x = j0 / 64 + lane % 2;
    if (i < p.n && x < p.words) {
      const std::uint64_t at = i * p.words + x, before = p.old ? p.old[at] : 0, after = mine | before;
      p.c[at] = after;
      if (p.changed && after != before) *p.changed = 1;
    }
  }
}

/// The transpose of a 64 x 64 bit block held by a warp, lane l holding rows l (lo) and l + 32 (hi): lane l gets
/// columns l (out0) and l + 32 (out1), 128 ballots.
__device__ inline void transpose_64(std::uint64_t lo, std::uint64_t hi, unsigned lane, std::uint64_t& out0,
                                    std::uint64_t& out1) {
  out0 = out1 = 0;
#pragma unroll
  for (unsigned c = 0; c < 64; ++c) {
    const std::uint64_t column = __ballot_sync(full_warp, (lo >> c) & 1u) |
                                 (static_cast<std::uint64_t>(__ballot_sync(full_warp, (hi >> c) & 1u)) << 32);
    if (c < 32 && lane == c) out0 = column;
    if (c >= 32 && lane == c - 32) out1 = column;
  }
}

/// Warp job (rb, w) of `transpose`.
__device__ inline void transpose_block(const std::uint64_t* __restrict__ in, std::uint64_t* __restrict__ out,
                                       std::uint64_t n, std::uint64_t words, std::uint64_t rb, std::uint64_t w,
                                       unsigned lane) {
  const std::uint64_t r_lo = 64 * rb + lane, r_hi = r_lo + 32;
  const std::uint64_t lo = r_lo < n ? in[r_lo * words + w] : 0, hi = r_hi < n ? in[r_hi * words + w] : 0;
  std::uint64_t out0, out1;
  transpose_64(lo, hi, lane, out0, out1);
  const std::uint64_t c0 = 64 * w + lane, c1 = c0 + 32;
  if (c0 < n) out[c0 * words + rb] = out0;
  if (c1 < n) out[c1 * words + rb] = out1;
}

/// out = in^T for n x n packed matrices: warp job (rb, w) transposes the 64 x 64 block of rows 64 rb .. 64 rb + 63
/// and columns 64 w .. 64 w + 63 with 128 ballots (lane l holds rows 64 rb + l and 64 rb + 32 + l); warps take jobs
/// by a grid-stride loop (the same trip count for all lanes of a warp).
__global__ void transpose(const std::uint64_t* __restrict__ in, std::uint64_t* __restrict__ out, std::uint64_t n,
                          std::uint64_t words) {
  const unsigned lane = threadIdx.x % 32;
  const std::uint64_t warps = static_cast<std::uint64_t>(gridDim.x) * blockDim.x / 32;
  for (std::uint64_t id = (static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
       id < words * words; id += warps)
    transpose_block(in, out, n, words, id % words, id / words, lane);
}

/// The transpose by tiles of 256 rows x 512 columns (blocks of transpose_tile_threads = 8 warps): warp w takes
/// word column 8 x + w of row blocks 4 y .. 4 y + 3 (as transpose_block does, 128 ballots each: the 8 warps of a
/// block read 64 consecutive bytes of each row), the block gathers the 512 x 4 output words in shared memory, and
/// writes each output row's 4 consecutive words (32 bytes, one sector) at once, instead of one scattered word.
constexpr int transpose_tile_threads = 256;
constexpr std::uint64_t transpose_tile_words = 8;       // word columns of the input per block
constexpr std::uint64_t transpose_tile_row_blocks = 4;  // 64-row blocks of the input per block
__global__ void __launch_bounds__(transpose_tile_threads) transpose_tiles(const std::uint64_t* __restrict__ in,
                                                                          std::uint64_t* __restrict__ out,
                                                                          std::uint64_t n, std::uint64_t words) {
  __shared__ std::uint64_t tile[transpose_tile_words * 64][transpose_tile_row_blocks + 1];  // + 1: banks
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const std::uint64_t w = blockIdx.x * transpose_tile_words + warp;         // the warp's input word column
  const std::uint64_t rb0 = blockIdx.y * transpose_tile_row_blocks;         // the block's first row block
#pragma unroll 1
  for (std::uint64_t b = 0; b < transpose_tile_row_blocks; ++b) {
    const std::uint64_t r_lo = 64 * (rb0 + b) + lane, r_hi = r_lo + 32;
    const bool column = w < words;  // warp-uniform
    const std::uint64_t lo = column && r_lo < n ? in[r_lo * words + w] : 0;
    const std::uint64_t hi = column && r_hi < n ? in[r_hi * words + w] : 0;
    std::uint64_t out0, out1;
    transpose_64(lo, hi, lane, out0, out1);
    tile[64 * warp + lane][b] = out0;  // output row 64 w + lane, word rb0 + b
    tile[64 * warp + lane + 32][b] = out1;
  }
  __syncthreads();
  // thread t writes word t % 4 of output rows 64 x 8 + t / 4 + 64 k, k = 0..7 (4 consecutive threads: one sector)
  const unsigned t = threadIdx.x;
#pragma unroll
  for (unsigned k = 0; k < 8; ++k) {
    const unsigned local = t / 4 + 64 * k, b = t % 4;
    const std::uint64_t row = blockIdx.x * transpose_tile_words * 64 + local, x = rb0 + b;
    if (row < n && x < words) out[row * words + x] = tile[local][b];
  }
}

/// A warp writes out_row[x] bit b = bit map[64 x + b] of src_row, for x < words: lane l gathers columns 64 x + l
/// and 64 x + 32 + l, two ballots make the word.
__device__ inline void gather_row(const std::uint64_t* src_row, std::uint64_t* out_row,
                                  const std::uint32_t* __restrict__ map, std::uint64_t n, std::uint64_t words,
                                  unsigned lane) {
  for (std::uint64_t x = 0; x < words; ++x) {
    const std::uint64_t j = 64 * x + lane;
    bool lo = false, hi = false;
    if (j < n) lo = (src_row[map[j] / 64] >> (map[j] % 64)) & 1u;
    if (j + 32 < n) hi = (src_row[map[j + 32] / 64] >> (map[j + 32] % 64)) & 1u;
    const std::uint64_t word = __ballot_sync(full_warp, lo) |
                               (static_cast<std::uint64_t>(__ballot_sync(full_warp, hi)) << 32);
    if (lane == 0) out_row[x] = word;
  }
}

/// out(i, j) = in(map[i], map[j]) for n x n packed matrices: a warp per row (grid-stride), 64 columns per step
/// (lane l gathers columns 64 x + l and 64 x + 32 + l, two ballots make the word).
__global__ void permute(const std::uint64_t* __restrict__ in, std::uint64_t* __restrict__ out,
                        const std::uint32_t* __restrict__ map, std::uint64_t n, std::uint64_t words) {
  const unsigned lane = threadIdx.x % 32;
  const std::uint64_t warps = static_cast<std::uint64_t>(gridDim.x) * blockDim.x / 32;
  for (std::uint64_t i = (static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; i < n; i += warps) {
    gather_row(in + static_cast<std::uint64_t>(map[i]) * words, out + i * words, map, n, words, lane);
  }
}

/// The same permutation with the source row staged in shared memory (a warp per row, `rows_per_block` rows a
/// block, words_per_row words of shared memory each): the row is read once, coalesced, and the 64 bits of an output
/// word are gathered from shared memory instead of from 64 scattered global words. For rows of up to
/// staged_permute_max_words words.
constexpr int staged_permute_rows = 8;
constexpr std::uint64_t staged_permute_max_words = 1024;  // 8 rows x 8 KiB = 64 KiB of shared memory at most
__global__ void permute_staged(const std::uint64_t* __restrict__ in, std::uint64_t* __restrict__ out,
                               const std::uint32_t* __restrict__ map, std::uint64_t n, std::uint64_t words) {
  extern __shared__ std::uint64_t staged[];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  std::uint64_t* row = staged + warp * words;
  const std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * staged_permute_rows + warp;
  if (i >= n) return;  // a whole warp; no block barriers below
  const std::uint64_t* src = in + static_cast<std::uint64_t>(map[i]) * words;
  for (std::uint64_t x = lane; x < words; x += 32) row[x] = src[x];
  __syncwarp();
  gather_row(row, out + i * words, map, n, words, lane);
}

// ---- the seed-001 baseline: a byte per entry ------------------------------------------------------------------------
/// bytes[i n + j] = entry (i, j) of the packed matrix (grid-stride over the n^2 entries).
__global__ void unpack(const std::uint64_t* __restrict__ in, unsigned char* __restrict__ bytes, std::uint64_t n,
                       std::uint64_t words) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t e = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n * n; e += stride) {
    const std::uint64_t i = e / n, j = e % n;
    bytes[e] = (in[i * words + j / 64] >> (j % 64)) & 1u;
  }
}

/// The packed matrix of a byte matrix (grid-stride over the output words; bits beyond column n - 1 stay zero).
__global__ void pack(const unsigned char* __restrict__ bytes, std::uint64_t* __restrict__ out, std::uint64_t n,
                     std::uint64_t words) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t x = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; x < n * words;
       x += stride) {
    const std::uint64_t i = x / words, first = 64 * (x % words);
    std::uint64_t v = 0;
    for (std::uint64_t b = 0; b < 64 && first + b < n; ++b)
      if (bytes[i * n + first + b]) v |= std::uint64_t{1} << b;
    out[x] = v;
  }
}

/// C_ij = old_ij | OR_k (A_ik & B_kj) on byte matrices, one thread per cell (column j = the thread's, rows by a
/// grid-stride loop), the k loop left at the first hit; k in (i, j) only when `triangular`. Sets *changed to 1 when
/// a cell turns true (old != nullptr).
__global__ void byte_product(const unsigned char* __restrict__ a, const unsigned char* __restrict__ b,
                             const unsigned char* old, unsigned char* c, std::uint64_t n, bool triangular,
                             unsigned* changed) {
  const std::uint64_t j = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= n) return;  // no barriers here
  for (std::uint64_t i = blockIdx.y; i < n; i += gridDim.y) {
    const std::uint64_t at = i * n + j;
    unsigned char v = old ? old[at] : 0;
    if (!v) {
      const std::uint64_t kb = triangular ? i + 1 : 0, ke = triangular ? j : n;
      const unsigned char* row = a + i * n;
      for (std::uint64_t k = kb; k < ke; ++k)
        if (row[k] & b[k * n + j]) {
          v = 1;
          break;
        }
      if (v && changed) *changed = 1;
    }
    c[at] = v;
  }
}

}  // namespace tally::gpu::cuda::kernels
