// Private: the boolean product on Hopper's 1-bit tensor cores (mma.sync m16n8k256 AND + popcount).
#pragma once

#include <cstdint>

#include "closure_kernels.cuh"

namespace tally::gpu::cuda::kernels {

// ---- tuning knobs of the tensor-core product ---------------------------------------------------------------------
constexpr int tensor_threads = 256;       // 8 warps: 4 along the rows x 2 along the columns of the tile
constexpr int tensor_tile = 128;          // rows and columns of C per block
constexpr int tensor_warp_rows = 32;      // a warp's sub-tile: 32 rows (2 MMA row tiles of 16)
constexpr int tensor_warp_cols = 64;      //                    x 64 columns (8 MMA column tiles of 8) = one word
constexpr int tensor_stage_words = 16;    // 1024 values of k per shared-memory stage: 128 bytes per tile row
constexpr int tensor_chunks = tensor_stage_words / 2;  // 16-byte chunks per tile row and stage
constexpr int tensor_stages = 3;                        // copies of 2 stages in flight while one is multiplied
constexpr int tensor_blocks_per_sm = 1;  // 214 registers a thread (64 counts, 24 fragments): 2 blocks would spill
/// Bytes of dynamic shared memory: A's and B^T's tiles, 128 rows x 128 bytes each per stage.
constexpr int tensor_shared_bytes = tensor_stages * 2 * tensor_tile * tensor_stage_words * 8;
static_assert((tensor_threads / 32) * tensor_warp_rows * tensor_warp_cols == tensor_tile * tensor_tile);
static_assert(tensor_chunks == 8, "the swizzle below permutes 8 chunks of a row");

/// Shared-memory address of 16-byte chunk `chunk` of row `row` of a 128-row stage tile: chunks are swizzled by
/// chunk ^ (row % 8), so that the 8 rows an ldmatrix reads at one logical chunk lie in 8 different bank groups.
__device__ inline unsigned tensor_chunk_address(unsigned tile_base, int row, int chunk) {
  return tile_base + static_cast<unsigned>(row * tensor_stage_words * 8 + ((chunk ^ (row % 8)) * 16));
}

/// Waits until at most `pending` groups of cp.async are in flight.
template <int pending>
__device__ inline void wait_copies_but() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
}

/// cp.async of 16 bytes (zero fill when !valid: src is then not read) and of 8 bytes.
__device__ inline void copy_async16(unsigned to, const std::uint64_t* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(src), "r"(valid ? 16u : 0u)
               : "memory");
}
__device__ inline void copy_async8(unsigned to, const std::uint64_t* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(to), "l"(src), "r"(valid ? 8u : 0u) : "memory");
}

