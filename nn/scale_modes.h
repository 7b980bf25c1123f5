// The scale modes of attention: what multiplies q.k before the softmax, as
// one table.
//
// Why a scale at all: q.k adds d_k products of entries of variance about 1,
// so its variance is d_k (docs/lessons/05_dot_product_variance.md). Left
// unscaled, a large head feeds the softmax scores spread over +-sqrt(d_k):
// the softmax is then nearly one-hot, and its Jacobian, and with it the
// gradient reaching q and k, nearly zero (lessons 06 and 07). 1/sqrt(d_k)
// brings the variance back to 1 at every d_k; 1/d_k overshoots, to 1/d_k,
// and the softmax starts nearly uniform (lesson 08). The other modes are the
// literature's answers to the same problem.
// A mode is a fixed factor on the scores (the fused kernel's
// scale, a function of d_k) and, if it needs more than a number, an
// AttentionVariant (attention_variant.h) that transforms q and k. Flags,
// validation, model building, checkpoint metadata, the memory estimate and
// the study all read the table (scale_modes()), so a new mode is one entry
// there and, if it learns or depends on position, one variant file whose
// logit_factor() reports the factor it puts on q.k. The entry's columns
// (ScaleModeEntry below) say everything code above nn needs, so nothing
// there tests a mode's name or its variant's type:
//   takes_value        written name:<value> (const:0.125)
//   qk_normalisation   how q and k are normalised before their product
//   transforms_scores  the variant changes the logits (the layer then takes
//                      the composed path, which the memory estimate counts)
//   start_factor       the factor on q.k of a freshly built layer
//   parameters         learned parameters per layer
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

// How a mode normalises q and k (over D, per head) before their product.
enum class QkNormalisation { None, LayerNorm, L2 };

// One row of the table. Rows are written with designated initialisers; a
// column left out takes the default below.
struct ScaleModeEntry {
  const char* name;     // as in flags and files
  const char* summary;  // one line, for --help and errors
  // The fixed factor on q.k given d_k and, for a mode that takes a value,
  // that value. 1 when the variant carries the scale.
  double (*factor)(double d_k, double value);
  // Written name:<value>, the value reaching `factor` (const:0.125); the
  // bare name is refused.
  bool takes_value = false;
  QkNormalisation qk_normalisation = QkNormalisation::None;
  // The variant the mode adds to each attention layer, registered as the
  // child named after the mode ("self_attn.ssmax.s"); null if none.
  std::shared_ptr<AttentionVariant> (*variant)(const ScaleContext&) = nullptr;
  // True if that variant's transforms_scores() is: the layer leaves the
  // fused kernel, keeping (B, H, T, S) tensors the memory estimate counts.
  bool transforms_scores = false;
  // The factor on q.k of a freshly built layer, fixed factor and variant
  // together, as an exact formula (not read back from float parameters);
  // what MultiHeadAttention::logit_factor() reads at the start, within float
  // rounding. Null: the fixed factor, factor(d_k, value).
  double (*start_factor)(const ScaleContext&) = nullptr;
  // Learned parameters per layer (for the memory estimate); 0 if none.
  int64_t (*parameters)(int64_t heads, int64_t d_k) = nullptr;
};

// Every mode, in the order of the list above.
const std::vector<ScaleModeEntry>& scale_modes();

// "inv_sqrt_dk, none, ..., const:<value>, ...": the names, for help texts.
std::string scale_mode_names();

// A mode chosen from the table, with its value if it takes one (const's).
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
  // The name that parses back to this mode; for a mode that takes a value
  // the shortest text of its value that reads back to the same double.
  std::string name() const;
  // is("qk_norm"); is("const") for any const:<v>. For tests: other code
  // reads the entry's columns instead.
  bool is(const char* entry_name) const;
  const ScaleModeEntry& entry() const { return *entry_; }
  double constant() const { return constant_; }  // the value it takes, else 0
  // The fixed factor on q.k for d_k (1 for the modes whose variant scales q).
  double value(int64_t d_k) const;
  // The whole factor on q.k of a layer built in `context`, before training:
  // 1/sqrt(d_k) for learned, log2(L^2 - L) for qk_l2norm, and so on
  // (ScaleModeEntry::start_factor). Throws where building the variant would
  // (qk_l2norm and ssmax need max_len >= 2).
  double start_factor(const ScaleContext& context) const;
  // This mode's variant for a layer, or null.
  std::shared_ptr<AttentionVariant> make_variant(const ScaleContext& context) const;
  int64_t parameters(int64_t heads, int64_t d_k) const;

  bool operator==(const ScaleMode& other) const {
    return entry_ == other.entry_ && constant_ == other.constant_;
  }

 private:
  const ScaleModeEntry* entry_;
  double constant_ = 0;  // the value, for a mode that takes one
};

}  // namespace gradflow::nn
