// The basic layers, in one include. Shapes: x is (..., C) with C the feature
// size; B batch, T positions.
#pragma once

#include "nn/activation.h"
#include "nn/dropout.h"
#include "nn/embedding.h"
#include "nn/linear.h"
#include "nn/norm.h"
#include "nn/positional.h"
