// Resampling's gathers: several columns by the same ancestors at once (one launch on the device) against the
// definition out_{k,i} = x_{k, a_i} and against one column at a time, on the host and on the device.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <span>
#include <vector>

#include "gpu/device.hpp"
#include "tally/error.hpp"
#include "tally/gpu/population_ops.hpp"

namespace test_gather {

using namespace tally;
using gpu::Backend;
using gpu::Column;

namespace {

template <class T>
void check_gather(Backend where, std::mt19937_64& gen, std::size_t P, std::size_t k_columns) {
  std::vector<std::vector<T>> host(k_columns, std::vector<T>(P));
  for (auto& c : host)
    for (auto& v : c) v = static_cast<T>(static_cast<std::int64_t>(gen() % 2'000'001) - 1'000'000) / T(3);
  std::vector<std::size_t> a(P);
  for (auto& x : a) x = gen() % P;
  std::vector<Column<T>> columns;
  for (const auto& c : host) columns.push_back(Column<T>::from_host(c, where));
  std::vector<const Column<T>*> pointers;
  for (const auto& c : columns) pointers.push_back(&c);
  const auto ancestors = Column<std::size_t>::from_host(a, where);
  const auto all = gpu::gather(std::span<const Column<T>* const>(pointers), ancestors);
  REQUIRE(all.size() == k_columns);
  for (std::size_t k = 0; k < k_columns; ++k) {
    INFO("column " << k);
    const auto got = all[k].to_host(), alone = gpu::gather(columns[k], ancestors).to_host();
    REQUIRE(got.size() == P);
    CHECK(got == alone);
    for (std::size_t i = 0; i < P; ++i)
      if (got[i] != host[k][a[i]]) FAIL("particle " << i << ": " << got[i] << " != " << host[k][a[i]]);
  }
}

/// The places to test: the host, and the device where there is one (else a warning).
std::vector<Backend> test_places() {
  std::vector<Backend> places{Backend::cpu};
  if (gpu::cuda_available()) places.push_back(Backend::cuda);
  else WARN("device half skipped: " << gpu::device_description());
  return places;
}

/// A fresh seed each run (the tests print it with a failure).
std::uint64_t fresh_seed() {
  std::random_device fresh;
  return (std::uint64_t{fresh()} << 32) | fresh();
}

}  // namespace

TEST_CASE("gather: several columns by one set of ancestors are each gathered alone", "[gpu][gather]") {
  std::vector<Backend> places{Backend::cpu};
  if (gpu::cuda_available()) places.push_back(Backend::cuda);
  else WARN("device half skipped: " << gpu::device_description());
  std::mt19937_64 gen(5);
  for (const Backend where : places)
    for (const std::size_t P : {std::size_t{1}, std::size_t{1000}, std::size_t{70'000}})
      for (const std::size_t k : {std::size_t{0}, std::size_t{1}, std::size_t{13}, std::size_t{33}}) {
        INFO((where == Backend::cpu ? "cpu" : "cuda") << ", P = " << P << ", " << k << " columns");
        check_gather<std::int64_t>(where, gen, P, k);
        check_gather<double>(where, gen, P, k);
      }
  // columns and ancestors in different memories are refused
  if (places.size() > 1) {
    const auto host = Column<double>::from_host({1.0, 2.0}, Backend::cpu);
    const Column<double>* one[] = {&host};
    CHECK_THROWS_AS(gpu::gather(std::span<const Column<double>* const>(one),
                                Column<std::size_t>::from_host({1, 0}, Backend::cuda)),
                    shape_error);
  }
}

TEST_CASE("copies: several columns copied at once are each one's clone", "[gpu][gather]") {
  std::vector<Backend> places{Backend::cpu};
  if (gpu::cuda_available()) places.push_back(Backend::cuda);
  std::mt19937_64 gen(6);
  for (const Backend where : places)
    for (const std::size_t P : {std::size_t{1}, std::size_t{70'000}}) {
      INFO((where == Backend::cpu ? "cpu" : "cuda") << ", P = " << P);
      std::vector<std::vector<double>> host(40, std::vector<double>(P));  // more than one launch's 32 columns
      for (auto& c : host)
        for (auto& v : c) v = static_cast<double>(gen() % 1000) / 7.0;
      std::vector<Column<double>> columns;
      for (const auto& c : host) columns.push_back(Column<double>::from_host(c, where));
      std::vector<const Column<double>*> pointers;
      for (const auto& c : columns) pointers.push_back(&c);
      const auto copied = gpu::copies(pointers);
      REQUIRE(copied.size() == host.size());
      for (std::size_t k = 0; k < host.size(); ++k) {
        CHECK(copied[k].where() == where);
        CHECK(copied[k].data() != columns[k].data());
        CHECK(copied[k].to_host() == host[k]);
      }
    }
  const auto a = Column<double>::from_host({1.0, 2.0}, Backend::cpu), b = Column<double>::from_host({1.0}, Backend::cpu);
  const Column<double>* mismatched[] = {&a, &b};
  CHECK_THROWS_AS(gpu::copies(mismatched), shape_error);
}

TEST_CASE("index_ranges and shifted_slice: a sharded resampling's index columns, on the host and the device",
          "[gpu][gather]") {
  const std::vector<Backend> places = test_places();
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 gen(seed);
  for (int trial = 0; trial < 20; ++trial) {
    // up to 9 ranges, some empty, some long
    std::vector<gpu::detail::IndexRange> ranges(gen() % 10);
    std::vector<std::size_t> expected;
    for (auto& r : ranges) {
      r.first = gen() % 1'000'000;
      r.count = gen() % 4 == 0 ? 0 : gen() % (trial % 2 == 0 ? 50 : 40'000);
      for (std::size_t k = 0; k < r.count; ++k) expected.push_back(r.first + k);
    }
    // a nondecreasing column (systematic ancestors), a piece of it shifted by its first entry
    std::vector<std::size_t> sorted(1 + gen() % 50'000);
    for (std::size_t i = 0, v = gen() % 100; i < sorted.size(); ++i) sorted[i] = v += gen() % 3 == 0;
    const std::size_t first = gen() % sorted.size(), count = gen() % (sorted.size() - first + 1);
    std::vector<std::size_t> piece;
    for (std::size_t i = 0; i < count; ++i) piece.push_back(sorted[first + i] - sorted[first]);
    for (const Backend where : places) {
      INFO((where == Backend::cpu ? "cpu" : "cuda") << ", trial " << trial);
      const auto got = gpu::detail::index_ranges(ranges, where);
      CHECK(got.where() == where);
      CHECK(got.to_host() == expected);
      const auto column = Column<std::size_t>::from_host(sorted, where);
      CHECK(gpu::detail::shifted_slice(column, first, count, sorted[first]).to_host() == piece);
      CHECK_THROWS_AS(gpu::detail::shifted_slice(column, first, sorted.size() - first + 1, 0), shape_error);
    }
  }
  // the host refuses an entry below the shift (its result would wrap)
  const auto small = Column<std::size_t>::from_host({5, 3, 7}, Backend::cpu);
  CHECK_THROWS_AS(gpu::detail::shifted_slice(small, 0, 3, 4), domain_error);
  CHECK(gpu::detail::shifted_slice(small, 2, 1, 4).to_host() == std::vector<std::size_t>{3});
}

TEST_CASE("law_lengths and laws_of_lengths: laws laid out from their lengths, on the host and the device",
          "[gpu][gather]") {
  const std::vector<Backend> places = test_places();
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 gen(seed);
  for (const std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{3000}}) {
    gpu::PmfBatch batch;
    std::vector<std::int64_t> lengths;
    for (std::size_t i = 0; i < count; ++i) {
      std::vector<double> w(1 + gen() % 40);
      for (auto& v : w) v = 1.0 + static_cast<double>(gen() % 100);
      batch.push_back(w, static_cast<std::int64_t>(gen() % 50));
      lengths.push_back(static_cast<std::int64_t>(w.size()));
    }
    std::int64_t total = 0;
    for (const auto l : lengths) total += l;
    for (const Backend where : places) {
      INFO((where == Backend::cpu ? "cpu" : "cuda") << ", " << count << " laws");
      const gpu::Laws laws = gpu::Laws::from_host(batch, where);
      const auto got = gpu::detail::law_lengths(laws);
      CHECK(got.to_host() == lengths);
      const gpu::Laws room = gpu::detail::laws_of_lengths(got, static_cast<std::size_t>(total), 40, "test");
      CHECK(room.size() == count);
      CHECK(room.max_length() == 40);
      const std::vector<std::int64_t> offset = where == Backend::cpu ? room.host().offset : room.to_host().offset;
      CHECK(offset == batch.offset);
    }
  }
  const auto short_lengths = Column<std::int64_t>::from_host({2, 3}, Backend::cpu);
  CHECK_THROWS_AS(gpu::detail::laws_of_lengths(short_lengths, 6, 3, "test"), shape_error);
}

TEST_CASE("gather_two and kept_first_placement: a shard's kept and received particles placed in one gather",
          "[gpu][gather]") {
  const std::vector<Backend> places = test_places();
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 gen(seed);
  for (int trial = 0; trial < 12; ++trial) {
    // the population's nondecreasing ancestors and one shard's part of it
    const std::size_t total = 2 + gen() % 20'000, first = gen() % (total - 1), count = 1 + gen() % (total - first - 1);
    std::vector<std::size_t> whole(total);
    for (std::size_t i = 0, v = gen() % 5; i < total; ++i) whole[i] = std::min(total - 1, v += gen() % 3 == 0 ? 1 : 0);
    std::sort(whole.begin(), whole.end());
    const std::size_t lo = whole[first], hi = whole[first + count - 1];
    // the shard's own particles (values and laws), and those it receives: lo .. first - 1, then
    // max(first + count, lo) .. hi
    std::vector<std::int64_t> own(count), received;
    gpu::PmfBatch own_laws, received_laws;
    auto law = [&](std::size_t particle, gpu::PmfBatch& into) {
      std::vector<double> w(1 + particle % 7, 1.0);
      w[0] = 0.5;
      into.push_back(w, static_cast<std::int64_t>(particle));
    };
    for (std::size_t i = 0; i < count; ++i) own[i] = static_cast<std::int64_t>(first + i), law(first + i, own_laws);
    for (std::size_t v = lo; v < first; ++v) received.push_back(static_cast<std::int64_t>(v)), law(v, received_laws);
    for (std::size_t v = std::max(first + count, lo); v <= hi; ++v)
      if (v >= first + count) received.push_back(static_cast<std::int64_t>(v)), law(v, received_laws);
    for (const Backend where : places) {
      INFO((where == Backend::cpu ? "cpu" : "cuda") << ", trial " << trial << ": " << total << " particles, shard "
                                                    << first << " + " << count << ", ancestors " << lo << " .. " << hi);
      const auto placement =
          gpu::detail::kept_first_placement(Column<std::size_t>::from_host(whole, where), first, first, count, lo);
      // the same from the shard's own ancestors alone (at = 0)
      const std::vector<std::size_t> own_ancestors(whole.begin() + static_cast<std::ptrdiff_t>(first),
                                                   whole.begin() + static_cast<std::ptrdiff_t>(first + count));
      REQUIRE(gpu::detail::kept_first_placement(Column<std::size_t>::from_host(own_ancestors, where), 0, first, count,
                                                lo).to_host() == placement.to_host());
      const auto values = gpu::detail::gather_two(Column<std::int64_t>::from_host(own, where),
                                                  Column<std::int64_t>::from_host(received, where), placement)
                              .to_host();
      const gpu::Laws laws = gpu::detail::gather_two(gpu::Laws::from_host(own_laws, where),
                                                     gpu::Laws::from_host(received_laws, where), placement);
      const gpu::PmfBatch placed = laws.to_host();
      REQUIRE(values.size() == count);
      REQUIRE(placed.size() == count);
      for (std::size_t i = 0; i < count; ++i) {  // position i holds particle whole[first + i], value and law
        const auto v = static_cast<std::int64_t>(whole[first + i]);
        if (values[i] != v) FAIL("position " << i << ": particle " << values[i] << ", not " << v);
        if (placed.lo[i] != v || placed.length(i) != 1 + whole[first + i] % 7)
          FAIL("position " << i << ": law of " << placed.lo[i] << " with " << placed.length(i) << " weights");
      }
    }
  }
  const auto small = Column<std::int64_t>::from_host({1, 2}, Backend::cpu);
  CHECK_THROWS_AS(gpu::detail::gather_two(small, small, Column<std::size_t>::from_host({4}, Backend::cpu)),
                  shape_error);
  CHECK_THROWS_AS(gpu::detail::kept_first_placement(Column<std::size_t>::from_host({3, 4}, Backend::cpu), 0, 0, 2, 4),
                  domain_error);
}

TEST_CASE("block_indices, repeated laws and add_repeated: values shared by blocks of particles spread over them, on "
          "the host and the device",
          "[gpu][gather]") {
  const std::vector<Backend> places = test_places();
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 gen(seed);
  for (const Backend where : places)
    for (int trial = 0; trial < 8; ++trial) {
      const std::size_t blocks = 1 + gen() % 300, per = 1 + gen() % 70, particles = blocks * per;
      INFO((where == Backend::cpu ? "cpu" : "cuda") << ", " << blocks << " blocks of " << per);
      const auto indices = gpu::block_indices(particles, per, where).to_host();
      REQUIRE(indices.size() == particles);
      for (std::size_t i = 0; i < particles; ++i) REQUIRE(indices[i] == i / per);
      // laws of random lengths, lower bounds and scales
      gpu::PmfBatch batch;
      for (std::size_t k = 0; k < blocks; ++k) {
        std::vector<double> w(1 + gen() % 40);
        for (auto& v : w) v = static_cast<double>(gen() % 1000) / 999.0;
        batch.push_back(w, static_cast<std::int64_t>(gen() % 200) - 100, -static_cast<double>(gen() % 7));
      }
      // law i of spread is law i / per of laws, bit for bit
      const auto require_spread = [&](const gpu::PmfBatch& spread, const gpu::PmfBatch& laws) {
        REQUIRE(spread.size() == particles);
        for (std::size_t i = 0; i < particles; ++i) {
          const std::size_t k = i / per;
          REQUIRE(spread.lo[i] == laws.lo[k]);
          REQUIRE(spread.log_scale[i] == laws.log_scale[k]);
          const auto got = spread[i], want = laws[k];
          REQUIRE(std::vector<double>(got.begin(), got.end()) == std::vector<double>(want.begin(), want.end()));
        }
      };
      require_spread(gpu::repeated(gpu::Laws::from_host(batch, where), per).to_host(), batch);
      // laws that use less than their room (a conditioning's posteriors: shorter than their priors), spread alike
      {
        gpu::PmfBatch counts = batch;  // (counts: lower bounds >= 0)
        std::vector<std::int64_t> observed(blocks);
        for (std::size_t k = 0; k < blocks; ++k) {
          counts.lo[k] = std::abs(batch.lo[k]);
          observed[k] = counts.lo[k] + static_cast<std::int64_t>(gen() % 3);
        }
        const auto laws = gpu::Laws::from_host(counts, where);
        auto ll = Column<double>::from_host(std::vector<double>(blocks, 0.0), where);
        const gpu::Laws posterior =
            gpu::condition_on_thinning(laws, Column<std::int64_t>::from_host(observed, where), 0.5, ll);
        require_spread(gpu::repeated(posterior, per).to_host(), posterior.to_host());
      }
      // acc_i += x_{i / per}
      std::vector<double> acc(particles), x(blocks);
      for (auto& v : acc) v = static_cast<double>(gen() % 10'000) / 13.0;
      for (auto& v : x) v = -static_cast<double>(gen() % 10'000) / 7.0;
      auto column = Column<double>::from_host(acc, where);
      gpu::add_repeated(column, Column<double>::from_host(x, where), per);
      const auto got = column.to_host();
      for (std::size_t i = 0; i < particles; ++i) REQUIRE(got[i] == acc[i] + x[i / per]);
      CHECK_THROWS_AS(gpu::add_repeated(column, Column<double>::from_host(x, where), per + 1), shape_error);
    }
  CHECK_THROWS_AS(gpu::block_indices(4, 0, Backend::cpu), shape_error);
}

TEST_CASE("foreign_requests: a shard's distinct ancestors held by others, counted by shard, and its placement",
          "[gpu][gather]") {
  const std::vector<Backend> places = test_places();
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 gen(seed);
  for (int trial = 0; trial < 16; ++trial) {
    // G shards of a population; one shard's nondecreasing ancestors, runs of repeats and gaps among them
    const std::size_t shards = 1 + gen() % 5, total = shards + gen() % 30'000, me = gen() % shards;
    std::vector<std::size_t> bounds{0};
    for (std::size_t q = 1; q < shards; ++q) bounds.push_back(bounds.back() + 1 + gen() % (total / shards));
    bounds.push_back(total);
    const std::size_t count = bounds[me + 1] - bounds[me];
    std::vector<std::size_t> x(count);
    const std::size_t jumps = 1 + gen() % 40;  // (0: repeats, else a gap of up to `jumps` particles)
    for (std::size_t i = 0, v = gen() % total; i < count; ++i) x[i] = v = std::min(total - 1, v + gen() % (jumps + 1) / 2);
    std::sort(x.begin(), x.end());
    // by definition: the distinct entries outside [bounds[me], bounds[me + 1]), per holder, and each entry's place
    std::vector<std::size_t> want_requests, want_per_shard(shards, 0), want_placement(count);
    for (std::size_t i = 0; i < count; ++i) {
      const bool own = x[i] >= bounds[me] && x[i] < bounds[me + 1];
      if (!own && (want_requests.empty() || want_requests.back() != x[i])) {
        want_requests.push_back(x[i]);
        std::size_t q = 0;
        while (x[i] >= bounds[q + 1]) ++q;
        ++want_per_shard[q];
      }
      want_placement[i] = own ? x[i] - bounds[me] : count + want_requests.size() - 1;
    }
    for (const Backend where : places) {
      INFO((where == Backend::cpu ? "cpu" : "cuda") << ", trial " << trial << ": shard " << me << " of " << shards
                                                    << ", " << count << " of " << total << " particles");
      const auto got = gpu::detail::foreign_requests(Column<std::size_t>::from_host(x, where), bounds, me);
      REQUIRE(got.requests.to_host() == want_requests);
      REQUIRE(got.per_shard == want_per_shard);
      REQUIRE(got.placement.to_host() == want_placement);
    }
  }
  const std::size_t bounds[] = {0, 2, 4};
  CHECK_THROWS_AS(gpu::detail::foreign_requests(Column<std::size_t>::from_host({3, 2}, Backend::cpu), bounds, 0),
                  domain_error);
  CHECK_THROWS_AS(gpu::detail::foreign_requests(Column<std::size_t>::from_host({0, 1}, Backend::cpu), bounds, 2),
                  shape_error);
}

}  // namespace test_gather
