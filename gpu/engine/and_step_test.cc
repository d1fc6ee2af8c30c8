// The AND's sync-free step (gpu/query_ops.h: LocateCandidateBlocks, Decode*BlocksInPlace,
// SearchInPlaceAndCompact) and its scoring (ScoreIntoKeys) against host references: both codecs and
// block sizes, candidate counts from 1 to past what one launch of kMaxInPlaceWarps warps covers in
// a round (32 x 8192), counts given on the host or left on the device with garbage past them, two
// steps chained through the device count, and more terms than one scoring launch takes. Label
// "gpu": skips without a device.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gpu/device/cuda_status.h"
#include "gpu/device/device.h"
#include "gpu/device/device_test_util.h"
#include "gpu/engine/query_ops.h"
#include "gpu/layouts/decode.h"
#include "gpu/layouts/list_layout.h"
#include "gpu/layouts/random_lists.h"
#include "gtest/gtest.h"
#include "index/bm25.h"

namespace tandem::gpu {
namespace {

constexpr uint32_t kPoison = 0xa5a5a5a5u;

// n sorted distinct docIDs with geometric gaps of the given mean, from `first` on.
std::vector<uint32_t> SortedList(size_t n, double mean_gap, std::mt19937_64& rng) {
  return testing::DocidsFromGaps(testing::GeometricGaps(n, mean_gap, rng));
}

enum class Codec { kPFor128, kPFor512, kRice };
const char* Name(Codec c) {
  return c == Codec::kPFor128 ? "pfor128" : c == Codec::kPFor512 ? "pfor512" : "rice";
}

// A docID list on the device in one codec, with its decode-in-place call and reference.
struct DeviceDocList {
  std::vector<uint32_t> docids;
  std::vector<uint32_t> words;
  DeviceBuffer<uint32_t> image;
  Codec codec;
  PForDesc pfor;
  RiceDesc rice;
  uint32_t num_blocks = 0;
  uint32_t block_size = 0;
  const uint32_t* bases() const {
    return image.data() + (codec == Codec::kRice ? rice.bases : pfor.bases);
  }
  absl::Status DecodeInPlace(const uint32_t* entries, uint32_t max_entries,
                             const uint32_t* device_count, uint32_t* out,
                             cudaStream_t stream) const {
    return codec == Codec::kRice
               ? DecodeRiceBlocksInPlace({rice, image.data()}, entries, max_entries, device_count,
                                         DecodeOutput::kDocids, out, stream)
               : DecodePForBlocksInPlace({pfor, image.data()}, entries, max_entries, device_count,
                                         DecodeOutput::kDocids, out, stream);
  }
};

template <typename T>
DeviceBuffer<T> Upload(const std::vector<T>& values, size_t capacity, cudaStream_t stream) {
  auto buffer = DeviceBuffer<T>::Allocate(std::max<size_t>(capacity, 1));
  EXPECT_TRUE(buffer.ok()) << buffer.status();
  if (!buffer.ok()) return {};
  if (!values.empty()) {
    EXPECT_TRUE(buffer->CopyFromHost(values.data(), values.size(), stream).ok());
  }
  return *std::move(buffer);
}

template <typename T>
std::vector<T> Download(const T* device, size_t n, cudaStream_t stream) {
  std::vector<T> host(n);
  if (n > 0) {
    EXPECT_EQ(cudaMemcpyAsync(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost, stream),
              cudaSuccess);
  }
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  return host;
}

class AndStepTest : public ArenaTest<size_t{256} << 20> {
 protected:
  DeviceDocList MakeList(std::vector<uint32_t> docids, Codec codec) {
    DeviceDocList list;
    list.codec = codec;
    list.docids = std::move(docids);
    if (codec == Codec::kRice) {
      auto image = BuildRiceDocids(list.docids);
      EXPECT_TRUE(image.ok()) << image.status();
      list.rice = image->desc;
      list.words = image->words;
      list.num_blocks = image->desc.num_blocks;
      list.block_size = kRiceBlock;
    } else {
      PForOptions options;
      options.block_size = codec == Codec::kPFor128 ? 128 : 512;
      auto image = BuildPForDocids(list.docids, options);
      EXPECT_TRUE(image.ok()) << image.status();
      list.pfor = image->desc;
      list.words = image->words;
      list.num_blocks = image->desc.num_blocks;
      list.block_size = options.block_size;
    }
    list.image = Upload(list.words, list.words.size(), stream_.get());
    return list;
  }

