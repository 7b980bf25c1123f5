// The claims table's rows C28 to C30 (claims.h): how W_Q and W_K's learning
// rate should scale with d_k, measured by the qk-rate part (qk_rate.h).
// Declared before any run of the part: the exponent alpha of the best
// multiplier m*(d_k) ~ d_k^alpha at sigma0 = 1 (both tasks), and recall's
// failure boundary against the measured logit step at each width.
#include <cmath>

#include "examples/study/claims.h"

namespace gradflow::study {

namespace {

// The manipulation checks every claim of the part carries: the start is the
// one asked for, and the multiplier moves the logits.
std::vector<Criterion> checks(const std::string& start_words, const std::string& rate_words) {
  return {{.id = "start",
           .tests = start_words,
           .plain = "the largest relative gap between a run's q.k std at the start and its "
                    "sigma0, over the runs whose start was set",
           .role = Role::Check,
           .test = Test::Below,
           .margin = 0.02},
          {.id = "rate",
           .tests = rate_words,
           .plain = "the measured logit step at the largest m over the one at the smallest "
                    "(sigma0 = 1, "
                    "geometric means over seeds), at each task and width: above 1.5, since "
                    "the other weights, at the full rate, move the logits too",
           .role = Role::Check,
           .test = Test::Above,
           .margin = 1.5}};
}

}  // namespace

std::vector<Claim> claims_of_the_qk_rate() {
  return {
      {.id = "C28",
       .statement = "Once the start of unscaled attention's logits is fixed, its best Q/K "
                    "learning rate is the same at every d_k",
       .why = "The variance argument (Vaswani et al. 2017) is about the start: q.k's std grows "
              "as sqrt(d_k) when q and k are independent, and dividing by sqrt(d_k) undoes "
              "it. If that is all the scale fixes, a model whose logits start at std 1 needs "
              "no other change as d_k grows, and the best learning rate of W_Q and W_K does "
              "not move.",
       .section = kQkRate,
       .plain = "With the start fixed, the best Q/K learning rate does not move with d_k",
       .criteria =
           [] {
             std::vector<Criterion> c = {
                 {.id = "a",
                  .tests = "is the same at every d_k",
                  .plain = "alpha, the slope of log m* against log d_k (m* the W_Q/W_K "
                           "learning-rate multiplier with the lowest mean loss AUC at sigma0 = 1), "
                           "on each task, with its 90% bootstrap interval over seeds",
                  .test = Test::Within,
                  .margin = 0.1}};
             for (Criterion& k : checks("Once the start", "learning rate")) c.push_back(k);
             return c;
           }()},
      {.id = "C29",
       .statement = "Unscaled attention's best Q/K learning rate shrinks as d_k grows, as "
                    "d_k^(-1/4) per matrix under muP",
       .why = "muP (Yang et al. 2022) expects q and k to align in training, so q.k grows as "
              "d_k, not sqrt(d_k): an update of W_Q and W_K of a fixed size moves the logits "
              "further at a larger d_k, and each matrix's rate must shrink as d_k^(-1/4) for "
              "the logits' step to stay put.",
       .section = kQkRate,
       .plain = "The best Q/K learning rate shrinks as d_k grows",
       .criteria =
           [] {
             std::vector<Criterion> c = {
                 {.id = "a",
                  .tests = "shrinks as d_k grows",
                  .plain = "alpha on each task, with its 95% bootstrap interval over seeds",
                  .test = Test::Below,
                  .margin = 0},
                 {.id = "b",
                  .tests = "as d_k^(-1/4) per matrix",
                  .plain = "alpha + 1/4 (alpha's distance from muP's exponent) on each task, with "
                           "its 90% bootstrap interval over seeds",
                  .test = Test::Within,
                  .margin = 0.1}};
             for (Criterion& k : checks("Unscaled attention", "learning rate")) c.push_back(k);
             return c;
           }()},
      {.id = "C30",
       .statement = "Unscaled attention stops solving recall past a logit step that is the same "
                    "at every d_k",
       .why = "If what breaks training is how far each update moves the logits (Wortsman et "
              "al. 2023: attention logits grow with the learning rate until the softmax is "
              "one-hot), the runs fail past one measured logit step whatever d_k, the start or "
              "the multiplier that produced it.",
       .section = kQkRate,
       .plain = "Past one logit step unscaled attention stops solving recall, at every d_k",
       .criteria =
           [] {
             std::vector<Criterion> c = {
                 {.id = "a",
                  .tests = "the same at every d_k",
                  .plain = "the log of the largest failure boundary over the smallest, across "
                           "the widths (a width's boundary: the logit step that best separates "
                           "solved from unsolved runs above its best cell), with its 90% "
                           "bootstrap interval over seeds; log 1.5 is a factor of 1.5",
                  .test = Test::Within,
                  .margin = std::log(1.5)}};
             for (Criterion& k : checks("Unscaled attention", "logit step")) c.push_back(k);
             return c;
           }()},
  };
}

}  // namespace gradflow::study
