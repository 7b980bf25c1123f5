// The engine's contract: accumulation, leaves and intermediates, hooks,
// no_grad, detach, anomaly mode, and errors that name the op.
#include <cmath>
#include <functional>
#include <map>
#include <string>

#include "check.h"

namespace gradflow {
namespace {
using namespace testing;

Variable scalar_var(double v) { return Variable(scalar_tensor(v, DType::Float64), true); }

// Exercise 1 (forward_order): the list backward walks in reverse, on the
// diamond b = 2a, c = a + b, L = exp(b) + c k (k a constant, a null input),
// judged on what makes a walk work, each failure said in those terms.
TEST(Engine, ForwardOrderPutsEachNodeAfterItsInputs) {
  Variable a = scalar_var(3), k(scalar_tensor(5, DType::Float64));
  Variable b = a * 2.0, c = a + b, e = exp(b), ck = c * k, loss = e + ck;
  const std::map<const VariableImpl*, std::string> name = {
      {a.impl().get(), "a"},         {b.impl().get(), "b = 2a"},
      {c.impl().get(), "c = a + b"}, {e.impl().get(), "exp(b)"},
      {ck.impl().get(), "c k"},      {loss.impl().get(), "L = exp(b) + c k"}};
  const std::vector<VariableImpl*> order = forward_order(loss.impl().get());
  ASSERT_FALSE(order.empty()) << "forward_order returned nothing: list every node from the "
                              << "leaves to root";
  EXPECT_EQ(order.back(), loss.impl().get())
      << "root (L) must come last: backward walks the list in reverse and starts from it";
  std::map<const VariableImpl*, size_t> at;
  for (size_t i = 0; i < order.size(); ++i) {
    ASSERT_TRUE(name.count(order[i])) << "the list holds something that is not a node reachable "
                                      << "from root (an input that needs no gradient is a null "
                                      << "pointer: skip it)";
    EXPECT_FALSE(at.count(order[i])) << name.at(order[i]) << " is listed twice: two paths reach "
                                     << "it, and each node must be listed once";
    at.try_emplace(order[i], i);
  }
  for (const auto& [impl, n] : name) {
    ASSERT_TRUE(at.count(impl)) << n << " is missing: every node reachable from root is listed";
    if (!impl->grad_fn) continue;
    for (const auto& input : impl->grad_fn->inputs) {
      if (!input) continue;
      EXPECT_LT(at[input.get()], at[impl])
          << n << " comes before its input " << name.at(input.get())
          << ": backward walks the list in reverse, so " << name.at(input.get())
          << " would run before " << n << " has sent it its share";
    }
  }
}

// Twelve diamonds in a row: 2^12 paths from the end back to x, 37 nodes. A
// list that follows paths rather than nodes has thousands of entries.
TEST(Engine, ForwardOrderListsEachNodeOnceOnAChainOfDiamonds) {
  Variable x = scalar_var(1);
  Variable y = x;
  size_t nodes = 1;
  for (int i = 0; i < 12; ++i) {
    Variable b = y * 2.0;
    y = (y + b) / 3.0;
    nodes += 3;
  }
  EXPECT_EQ(forward_order(y.impl().get()).size(), nodes)
      << "12 diamonds have " << nodes << " nodes: a node reached along two paths is listed once, "
      << "or the list doubles with each diamond (remember which nodes you have listed)";
}

// A chain, where no value is used twice: backward needs only the order.
TEST(Engine, BackwardWalksAChain) {
  Variable x = scalar_var(0.5);
  Variable y = exp(x * 2.0) + 1.0;  // dy/dx = 2 exp(2x)
  y.backward();
  EXPECT_NEAR(x.grad().item(), 2 * std::exp(1.0), 1e-12)
      << "y = exp(2x) + 1 at x = 0.5: dy/dx = 2 exp(2x) = 5.4366; backward walks your list in "
      << "reverse";
}

// f = x*(x*a) + (x*x)*a + x*(x*a) at x = a = 1: each term is x^2 a, so
// df/dx = 3 * 2 x a = 6. Engines that overwrite instead of accumulate when a
// value is used more than once get 2 or 4.
TEST(Engine, RepeatedUseAccumulates) {
  Variable x = scalar_var(1), a = scalar_var(1);
  Variable f = x * (x * a) + (x * x) * a + x * (x * a);
  f.backward();
  EXPECT_DOUBLE_EQ(x.grad().item(), 6)
      << "x is used six times, each use sending it a share of 1: dL/dx is the sum of the shares. "
      << "Less than 6 means some shares were dropped: add_gradient must add what came before";
  EXPECT_DOUBLE_EQ(a.grad().item(), 3) << "a is used three times, a share of 1 each";
}

TEST(Engine, SelfAddAndSelfMul) {
  Variable x = scalar_var(3);
  (x + x).backward();
  EXPECT_DOUBLE_EQ(x.grad().item(), 2) << "x + x sends x a 1 along each of its two inputs: 2";
  x.zero_grad();
  (x * x).backward();
  EXPECT_DOUBLE_EQ(x.grad().item(), 6)
      << "x * x sends x the other factor, 3, along each input: 3 + 3 = 6";
}

TEST(Engine, DiamondGraph) {
  // b and c both depend on a; d depends on both: gradient flows on both paths.
  Variable x = scalar_var(2);
  Variable a = x * 3.0;
  Variable b = exp(a), c = a * a;
  Variable d = b + c;
  d.backward();
  EXPECT_NEAR(x.grad().item(), 3 * (std::exp(6.0) + 2 * 6), 1e-9)
      << "a feeds b = exp(a) and c = a a: its gradient is the sum of both branches' shares, "
      << "exp(6) + 2 * 6, times da/dx = 3";
}

TEST(Engine, LeafGradientsAccumulateAcrossBackwardsUntilZeroed) {
  Variable x = scalar_var(2);
  (x * x).backward();
  (x * x).backward();
  EXPECT_DOUBLE_EQ(x.grad().item(), 8);
  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
  (x * 5.0).backward();
  EXPECT_DOUBLE_EQ(x.grad().item(), 5);
}

// A leaf's .grad takes the gradient's memory only when nothing else holds
// it; a gradient the caller passed, a hook kept or another .grad holds is
// copied, so adding into .grad later changes nothing else.
TEST(Engine, LeafGradNeverSharesMemoryWithATensorSomeoneHolds) {
  Variable x(dense({3}), true);
  Tensor go = dense({3});
  const std::vector<double> go_before = go.to_vector();
  Variable y = x + 0.0;  // its backward passes the gradient through as it is
  y.retain_grad();
  Variable z = y * 1.0;
  (z + 0.0).backward(go);
  EXPECT_NE(x.grad().storage(), go.storage());
  EXPECT_NE(x.grad().storage(), y.grad().storage());
  Tensor kept = dense({3});
  const std::vector<double> kept_before = kept.to_vector();
  Variable w(dense({3}), true);
  w.register_hook([kept](const Tensor&) { return kept; });
  (w + 0.0).backward(go);
  EXPECT_NE(w.grad().storage(), kept.storage());
  // A second backward adds into each .grad in place: the others stay.
  (x + 0.0).backward(go);
  (w + 0.0).backward(go);
  EXPECT_EQ(go.to_vector(), go_before);
  EXPECT_EQ(kept.to_vector(), kept_before);
  expect_near_vec(w.grad(), (kept * 2.0).to_vector(), 0);
}

TEST(Engine, IntermediatesKeepNoGradUnlessRetained) {
  Variable x = scalar_var(2);
  Variable y = x * x, z = x * 3.0;
  z.retain_grad();
  (y * z).backward();
  EXPECT_FALSE(y.grad().defined());
  EXPECT_DOUBLE_EQ(z.grad().item(), 4);  // d(y z)/dz = y
  EXPECT_FALSE(y.is_leaf());
  EXPECT_EQ(y.grad_fn_name(), "mul");
}

// The graph keeps no activation for its own sake: once no Variable handle
// holds an intermediate, its data goes (only formulas that need a tensor keep
// it), and the gradient still flows through it.
TEST(Engine, AnIntermediatesDataGoesWithItsLastHandle) {
  Variable x(dense({1000}), true);
  std::shared_ptr<VariableImpl> middle;
  Variable z;
  {
    Variable y = x + 1.0;  // add keeps nothing for its backward
    middle = y.impl();
    z = y * 2.0;
    EXPECT_TRUE(middle->data.defined());  // y still holds it
  }
  EXPECT_FALSE(middle->data.defined());
  EXPECT_EQ(middle->shape, Shape{1000});
  sum(z).backward();
  EXPECT_EQ(x.grad().to_vector(), std::vector<double>(1000, 2.0));
  // A leaf keeps its data whoever holds it.
  std::shared_ptr<VariableImpl> leaf = x.impl();
  x = Variable();
  EXPECT_TRUE(leaf->data.defined());
}

TEST(Engine, HooksSeeAndReplaceGradients) {
  Variable x = scalar_var(2);
  Variable y = x * 3.0;
  double seen = 0;
  y.register_hook([&](const Tensor& g) {
    seen = g.item();
    return mul(g, 10.0);
  });
  Variable z = y * y;  // dz/dy = 2 y = 12
  z.backward();
  EXPECT_DOUBLE_EQ(seen, 12);
  EXPECT_DOUBLE_EQ(x.grad().item(), 12 * 10 * 3);
  // A hook that returns an undefined tensor leaves the gradient alone.
  Variable w = scalar_var(1);
  w.register_hook([](const Tensor&) { return Tensor(); });
  (w * 4.0).backward();
  EXPECT_DOUBLE_EQ(w.grad().item(), 4);
}

TEST(Engine, NoGradAndDetachRecordNothing) {
  Variable x = scalar_var(2);
  {
    NoGradGuard guard;
    Variable y = x * x;
    EXPECT_FALSE(y.requires_grad());
  }
  EXPECT_TRUE(grad_enabled());
  Variable d = x.detach();
  EXPECT_FALSE(d.requires_grad());
  Variable y = x * d;  // d is a constant here
  y.backward();
  EXPECT_DOUBLE_EQ(x.grad().item(), 2);
}

TEST(Engine, NonScalarBackwardNeedsGradient) {
  Variable x(dense({2, 3}), true);
  Variable y = x * 2.0;
  try {
    y.backward();
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(2, 3)"), std::string::npos) << e.what();
  }
  y.backward(ones({2, 3}, DType::Float64));
  expect_near_vec(x.grad(), {2, 2, 2, 2, 2, 2});
  EXPECT_THROW(y.backward(ones({3, 2}, DType::Float64)),
               Error);  // freed graph or shape: both throw
}

TEST(Engine, SecondBackwardThroughFreedGraphThrows) {
  Variable x = scalar_var(2);
  Variable y = exp(x);
  y.backward();
  EXPECT_THROW(y.backward(), Error);
  Variable z = exp(x);
  z.backward(Tensor(), /*retain_graph=*/true);
  z.backward();
  EXPECT_NEAR(x.grad().item(), std::exp(2.0) * 3, 1e-9);
}

TEST(Engine, BackwardOnConstantThrows) {
  Variable c(ones({}));
  EXPECT_THROW(c.backward(), Error);
  EXPECT_THROW(Variable(ones({2}, DType::Int64), true), Error);
}

TEST(Engine, AnomalyModeNamesTheOp) {
  AnomalyGuard anomaly;
  Variable x(zeros({2}, DType::Float64), true);
  try {
    sum(sqrt(x)).backward();
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'sqrt'"), std::string::npos) << e.what();
  }
  Variable y(zeros({2}, DType::Float64), true);
  try {
    sum(log(y)).backward();
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'log'"), std::string::npos) << e.what();
  }
}

TEST(Engine, WithoutAnomalyModeNonFiniteGradientsPassThrough) {
  Variable x(zeros({1}, DType::Float64), true);
  sum(sqrt(x)).backward();
  EXPECT_TRUE(std::isinf(x.grad().item()));
}

TEST(Engine, DeepChainDoesNotOverflowTheStack) {
  Variable x = scalar_var(1);
  Variable y = x;
  for (int i = 0; i < 100000; ++i) y = y * 1.0;
  y.backward();
  EXPECT_DOUBLE_EQ(x.grad().item(), 1);
}

TEST(Engine, GradcheckReportsAWrongGradient) {
  // A deliberately wrong backward must be caught by the checker.
  auto wrong = [](const std::vector<Variable>& v) {
    Tensor y = mul(v[0].data(), v[0].data());
    Tensor x = v[0].data();
    return make_result(y, "bad_square", {v[0]}, [x](const Tensor& g) {
      return std::vector<Tensor>{mul(g, x)};
    });  // misses 2
  };
  GradcheckResult r = gradcheck(wrong, {dense({3})});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("bad_square"), std::string::npos) << r.message;
}

// An in-place edit of a value the forward used would give a gradient from
// the new values ([20, 20, 20] here, where the forward's is [2, 4, 6]):
// backward refuses, naming the op, whichever in-place op made the edit.
TEST(Engine, AnInPlaceEditAfterTheForwardIsRefused) {
  const std::vector<std::function<void(Tensor)>> edits = {
      [](Tensor t) { t.fill_(10); },
      [](Tensor t) { t.copy_(full({3}, 10, DType::Float64)); },
      [](Tensor t) { t.set({1}, 10); },
      [](Tensor t) { add_(t, full({3}, 1, DType::Float64)); },
      [](Tensor t) { t.narrow(0, 1, 1).fill_(0); },  // through a view of the same storage
  };
  for (size_t i = 0; i < edits.size(); ++i) {
    SCOPED_TRACE(i);
    Variable w(from_vector({1, 2, 3}, DType::Float64), true);
    Variable loss = sum(w * w);
    edits[i](w.data());
    try {
      loss.backward();
      ADD_FAILURE() << "backward ran on edited values";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("backward of 'mul': input 0 (shape (3)) was modified "
                                           "in place"),
                std::string::npos)
          << e.what();
    }
    EXPECT_FALSE(w.grad().defined());  // nothing was accumulated
  }
}

