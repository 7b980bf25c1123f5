// The version counter (autograd/variable.h, Node::saved): a backward reads
// the tensors its forward kept, and an in-place edit of any of them between
// the two would give a gradient from values the forward never saw. Each kind
// is refused: an input that needs no gradient, a tensor an op keeps that is
// not a Variable (ids, an index, a mask, a condition, max's indices), the
// op's own output. Then the same as a property, on random graphs.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <string>

#include "autograd/ops.h"
#include "tensor/ops.h"

namespace gradflow {
namespace {

// Runs `backward` and expects it refused for an in-place edit, naming `what`.
void expect_refused(const std::function<void()>& backward, const std::string& what) {
  try {
    backward();
    ADD_FAILURE() << "backward ran on edited values";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(what), std::string::npos) << m;
    EXPECT_NE(m.find("was modified in place after the forward used it"), std::string::npos) << m;
  }
}

Tensor f64(const std::vector<double>& v, const Shape& shape) {
  return from_vector(v, shape, DType::Float64);
}

// Each of these gave a wrong gradient, silently: a batch buffer reused while
// its graph waits for backward is how a user does it by accident.
TEST(SavedVersions, TensorsAnOpKeepsBesidesItsVariablesAreChecked) {
  const std::string kept = "a tensor it keeps";
  Variable w(f64({1, 2, 3, 4, 5, 6}, {3, 2}), true);
  {  // embedding's ids: the gradient would go to row 0 instead of row 2
    Tensor ids = from_indices({2, 1}, {2});
    Variable loss = sum(embedding(w, ids) * embedding(w, ids));
    ids.set({0}, 0);
    expect_refused([&] { loss.backward(); }, "backward of 'index_select': " + kept);
  }
  {  // gather's index
    Tensor index = from_indices({1, 0, 0}, {3, 1});
    Variable loss = sum(exp(gather(w, 1, index)));
    index.fill_(0);
    expect_refused([&] { loss.backward(); }, "backward of 'gather': " + kept);
  }
  {  // where's condition
    Tensor cond = f64({1, 0, 1, 0, 1, 0}, {3, 2});
    Variable loss = sum(exp(where(cond, w, w * 2.0)));
    cond.narrow(0, 0, 1).fill_(0);  // through a view
    expect_refused([&] { loss.backward(); }, "backward of 'where': " + kept);
  }
  {  // masked_fill's mask
    Tensor mask = f64({0, 1, 0, 1, 0, 1}, {3, 2});
    Variable loss = sum(exp(masked_fill(w, mask, 0)));
    mask.transpose(0, 1).narrow(0, 1, 1).fill_(0);  // through a transposed view
    expect_refused([&] { loss.backward(); }, "backward of 'masked_fill': " + kept);
  }
  {  // fused attention's mask
    Tensor mask = f64({0, 1, 0, 0}, {2, 2});
    Variable q(f64({1, 2, 3, 4}, {2, 2}), true);
    Variable loss = sum(exp(fused_attention(q, q, q, 0.5, mask)));
    add_(mask, full({2, 2}, 1, DType::Float64));
    expect_refused([&] { loss.backward(); }, "backward of 'fused_attention': " + kept);
  }
  {  // max's indices, which the caller holds too
    MaxVariable m = max(w, 1);
    Variable loss = sum(exp(m.values));
    m.indices.fill_(0);
    expect_refused([&] { loss.backward(); }, "backward of 'max': " + kept);
  }
  {  // an input that needs no gradient: mul's backward reads it for w's
    Variable c(f64({1, 1, 1, 1, 1, 1}, {3, 2}));
    Variable loss = sum(w * c);
    Tensor(c.data()).fill_(5);
    expect_refused([&] { loss.backward(); }, "backward of 'mul': input 1 was");
  }
  EXPECT_FALSE(w.grad().defined());  // nothing was accumulated
}

// exp keeps its output for the backward (d/dw exp(w) = exp(w)): an edit of
// it gave 1 1 where 1 e is right.
TEST(SavedVersions, AnOpsOwnOutputEditedInPlaceIsRefused) {
  Variable w(f64({0, 1}, {2}), true);
  Variable y = exp(w);
  Tensor(y.data()).fill_(1);
  expect_refused([&] { y.backward(ones({2}, DType::Float64)); },
                 "backward of 'exp': its output (shape (2))");
  // Through detach(), which shares the storage.
  Variable z = tanh(w);
  Tensor(z.detach().data()).set({0}, 0.5);
  expect_refused([&] { sum(z).backward(); }, "backward of 'tanh': its output");
  EXPECT_FALSE(w.grad().defined());
  // Unedited, the gradient is exp(w).
  exp(w).backward(ones({2}, DType::Float64));
  EXPECT_DOUBLE_EQ(w.grad().at({1}), std::exp(1.0));
}

// A refused backward changes nothing: a leaf reached before the edited node
// gets no gradient either.
TEST(SavedVersions, ARefusedBackwardAccumulatesNothing) {
  Variable a(f64({1, 2}, {2}), true), b(f64({3, 4}, {2}), true);
  Variable deep = exp(a);
  Variable loss = sum(deep * b);  // b's gradient comes before exp's node runs
  Tensor(deep.data()).fill_(0);
  // Named at the first node backward would reach: mul, whose input 0 it is.
  expect_refused([&] { loss.backward(); }, "'mul': input 0");
  EXPECT_FALSE(a.grad().defined());
  EXPECT_FALSE(b.grad().defined());
}

TEST(SetGrad, AWrongShapeOrDtypeIsRefusedAtOnce) {
  Variable w(f64({1, 2}, {2}), true);
  try {
    w.set_grad(zeros({3}, DType::Float64));
    ADD_FAILURE() << "a (3) gradient was accepted for a (2) Variable";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "set_grad: a gradient of float64 (3) for a Variable of float64 (2)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(w.set_grad(zeros({2}, DType::Float32)), Error);
  EXPECT_FALSE(w.grad().defined());
  w.set_grad(ones({2}, DType::Float64));
  sum(w * w).backward();
  EXPECT_EQ(w.grad().to_vector(), (std::vector<double>{3, 5}));
  w.set_grad(Tensor());  // undefined clears it
  EXPECT_FALSE(w.grad().defined());
}

TEST(Hooks, AHookReturningAnotherDtypeIsNamedAsSuch) {
  Variable w(f64({1, 2}, {2}), true);
  w.register_hook([](const Tensor& g) { return g.to(DType::Float32); });
  try {
    sum(w * w).backward();
    ADD_FAILURE() << "a float32 gradient was accepted for a float64 Variable";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("a hook returned float32 (2) for a gradient of float64 (2)"),
        std::string::npos)
        << e.what();
  }
}

// ---- the property ------------------------------------------------------------

// Every value of a graph is (T, C) = (4, 5), the table W (C, C).
constexpr int64_t T = 4, C = 5;

// What the graphs read besides Variables: each is kept by some op's backward.
struct Kept {
  Tensor ids;    // (T) int64 in [0, T): embedding's rows
  Tensor index;  // (T, C) int64 in [0, C): gather's
  Tensor mask;   // (T, C) float64 0/1: masked_fill's mask, where's condition
  Tensor keys;   // (T, T) float64 0/1: attention's mask
};

struct Leaves {
  Variable w0, w1, table;  // need gradients
  Variable c;              // needs none
};

// One op of a random graph and the values it reads (indices into the values
// made so far, which start as w0, w1 and c).
struct Step {
  int64_t op, a, b, c;
};
constexpr int kOps = 12;

struct Graph {
  std::vector<Variable> values;
  std::vector<Tensor> max_indices;  // max's, held by the caller and the graph
  Variable loss;
};

// The loss adds tanh of every value times fixed weights r: each node is
// reached, and nonlinear, so a gradient from values the forward did not use
// shows (a linear loss would send the same gradient back whatever they were).
Graph forward(const std::vector<Step>& recipe, const Leaves& l, const Kept& k, const Tensor& r) {
  Graph g;
  g.values = {l.w0, l.w1, l.c};
  for (const Step& s : recipe) {
    const Variable& a = g.values[static_cast<size_t>(s.a)];
    const Variable& b = g.values[static_cast<size_t>(s.b)];
    const Variable& c = g.values[static_cast<size_t>(s.c)];
    Variable out;
    switch (s.op) {
      case 0:
        out = a * b;
        break;
      case 1:
        out = exp(a * 0.5) - b;
        break;  // exp keeps its output
      case 2:
        out = tanh(a) * b;
        break;  // tanh keeps its output
      case 3:
        out = softmax(a, -1) * b;
        break;  // so does softmax
      case 4:
        out = gather(a, 1, k.index) * b;
        break;
      case 5:
        out = embedding(a, k.ids) + b;
        break;  // a as a (T, C) table
      case 6:
        out = where(k.mask, a, b * c);
        break;
      case 7:
        out = masked_fill(a, k.mask, 0.25) * b;
        break;
      case 8:
        out = fused_attention(a, b, c, 0.5, k.keys);
        break;
      case 9:
        out = linear(a, l.table, Variable()) * b;
        break;
      case 10: {
        MaxVariable m = max(a, 1, true);
        g.max_indices.push_back(m.indices);
        out = a * m.values;
        break;
      }
      default:  // views, whose outputs share their inputs' storage
        out = transpose(transpose(a, 0, 1) * 2.0, 0, 1) + reshape(reshape(b, {T * C}), {T, C});
        break;
    }
    g.values.push_back(out);
  }
  Variable total;
  for (const Variable& v : g.values) {
    if (!v.requires_grad()) continue;
    Variable term = tanh(v) * Variable(r);
    total = total.defined() ? total + term : term;
  }
  g.loss = sum(total);
  return g;
}

// An in-place edit of t to `value`: by each in-place op, on t or through a
// view of its storage.
void edit(Tensor t, double value, int64_t how) {
  const bool floating = t.dtype() != DType::Int64;
  switch (how) {
    case 0:
      t.fill_(value);
      break;
    case 1:
      t.narrow(0, 0, 1).fill_(value);
      break;  // a row
    case 2:
      t.ndim() == 1 ? t.set({0}, value) : t.set({0, 0}, value);
      break;
    case 3:
      t.copy_(full(t.shape(), value, t.dtype()));
      break;
    case 4:  // a column, through a transposed view
      t.ndim() == 2 ? (void)t.transpose(0, 1).narrow(0, t.size(1) - 1, 1).fill_(value)
                    : (void)t.fill_(value);
      break;
    default:
      floating ? add_(t, scalar_tensor(value, t.dtype())) : (void)t.fill_(value);
      break;
  }
}

bool same(const Tensor& x, const Tensor& y) {
  if (x.defined() != y.defined()) return false;
  if (!x.defined()) return true;
  const std::vector<double> a = x.to_vector(), b = y.to_vector();
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::isnan(a[i]) && std::isnan(b[i])) && !(a[i] == b[i]) &&
        !(std::abs(a[i] - b[i]) <= 1e-12 * (1 + std::abs(b[i]))))
      return false;
  return true;
}

