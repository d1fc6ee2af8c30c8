#include "match/ccm_matcher.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <mutex>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "gpu/device/cuda_status.h"
#include "gpu/device/device.h"
#include "match/ccm_format.h"
#include "match/ccm_kernels.h"
#include "match/ccm_launch.h"
#include "match/ccm_tables.h"

namespace tandem::match {
namespace {

using ccm::CcmTables;
using ccm::DeviceConstraint;
using ccm::LaunchBuilder;
using gpu::CudaStream;
using gpu::DeviceBuffer;

constexpr int kMaxBatchEvents = 65536;
constexpr size_t kMaxLaunchInputs = size_t{1} << 20;
// Bitmaps up to this size are written to pinned host memory by the kernel's last block, sparing a
// small launch the latency of a copy after the kernel; larger ones come back by a copy, which one
// block writing them would take longer over.
constexpr size_t kPublishedResultBytes = size_t{2} << 10;

// Pinned host memory that grows (contents lost), for the launches' inputs and bitmaps: copies
// from it are true DMA, and it is allocated only when a launch outgrows it.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() { Free(); }

  absl::Status Reserve(size_t bytes) {
    if (bytes <= size_) return absl::OkStatus();
    const size_t size = std::max(bytes, size_ * 2);
    Free();
    TANDEM_CUDA_RETURN_IF_ERROR(cudaMallocHost(reinterpret_cast<void**>(&data_), size));
    size_ = size;
    return absl::OkStatus();
  }
  char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void Free() {
    if (data_ != nullptr) cudaFreeHost(data_);
    data_ = nullptr;
    size_ = 0;
  }

  char* data_ = nullptr;
  size_t size_ = 0;
};

// Grows a device copy of a mirrored table to `count` elements; its content is then copied whole.
// Freed first: between calls no device work is in flight, and the peak stays one copy.
template <typename T>
absl::Status GrowDeviceCopy(DeviceBuffer<T>& buffer, size_t count, ccm::DirtyPages& dirty) {
  if (buffer.size() >= count) return absl::OkStatus();
  buffer = DeviceBuffer<T>();
  TANDEM_ASSIGN_OR_RETURN(buffer, DeviceBuffer<T>::Allocate(count));
  dirty.MarkAll();
  return absl::OkStatus();
}

template <typename T>
absl::Status CopyToDevice(T* device, const T* host, size_t count, cudaStream_t stream) {
  // From pageable memory: the call returns once the bytes are staged, so the mirror may change.
  TANDEM_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(device, host, count * sizeof(T), cudaMemcpyHostToDevice, stream));
  return absl::OkStatus();
}

