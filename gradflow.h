// gradflow's public API in one include: tensors, automatic differentiation,
// layers, attention, models, optimizers, checkpoints and the toy data.
//
//   From an installed package:  #include <gradflow/gradflow.h>
//   Inside this repository:     #include "gradflow.h"
//
// Each header it brings in may also be included on its own, as
// <gradflow/nn/linear.h> from a package or "nn/linear.h" here; the library's
// own files use the second form, which the package's include path also serves.
// Everything is in namespace gradflow (layers in gradflow::nn); every error
// is a gradflow::Error (tensor/error.h) whose what() is one readable line.
#pragma once

// tensor/: N-d tensors and their ops, no gradients.
#include "tensor/kernels/blas_info.h"  // what runs the products, for a program's output
#include "tensor/ops.h"
#include "tensor/random.h"
// autograd/: Variable, the differentiable ops, gradient checks.
#include "autograd/data_parallel.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "autograd/reference.h"
// nn/: modules, layers, attention, blocks and models.
#include "nn/attention.h"
#include "nn/ffn_kinds.h"
#include "nn/generate.h"
#include "nn/init.h"
#include "nn/layers.h"
#include "nn/length_scale.h"
#include "nn/loss.h"
#include "nn/masks.h"
#include "nn/models.h"
#include "nn/module.h"
#include "nn/norm_kinds.h"
#include "nn/positional_schemes.h"
#include "nn/qk_norm.h"
#include "nn/rope.h"
#include "nn/scale_modes.h"
#include "nn/scale_variants.h"
#include "nn/transformer.h"
// nn/optim/, nn/io/, nn/data/: optimizers, files and toy data.
#include "nn/data/char_dataset.h"
#include "nn/data/recall_task.h"
#include "nn/data/text_corpus.h"
#include "nn/data/toy_tasks.h"
#include "nn/io/checkpoint.h"
#include "nn/io/model_file.h"
#include "nn/io/safetensors.h"
#include "nn/optim/optim.h"
#include "nn/optim/schedule.h"
#include "nn/optim/training_step.h"
