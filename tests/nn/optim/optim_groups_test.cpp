// Parameter groups (nn/optim/optim.h): a group at factor f steps exactly as an optimizer of its
// own at lr * f would, groups do not disturb one another, and the state of a grouped optimizer
// round-trips while a plain one keeps the layout it had before groups existed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nn/optim/optim.h"
#include "tensor/ops.h"
#include "tests/tensor/testing.h"

namespace gradflow::nn {
namespace {

using testing::error_of;
using testing::same_bytes;

Variable param(const std::vector<double>& values, DType dtype = DType::Float64) {
  return Variable(from_vector(values, dtype), /*requires_grad=*/true);
}

std::vector<double> values(const Variable& p) { return p.data().to_vector(); }

// Three parameters of different sizes, the same values every call.
std::vector<Variable> fresh(DType dtype) {
  Generator gen(11);
  return {Variable(randn({3, 2}, gen).to(dtype), true), Variable(randn({4}, gen).to(dtype), true),
          Variable(randn({2, 2}, gen).to(dtype), true)};
}

// A gradient for parameter k at step s, different for each; the same for every optimizer.
void give_grads(const std::vector<Variable>& params, int s) {
  for (size_t k = 0; k < params.size(); ++k) {
    Variable p = params[k];
    Generator gen(100 * static_cast<uint64_t>(s) + k);
    p.set_grad(randn(p.shape(), gen).to(p.dtype()));
  }
}

// The lr of step s: changes every step, as a schedule's does.
double lr_of(int s) { return 3e-3 * (s + 1) / 4.0; }

using MakeGroups = std::function<std::unique_ptr<Optimizer>(std::vector<ParamGroup>, double)>;

// Parameters 0 and 1 in a group at factor 1, parameter 2 in a group at `factor`, against two
// optimizers of one list each, the second set to lr * factor every step: bitwise the same.
void expect_group_is_an_optimizer_at_lr_times_factor(const MakeGroups& make, DType dtype,
                                                     double factor) {
  const std::vector<Variable> grouped = fresh(dtype), apart = fresh(dtype);
  std::unique_ptr<Optimizer> both =
      make({{{grouped[0], grouped[1]}, 1.0}, {{grouped[2]}, factor}}, 1.0);
  std::unique_ptr<Optimizer> plain = make({{{apart[0], apart[1]}, 1.0}}, 1.0);
  std::unique_ptr<Optimizer> scaled = make({{{apart[2]}, 1.0}}, 1.0);
  for (int s = 0; s < 4; ++s) {
    give_grads(grouped, s);
    give_grads(apart, s);
    both->set_lr(lr_of(s));
    plain->set_lr(lr_of(s));
    scaled->set_lr(lr_of(s) * factor);
    both->step();
    plain->step();
    scaled->step();
  }
  for (size_t k = 0; k < grouped.size(); ++k)
    EXPECT_TRUE(same_bytes(grouped[k].data(), apart[k].data()))
        << both->name() << " " << dtype_name(dtype) << " parameter " << k;
  // And the factor made a difference: parameter 2 moved otherwise than at factor 1.
  const std::vector<Variable> unscaled = fresh(dtype);
  std::unique_ptr<Optimizer> one = make({{unscaled, 1.0}}, 1.0);
  for (int s = 0; s < 4; ++s) {
    give_grads(unscaled, s);
    one->set_lr(lr_of(s));
    one->step();
  }
  EXPECT_TRUE(same_bytes(unscaled[0].data(), grouped[0].data()));
  EXPECT_FALSE(same_bytes(unscaled[2].data(), grouped[2].data()));
}

TEST(ParamGroups, AdamWGroupStepsAsAnAdamWAtLrTimesItsFactor) {
  auto make = [](std::vector<ParamGroup> groups, double lr) -> std::unique_ptr<Optimizer> {
    return std::make_unique<AdamW>(std::move(groups), lr, AdamWSettings::attention_paper());
  };
  // 64^(-1/4) (the study's reparametrised W_Q at d_k 64) and 64 / 96 (muP's base over width):
  // neither times the lr is exact in binary.
  for (DType dtype : {DType::Float32, DType::Float64}) {
    expect_group_is_an_optimizer_at_lr_times_factor(make, dtype, std::pow(64.0, -0.25));
    expect_group_is_an_optimizer_at_lr_times_factor(make, dtype, 64.0 / 96.0);
  }
  // With weight decay, whose factor 1 - lr * weight_decay takes the group's lr too.
  auto decaying = [](std::vector<ParamGroup> groups, double lr) -> std::unique_ptr<Optimizer> {
    return std::make_unique<AdamW>(std::move(groups), lr, AdamWSettings::pytorch(0.1));
  };
  expect_group_is_an_optimizer_at_lr_times_factor(decaying, DType::Float32, 0.3);
}

TEST(ParamGroups, SGDGroupStepsAsAnSGDAtLrTimesItsFactor) {
  auto make = [](std::vector<ParamGroup> groups, double lr) -> std::unique_ptr<Optimizer> {
    return std::make_unique<SGD>(std::move(groups), lr, /*momentum=*/0.9, /*nesterov=*/true,
                                 /*weight_decay=*/0.01);
  };
  for (DType dtype : {DType::Float32, DType::Float64})
    expect_group_is_an_optimizer_at_lr_times_factor(make, dtype, 0.3);
}

TEST(ParamGroups, OneStepByHand) {
  // lr 0.1; a (factor 1) and b (factor 0.5), both 1 with gradient 2:
  // a = 1 - 0.1 * 2 = 0.8, b = 1 - 0.05 * 2 = 0.9.
  Variable a = param({1.0}), b = param({1.0});
  SGD sgd(std::vector<ParamGroup>{{{a}, 1.0}, {{b}, 0.5}}, 0.1);
  a.set_grad(from_vector({2.0}, DType::Float64));
  b.set_grad(from_vector({2.0}, DType::Float64));
  sgd.step();
  EXPECT_DOUBLE_EQ(values(a)[0], 0.8);
  EXPECT_DOUBLE_EQ(values(b)[0], 0.9);
  // Adam's first step moves a weight by lr whatever its gradient (m / sqrt(v) = sign(g), up to
  // eps): c by 0.01, d (factor 0.25) by 0.0025; then decay shrinks d by 1 - 0.0025 * 0.5 first.
  Variable c = param({1.0}), d = param({-1.0});
  AdamW adamw(std::vector<ParamGroup>{{{c}, 1.0}, {{d}, 0.25}}, 0.01,
              {.beta1 = 0.9, .beta2 = 0.999, .eps = 0, .weight_decay = 0.5});
  c.set_grad(from_vector({3.0}, DType::Float64));
  d.set_grad(from_vector({-7.0}, DType::Float64));
  adamw.step();
  EXPECT_DOUBLE_EQ(values(c)[0], 1.0 * (1 - 0.01 * 0.5) - 0.01);
  EXPECT_DOUBLE_EQ(values(d)[0], -1.0 * (1 - 0.0025 * 0.5) + 0.0025);
  EXPECT_EQ(adamw.num_groups(), 2u);
  EXPECT_EQ(adamw.lr_factor(1), 0.25);
  EXPECT_EQ(adamw.params().size(), 2u);
  EXPECT_TRUE(adamw.params()[1].impl() == d.impl());  // params(): group after group
}

TEST(ParamGroups, GroupsDoNotDisturbOneAnother) {
  // A group whose parameters get no gradient, or a huge one, leaves the other group's update as
  // it would be alone; the count of a parameter without a grad stays behind, as without groups.
  std::vector<Variable> grouped = fresh(DType::Float32);
  const std::vector<Variable> alone = fresh(DType::Float32);
  AdamW both(std::vector<ParamGroup>{{{grouped[0], grouped[1]}, 1.0}, {{grouped[2]}, 1e3}}, 0.01,
             AdamWSettings::attention_paper());
  AdamW one(std::vector<Variable>{alone[0], alone[1]}, 0.01, AdamWSettings::attention_paper());
  for (int s = 0; s < 3; ++s) {
    give_grads(grouped, s);
    give_grads(alone, s);
    if (s == 1) grouped[2].zero_grad();
    both.step();
    one.step();
  }
  EXPECT_TRUE(same_bytes(grouped[0].data(), alone[0].data()));
  EXPECT_TRUE(same_bytes(grouped[1].data(), alone[1].data()));
  const NamedTensors state = both.state();
  const auto steps = std::find_if(state.begin(), state.end(),
                                  [](const auto& entry) { return entry.first == "param_steps"; });
  ASSERT_NE(steps, state.end());
  EXPECT_EQ(steps->second.to_vector(), (std::vector<double>{3, 3, 2}));
}

TEST(ParamGroups, RefusesEmptyGroupsBadFactorsAndAParameterInTwoGroups) {
  Variable a = param({1.0}), b = param({2.0});
  EXPECT_EQ(error_of([&] { SGD(std::vector<ParamGroup>{}, 0.1); }), "SGD: got no parameter groups");
  EXPECT_EQ(error_of([&] {
              SGD(std::vector<ParamGroup>{{{a}, 1.0}, {{}, 0.5}}, 0.1);
            }),
            "SGD: got an empty parameter list in group 1");
  EXPECT_EQ(error_of([&] {
              SGD(std::vector<ParamGroup>{{{a}, -1.0}}, 0.1);
            }),
            "SGD: lr_factor must be finite and >= 0, got -1");
  EXPECT_EQ(error_of([&] {
              AdamW(std::vector<ParamGroup>{{{a}, 1.0}, {{b}, std::nan("")}}, 0.1, {});
            }),
            "AdamW: lr_factor of group 1 must be finite and >= 0, got nan");
  EXPECT_EQ(error_of([&] {
              SGD(std::vector<ParamGroup>{{{a, b}, 1.0}, {{a}, 0.5}}, 0.1);
            }),
            "SGD: parameter 2 (group 1) appears earlier in the list too");
  SGD two(std::vector<ParamGroup>{{{a}, 1.0}, {{b}, 0.5}}, 0.1);
  EXPECT_EQ(error_of([&] { two.lr_factor(2); }), "SGD.lr_factor: group 2 out of range (2 groups)");
}

// ---- state ------------------------------------------------------------------------

std::vector<std::string> keys(const NamedTensors& state) {
  std::vector<std::string> out;
  for (const auto& [key, t] : state) out.push_back(key);
  return out;
}

std::vector<ParamGroup> two_groups(const std::vector<Variable>& p, double factor = 0.5) {
  return {{{p[0], p[1]}, 1.0}, {{p[2]}, factor}};
}

TEST(ParamGroups, StateRoundTripsAndTheRunContinuesBitwise) {
  const AdamWSettings settings = AdamWSettings::attention_paper();
  const std::vector<Variable> straight_p = fresh(DType::Float32);
  AdamW straight(two_groups(straight_p), 1.0, settings);
  const std::vector<Variable> first_p = fresh(DType::Float32);
  AdamW first(two_groups(first_p), 1.0, settings);
  for (int s = 0; s < 2; ++s) {
    give_grads(straight_p, s), give_grads(first_p, s);
    straight.set_lr(lr_of(s)), first.set_lr(lr_of(s));
    straight.step(), first.step();
  }
  const NamedTensors saved = first.state();
  EXPECT_EQ(keys(saved),
            (std::vector<std::string>{"step", "lr", "beta1", "beta2", "eps", "weight_decay",
                                      "decoupled_weight_decay", "lr_factors", "group_sizes",
                                      "param_steps", "exp_avg.0", "exp_avg_sq.0", "exp_avg.1",
                                      "exp_avg_sq.1", "exp_avg.2", "exp_avg_sq.2"}));
  std::vector<Variable> resumed_p;
  for (const Variable& p : first_p) resumed_p.emplace_back(p.data().clone(), true);
  AdamW resumed(two_groups(resumed_p), 1.0, settings);
  resumed.load_state(saved);
  for (int s = 2; s < 4; ++s) {
    give_grads(straight_p, s), give_grads(resumed_p, s);
    straight.set_lr(lr_of(s)), resumed.set_lr(lr_of(s));
    straight.step(), resumed.step();
  }
  for (size_t k = 0; k < straight_p.size(); ++k)
    EXPECT_TRUE(same_bytes(straight_p[k].data(), resumed_p[k].data())) << k;
  const NamedTensors a = straight.state(), b = resumed.state();
  ASSERT_EQ(keys(a), keys(b));
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(same_bytes(a[i].second, b[i].second)) << a[i].first;
}

TEST(ParamGroups, OneListAtFactorOneKeepsTheStateLayoutOfBeforeGroups) {
  // What an optimizer of one list wrote before groups existed: no group keys, so the
  // checkpoints of then load into the optimizers of now, and the other way round.
  const std::vector<std::string> before = {"step",
                                           "lr",
                                           "momentum",
                                           "nesterov",
                                           "weight_decay",
                                           "param_steps",
                                           "momentum_buffer.0",
                                           "momentum_buffer.1",
                                           "momentum_buffer.2"};
  const std::vector<Variable> p = fresh(DType::Float32);
  SGD plain(p, 0.1, 0.9);
  EXPECT_EQ(keys(plain.state()), before);
  SGD one_group(std::vector<ParamGroup>{{p, 1.0}}, 0.1, 0.9);
  EXPECT_EQ(keys(one_group.state()), before);
  one_group.load_state(plain.state());
  // One group at another factor is grouped: its factor is kept.
  SGD scaled(std::vector<ParamGroup>{{p, 0.5}}, 0.1, 0.9);
  EXPECT_EQ(keys(scaled.state())[5], "lr_factors");
}

TEST(ParamGroups, LoadStateRefusesOtherGroups) {
  const std::vector<Variable> p = fresh(DType::Float64);
  AdamW grouped(two_groups(p), 0.01, {});
  const NamedTensors state = grouped.state();
  AdamW other_factor(two_groups(p, 0.25), 0.01, {});
  EXPECT_EQ(error_of([&] { other_factor.load_state(state); }),
            "AdamW.load_state: \"lr_factors\" of group 1 is 0.5 in the state but 0.25 in this "
            "optimizer; build the optimizer with the saved groups");
  AdamW other_split(std::vector<ParamGroup>{{{p[0]}, 1.0}, {{p[1], p[2]}, 0.5}}, 0.01, {});
  EXPECT_EQ(error_of([&] { other_split.load_state(state); }),
            "AdamW.load_state: \"group_sizes\" of group 0 is 2 in the state but 1 in this "
            "optimizer; build the optimizer with the saved groups");
  AdamW plain(p, 0.01, AdamWSettings{});
  EXPECT_EQ(error_of([&] { plain.load_state(state); }),
            "AdamW.load_state: unexpected key \"lr_factors\"; the state is of an optimizer with "
            "parameter groups, this one has one list at factor 1");
  EXPECT_EQ(error_of([&] { grouped.load_state(plain.state()); }),
            "AdamW.load_state: missing key \"lr_factors\"; the state is of an optimizer with one "
            "list at factor 1, this one has groups");
}

}  // namespace
}  // namespace gradflow::nn
