#include "index_builder/synth.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <random>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "filter/attribute_index.h"
#include "index/index_writer.h"
#include "index_builder/synth_inputs.h"
#include "index_builder/synth_lists.h"
#include "index_builder/synth_pipeline.h"
#include "workload/query_set.h"

namespace tandem::index_builder {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

absl::Status Validate(const SynthOptions& o) {
  if (o.num_docs == 0) return absl::InvalidArgumentError("--docs must be at least 1");
  if (o.num_docs > UINT32_MAX - 2) {
    return absl::InvalidArgumentError("--docs: an index holds at most 2^32 - 2 documents");
  }
  if (o.termstats_path.empty() || o.doclengths_path.empty()) {
    return absl::InvalidArgumentError(
        "synth needs --termstats FILE and --doclengths FILE (the shared data has "
        "stats/wikipedia-termstats.tsv.gz and stats/wikipedia-doclengths.tsv)");
  }
  if (o.vocabulary == SynthVocabulary::kQueryTerms && o.query_files.empty()) {
    return absl::InvalidArgumentError(
        "--vocabulary query-terms needs --queries FILE[,FILE...] (or use --vocabulary all)");
  }
  if (!std::isfinite(o.postings_per_doc) || o.postings_per_doc < 0) {
    return absl::InvalidArgumentError("--postings-per-doc must be a finite number >= 0");
  }
  if (!std::isfinite(o.clustering) || o.clustering < 1.0) {
    return absl::InvalidArgumentError("--clustering must be >= 1 (1 = uniform docIDs)");
  }
  if (o.cluster_docs == 0) return absl::InvalidArgumentError("--cluster-docs must be at least 1");
  return absl::OkStatus();
}

// The lists to generate, in term order.
absl::StatusOr<std::vector<PlannedList>> PlanLists(const SynthOptions& o, const TermStats& stats,
                                                   const index::Analyzer& analyzer,
                                                   SynthSummary& summary) {
  absl::flat_hash_set<std::string> query_terms;
  for (const std::string& path : o.query_files) {
    TANDEM_ASSIGN_OR_RETURN(std::vector<workload::AnalyzedQuery> queries,
                            workload::LoadQuerySet(path, analyzer));
    summary.queries += queries.size();
    for (workload::AnalyzedQuery& q : queries) {
      for (std::string& t : q.terms) query_terms.insert(std::move(t));
    }
  }
  absl::flat_hash_map<absl::string_view, const TermStat*> by_term;
  by_term.reserve(stats.terms.size());
  for (const TermStat& t : stats.terms) by_term.emplace(t.term, &t);

  std::vector<const TermStat*> chosen;
  if (o.vocabulary == SynthVocabulary::kAll) {
    std::string normalized;
    for (const TermStat& t : stats.terms) {
      if (analyzer.Normalize(t.term, &normalized) && normalized == t.term) {
        chosen.push_back(&t);
      } else {
        ++summary.dropped_terms;
      }
    }
  }
  summary.query_terms = query_terms.size();
  for (const std::string& t : query_terms) {
    auto it = by_term.find(t);
    if (it == by_term.end()) {
      ++summary.unknown_query_terms;
    } else if (o.vocabulary == SynthVocabulary::kQueryTerms) {
      chosen.push_back(it->second);
    }
  }
  std::sort(chosen.begin(), chosen.end(),
            [](const TermStat* a, const TermStat* b) { return a->term < b->term; });
  std::vector<PlannedList> plan;
  plan.reserve(chosen.size());
  for (const TermStat* t : chosen) {
    plan.push_back({t->term, SynthDf(t->df, summary.source_documents, o.num_docs, summary.scale),
                    static_cast<double>(t->cf) / static_cast<double>(t->df)});
  }
  if (plan.empty()) {
    return absl::InvalidArgumentError(
        "no term to generate: no query term is in the term statistics");
  }
  return plan;
}

// The attribute columns of o.attributes, each drawn with its own seed.
absl::StatusOr<std::unique_ptr<filter::AttributeIndex>> SynthesizeAttributes(const SynthOptions& o,
                                                                             uint32_t num_docs) {
  std::vector<filter::AttributeField> fields;
  for (const SynthAttribute& a : o.attributes) {
    std::mt19937_64 rng(o.seed ^ std::hash<std::string>()(a.name));
    std::vector<uint32_t> values(num_docs);
    if (a.zipf) {
      std::vector<double> cdf(a.cardinality);
      double sum = 0;
      for (uint32_t i = 0; i < a.cardinality; ++i) cdf[i] = (sum += 1.0 / (i + 1));
      std::uniform_real_distribution<double> u(0, sum);
      for (uint32_t& v : values) {
        v = std::min<uint32_t>(
            uint32_t(std::upper_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin()),
            a.cardinality - 1);
      }
    } else {
      std::uniform_int_distribution<uint32_t> u(0, a.cardinality - 1);
      for (uint32_t& v : values) v = u(rng);
    }
    filter::AttributeField field;
    field.name = a.name;
    field.kind = filter::AttributeKind::kKeyword;
    const int width = int(absl::StrCat(a.cardinality - 1).size());
    for (uint32_t i = 0; i < a.cardinality; ++i) {
      field.values.push_back(absl::StrFormat("v%0*d", width, i));
    }
    absl::StatusOr<filter::BitmapColumns> columns =
        o.bitmap_builder ? o.bitmap_builder(o.bitmap_codec, num_docs, values, {})
                         : filter::BuildBitmaps(o.bitmap_codec, num_docs, values);
    if (!columns.ok()) return columns.status();
    field.columns = *std::move(columns);
    fields.push_back(std::move(field));
  }
  return filter::AttributeIndex::Create(num_docs, o.bitmap_codec, std::move(fields));
}

absl::Status AddDocuments(const SynthOptions& o, double scale, const LengthHistogram& histogram,
                          int threads, index::IndexWriter& writer, Progress& progress) {
  const LengthSampler sampler(histogram, scale);
  const std::vector<uint32_t> lengths = DrawDocumentLengths(sampler, o.num_docs, o.seed, threads);
  char id[16];
  for (uint32_t d = 0; d < o.num_docs; ++d) {
    const auto end = std::to_chars(id, id + sizeof(id), d).ptr;
    TANDEM_RETURN_IF_ERROR(writer.AddDocument(absl::string_view(id, end - id), lengths[d]));
    if ((d & 0xfffff) == 0 && progress.Due()) {
      progress.Report("documents", d, o.num_docs, absl::StrFormat("%d / %d", d, o.num_docs));
    }
  }
  return writer.FinishDocuments();
}

std::string Describe(const SynthOptions& o, const SynthSummary& s) {
  return absl::StrFormat(
      "synth N=%d P=%g s=%.6f seed=%d vocabulary=%s clustering=%g/%d termstats=%s doclengths=%s "
      "queries=%s",
      o.num_docs, o.postings_per_doc, s.scale, o.seed,
      o.vocabulary == SynthVocabulary::kAll ? "all" : "query-terms", o.clustering, o.cluster_docs,
      o.termstats_path, o.doclengths_path, absl::StrJoin(o.query_files, ","));
}

}  // namespace