// Edits before the forward, on a clone, or after the backward are all fine.
TEST(Engine, EditsOutsideAForwardAndItsBackwardAreFine) {
  Variable w(from_vector({1, 2, 3}, DType::Float64), true);
  Tensor data = w.data();  // a handle to the same storage
  data.fill_(2);           // before: the forward sees 2s
  Variable loss = sum(w * w);
  w.data().clone().fill_(5);  // another storage
  loss.backward();
  EXPECT_EQ(w.grad().to_vector(), (std::vector<double>{4, 4, 4}));
  data.fill_(3);  // after: the next forward is a new graph
  w.zero_grad();
  sum(w * w).backward();
  EXPECT_EQ(w.grad().to_vector(), (std::vector<double>{6, 6, 6}));
}

// An undefined Variable throws where it is used, as an undefined Tensor does.
TEST(Engine, AnUndefinedVariableThrowsInsteadOfCrashing) {
  Variable x(from_vector({1, 2}, DType::Float64), true);
  EXPECT_THROW(add(Variable(), x), Error);
  EXPECT_THROW(mul(x, Variable()), Error);
  EXPECT_THROW(Variable().shape(), Error);
  EXPECT_THROW(Variable().impl(), Error);
  EXPECT_FALSE(Variable().defined());
}

}  // namespace
}  // namespace gradflow
