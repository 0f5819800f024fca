// libFuzzer target: the tuning records parser (JSON lines of measurements), then the queries
// compile runs on what it parsed.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "fuzz_input_file.h"
#include "tuner/records.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const yoloc::tuner::RecordSet set = yoloc::tuner::load_records(yoloc::fuzz::as_file(data, size));
    for (const auto& r : set.records) {
      yoloc::tuner::workload_key_batch(r.key);
      yoloc::tuner::workload_key_at_batch(r.key, 4);
    }
    if (!set.records.empty()) {
      yoloc::tuner::RecordQuery q;
      q.target = set.records[0].target;
      q.batch = set.records[0].batch;
      yoloc::tuner::best_records(set.records, q);
    }
  } catch (const yoloc::UserError&) {
  }
  return 0;
}
