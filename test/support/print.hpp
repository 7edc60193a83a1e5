// How Boost.Test prints ringrt's value types in failure messages (its boost_test_print_type
// customization point, found by argument-dependent lookup). DType and Ops print through their own
// operator<< (core/dtype.hpp, rewrite/ops.hpp). Header only.
#pragma once

#include <ostream>
#include <string>

#include "rewrite/uop.hpp"

namespace ringrt {

inline std::ostream& boost_test_print_type(std::ostream& os, const UOp& u) {
  return os << (u.valid() ? u.to_string() : std::string("<invalid UOp>"));
}

}  // namespace ringrt