// Random graphs of the ops above, then up to two random in-place edits of
// any tensor a backward may read (a leaf, the input that needs no gradient,
// any op's output, ids, an index, a mask, max's indices), on the tensor or
// on a clone of it. Each backward is refused, accumulating nothing, or gives
// the gradients of a fresh forward on the values as they are now. Every kind
// of tensor is seen refused, and edits of clones are never refused.
TEST(SavedVersions, RandomEditsAreRefusedOrGiveTheGradientOfAFreshForward) {
  std::map<std::string, int> refused_by_kind;
  int refused = 0, accepted_after_an_edit = 0;
  for (uint64_t trial = 0; trial < 1000; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    Generator gen(trial);
    std::vector<Step> recipe;
    const int64_t length = 1 + gen.below(6);
    for (int64_t i = 0; i < length; ++i) {
      const uint64_t values = 3 + recipe.size();
      recipe.push_back(
          {gen.below(kOps), i == 0 ? 0 : gen.below(values), gen.below(values), gen.below(values)});
    }
    const DType f = DType::Float64;
    Leaves l{Variable(randn({T, C}, gen, f), true), Variable(randn({T, C}, gen, f), true),
             Variable(randn({C, C}, gen, f), true), Variable(randn({T, C}, gen, f))};
    Kept k{randint(0, T, {T}, gen), randint(0, C, {T, C}, gen), randint(0, 2, {T, C}, gen).to(f),
           randint(0, 2, {T, T}, gen).to(f)};
    const Tensor r = randn({T, C}, gen, f);
    Graph g = forward(recipe, l, k, r);

    struct Target {
      std::string kind;
      Tensor t;
      double value;
    };
    std::vector<Target> targets = {{"leaf", l.w0.data(), 0.3},
                                   {"leaf", l.w1.detach().data(), 0.3},
                                   {"leaf", l.table.data(), 0.3},
                                   {"input needing no gradient", l.c.data(), 0.3},
                                   {"ids", k.ids, 1},
                                   {"index", k.index, 1},
                                   {"mask", k.mask, 1},
                                   {"attention mask", k.keys, 1}};
    for (const Tensor& t : g.max_indices) targets.push_back({"max's indices", t, 1});
    for (size_t v = 3; v < g.values.size(); ++v)
      targets.push_back({"output", g.values[v].data(), 0.3});

    // The values as the forward saw them, for the fresh forward.
    const Leaves before{Variable(l.w0.data().clone(), true), Variable(l.w1.data().clone(), true),
                        Variable(l.table.data().clone(), true), Variable(l.c.data().clone())};
    const Kept k_before{k.ids.clone(), k.index.clone(), k.mask.clone(), k.keys.clone()};
    const int64_t edits = gen.below(3);
    bool on_clones_only = true;
    std::vector<std::string> kinds;
    for (int64_t e = 0; e < edits; ++e) {
      const Target& target = targets[gen.below(targets.size())];
      const bool on_clone = gen.below(4) == 0;
      edit(on_clone ? target.t.clone() : target.t, target.value, gen.below(6));
      on_clones_only = on_clones_only && on_clone;
      if (!on_clone) kinds.push_back(target.kind);
    }
    try {
      g.loss.backward();
    } catch (const Error& e) {
      ASSERT_NE(std::string(e.what()).find("was modified in place"), std::string::npos) << e.what();
      EXPECT_FALSE(on_clones_only) << "an edit of a clone was refused";
      for (const Variable& leaf : {l.w0, l.w1, l.table})
        EXPECT_FALSE(leaf.grad().defined()) << "a refused backward accumulated";
      ++refused;
      if (kinds.size() == 1) ++refused_by_kind[kinds[0]];
      continue;
    }
    if (edits > 0) ++accepted_after_an_edit;
    const Graph again = forward(recipe, before, k_before, r);
    again.loss.backward();
    for (size_t i = 0; i < 3; ++i) {
      const Variable& leaf = i == 0 ? l.w0 : i == 1 ? l.w1 : l.table;
      const Variable& fresh = i == 0 ? before.w0 : i == 1 ? before.w1 : before.table;
      EXPECT_TRUE(same(leaf.grad(), fresh.grad())) << "leaf " << i << ": a wrong gradient";
    }
  }
  for (const char* kind : {"leaf", "input needing no gradient", "ids", "index", "mask",
                           "attention mask", "max's indices", "output"})
    EXPECT_GT(refused_by_kind[kind], 0) << "no edit of a " << kind << " was refused";
  EXPECT_GT(accepted_after_an_edit, 0);
  EXPECT_GT(refused, 0);
  RecordProperty("refused", refused);
  RecordProperty("accepted_after_an_edit", accepted_after_an_edit);
}

}  // namespace
}  // namespace gradflow