absl::Status CheckEvents(absl::Span<const Event> events) {
  for (size_t e = 0; e < events.size(); ++e) {
    const Event& event = events[e];
    for (size_t a = 0; a < event.attributes.size(); ++a) {
      if (a > 0 && !(event.attributes[a - 1].name < event.attributes[a].name)) {
        return absl::InvalidArgumentError(
            absl::StrCat("event ", e, ": attribute names are not sorted and unique (MakeEvent)"));
      }
      const Value& v = event.attributes[a].value;
      if (v.type == ValueType::kString && v.s.size() > ccm::kMaxStringBytes) {
        return absl::InvalidArgumentError(absl::StrCat("event ", e, ": a string of ", v.s.size(),
                                                       " bytes; at most ", ccm::kMaxStringBytes));
      }
    }
    for (size_t t = 1; t < event.terms.size(); ++t) {
      if (!(event.terms[t - 1] < event.terms[t])) {
        return absl::InvalidArgumentError(
            absl::StrCat("event ", e, ": terms are not sorted and unique (MakeEvent)"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

struct CcmMatcher::Impl {
  struct Subscription {
    std::vector<uint32_t> filters;  // ids in table Filters
  };

  ~Impl() {
    if (stream.get() != nullptr && cudaSetDevice(options.device) == cudaSuccess) {
      cudaStreamSynchronize(stream.get());
    }
  }

  absl::Status EnsureCapacity();
  absl::Status Upload();
  absl::Status RunLaunch(size_t events, std::vector<InterfaceId>* matched);
  void RemoveLocked(SubscriptionId id);

  CcmOptions options;
  uint64_t resident_threads = 0;

  mutable std::mutex mu;  // guards everything below
  absl::flat_hash_map<SubscriptionId, Subscription> subscriptions;
  CcmTables tables;
  LaunchBuilder builder;

  CudaStream stream;
  DeviceBuffer<DeviceConstraint> constraints;  // table Constraints
  DeviceBuffer<char> strings;
  DeviceBuffer<uint32_t> filters;  // table Filters
  // Count and Interfaces, two copies (section 4.3): copy c of launch slot e starts at word
  // (c * batch_events + e) * stride.
  DeviceBuffer<uint32_t> counters;
  DeviceBuffer<uint32_t> interfaces;
  DeviceBuffer<uint32_t> done;  // the kernel's count of finished blocks
  DeviceBuffer<char> inputs;    // a launch's staging buffer (ccm_launch.h)
  PinnedBuffer staging;
  ccm::InlineInputs inline_inputs;     // or a small launch's inputs, passed as kernel parameters
  PinnedBuffer results;                // a launch's bitmaps
  uint32_t* device_results = nullptr;  // `results` as the device addresses it
  uint32_t counter_stride = 0;
  uint32_t interface_stride = 0;
  uint32_t batch_events = 0;
  int active = 0;                    // the copy the next launch counts into
  uint32_t dirty_slots[2] = {0, 0};  // launch slots a launch may have left non-zero, per copy
  bool copies_known = false;         // false after a failure between a launch and its wait
};

absl::Status CcmMatcher::Impl::EnsureCapacity() {
  TANDEM_RETURN_IF_ERROR(
      GrowDeviceCopy(constraints, tables.constraints().size(), tables.dirty_constraints()));
  TANDEM_RETURN_IF_ERROR(GrowDeviceCopy(strings, tables.strings().size(), tables.dirty_strings()));
  TANDEM_RETURN_IF_ERROR(GrowDeviceCopy(filters, tables.filters().size(), tables.dirty_filters()));
  const uint32_t cstride = tables.filter_capacity() / 4;      // four 8-bit counters a word
  const uint32_t istride = tables.interface_capacity() / 32;  // both multiples of 4 words
  if (cstride != counter_stride || istride != interface_stride) {
    counter_stride = interface_stride = batch_events = 0;  // until both copies are there
    copies_known = false;
    counters = DeviceBuffer<uint32_t>();
    interfaces = DeviceBuffer<uint32_t>();
    const uint64_t slot_bytes = uint64_t{2} * (cstride + istride) * sizeof(uint32_t);
    const uint64_t batch = std::clamp<uint64_t>(options.max_counter_bytes / slot_bytes, 1,
                                                static_cast<uint64_t>(options.max_batch_events));
    TANDEM_ASSIGN_OR_RETURN(counters, DeviceBuffer<uint32_t>::Allocate(2 * batch * cstride));
    TANDEM_ASSIGN_OR_RETURN(interfaces, DeviceBuffer<uint32_t>::Allocate(2 * batch * istride));
    TANDEM_RETURN_IF_ERROR(results.Reserve(batch * istride * sizeof(uint32_t)));
    TANDEM_CUDA_RETURN_IF_ERROR(
        cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_results), results.data(), 0));
    counter_stride = cstride;
    interface_stride = istride;
    batch_events = static_cast<uint32_t>(batch);
  }
  if (done.size() == 0) {
    TANDEM_ASSIGN_OR_RETURN(done, DeviceBuffer<uint32_t>::Allocate(1));
    copies_known = false;
  }
  if (!copies_known) {
    // Zeroed once here; from then on every launch resets what the previous one used.
    TANDEM_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(done.data(), 0, done.bytes(), stream.get()));
    TANDEM_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(counters.data(), 0, counters.bytes(), stream.get()));
    TANDEM_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(interfaces.data(), 0, interfaces.bytes(), stream.get()));
    active = 0;
    dirty_slots[0] = dirty_slots[1] = 0;
    copies_known = true;
  }
  return absl::OkStatus();
}

absl::Status CcmMatcher::Impl::Upload() {
  cudaStream_t s = stream.get();
  TANDEM_RETURN_IF_ERROR(
      tables.dirty_constraints().Drain(tables.constraints_used(), [&](size_t begin, size_t end) {
        return CopyToDevice(constraints.data() + begin, tables.constraints().data() + begin,
                            end - begin, s);
      }));
  TANDEM_RETURN_IF_ERROR(tables.dirty_strings().Drain(tables.strings_used(), [&](size_t begin,
                                                                                 size_t end) {
    return CopyToDevice(strings.data() + begin, tables.strings().data() + begin, end - begin, s);
  }));
  return tables.dirty_filters().Drain(tables.filters_used(), [&](size_t begin, size_t end) {
    return CopyToDevice(filters.data() + begin, tables.filters().data() + begin, end - begin, s);
  });
}

// One launch of the events the builder laid out: at most one copy in (none when the inputs fit in
// the kernel's parameters), one kernel, at most one copy out, one wait.
absl::Status CcmMatcher::Impl::RunLaunch(size_t events, std::vector<InterfaceId>* matched) {
  const int idle = 1 - active;
  const uint64_t active_slot = uint64_t{static_cast<uint32_t>(active)} * batch_events;
  const uint64_t idle_slot = uint64_t{static_cast<uint32_t>(idle)} * batch_events;
  ccm::LaunchParams p{};
  p.constraints = constraints.data();
  p.strings = strings.data();
  p.filters = filters.data();
  p.num_inputs = static_cast<uint32_t>(builder.num_inputs());
  p.num_chunks = static_cast<uint32_t>(builder.num_chunks());
  p.chunk_items = builder.chunk_items();
  p.num_events = static_cast<uint32_t>(events);
  p.counter_stride = counter_stride;
  p.interface_stride = interface_stride;
  p.counters = counters.data() + active_slot * counter_stride;
  p.interfaces = interfaces.data() + active_slot * interface_stride;
  p.idle_counters = counters.data() + idle_slot * counter_stride;
  p.idle_interfaces = interfaces.data() + idle_slot * interface_stride;
  p.idle_counter_words = uint64_t{dirty_slots[idle]} * counter_stride;
  p.idle_interface_words = uint64_t{dirty_slots[idle]} * interface_stride;
  const size_t result_bytes = events * interface_stride * sizeof(uint32_t);
  if (result_bytes <= kPublishedResultBytes) {
    p.host_interfaces = device_results;
    p.done = done.data();
  }

  cudaStream_t s = stream.get();
  const bool inline_launch =
      builder.num_inputs() <= ccm::kInlineInputs && builder.bytes().size() <= ccm::kInlineBytes;
  if (inline_launch) {
    std::copy(builder.inputs().begin(), builder.inputs().end(), inline_inputs.inputs);
    std::copy(builder.bytes().begin(), builder.bytes().end(), inline_inputs.bytes);
  } else {
    const size_t bytes = builder.staging_bytes();
    TANDEM_RETURN_IF_ERROR(staging.Reserve(bytes));
    if (inputs.size() < bytes) {
      const size_t size = std::max(bytes, inputs.size() * 2);
      inputs = DeviceBuffer<char>();
      TANDEM_ASSIGN_OR_RETURN(inputs, DeviceBuffer<char>::Allocate(size));
    }
    builder.WriteStaging(staging.data());
    p.inputs = reinterpret_cast<const ccm::DeviceInput*>(inputs.data());
    p.chunk_input = reinterpret_cast<const uint32_t*>(inputs.data() + builder.chunks_offset());
    p.input_bytes = inputs.data() + builder.bytes_offset();
  }

  copies_known = false;  // until the wait says the launch ran
  if (!inline_launch) {
    TANDEM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
        inputs.data(), staging.data(), builder.staging_bytes(), cudaMemcpyHostToDevice, s));
  }
  TANDEM_RETURN_IF_ERROR(ccm::LaunchMatch(p, inline_launch ? &inline_inputs : nullptr, s));
  if (p.host_interfaces == nullptr) {
    TANDEM_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(results.data(), p.interfaces, result_bytes, cudaMemcpyDeviceToHost, s));
  }
  TANDEM_RETURN_IF_ERROR(stream.Synchronize());
  dirty_slots[idle] = 0;
  dirty_slots[active] = static_cast<uint32_t>(events);
  active = idle;
  copies_known = true;

  const uint32_t* words = reinterpret_cast<const uint32_t*>(results.data());
  for (size_t e = 0; e < events; ++e) {
    const uint32_t* bitmap = words + e * interface_stride;
    for (uint32_t w = 0; w < interface_stride; ++w) {
      for (uint32_t bits = bitmap[w]; bits != 0; bits &= bits - 1) {
        matched[e].push_back(w * 32 + static_cast<uint32_t>(std::countr_zero(bits)));
      }
    }
  }
  return absl::OkStatus();
}

