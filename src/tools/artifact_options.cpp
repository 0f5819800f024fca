#include "tools/artifact_options.h"

#include "artifact/trust.h"
#include "runtime/memory_limit.h"

namespace yoloc::tools {

void add_artifact_load_options(CLI::App& c, ArtifactLoadOptions& o, bool memory) {
  c.add_option("--trust", o.trust,
               "load only artifacts signed by this public key (KEY.pub from yoloc keygen; "
               "repeatable: any of them; YOLOC_TRUSTED_KEYS=A.pub:B.pub adds more)");
  if (memory)
    c.add_option("--max-memory", o.max_memory,
                 "the most arena memory an artifact may ask for (bytes, or with K, M, G; "
                 "default: half of this machine's memory)");
}

std::shared_ptr<const artifact::Artifact> open_trusted_artifact(const std::string& path,
                                                                const ArtifactLoadOptions& o,
                                                                bool user_given) {
  artifact::ReadOptions read;
  if (user_given) read.trusted_keys = artifact::trusted_keys(o.trust);
  return std::make_shared<const artifact::Artifact>(artifact::Artifact::open(path, read));
}

runtime::EngineOptions engine_options(const ArtifactLoadOptions& o, int threads, int device,
                                      int in_flight) {
  runtime::EngineOptions e;
  e.threads = threads;
  e.device = device;
  e.in_flight = in_flight;
  e.max_memory = max_memory_bytes(o);
  return e;
}

uint64_t max_memory_bytes(const ArtifactLoadOptions& o) {
  return o.max_memory.empty() ? 0 : runtime::parse_memory_size(o.max_memory, "--max-memory");
}

}  // namespace yoloc::tools