/// Four 8 x 16-byte matrices from shared memory; lane 8 q + r gives the address of row r of matrix q, and register
/// q of lane 4 g + t receives bytes 4 t .. 4 t + 3 of row g of matrix q.
__device__ inline void load_matrices(unsigned address, unsigned (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

/// d += popc(A AND B) for a 16 x 256 bit A (row-major) and a 256 x 8 bit B (column-major): lane 4 g + t holds A's
/// rows g (a0, a2) and g + 8 (a1, a3) at k = 32 t .. 32 t + 31 (a0, a1) and 128 + 32 t .. (a2, a3); B's column g at
/// the same k (b0, b1); and d for rows g (d0, d1) and g + 8 (d2, d3), columns 2 t and 2 t + 1.
__device__ inline void mma_and_popc(int (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// The tensor-core product, the contract of packed_product (ProductArgs: C = A * B, optionally ORed with `old`,
/// `changed` set where C differs from `old`, k in (i, j) only for a triangular product). Block (x, y) computes
/// columns 128 x .. 128 x + 127 and rows 128 y .. 128 y + 127 of C; warp w its rows 32 (w % 4) .. + 31 and its
/// columns 64 (w / 4) .. + 63 (one output word per row), as 2 x 8 MMA tiles of 16 x 8 counts. The contraction
/// axis streams through shared memory 1024 values at a time (cp.async, tensor_stages buffers). A cell is true when its
/// AND-popcount is non-zero. Early exit: a block whose cells are all set in `old` skips the products; the k loop
/// ends once every count of the block is non-zero (a barrier vote after each stage).
/// `Aligned`: words is even, so that rows start on 16-byte boundaries (else 8-byte copies).
template <bool Aligned>
__global__ void __launch_bounds__(tensor_threads, tensor_blocks_per_sm) tensor_product(ProductArgs p) {
  extern __shared__ __align__(128) unsigned char shared[];
  const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4, t = lane % 4;
  const std::uint64_t j0 = static_cast<std::uint64_t>(blockIdx.x) * tensor_tile;
  const std::uint64_t i0 = static_cast<std::uint64_t>(blockIdx.y) * tensor_tile;
  const int warp_row = (warp % 4) * tensor_warp_rows, warp_col = (warp / 4) * tensor_warp_cols;
  const std::uint64_t out_word = (j0 + static_cast<std::uint64_t>(warp_col)) / 64;

  // the old words of the thread's 4 rows (m-tile mt, half h: row warp_row + 16 mt + 8 h + g); cells that are set,
  // outside the matrix, or on or below the diagonal of a triangular product count as done
  std::uint64_t old_word[2][2], done_word[2][2];
  bool all_done = true;
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const std::uint64_t i = i0 + static_cast<std::uint64_t>(warp_row + 16 * mt + 8 * h + g);
      std::uint64_t old = 0, outside = ~std::uint64_t{0};
      if (i < p.n && out_word < p.words) {
        if (p.old) old = p.old[i * p.words + out_word];
        const std::uint64_t first = 64 * out_word;  // columns first .. first + 63
        const std::uint64_t valid = p.n - first >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << (p.n - first)) - 1;
        outside = ~valid;
        if (p.triangular) {  // cells j <= i stay zero
          if (i >= first + 63) outside = ~std::uint64_t{0};
          else if (i >= first) outside |= (std::uint64_t{2} << (i - first)) - 1;
        }
      }
      old_word[mt][h] = old;
      done_word[mt][h] = old | outside;
      // only the thread's own 16 columns of the word: 2 t, 2 t + 1 of each of the 8 column tiles
      all_done = all_done && (done_word[mt][h] | ~(0x0303030303030303ull << (2 * t))) == ~std::uint64_t{0};
    }

  std::uint64_t kb = 0, ke = p.words;
  if (p.triangular) {  // k in (i, j) for i >= i0, j < j0 + 128: words i0 / 64 .. (j0 + 128) / 64
    kb = i0 / 64;
    ke = min(p.words, (j0 + tensor_tile) / 64);
  }
  const int stages = ke > kb ? static_cast<int>((ke - kb + tensor_stage_words - 1) / tensor_stage_words) : 0;

  int acc[2][8][4];
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][nt][e] = 0;

  // stage s into buffer s % tensor_stages: each of A's and B^T's 128 tile rows is 8 chunks of 16 bytes, 4 chunks
  // per thread and operand; 8 consecutive threads copy one row's 128 consecutive bytes
  auto issue = [&](int s) {
    const unsigned a_tile =
        base + static_cast<unsigned>((s % tensor_stages) * 2 * tensor_tile * tensor_stage_words * 8);
    const unsigned b_tile = a_tile + static_cast<unsigned>(tensor_tile * tensor_stage_words * 8);
    const std::uint64_t k0 = kb + static_cast<std::uint64_t>(s) * tensor_stage_words;
#pragma unroll
    for (int q = 0; q < tensor_tile * tensor_chunks / tensor_threads; ++q) {
      const int idx = static_cast<int>(threadIdx.x) + q * tensor_threads, row = idx / tensor_chunks,
                chunk = idx % tensor_chunks;
      const std::uint64_t k = k0 + 2 * static_cast<std::uint64_t>(chunk), i = i0 + row, j = j0 + row;
      const unsigned to_a = tensor_chunk_address(a_tile, row, chunk), to_b = tensor_chunk_address(b_tile, row, chunk);
      if constexpr (Aligned) {  // ke and k are even: a chunk is all in or all out
        copy_async16(to_a, i < p.n && k < ke ? p.a + i * p.words + k : p.a, i < p.n && k < ke);
        copy_async16(to_b, j < p.n && k < ke ? p.bt + j * p.words + k : p.bt, j < p.n && k < ke);
      } else {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const bool in_a = i < p.n && k + half < ke, in_b = j < p.n && k + half < ke;
          copy_async8(to_a + 8 * half, in_a ? p.a + i * p.words + k + half : p.a, in_a);
          copy_async8(to_b + 8 * half, in_b ? p.bt + j * p.words + k + half : p.bt, in_b);
        }
      }
    }
  };

  if (!__syncthreads_and(all_done) && stages > 0) {
    // one commit group per stage, empty ones past the last: before stage s is read, the groups of stages
    // s + 1 .. s + tensor_stages - 2 may still be in flight
    for (int s = 0; s < tensor_stages - 1; ++s) {
      if (s < stages) issue(s);
      commit_copies();
    }
    for (int s = 0; s < stages; ++s) {
      // buffer (s + tensor_stages - 1) % tensor_stages held stage s - 1, whose reads ended at the last barrier
      if (s + tensor_stages - 1 < stages) issue(s + tensor_stages - 1);
      commit_copies();
      wait_copies_but<tensor_stages - 1>();
      __syncthreads();
      const unsigned a_tile =
          base + static_cast<unsigned>((s % tensor_stages) * 2 * tensor_tile * tensor_stage_words * 8);
      const unsigned b_tile = a_tile + static_cast<unsigned>(tensor_tile * tensor_stage_words * 8);
#pragma unroll
      for (int step = 0; step < tensor_chunks / 2; ++step) {  // 256 values of k: chunks 2 step and 2 step + 1
        // A: matrix q = lane / 8 is rows (q % 2) * 8 .. + 7 of the m-tile at chunk 2 step + q / 2
        unsigned a[2][4];
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
          load_matrices(tensor_chunk_address(a_tile, warp_row + 16 * mt + (lane / 8 % 2) * 8 + lane % 8,
                                             2 * step + lane / 16),
                        a[mt]);
        // B^T: matrix q is column tile 2 pair + q / 2 at chunk 2 step + q % 2: registers b0, b1 of two tiles
#pragma unroll
        for (int pair = 0; pair < 4; ++pair) {
          unsigned b[4];
          load_matrices(tensor_chunk_address(b_tile, warp_col + 16 * pair + (lane / 16) * 8 + lane % 8,
                                             2 * step + lane / 8 % 2),
                        b);
#pragma unroll
          for (int mt = 0; mt < 2; ++mt) {
            mma_and_popc(acc[mt][2 * pair], a[mt], b[0], b[1]);
            mma_and_popc(acc[mt][2 * pair + 1], a[mt], b[2], b[3]);
          }
        }
      }
      // done when every count of the thread is non-zero or its cell was done from the start
      bool mine = true;
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int bit = nt * 8 + 2 * t + e % 2;
            mine = mine && (acc[mt][nt][e] != 0 || ((done_word[mt][e / 2] >> bit) & 1u));
          }
      if (__syncthreads_and(mine)) break;  // also: every read of buffer s % tensor_stages is over
    }
    wait_copies();
  }

  // pack: the thread's bits of each of its 4 rows, ORed over the 4 threads t of the row (lanes 4 g .. 4 g + 3)
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      std::uint64_t word = 0;
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
        if (acc[mt][nt][2 * h] != 0) word |= std::uint64_t{1} << (nt * 8 + 2 * t);
        if (acc[mt][nt][2 * h + 1] != 0) word |= std::uint64_t{1} << (nt * 8 + 2 * t + 1);
      }
      word |= __shfl_xor_sync(full_warp, word, 1);
      word |= __shfl_xor_sync(full_warp, word, 2);
      const std::uint64_t i = i0 + static_cast<std::uint64_t>(warp_row + 16 * mt + 8 * h + g);
      if (t == 0 && i < p.n && out_word < p.words) {
        // bits outside the matrix are zero in A and B^T, so their counts are 0; cells j <= i of a triangular
        // product may count k outside (i, j) when k is read by whole stages: they are cleared
        const std::uint64_t keep = ~(done_word[mt][h] & ~old_word[mt][h]);
        const std::uint64_t before = old_word[mt][h], after = (word & keep) | before;
        p.c[i * p.words + out_word] = after;
        if (p.changed && after != before) *p.changed = 1;
      }
    }
}

}  // namespace tally::gpu::cuda::kernels
