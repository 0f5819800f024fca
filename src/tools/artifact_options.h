#pragma once
/// What every command that loads a .ycm artifact takes: the trust policy (--trust KEY.pub,
/// repeatable, plus YOLOC_TRUSTED_KEYS; artifact/trust.h) and the memory cap (--max-memory;
/// runtime/memory_limit.h).
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "artifact/artifact_reader.h"
#include "runtime/engine.h"

namespace yoloc::tools {

struct ArtifactLoadOptions {
  std::vector<std::string> trust;  ///< --trust
  std::string max_memory;          ///< --max-memory; empty: the default
};

/// Adds --trust and, with `memory`, --max-memory to `c`.
void add_artifact_load_options(CLI::App& c, ArtifactLoadOptions& o, bool memory = true);

/// Opens the artifact `path` under the trust policy of `o` and the environment; `user_given`
/// false: an artifact this process compiled itself (into a temporary folder) a moment ago from
/// the user's ONNX model, which no key signs.
std::shared_ptr<const artifact::Artifact> open_trusted_artifact(const std::string& path,
                                                                const ArtifactLoadOptions& o,
                                                                bool user_given = true);

/// The bytes of --max-memory; 0 (the runtime's default) when it was not given. Raises a
/// UserError for a size it cannot read.
uint64_t max_memory_bytes(const ArtifactLoadOptions& o);

/// Engine options with `o`'s memory cap.
runtime::EngineOptions engine_options(const ArtifactLoadOptions& o, int threads, int device,
                                      int in_flight = 2);

}  // namespace yoloc::tools
