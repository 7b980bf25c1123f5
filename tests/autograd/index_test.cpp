#include "check.h"

namespace gradflow {
namespace {
using namespace testing;
using Vars = std::vector<Variable>;

TEST(Index, EmbeddingValueAndRepeatedIndicesAccumulate) {
  Variable w(from_vector({0, 1, 10, 11, 20, 21}, {3, 2}), true);
  Tensor ids = from_indices({2, 0, 2, 2}, {2, 2});
  Variable e = embedding(w, ids);
  EXPECT_EQ(e.shape(), (Shape{2, 2, 2}));
  expect_near_vec(e.data(), {20, 21, 0, 1, 20, 21, 20, 21});
  sum(e).backward();
  expect_near_vec(w.grad(), {1, 1, 0, 0, 3, 3});  // row 2 used three times
}

TEST(Index, Gradchecks) {
  Tensor idx = from_indices({1, 1, 0, 3}, {4});
  for (Tensor input : {dense({4, 3}), transposed({4, 3})}) {
    EXPECT_GRADCHECK([&](const Vars& v) { return index_select(v[0], 0, idx); }, {input});
    EXPECT_GRADCHECK([&](const Vars& v) { return embedding(v[0], idx.reshape({2, 2})); }, {input});
  }
  Tensor cols = from_indices({2, 2, 0}, {3});
  EXPECT_GRADCHECK([&](const Vars& v) { return index_select(v[0], 1, cols); }, {strided({4, 3})});
  Tensor g = from_indices({0, 2, 1, 1, 0, 0}, {3, 2});
  EXPECT_GRADCHECK([&](const Vars& v) { return gather(v[0], 1, g); }, {dense({3, 4})});
  EXPECT_GRADCHECK([&](const Vars& v) { return gather(v[0], 1, g); }, {transposed({3, 4})});
}

TEST(Index, OutOfRangeThrows) {
  Variable w(zeros({3, 2}));
  EXPECT_THROW(embedding(w, from_indices({3}, {1})), Error);
  EXPECT_THROW(embedding(w, from_indices({-1}, {1})), Error);
  EXPECT_THROW(embedding(w, zeros({2})), Error);  // float ids
}

}  // namespace
}  // namespace gradflow