  // One step: candidates cand[0..n) (n on the host, or on the device with max_n - n garbage entries
  // after them) against `list`. Checks the in-place decode (named blocks exact, the rest untouched)
  // and returns the survivors and their `rows` rows of positions through the out parameters.
  void Step(const DeviceDocList& list, const uint32_t* d_cand, uint32_t max_n,
            const uint32_t* device_n, uint32_t n, uint32_t* pos_in, uint32_t* pos_out,
            uint32_t rows, uint64_t stride, bool implicit_row0, uint32_t* cand_out,
            uint32_t* count_out, const std::vector<uint32_t>& host_cand) {
    cudaStream_t s = stream_.get();
    ScratchArena arena(arena_memory_.data(), kArenaBytes);
    auto cand_block = DeviceBuffer<uint32_t>::Allocate(std::max(max_n, 1u));
    auto entries = DeviceBuffer<uint32_t>::Allocate(std::max(max_n, 1u));
    const size_t decoded_size = size_t{list.num_blocks} * list.block_size;
    auto decoded = DeviceBuffer<uint32_t>::Allocate(decoded_size);
    ASSERT_TRUE(cand_block.ok() && entries.ok() && decoded.ok());
    ASSERT_EQ(cudaMemsetAsync(decoded->data(), 0xa5, decoded->bytes(), s), cudaSuccess);
    ASSERT_TRUE(LocateCandidateBlocks(d_cand, max_n, device_n, list.bases(), list.num_blocks,
                                      cand_block->data(), entries->data(), s)
                    .ok());
    ASSERT_TRUE(list.DecodeInPlace(entries->data(), max_n, device_n, decoded->data(), s).ok());
    ASSERT_TRUE(SearchInPlaceAndCompact(d_cand, max_n, device_n, cand_block->data(),
                                        decoded->data(), list.block_size, list.num_blocks,
                                        static_cast<uint32_t>(list.docids.size()), pos_in, pos_out,
                                        rows, stride, implicit_row0, cand_out, count_out, arena, s)
                    .ok());

    // The blocks the candidates fall in are decoded in place; no other block is written.
    std::set<uint32_t> named;
    for (uint32_t i = 0; i < n; ++i) {
      const auto it = std::lower_bound(list.docids.begin(), list.docids.end(), host_cand[i]);
      if (it != list.docids.end()) named.insert((it - list.docids.begin()) / list.block_size);
    }
    const std::vector<uint32_t> got = Download(decoded->data(), decoded_size, s);
    for (uint32_t k = 0; k < list.num_blocks; ++k) {
      const bool decoded_here = named.count(k) != 0;
      for (uint32_t j = k * list.block_size;
           j < std::min<size_t>((k + 1) * list.block_size, list.docids.size()); ++j) {
        const uint32_t want = decoded_here ? list.docids[j] : kPoison;
        ASSERT_EQ(got[j], want) << Name(list.codec) << " block " << k << " posting " << j
                                << (decoded_here ? " (named)" : " (not named)");
      }
    }
  }
};

// Host intersection of the candidates with a list: survivor i of cand and its position in list.
struct Survivor {
  uint32_t index;
  uint32_t position;
};
std::vector<Survivor> HostIntersect(const std::vector<uint32_t>& cand,
                                    const std::vector<uint32_t>& list) {
  std::vector<Survivor> out;
  for (uint32_t i = 0; i < cand.size(); ++i) {
    const auto it = std::lower_bound(list.begin(), list.end(), cand[i]);
    if (it != list.end() && *it == cand[i]) {
      out.push_back({i, static_cast<uint32_t>(it - list.begin())});
    }
  }
  return out;
}

TEST_F(AndStepTest, TwoChainedStepsMatchTheHostIntersection) {
  cudaStream_t s = stream_.get();
  std::mt19937_64 rng(11);
  // (lead length, mean gap of the lead, second list length, its mean gap): sparse and dense
  // candidates, lists shorter and longer than the lead, and more candidates than one round of
  // the in-place decode covers (32 x kMaxInPlaceWarps = 262,144).
  struct Shape {
    uint32_t lead, second, third;
    double lead_gap, second_gap, third_gap;
  };
  const Shape shapes[] = {{1, 1000, 500, 3.0, 5.0, 5.0},
                          {37, 20000, 3000, 100.0, 2.0, 1.5},
                          {5000, 200, 40000, 20.0, 400.0, 2.0},
                          {300000, 1500000, 700000, 3.0, 1.4, 2.5}};
  for (const Shape& shape : shapes) {
    for (Codec codec : {Codec::kPFor128, Codec::kPFor512, Codec::kRice}) {
      for (bool count_on_device : {false, true}) {
        SCOPED_TRACE(std::string(Name(codec)) + " lead " + std::to_string(shape.lead) +
                     (count_on_device ? " count on the device" : " count on the host"));
        const std::vector<uint32_t> lead = SortedList(shape.lead, shape.lead_gap, rng);
        const DeviceDocList second =
            MakeList(SortedList(shape.second, shape.second_gap, rng), codec);
        const DeviceDocList third = MakeList(SortedList(shape.third, shape.third_gap, rng), codec);
        const uint32_t n = shape.lead;
        // With the count on the device the launches are sized for more, and the extra candidates
        // are garbage (docIDs that would match) that must be ignored.
        const uint32_t max_n = count_on_device ? n + 777 : n;
        std::vector<uint32_t> cand = lead;
        for (uint32_t i = n; i < max_n; ++i)
          cand.push_back(second.docids[i % second.docids.size()]);
        const uint64_t stride = max_n;
        DeviceBuffer<uint32_t> d_cand = Upload(cand, max_n, s);
        auto cand_next = DeviceBuffer<uint32_t>::Allocate(max_n);
        auto pos = DeviceBuffer<uint32_t>::Allocate(stride * 3);
        auto pos_next = DeviceBuffer<uint32_t>::Allocate(stride * 3);
        auto count = DeviceBuffer<uint32_t>::Allocate(1);
        ASSERT_TRUE(cand_next.ok() && pos.ok() && pos_next.ok() && count.ok());
        ASSERT_TRUE(count->CopyFromHost(&n, 1, s).ok());
        const uint32_t* device_n = count_on_device ? count->data() : nullptr;

        // Step 1: the lead's positions are implicit (row 0 = candidate index).
        ASSERT_NO_FATAL_FAILURE(Step(second, d_cand.data(), max_n, device_n, n, pos->data(),
                                     pos_next->data(), 2, stride, true, cand_next->data(),
                                     count->data(), lead));
        const std::vector<Survivor> first = HostIntersect(lead, second.docids);
        const uint32_t survivors = Download(count->data(), 1, s)[0];
        ASSERT_EQ(survivors, first.size());
        const std::vector<uint32_t> got_cand = Download(cand_next->data(), survivors, s);
        const std::vector<uint32_t> got_pos = Download(pos_next->data(), stride * 2, s);
        std::vector<uint32_t> host_cand2;
        for (uint32_t j = 0; j < survivors; ++j) {
          ASSERT_EQ(got_cand[j], lead[first[j].index]) << "survivor " << j;
          ASSERT_EQ(got_pos[j], first[j].index) << "survivor " << j << " lead position";
          ASSERT_EQ(got_pos[stride + j], first[j].position) << "survivor " << j;
          host_cand2.push_back(lead[first[j].index]);
        }

        // Step 2: the count comes from step 1 on the device, launches sized for max_n again.
        ASSERT_NO_FATAL_FAILURE(Step(third, cand_next->data(), max_n, count->data(), survivors,
                                     pos_next->data(), pos->data(), 3, stride, false, d_cand.data(),
                                     count->data(), host_cand2));
        const std::vector<Survivor> second_step = HostIntersect(host_cand2, third.docids);
        const uint32_t survivors2 = Download(count->data(), 1, s)[0];
        ASSERT_EQ(survivors2, second_step.size());
        const std::vector<uint32_t> got_cand2 = Download(d_cand.data(), survivors2, s);
        const std::vector<uint32_t> got_pos2 = Download(pos->data(), stride * 3, s);
        for (uint32_t j = 0; j < survivors2; ++j) {
          const Survivor& from = first[second_step[j].index];
          ASSERT_EQ(got_cand2[j], lead[from.index]) << "survivor " << j;
          ASSERT_EQ(got_pos2[j], from.index);
          ASSERT_EQ(got_pos2[stride + j], from.position);
          ASSERT_EQ(got_pos2[2 * stride + j], second_step[j].position);
        }
      }
    }
  }
}

TEST_F(AndStepTest, ZeroCandidatesOnTheDeviceLeaveNothing) {
  cudaStream_t s = stream_.get();
  std::mt19937_64 rng(3);
  const DeviceDocList list = MakeList(SortedList(5000, 3.0, rng), Codec::kPFor128);
  const std::vector<uint32_t> cand = SortedList(100, 3.0, rng);
  DeviceBuffer<uint32_t> d_cand = Upload(cand, cand.size(), s);
  auto out = DeviceBuffer<uint32_t>::Allocate(cand.size());
  auto pos = DeviceBuffer<uint32_t>::Allocate(cand.size() * 2);
  auto pos_next = DeviceBuffer<uint32_t>::Allocate(cand.size() * 2);
  const uint32_t zero = 0, garbage = 12345;
  DeviceBuffer<uint32_t> count = Upload(std::vector<uint32_t>{zero}, 1, s);
  DeviceBuffer<uint32_t> count_out = Upload(std::vector<uint32_t>{garbage}, 1, s);
  ASSERT_TRUE(out.ok() && pos.ok() && pos_next.ok());
  ASSERT_NO_FATAL_FAILURE(Step(list, d_cand.data(), 100, count.data(), 0, pos->data(),
                               pos_next->data(), 2, 100, true, out->data(), count_out.data(), {}));
  EXPECT_EQ(Download(count_out.data(), 1, s)[0], 0u);
}

TEST_F(AndStepTest, BadArgumentsAreRefused) {
  ScratchArena arena(arena_memory_.data(), kArenaBytes);
  uint32_t* p = reinterpret_cast<uint32_t*>(arena_memory_.data());
  EXPECT_EQ(LocateCandidateBlocks(p, 1, nullptr, p, 0, p, p, stream_.get()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LocateCandidateBlocks(p, 1, nullptr, p, 1, p, p, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SearchInPlaceAndCompact(p, 1, nullptr, p, p, 128, 1, 1, p, p, 1, 1, true, p, p, arena,
                                    stream_.get())
                .code(),
            absl::StatusCode::kInvalidArgument);  // implicit row 0 needs a second row
  EXPECT_EQ(SearchInPlaceAndCompact(p, 1, nullptr, p, p, 128, 1, 1, p, p, 2, 1, true, p, nullptr,
                                    arena, stream_.get())
                .code(),
            absl::StatusCode::kInvalidArgument);  // no count word
  EXPECT_EQ(ScoreIntoKeys(p, 1, {}, nullptr, nullptr, arena, stream_.get()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      DecodePForBlocksInPlace({}, nullptr, 1, nullptr, DecodeOutput::kDocids, p, stream_.get())
          .code(),
      absl::StatusCode::kInvalidArgument);
}

// The host's top-k key of query_kernels.cuh: flipped score bits, then the docID.
uint64_t HostKey(float score, uint32_t docid) {
  if (!(score > 0.0f)) return ~uint64_t{0};
  uint32_t bits;
  std::memcpy(&bits, &score, sizeof(bits));
  return (static_cast<uint64_t>(~bits) << 32) | docid;
}

// ScoreIntoKeys sums every term's BM25 in the given order with the host's float operations, for
// one term read at the survivors' own indices and for more terms than one launch takes (16).
TEST_F(AndStepTest, ScoresIntoKeysBitEqualToTheHost) {
  cudaStream_t s = stream_.get();
  std::mt19937_64 rng(17);
  const uint32_t num_docs = 100000, list_len = 60000, n = 20000;
  std::vector<float> norms(num_docs);
  for (float& x : norms) x = 0.3f + static_cast<float>(rng() % 1000) / 517.0f;
  DeviceBuffer<float> d_norms = Upload(norms, num_docs, s);
  std::vector<uint32_t> docs = SortedList(n, 4.0, rng);
  DeviceBuffer<uint32_t> d_docs = Upload(docs, n, s);

  for (uint32_t num_terms : {1u, 3u, 16u, 17u, 40u}) {
    SCOPED_TRACE(std::to_string(num_terms) + " terms");
    std::vector<std::vector<uint32_t>> freqs(num_terms), positions(num_terms);
    std::vector<DeviceBuffer<uint32_t>> images, d_positions;
    std::vector<AndScoreTerm> terms(num_terms);
    for (uint32_t t = 0; t < num_terms; ++t) {
      freqs[t] = testing::ZipfFrequencies(list_len, 500, rng);
      auto image = BuildFreqs(freqs[t]);
      ASSERT_TRUE(image.ok()) << image.status();
      images.push_back(Upload(image->words, image->words.size(), s));
      terms[t].freqs = {image->desc, images.back().data()};
      terms[t].weighted_idf = 0.5f + static_cast<float>(t % 7) * 0.37f;
      if (num_terms > 1) {
        positions[t].resize(n);
        for (uint32_t& p : positions[t]) p = rng() % list_len;
        d_positions.push_back(Upload(positions[t], n, s));
        terms[t].positions = d_positions.back().data();
      }
    }
    ScratchArena arena(arena_memory_.data(), kArenaBytes);
    auto keys = DeviceBuffer<uint64_t>::Allocate(n);
    ASSERT_TRUE(keys.ok());
    ASSERT_TRUE(
        ScoreIntoKeys(d_docs.data(), n, terms, d_norms.data(), keys->data(), arena, s).ok());
    const std::vector<uint64_t> got = Download(keys->data(), n, s);
    for (uint32_t i = 0; i < n; ++i) {
      float score = 0.0f;
      for (uint32_t t = 0; t < num_terms; ++t) {
        const uint32_t p = num_terms > 1 ? positions[t][i] : i;
        score += index::Bm25Score(terms[t].weighted_idf, freqs[t][p], norms[docs[i]]);
      }
      ASSERT_EQ(got[i], HostKey(score, docs[i])) << "survivor " << i;
    }
  }
}

}  // namespace
}  // namespace tandem::gpu
