// The norms, as one table: what every residual sublayer's norm and the
// models' final norm are (ModelConfig::norm_type; where they sit is
// ModelConfig::norm, pre or post). Model building, validation, the flags'
// choices (--norm-type), the metadata and the memory estimate read the
// table, so a new norm is one row of norm_kinds() in norm_kinds.cpp and its
// layer in a file of its own (as DyT's, dyt.h), which only norm_kinds.cpp
// includes.
// The norms are listed with their formulas above the table, in
// norm_kinds.cpp, so that a new row edits no header.
//
// The scale mode qk_norm's LayerNorms on q and k are that mode's own
// (scale_modes.h), not this table's.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/norm.h"

namespace gradflow::nn {

struct NormKind {
  const char* name;     // as in flags and files
  const char* summary;  // one line, for --help and docs
  std::shared_ptr<Norm> (*make)(int64_t dim, Init init);
  // Its parameters over `dim` channels. For the memory estimate (tested
  // against the models built), in a double: a hostile size's count need not
  // fit in int64.
  double (*parameters)(double dim);
  // (tokens, dim) tensors its backward keeps beyond its input, which the
  // residual stream keeps anyway (the memory estimate): the fused layer_norm
  // none, the composed rms_norm x / rms (each row says its own).
  double kept = 0;
};

const std::vector<NormKind>& norm_kinds();
// The norm called `name`; throws Error listing the names if none is.
const NormKind& norm_kind(const std::string& name);
std::vector<std::string> norm_kind_names();

}  // namespace gradflow::nn
