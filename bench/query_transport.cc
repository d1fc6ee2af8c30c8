#include "bench/query_transport.h"

#include <algorithm>

namespace tandem::bench {

void Recorder::Record(std::chrono::steady_clock::time_point scheduled,
                      std::chrono::steady_clock::time_point now, grpc::StatusCode code,
                      const tandem::v1::QueryStats* stats) {
  counts[code]++;
  last_completion = std::max(last_completion, now);
  if (code != grpc::StatusCode::OK) return;
  ok_latency_us.push_back(std::chrono::duration<double, std::micro>(now - scheduled).count());
  if (stats == nullptr) return;
  queued_us += static_cast<double>(stats->queued_micros());
  execution_us += static_cast<double>(stats->execution_micros());
  total_us += static_cast<double>(stats->total_micros());
}

}  // namespace tandem::bench
