// The run the checkpoint harness loads into and fuzz_seeds saves from: a Linear layer, its AdamW
// and one generator, small enough to build for every input.
#pragma once

#include "nn/linear.h"
#include "nn/optim/optim.h"
#include "tensor/random.h"

namespace gradflow::fuzz {

struct TinyRun {
  Generator init{1}, data{2};
  nn::Linear model;
  nn::AdamW optimizer;
  TinyRun() : model(3, 2, {}, nn::Init(init)), optimizer(model.parameters(), 1e-3) {}
  std::vector<std::pair<std::string, Generator*>> generators() { return {{"data", &data}}; }
};

}  // namespace gradflow::fuzz
