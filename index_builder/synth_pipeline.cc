#include "index_builder/synth_pipeline.h"

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "index/bm25.h"
#include "index/posting_list.h"
#include "index_builder/synth_lists.h"
#include "index_builder/synth_random.h"

namespace tandem::index_builder {

namespace {

struct EncodedList {
  std::string bytes;
  uint64_t cf = 0;
  float max_score = 0;
  absl::Status status;
  bool ready = false;
};

}  // namespace

absl::Status ListGenerator::Run(const std::vector<PlannedList>& plan, Progress& progress) {
  uint64_t total = 0;
  for (const PlannedList& p : plan) total += p.df;
  const uint32_t num_docs = writer_.num_docs();
  std::vector<EncodedList> slots(plan.size());
  std::mutex mu;
  std::condition_variable ready_cv, room_cv;
  size_t next_claim = 0;
  uint64_t in_flight = 0;
  bool stop = false;

  auto worker = [&] {
    std::vector<uint32_t> docids, freqs;
    EncodedList list;
    while (true) {
      size_t i;
      {
        std::unique_lock<std::mutex> lock(mu);
        room_cv.wait(lock, [&] {
          return stop || next_claim == plan.size() || in_flight == 0 ||
                 in_flight + plan[next_claim].df <= kInFlightPostings;
        });
        if (stop || next_claim == plan.size()) return;
        i = next_claim++;
        in_flight += plan[i].df;
      }
      const PlannedList& p = plan[i];
      SynthRng rng(StreamSeed(options_.seed, kListStream, TermHash(p.term)));
      GenerateList(ListSpec{num_docs, p.df, p.mean_tf, options_.clustering, options_.cluster_docs},
                   rng, &docids, &freqs);
      list = EncodedList();
      for (uint32_t f : freqs) list.cf += f;
      absl::StatusOr<float> max_score =
          index::EncodePostingList(writer_.codec(), docids, freqs, writer_.doc_norms(),
                                   index::Bm25Idf(num_docs, p.df), &list.bytes);
      if (max_score.ok()) {
        list.max_score = *max_score;
      } else {
        list.status = absl::InternalError(
            absl::StrCat("term '", p.term, "': ", max_score.status().message()));
      }
      list.ready = true;
      {
        std::lock_guard<std::mutex> lock(mu);
        slots[i] = std::move(list);
      }
      ready_cv.notify_one();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads_; ++t) pool.emplace_back(worker);

  absl::Status status;
  for (size_t i = 0; i < plan.size() && status.ok(); ++i) {
    EncodedList list;
    {
      std::unique_lock<std::mutex> lock(mu);
      ready_cv.wait(lock, [&] { return slots[i].ready; });
      list = std::move(slots[i]);
    }
    status = list.status;
    if (status.ok()) {
      status =
          writer_.AddEncodedList(plan[i].term, plan[i].df, list.cf, list.max_score, list.bytes);
    }
    if (status.ok()) postings_ += plan[i].df;
    {
      std::lock_guard<std::mutex> lock(mu);
      in_flight -= plan[i].df;
      if (!status.ok()) stop = true;
    }
    room_cv.notify_all();
    if (progress.Due()) {
      progress.Report("lists", static_cast<double>(postings_), static_cast<double>(total),
                      absl::StrFormat("%d / %d lists, %.0fM / %.0fM postings", i + 1, plan.size(),
                                      postings_ / 1e6, total / 1e6));
    }
  }
  for (std::thread& t : pool) t.join();
  return status;
}

}  // namespace tandem::index_builder
