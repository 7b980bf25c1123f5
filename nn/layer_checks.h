// Argument checks shared by the layers' constructors and forwards.
#pragma once

#include "autograd/variable.h"

namespace gradflow::nn {

inline void check_positive(const char* op, int64_t value, const char* what) {
  if (value <= 0) fail(op, ": ", what, " must be positive, got ", value);
}

inline void check_last_axis(const char* op, const Variable& x, int64_t dim) {
  if (x.ndim() == 0 || x.shape().back() != dim)
    fail(op, ": expected input (..., ", dim, "), got ", shape_str(x.shape()));
}

}  // namespace gradflow::nn
