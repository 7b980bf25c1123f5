// Module: dotted names in order for a nested module defined here, parameter
// counts, zero_grad, train/eval propagation, a bitwise state_dict round trip,
// load_state_dict's one error listing every bad key, and summary().
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "nn/dropout.h"
#include "nn/linear.h"
#include "tests/nn/nn_check.h"

namespace gradflow::nn {
namespace {
using namespace gradflow::testing;

class Leaf : public Module {
 public:
  Leaf(int64_t n, Generator& gen) : n_(n) {
    w = register_parameter("w", randn({n, 2}, gen));
    b = register_parameter("b", randn({n}, gen));
  }
  std::string describe() const override { return "Leaf(" + std::to_string(n_) + ")"; }
  Variable w, b;

 private:
  int64_t n_;
};

// A parameter registered between two children: own parameters still come
// first in named_parameters (as in PyTorch), then each child's in order.
class Branch : public Module {
 public:
  explicit Branch(Generator& gen) {
    left = register_module("left", std::make_shared<Leaf>(2, gen));
    gain = register_parameter("gain", ones({1}));
    right = register_module("right", std::make_shared<Leaf>(3, gen));
    drop = register_module("drop", std::make_shared<Dropout>(0.5, gen));
  }
  std::string describe() const override { return "Branch"; }
  std::shared_ptr<Leaf> left, right;
  std::shared_ptr<Dropout> drop;
  Variable gain;
};

class Tree : public Module {
 public:
  explicit Tree(Generator& gen) {
    branch = register_module("branch", std::make_shared<Branch>(gen));
    head = register_module("head", std::make_shared<Linear>(4, 2, LinearOptions{}, gen));
    scale = register_parameter("scale", randn({2}, gen));
  }
  std::string describe() const override { return "Tree"; }
  std::shared_ptr<Branch> branch;
  std::shared_ptr<Linear> head;
  Variable scale;
};

const std::vector<std::string> kNames = {"scale",         "branch.gain",    "branch.left.w",
                                         "branch.left.b", "branch.right.w", "branch.right.b",
                                         "head.weight",   "head.bias"};
constexpr int64_t kCount = 2 + 1 + (4 + 2) + (6 + 3) + (8 + 2);

std::vector<std::vector<char>> bytes_of(const Module& m) {
  std::vector<std::vector<char>> out;
  for (const auto& [name, t] : m.state_dict()) {
    Tensor c = t.contiguous();
    const char* p =
        static_cast<const char*>(c.storage()->data()) + c.offset() * dtype_size(c.dtype());
    out.emplace_back(p, p + c.numel() * dtype_size(c.dtype()));
  }
  return out;
}

TEST(Module, NamedParametersInOrderWithDottedNames) {
  Generator gen(1);
  Tree tree(gen);
  auto named = tree.named_parameters();
  std::vector<std::string> names;
  for (const auto& [name, p] : named) names.push_back(name);
  EXPECT_EQ(names, kNames);
  // The handles are the layers' own members, not copies.
  EXPECT_EQ(named[0].second.impl(), tree.scale.impl());
  EXPECT_EQ(named[2].second.impl(), tree.branch->left->w.impl());
  EXPECT_EQ(named[6].second.impl(), tree.head->weight.impl());
  std::vector<Variable> params = tree.parameters();
  ASSERT_EQ(params.size(), kNames.size());
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i].impl(), named[i].second.impl());
    EXPECT_TRUE(params[i].requires_grad());
    EXPECT_TRUE(params[i].is_leaf());
  }
  EXPECT_EQ(tree.num_parameters(), kCount);
  EXPECT_EQ(tree.branch->num_parameters(), 1 + 6 + 9);
  EXPECT_EQ(tree.branch->drop->num_parameters(), 0);
}

class Twice : public Module {
 public:
  Twice() {
    register_parameter("w", zeros({1}));
    register_parameter("w", zeros({1}));
  }
  std::string describe() const override { return "Twice"; }
};

TEST(Module, RegisteringANameTwiceThrows) { EXPECT_THROW(Twice(), Error); }

TEST(Module, ZeroGradClearsEveryParameter) {
  Generator gen(2);
  Tree tree(gen);
  Variable loss(scalar_tensor(0.0));
  for (const Variable& p : tree.parameters()) loss = loss + sum(p * p);
  loss.backward();
  for (const auto& [name, p] : tree.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    expect_near_vec(p.grad(), mul(p.data(), 2.0).to_vector(), 1e-6);
  }
  tree.zero_grad();
  for (const auto& [name, p] : tree.named_parameters()) EXPECT_FALSE(p.grad().defined()) << name;
}

