// Private: a visitor made of lambdas, one per alternative of a std::variant (std::visit(overloaded{...}, v)).
#pragma once

namespace tally::runtime::detail {

/// The call operators of every F, as one overload set.
template <class... F>
struct overloaded : F... {
  using F::operator()...;
};
template <class... F>
overloaded(F...) -> overloaded<F...>;

}  // namespace tally::runtime::detail