void CcmMatcher::Impl::RemoveLocked(SubscriptionId id) {
  const auto it = subscriptions.find(id);
  for (uint32_t f : it->second.filters) tables.RemoveFilter(f);
  subscriptions.erase(it);
}

absl::StatusOr<std::unique_ptr<CcmMatcher>> CcmMatcher::Create(const CcmOptions& options) {
  if (options.max_batch_events < 1 || options.max_batch_events > kMaxBatchEvents) {
    return absl::InvalidArgumentError(absl::StrCat("the GPU matcher takes 1 to ", kMaxBatchEvents,
                                                   " events a launch, not ",
                                                   options.max_batch_events));
  }
  if (options.max_counter_bytes == 0) {
    return absl::InvalidArgumentError("the GPU matcher needs device memory for its counters");
  }
  if (absl::StatusOr<gpu::DeviceInfo> info = gpu::ProbeDevice(options.device); !info.ok()) {
    return absl::UnavailableError(
        absl::StrCat("the GPU matcher has no device: ", info.status().message()));
  }
  TANDEM_CUDA_RETURN_IF_ERROR(cudaSetDevice(options.device));
  TANDEM_RETURN_IF_ERROR(ccm::CheckKernelImage());
  int sms = 0, threads_per_sm = 0;
  TANDEM_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, options.device));
  TANDEM_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(
      &threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, options.device));
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->resident_threads =
      uint64_t{static_cast<uint32_t>(sms)} * static_cast<uint32_t>(threads_per_sm);
  TANDEM_ASSIGN_OR_RETURN(impl->stream, CudaStream::Create());
  TANDEM_RETURN_IF_ERROR(impl->EnsureCapacity());
  TANDEM_RETURN_IF_ERROR(impl->stream.Synchronize());
  return std::unique_ptr<CcmMatcher>(new CcmMatcher(std::move(impl)));
}

