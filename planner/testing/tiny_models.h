// Models small enough that a test can enumerate their search space by hand
// (search_space_test.cc derives the layouts and knob sets; search_test.cc
// scores them with hand formulas). Test-only.
#pragma once

#include "planner/model_spec.h"

namespace moetune::planner {

// Dense: 2 layers, hidden 512, 4 heads of 128 (no GQA), FFN 2048, vocab 1024.
ModelSpec TinyDense();

// MoE: 4 layers, hidden 512, 4 heads of 128, 8 routed experts of width 256,
// top-2, vocab 1024.
ModelSpec TinyMoe();

}  // namespace moetune::planner
