#pragma once
/// The runtime's view of a CPU artifact's program: the schema is the artifact's
/// (artifact/program.h); what the executors add is the check of a run's inputs.
#include <vector>

#include "artifact/manifest.h"
#include "artifact/program.h"
#include "yoloc/tensor.h"

namespace yoloc::runtime {

using artifact::Binding;
using artifact::json_item;
using artifact::kArena;
using artifact::KernelCall;
using artifact::parse_program;
using artifact::Program;
using artifact::ProgramReader;
using artifact::spec_bytes;

/// Raises a UserError unless `inputs` match the manifest's inputs in count, dtype and shape
/// (naming the first that does not): what every executor checks before a run.
void check_run_inputs(const artifact::Manifest& m, const std::vector<Tensor>& inputs);

}  // namespace yoloc::runtime