CcmMatcher::CcmMatcher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CcmMatcher::~CcmMatcher() = default;

absl::Status CcmMatcher::Add(SubscriptionId id, InterfaceId interface, const Predicate& predicate) {
  if (interface >= ccm::kMaxInterfaces) {
    return absl::ResourceExhaustedError(absl::StrCat("interface ", interface,
                                                     ": the GPU matcher holds interfaces 0 to ",
                                                     ccm::kMaxInterfaces - 1));
  }
  size_t constraints = 0;
  for (size_t f = 0; f < predicate.filters.size(); ++f) {
    if (absl::Status s = CcmTables::CheckFilter(predicate.filters[f]); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("filter ", f + 1, ": ", s.message()));
    }
    constraints += predicate.filters[f].constraints.size();
  }
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  if (m.subscriptions.contains(id)) {
    return absl::AlreadyExistsError(absl::StrCat("subscription ", id, " exists"));
  }
  TANDEM_RETURN_IF_ERROR(m.tables.CheckRoom(predicate.filters.size(), constraints));
  Impl::Subscription& sub = m.subscriptions[id];
  sub.filters.reserve(predicate.filters.size());
  for (const Filter& filter : predicate.filters) {
    sub.filters.push_back(m.tables.AddFilter(interface, filter));
  }
  // Device memory for tables that grew, now, so that Add reports what the device cannot hold.
  absl::Status status;
  if (const cudaError_t e = cudaSetDevice(m.options.device); e != cudaSuccess) {
    status = gpu::CudaErrorToStatus(e, "cudaSetDevice", __FILE__, __LINE__);
  } else {
    status = m.EnsureCapacity();
  }
  if (!status.ok()) m.RemoveLocked(id);
  return status;
}

absl::Status CcmMatcher::Remove(SubscriptionId id) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  if (!m.subscriptions.contains(id)) {
    return absl::NotFoundError(absl::StrCat("no subscription ", id));
  }
  m.RemoveLocked(id);
  return absl::OkStatus();
}

absl::Status CcmMatcher::Match(absl::Span<const Event> events,
                               std::vector<std::vector<InterfaceId>>* matched) {
  TANDEM_RETURN_IF_ERROR(CheckEvents(events));
  matched->resize(events.size());
  for (std::vector<InterfaceId>& m : *matched) m.clear();  // keeps the caller's capacity
  if (events.empty()) return absl::OkStatus();
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  TANDEM_CUDA_RETURN_IF_ERROR(cudaSetDevice(m.options.device));
  TANDEM_RETURN_IF_ERROR(m.EnsureCapacity());
  TANDEM_RETURN_IF_ERROR(m.Upload());
  LaunchBuilder::Limits limits;
  limits.max_events = m.batch_events;
  limits.max_inputs = kMaxLaunchInputs;
  limits.resident_threads = m.resident_threads;
  for (size_t done = 0; done < events.size();) {
    const size_t taken = m.builder.Build(m.tables, events.subspan(done), limits);
    // No input selects a row: no filter can match, and the copies stay as they are.
    if (m.builder.num_chunks() > 0) {
      TANDEM_RETURN_IF_ERROR(m.RunLaunch(taken, matched->data() + done));
    }
    done += taken;
  }
  return absl::OkStatus();
}

MatcherStats CcmMatcher::stats() const {
  const Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  MatcherStats stats;
  stats.subscriptions = m.subscriptions.size();
  stats.filters = m.tables.live_filters();
  stats.constraints = m.tables.live_constraints();
  stats.host_bytes =
      m.tables.host_bytes() + m.builder.host_bytes() + m.staging.size() + m.results.size() +
      m.subscriptions.capacity() * (sizeof(SubscriptionId) + sizeof(Impl::Subscription)) +
      m.tables.live_filters() * sizeof(uint32_t);
  stats.device_bytes = m.constraints.bytes() + m.strings.bytes() + m.filters.bytes() +
                       m.counters.bytes() + m.interfaces.bytes() + m.inputs.bytes() +
                       m.done.bytes();
  return stats;
}

}  // namespace tandem::match
