#include "gpu/engine/query_pipeline.h"

namespace tandem::gpu {

absl::Status DecodeWholeList(const DeviceList& list, uint32_t* out, cudaStream_t stream) {
  return list.codec == GpuCodec::kPFor
             ? DecodePForList(list.pfor, DecodeOutput::kDocids, out, stream)
             : DecodeRiceList(list.rice, DecodeOutput::kDocids, out, stream);
}

bool UseHeap(TopKMethod method, uint32_t k) {
  return method == TopKMethod::kMultiLevelHeap ||
         (method == TopKMethod::kAuto && k <= kHeapTopKLimit);
}

std::vector<index::Hit> ToHits(const std::vector<DeviceHit>& device_hits) {
  std::vector<index::Hit> hits;
  hits.reserve(device_hits.size());
  for (const DeviceHit& h : device_hits) hits.push_back({h.docid, h.score});
  return hits;
}

}  // namespace tandem::gpu
