// The scale modes of attention: what multiplies q.k before the softmax, as
// one table.
//
// Why a scale at all: q.k adds d_k products of entries of variance about 1,
// so its variance is d_k (docs/lessons/01_dot_product_variance.md). Left
// unscaled, a large head feeds the softmax scores spread over +-sqrt(d_k):
// the softmax is then nearly one-hot, and its Jacobian, and with it the
// gradient reaching q and k, nearly zero (lessons 02 and 03). 1/sqrt(d_k)
// brings the variance back to 1 at every d_k; 1/d_k overshoots, to 1/d_k,
// and the softmax starts nearly uniform (lesson 04). The other modes are the
// literature's answers to the same problem.
// A mode is a fixed factor on the scores (the fused kernel's
// scale, a function of d_k) and, if it needs more than a number, an
// AttentionVariant (attention_variant.h) that transforms q and k. Flags,
// validation, model building, checkpoint metadata and the memory estimate
// all read the table (scale_modes()), so a new mode is one entry there and,
// if it learns or depends on position, one variant file.
//
// The modes (names as used in files and flags):
//   inv_sqrt_dk    1/sqrt(d_k), Vaswani et al.; the default
//   none           1
//   inv_dk         1/d_k, as muP
//   inv_2sqrt_dk   1/(2 sqrt(d_k))
//   const:<value>  any constant, e.g. const:0.125 (sweeps of d_k^-alpha)
//   learned        q times a learned scalar started at 1/sqrt(d_k)
//   learned_log    q times exp(t), t learned, started at log(1/sqrt(d_k))
//   qk_norm        LayerNorm on q and k (over D, per head), then 1/sqrt(d_k),
//                  Dehghani et al. 2023
//   qk_l2norm      q and k L2-normalised, q times a learned g started at
//                  log2(L^2 - L), Henry et al. 2020
//   log_n          q times log(n) / sqrt(d_k), n the number of keys the
//                  query sees (length_scale.h)
//   ssmax          q times s log(n), s learned per head, started at
//                  1/(sqrt(d_k) log L): Scalable-Softmax, Nakanishi 2025
// where L is the sequence length the layer is built for (its max_len).
// Every mode transforms only q and k, so every one keeps the fused kernel.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/attention_variant.h"
#include "nn/init.h"

namespace gradflow::nn {

// What a mode's variant is built from: the layer's head size, heads, and the
// sequence length L it is built for (0 when unknown).
struct ScaleContext {
  int64_t d_k = 0;
  int64_t heads = 1;
  int64_t max_len = 0;
  Init init = {};
};

// One row of the table.
struct ScaleModeEntry {
  const char* name;     // as in flags and files; "const" takes ":<value>"
  const char* summary;  // one line, for --help and errors
  // The fixed factor on q.k given d_k and, for const, its value. 1 when the
  // variant carries the scale.
  double (*factor)(double d_k, double constant);
  // The variant the mode adds to each attention layer, registered as the
  // child named after the mode ("self_attn.ssmax.s"); null if none.
  std::shared_ptr<AttentionVariant> (*variant)(const ScaleContext&) = nullptr;
  // Learned parameters per layer (for the memory estimate); 0 if none.
  int64_t (*parameters)(int64_t heads, int64_t d_k) = nullptr;
};

// Every mode, in the order of the list above.
const std::vector<ScaleModeEntry>& scale_modes();

// "inv_sqrt_dk, none, ..., const:<value>, ...": the names, for help texts.
std::string scale_mode_names();

// A mode chosen from the table, with const's value.
struct ScaleMode {
  // The default, inv_sqrt_dk.
  ScaleMode();
  // From its name, as the --scale flag takes it: `config.scale = "none"`.
  // Implicit on purpose, so a name goes wherever a ScaleMode does; an
  // unknown name (or a null pointer) throws Error here, at the assignment,
  // not at the first forward.
  ScaleMode(const std::string& name);
  ScaleMode(const char* name);

  static ScaleMode parse(const std::string& name);  // throws on an unknown name
  // The name that parses back to this mode; for const the shortest text of
  // its value that reads back to the same double.
  std::string name() const;
  bool is(const char* entry_name) const;  // is("qk_norm"); is("const") for any const:<v>
  const ScaleModeEntry& entry() const { return *entry_; }
  double constant() const { return constant_; }  // const's value, else 0
  // The fixed factor on q.k for d_k (1 for the modes whose variant scales q).
  double value(int64_t d_k) const;
  // This mode's variant for a layer, or null.
  std::shared_ptr<AttentionVariant> make_variant(const ScaleContext& context) const;
  int64_t parameters(int64_t heads, int64_t d_k) const;

  bool operator==(const ScaleMode& other) const {
    return entry_ == other.entry_ && constant_ == other.constant_;
  }

 private:
  const ScaleModeEntry* entry_;
  double constant_ = 0;  // const's value
};

}  // namespace gradflow::nn