absl::StatusOr<SynthVocabulary> ParseSynthVocabulary(const std::string& name) {
  if (name == "query-terms") return SynthVocabulary::kQueryTerms;
  if (name == "all") return SynthVocabulary::kAll;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown vocabulary '", name, "' (known: query-terms, all)"));
}

index::AnalyzerConfig SyntheticAnalyzerConfig() {
  index::AnalyzerConfig c;
  c.tokenizer = "alnum";
  c.possessive = false;
  c.lowercase = true;
  c.stopwords = "lucene";
  c.stemmer = "none";
  return c;
}

double SynthScale(double postings_per_doc, uint64_t total_df, uint64_t source_documents) {
  if (postings_per_doc <= 0 || total_df == 0) return 1.0;
  return postings_per_doc / (static_cast<double>(total_df) / static_cast<double>(source_documents));
}

uint32_t SynthDf(uint64_t df, uint64_t source_documents, uint32_t num_docs, double scale) {
  const double x = std::round(static_cast<double>(df) / static_cast<double>(source_documents) *
                              num_docs * scale);
  return static_cast<uint32_t>(std::clamp(x, 1.0, static_cast<double>(num_docs)));
}

absl::StatusOr<SynthSummary> BuildSyntheticIndex(const SynthOptions& o, const std::string& output) {
  const auto start = Clock::now();
  TANDEM_RETURN_IF_ERROR(Validate(o));
  SynthSummary summary;
  summary.threads = o.threads > 0
                        ? o.threads
                        : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  TANDEM_ASSIGN_OR_RETURN(TermStats stats, LoadTermStats(o.termstats_path));
  TANDEM_ASSIGN_OR_RETURN(LengthHistogram histogram, LoadLengthHistogram(o.doclengths_path));
  if (stats.declared_documents != 0 && stats.declared_documents != histogram.documents) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", o.termstats_path, "' counts ", stats.declared_documents,
                     " documents but the histogram '", o.doclengths_path, "' has ",
                     histogram.documents, ": they must describe the same collection"));
  }
  summary.source_documents = histogram.documents;
  summary.scale = SynthScale(o.postings_per_doc, stats.total_df, histogram.documents);
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<index::Analyzer> analyzer,
                          index::Analyzer::Create(SyntheticAnalyzerConfig()));
  TANDEM_ASSIGN_OR_RETURN(std::vector<PlannedList> plan, PlanLists(o, stats, *analyzer, summary));
  stats = TermStats();

  index::IndexWriterOptions w;
  w.codec = o.codec;
  w.analyzer = SyntheticAnalyzerConfig();
  w.source_format = "synthetic";
  w.source_input = Describe(o, summary);
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<index::IndexWriter> writer,
                          index::IndexWriter::Create(output, w));
  Progress progress(o.progress);
  const auto documents_start = Clock::now();
  TANDEM_RETURN_IF_ERROR(
      AddDocuments(o, summary.scale, histogram, summary.threads, *writer, progress));
  summary.documents_seconds = SecondsSince(documents_start);
  summary.documents = writer->num_docs();
  summary.avg_doc_length = writer->avg_doc_length();

  const auto lists_start = Clock::now();
  ListGenerator generator(o, *writer, summary.threads);
  TANDEM_RETURN_IF_ERROR(generator.Run(plan, progress));
  summary.lists_seconds = SecondsSince(lists_start);
  summary.terms = plan.size();
  summary.postings = generator.postings();
  if (!o.attributes.empty()) {
    const auto attributes_start = Clock::now();
    TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<filter::AttributeIndex> attributes,
                            SynthesizeAttributes(o, writer->num_docs()));
    writer->SetAttributes(std::move(attributes));
    summary.attribute_seconds = SecondsSince(attributes_start);
  }
  TANDEM_RETURN_IF_ERROR(writer->Finish());
  progress.Clear();

  const index::IndexFileBytes bytes = index::MeasureIndexFiles(output);
  summary.index_bytes = bytes.total;
  summary.postings_bytes = bytes.postings;
  summary.seconds = SecondsSince(start);
  return summary;
}

