#include "nn/positional.h"

#include <cmath>

#include "autograd/ops.h"
#include "nn/layer_checks.h"
#include "tensor/creation.h"

namespace gradflow::nn {

SinusoidalPositionalEncoding::SinusoidalPositionalEncoding(int64_t max_len, int64_t dim,
                                                           Init init) {
  check_positive("SinusoidalPositionalEncoding", max_len, "max_len");
  check_positive("SinusoidalPositionalEncoding", dim, "dim");
  table_ = Tensor::empty({max_len, dim}, DType::Float64);
  double* p = table_.data<double>();
  for (int64_t pos = 0; pos < max_len; ++pos)
    for (int64_t i = 0; i < dim; ++i) {
      // PE(pos, 2j) = sin(pos / 10000^(2j/dim)), PE(pos, 2j+1) = cos(same angle).
      double angle =
          static_cast<double>(pos) / std::pow(10000.0, static_cast<double>(i - i % 2) / dim);
      p[pos * dim + i] = i % 2 == 0 ? std::sin(angle) : std::cos(angle);
    }
  table_ = table_.to(init.dtype);
}

namespace {
Variable add_positions(const Variable& x, const Variable& table, int64_t start, const char* op) {
  if (x.ndim() != 3) fail(op, ": expected (B, T, C), got ", shape_str(x.shape()));
  int64_t t = x.shape()[1];
  if (start < 0 || start + t > table.shape()[0] || x.shape()[2] != table.shape()[1])
    fail(op, ": positions [", start, ", ", start + t, ") of ", shape_str(x.shape()),
         " exceed the table ", shape_str(table.shape()));
  return x + narrow(table, 0, start, t);
}
}  // namespace

Variable SinusoidalPositionalEncoding::forward(const Variable& x, int64_t start) const {
  const GraphScope scope = graph_scope();
  return add_positions(x, Variable(table_), start, "SinusoidalPositionalEncoding");
}

std::string SinusoidalPositionalEncoding::describe() const {
  return "SinusoidalPositionalEncoding(" + shape_str(table_.shape()) + ")";
}

LearnedPositionalEmbedding::LearnedPositionalEmbedding(int64_t max_len, int64_t dim, Init init) {
  check_positive("LearnedPositionalEmbedding", max_len, "max_len");
  check_positive("LearnedPositionalEmbedding", dim, "dim");
  weight = register_parameter("weight", randn({max_len, dim}, init.generator(), init.dtype));
}

Variable LearnedPositionalEmbedding::forward(const Variable& x, int64_t start) const {
  const GraphScope scope = graph_scope();
  return add_positions(x, weight, start, "LearnedPositionalEmbedding");
}

std::string LearnedPositionalEmbedding::describe() const {
  return "LearnedPositionalEmbedding(" + shape_str(weight.shape()) + ")";
}

}  // namespace gradflow::nn
