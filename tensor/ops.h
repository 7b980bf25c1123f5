// Everything the tensor layer offers, in one include.
#pragma once

#include "tensor/creation.h"
#include "tensor/elementwise.h"
#include "tensor/index.h"
#include "tensor/map.h"
#include "tensor/matmul.h"
#include "tensor/parallel.h"
#include "tensor/reduce.h"
#include "tensor/tensor.h"
