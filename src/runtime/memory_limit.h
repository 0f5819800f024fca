#pragma once
/// The cap on the memory an artifact may make the runtime commit (its arena): the manifest's
/// arena size is the artifact's to say, so an edited one could otherwise ask for any amount.
/// Default: half of this machine's physical memory; `--max-memory` / the APIs' max_memory
/// change it.
#include <cstdint>
#include <string>

namespace yoloc::runtime {

/// Half of this machine's physical memory (1 GiB when it cannot be told).
uint64_t default_max_memory();

/// Bytes from "4096", "512K", "300M", "2G", "1.5G" (powers of 1024); raises a UserError naming
/// `option` for anything else or zero.
uint64_t parse_memory_size(const std::string& text, const std::string& option);

/// Raises a UserError naming `where` when an arena of `bytes` exceeds `max` (0: the default).
void check_arena_size(uint64_t bytes, uint64_t max, const std::string& where);

}  // namespace yoloc::runtime
