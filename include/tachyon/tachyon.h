#pragma once
// Tachyon: speed-of-light kernels for Hopper. One include for the whole API.
#include "tachyon/elementwise.h"
#include "tachyon/error.h"
#include "tachyon/gemm.h"
#include "tachyon/tensor.h"
#include "tachyon/norm.h"
#include "tachyon/softmax.h"
#include "tachyon/cross_entropy.h"