absl::StatusOr<std::vector<SynthAttribute>> ParseSynthAttributes(std::string_view flag) {
  std::vector<SynthAttribute> out;
  for (absl::string_view entry :
       absl::StrSplit(absl::string_view(flag.data(), flag.size()), ',', absl::SkipWhitespace())) {
    std::vector<std::string> parts = absl::StrSplit(entry, ':');
    SynthAttribute a;
    uint32_t cardinality = 0;
    if (parts.size() < 2 || parts.size() > 3 || parts[0].empty() ||
        !absl::SimpleAtoi(parts[1], &cardinality) || cardinality == 0 ||
        (parts.size() == 3 && parts[2] != "uniform" && parts[2] != "zipf")) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--attribute-columns: \"", std::string(entry),
          "\" is not name:cardinality[:uniform|zipf] with a cardinality of at least 1"));
    }
    for (const SynthAttribute& earlier : out) {
      if (earlier.name == parts[0]) {
        return absl::InvalidArgumentError(
            absl::StrCat("--attribute-columns: \"", parts[0], "\" appears twice"));
      }
    }
    a.name = parts[0];
    a.cardinality = cardinality;
    a.zipf = parts.size() == 3 && parts[2] == "zipf";
    out.push_back(std::move(a));
  }
  return out;
}

std::string SynthSummary::Describe() const {
  const double per_thread =
      lists_seconds > 0 ? static_cast<double>(postings) / lists_seconds / threads : 0.0;
  std::string out = absl::StrFormat(
      "documents %d (average length %.1f, scale s = %.4f from %d source documents)\n"
      "terms %d, postings %d (%.1f per document), index %.2f GB (postings %.2f GB, %.2f bits per "
      "posting)\n",
      documents, avg_doc_length, scale, source_documents, terms, postings,
      documents ? static_cast<double>(postings) / documents : 0.0, index_bytes / 1e9,
      postings_bytes / 1e9, postings ? 8.0 * postings_bytes / postings : 0.0);
  if (query_terms > 0) {
    absl::StrAppendFormat(&out,
                          "queries %d with %d distinct terms, %d of them not in the statistics\n",
                          queries, query_terms, unknown_query_terms);
  }
  if (dropped_terms > 0)
    absl::StrAppendFormat(&out, "stop words without a list: %d\n", dropped_terms);
  absl::StrAppendFormat(
      &out,
      "%.1f s: documents %.1f s, lists %.1f s (%.2fM postings/s, %.2fM per thread "
      "on %d threads)",
      seconds, documents_seconds, lists_seconds,
      lists_seconds > 0 ? postings / lists_seconds / 1e6 : 0.0, per_thread / 1e6, threads);
  if (attribute_seconds > 0) absl::StrAppendFormat(&out, ", attributes %.2f s", attribute_seconds);
  return out;
}

}  // namespace tandem::index_builder
