// Hyperparameter checks shared by the optimizers' constructors (optim.cpp, adam.cpp).
#pragma once

#include <cmath>
#include <string_view>

#include "tensor/error.h"

namespace gradflow::nn {

// Throws unless v is finite and >= 0; `what` names the hyperparameter.
inline void check_non_negative(std::string_view op, std::string_view what, double v) {
  if (!(v >= 0) || !std::isfinite(v)) fail(op, ": ", what, " must be finite and >= 0, got ", v);
}

inline void check_beta(std::string_view op, std::string_view what, double v) {
  if (!(v >= 0 && v < 1)) fail(op, ": ", what, " must be in [0, 1), got ", v);
}

}  // namespace gradflow::nn
