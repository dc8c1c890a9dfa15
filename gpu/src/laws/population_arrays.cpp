// Laws in host or device memory: made from a host batch, allocated, copied back, viewed by the kernels.
#include "tally/gpu/population_arrays.hpp"

#include <algorithm>
#include <utility>

namespace tally::gpu {

Laws Laws::from_host(PmfBatch batch, Backend where) {
  check(batch, "tally::gpu::Laws::from_host");
  Laws out;
  out.where_ = where;
  out.count_ = batch.size();
  out.total_ = batch.weights.size();
  out.max_length_ = batch.max_length();
  if (where == Backend::cpu) {
    out.host_ = std::move(batch);
    return out;
  }
  out.weights_ = Column<double>::from_host(batch.weights, where);
  out.offset_ = Column<std::int64_t>::from_host(batch.offset, where);
  out.lo_ = Column<std::int64_t>::from_host(batch.lo, where);
  out.log_scale_ = Column<double>::from_host(batch.log_scale, where);
  return out;
}

Laws Laws::allocate(Backend where, std::size_t count, std::size_t total, std::size_t max_length, const char* who) {
  Laws out;
  out.where_ = where;
  out.count_ = count;
  out.total_ = total;
  out.max_length_ = max_length;
  if (where == Backend::cpu) {
    out.host_.weights.assign(total, 0.0);
    out.host_.offset.assign(count + 1, 0);
    out.host_.lo.assign(count, 0);
    out.host_.log_scale.assign(count, 0.0);
    return out;
  }
  out.weights_ = Column<double>::allocate(where, std::max<std::size_t>(total, 1), who);
  out.offset_ = Column<std::int64_t>::allocate(where, count + 1, who);
  out.lo_ = Column<std::int64_t>::allocate(where, count, who);
  out.log_scale_ = Column<double>::allocate(where, count, who);
  return out;
}

PmfBatch Laws::to_host() const {
  if (where_ == Backend::cpu) return host_;
  PmfBatch out;
  out.offset = offset_.to_host();
  // only the weights in use: after a conditioning the laws may be shorter than the room allocated (total_ is an
  // upper bound), and the rest of it was never written
  const auto used = static_cast<std::size_t>(out.offset.empty() ? 0 : out.offset.back());
  out.weights.resize(used);
  if (used > 0) detail::device_copy(out.weights.data(), weights_.data(), used * sizeof(double), 1);
  out.lo = lo_.to_host();
  out.log_scale = log_scale_.to_host();
  return out;
}

PmfBatchView Laws::view() const {
  return {weights_.data(), offset_.data(), lo_.data(), log_scale_.data(), count_};
}

MutablePmfBatchView Laws::mutable_view() {
  return {weights_.data(), offset_.data(), lo_.data(), log_scale_.data(), count_};
}

}  // namespace tally::gpu
