#include "nn/embedding.h"

#include "autograd/ops.h"

#include "nn/layer_checks.h"
#include "tensor/creation.h"

namespace gradflow::nn {

Embedding::Embedding(int64_t num, int64_t dim, Init init) : num_(num), dim_(dim) {
  check_positive("Embedding", num, "num_embeddings");
  check_positive("Embedding", dim, "embedding_dim");
  weight = register_parameter("weight", randn({num, dim}, init.generator(), init.dtype));
}

Variable Embedding::forward(const Tensor& ids) const {
  const GraphScope scope = graph_scope();
  return embedding(weight, ids);
}

std::string Embedding::describe() const {
  return "Embedding(" + std::to_string(num_) + ", " + std::to_string(dim_) + ")";
}

}  // namespace gradflow::nn