TEST(Module, TrainAndEvalReachEveryDescendant) {
  Generator gen(3);
  Tree tree(gen);
  std::vector<const Module*> all = {&tree,
                                    tree.branch.get(),
                                    tree.branch->left.get(),
                                    tree.branch->right.get(),
                                    tree.branch->drop.get(),
                                    tree.head.get()};
  for (const Module* m : all) EXPECT_TRUE(m->is_training());
  tree.eval();
  for (const Module* m : all) EXPECT_FALSE(m->is_training());
  Tensor x = ones({50});
  EXPECT_EQ(tree.branch->drop->forward(Variable(x)).data().to_vector(), x.to_vector());
  tree.train();
  for (const Module* m : all) EXPECT_TRUE(m->is_training());
  tree.branch->train(false);  // a subtree only
  EXPECT_TRUE(tree.is_training());
  EXPECT_TRUE(tree.head->is_training());
  EXPECT_FALSE(tree.branch->drop->is_training());
  EXPECT_FALSE(tree.branch->left->is_training());
}

TEST(Module, StateDictRoundTripIsBitwise) {
  Generator g1(4), g2(5);
  Tree a(g1), b(g2);
  ASSERT_NE(bytes_of(a), bytes_of(b));
  NamedTensors state = a.state_dict();
  ASSERT_EQ(state.size(), kNames.size());
  for (size_t i = 0; i < state.size(); ++i) EXPECT_EQ(state[i].first, kNames[i]);
  // state_dict hands out the live data.
  EXPECT_EQ(state[0].second.storage(), a.scale.data().storage());

  NamedTensors snapshot;
  for (auto& [name, t] : state) snapshot.emplace_back(name, t.clone());
  std::vector<Variable> before = b.parameters();
  b.load_state_dict(snapshot);
  EXPECT_EQ(bytes_of(a), bytes_of(b));
  // Loading copies into the existing parameters: handles (and so an
  // optimizer's references) stay valid.
  std::vector<Variable> after = b.parameters();
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(before[i].impl(), after[i].impl());
  // Later changes to the snapshot do not leak into b.
  snapshot[0].second.fill_(123);
  EXPECT_NE(b.scale.data().at({0}), 123);

  // A non-contiguous source (a transposed view of the transposed weight) and
  // a shuffled key order load the same bytes.
  Tree c(g2);
  NamedTensors shuffled(snapshot.rbegin(), snapshot.rend());
  for (auto& [name, t] : shuffled)
    if (name == "head.weight") t = a.head->weight.data().transpose(0, 1).clone().transpose(0, 1);
  for (auto& [name, t] : shuffled)
    if (name == "scale") t = a.scale.data().clone();
  c.load_state_dict(shuffled);
  EXPECT_EQ(bytes_of(a), bytes_of(c));
}

TEST(Module, LoadStateDictListsEveryBadKeyAndChangesNothing) {
  Generator g1(6), g2(7);
  Tree a(g1), b(g2);
  const auto original = bytes_of(b);
  NamedTensors state;
  for (auto& [name, t] : a.state_dict()) {
    if (name == "branch.gain" || name == "head.bias") continue;  // missing
    if (name == "head.weight") {
      state.emplace_back(name, zeros({4, 2}));  // transposed shape
    } else if (name == "branch.left.b") {
      state.emplace_back(name, zeros({3}));
    } else {
      state.emplace_back(name, t.clone());
    }
  }
  state.emplace_back("branch.extra", zeros({1}));
  state.emplace_back("bogus", zeros({2}));
  try {
    b.load_state_dict(state);
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const char* part : {"load_state_dict", "missing", "unexpected", "shape", "branch.gain",
                             "head.bias", "branch.extra", "bogus", "head.weight", "branch.left.b"})
      EXPECT_NE(msg.find(part), std::string::npos) << "'" << part << "' not in: " << msg;
  }
  EXPECT_EQ(bytes_of(b), original);

  // One wrong shape after many good keys: still nothing copied.
  NamedTensors almost;
  for (auto& [name, t] : a.state_dict()) almost.emplace_back(name, t.clone());
  almost.back().second = zeros({5});  // head.bias
  EXPECT_THROW(b.load_state_dict(almost), Error);
  EXPECT_EQ(bytes_of(b), original);

  // A key given twice is an error too.
  NamedTensors twice;
  for (auto& [name, t] : a.state_dict()) twice.emplace_back(name, t.clone());
  twice.emplace_back("scale", zeros({2}));
  try {
    b.load_state_dict(twice);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("scale"), std::string::npos) << e.what();
  }
  EXPECT_EQ(bytes_of(b), original);
}

TEST(Module, SummaryShowsEveryChildAndTheTotal) {
  Generator gen(8);
  Tree tree(gen);
  const std::string s = tree.summary();
  for (const Module* m :
       {static_cast<const Module*>(&tree), static_cast<const Module*>(tree.branch.get()),
        static_cast<const Module*>(tree.branch->left.get()),
        static_cast<const Module*>(tree.branch->right.get()),
        static_cast<const Module*>(tree.branch->drop.get()),
        static_cast<const Module*>(tree.head.get())})
    EXPECT_NE(s.find(m->describe()), std::string::npos) << m->describe() << " not in:\n" << s;
  for (const char* name :
       {"branch: Branch", "left: Leaf(2)", "right: Leaf(3)", "head: Linear(4 -> 2)"})
    EXPECT_NE(s.find(name), std::string::npos) << name << " not in:\n" << s;
  EXPECT_NE(s.find("total parameters: " + std::to_string(kCount)), std::string::npos) << s;
}

}  // namespace
}  // namespace gradflow::nn
