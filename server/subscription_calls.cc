#include "server/subscription_calls.h"

#include <algorithm>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "match/predicate_parser.h"
#include "rpc/status_mapping.h"
#include "server/subscription_convert.h"
#include "server/subscription_metrics.h"
#include "server/watch_hub.h"

namespace tandem::server {
namespace {

// How a document is named in an error: its position (1-based) and, when it has one, its id.
std::string DocumentPlace(int i, const std::string& id) {
  if (id.empty()) return absl::StrCat("document ", i + 1);
  constexpr size_t kShownIdBytes = 64;
  return absl::StrCat("document ", i + 1, " (id \"", id.substr(0, kShownIdBytes),
                      id.size() > kShownIdBytes ? "..." : "", "\")");
}

// The event a Watch stream receives for a matched document: its id and its normalized attributes.
EncodedEvent EncodeEvent(const std::string& document_id, const match::Event& event) {
  tandem::v1::WatchEvent message;
  message.set_document_id(document_id);
  for (const match::Attribute& attribute : event.attributes) {
    tandem::v1::Attribute* a = message.add_attributes();
    a->set_name(attribute.name);
    ValueToProto(attribute.value, a->mutable_value());
  }
  return std::make_shared<const std::string>(message.SerializeAsString());
}

absl::Status NotYours(absl::string_view what, const Caller& caller) {
  return absl::PermissionDeniedError(absl::StrCat(
      what, " is not one of this client certificate's identities (",
      caller.identities.empty() ? "it has none" : absl::StrJoin(caller.identities, ", "),
      "): with mutual TLS, a client acts only for the interfaces its certificate names"));
}

}  // namespace

bool Caller::Owns(absl::string_view interface) const {
  return !bound || std::find(identities.begin(), identities.end(), interface) != identities.end();
}

absl::Status SubscriptionCalls::AuthorizeWatch(absl::string_view interface,
                                               const Caller& caller) const {
  if (caller.Owns(interface)) return absl::OkStatus();
  return NotYours(absl::StrCat("interface \"", interface, "\""), caller);
}

SubscriptionCalls::SubscriptionCalls(match::SubscriptionRegistry& registry,
                                     const index::Analyzer& analyzer,
                                     const SubscriptionCallsOptions& options, WatchHub* hub,
                                     SubscriptionMetrics* metrics)
    : registry_(registry), analyzer_(analyzer), options_(options), hub_(hub), metrics_(metrics) {}

absl::StatusOr<match::Predicate> SubscriptionCalls::RequestedPredicate(
    const tandem::v1::SubscribeRequest& request) const {
  absl::StatusOr<match::Predicate> parsed;
  switch (request.predicate_form_case()) {
    case tandem::v1::SubscribeRequest::kPredicate:
      parsed = PredicateFromProto(request.predicate());
      break;
    case tandem::v1::SubscribeRequest::kPredicateText:
      parsed = match::ParsePredicate(request.predicate_text());
      if (!parsed.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("predicate_text: ", parsed.status().message()));
      }
      break;
    case tandem::v1::SubscribeRequest::PREDICATE_FORM_NOT_SET:
      return absl::InvalidArgumentError("no predicate: set predicate or predicate_text");
  }
  if (!parsed.ok()) return parsed.status();
  return match::NormalizePredicate(*std::move(parsed), &analyzer_, registry_.options().limits);
}

absl::StatusOr<tandem::v1::SubscribeResponse> SubscriptionCalls::Subscribe(
    const tandem::v1::SubscribeRequest& request, const Caller& caller) {
  absl::StatusOr<tandem::v1::SubscribeResponse> response =
      caller.Owns(request.interface())
          ? DoSubscribe(request)
          : NotYours(absl::StrCat("interface \"", request.interface(), "\""), caller);
  RecordChange("subscribe", response.status().code());
  return response;
}

void SubscriptionCalls::RecordChange(absl::string_view op, absl::StatusCode code) {
  if (metrics_ == nullptr) return;
  metrics_->RecordChange(op, rpc::ToGrpcCode(code));
  absl::MutexLock lock(&gauge_mu_);
  metrics_->SetSubscriptions(registry_.stats().subscriptions);
}

absl::StatusOr<tandem::v1::SubscribeResponse> SubscriptionCalls::DoSubscribe(
    const tandem::v1::SubscribeRequest& request) {
  absl::StatusOr<match::Predicate> predicate = RequestedPredicate(request);
  if (!predicate.ok()) return predicate.status();
  tandem::v1::SubscribeResponse response;
  response.set_predicate_text(match::FormatPredicate(*predicate));
  absl::StatusOr<match::SubscriptionId> id =
      registry_.Subscribe(request.interface(), *std::move(predicate));
  if (!id.ok()) return id.status();
  response.set_id(*id);
  return response;
}

absl::StatusOr<tandem::v1::UnsubscribeResponse> SubscriptionCalls::Unsubscribe(
    const tandem::v1::UnsubscribeRequest& request, const Caller& caller) {
  absl::Status status;
  if (caller.bound) {
    // Ids are never reused, so the interface read here is the one the removal finds.
    absl::StatusOr<std::string> owner = registry_.InterfaceOf(request.id());
    status = owner.status();
    if (owner.ok() && !caller.Owns(*owner)) {
      status = NotYours(absl::StrCat("the interface of subscription ", request.id()), caller);
    }
  }
  if (status.ok()) status = registry_.Unsubscribe(request.id());
  RecordChange("unsubscribe", status.code());
  if (!status.ok()) return status;
  return tandem::v1::UnsubscribeResponse();
}

absl::StatusOr<tandem::v1::ListSubscriptionsResponse> SubscriptionCalls::ListSubscriptions(
    const tandem::v1::ListSubscriptionsRequest& request, const Caller& caller) const {
  std::vector<match::SubscriptionRecord> records;
  if (!caller.bound || !request.interface().empty()) {
    if (!caller.Owns(request.interface())) {
      return NotYours(absl::StrCat("interface \"", request.interface(), "\""), caller);
    }
    records = registry_.List(request.interface());
  } else {
    for (const std::string& identity : caller.identities) {
      if (identity.empty()) continue;  // List("") would be every interface's
      std::vector<match::SubscriptionRecord> own = registry_.List(identity);
      records.insert(records.end(), std::make_move_iterator(own.begin()),
                     std::make_move_iterator(own.end()));
    }
    std::sort(records.begin(), records.end(),
              [](const auto& a, const auto& b) { return a.id < b.id; });
    records.erase(std::unique(records.begin(), records.end(),
                              [](const auto& a, const auto& b) { return a.id == b.id; }),
                  records.end());
  }
  tandem::v1::ListSubscriptionsResponse response;
  for (const match::SubscriptionRecord& record : records) {
    tandem::v1::Subscription* s = response.add_subscriptions();
    s->set_id(record.id);
    s->set_interface(record.interface);
    PredicateToProto(record.predicate, s->mutable_predicate());
    s->set_predicate_text(match::FormatPredicate(record.predicate));
  }
  return response;
}

absl::StatusOr<tandem::v1::MatchResponse> SubscriptionCalls::Match(
    const tandem::v1::MatchRequest& request) {
  const int documents = request.documents_size();
  if (static_cast<uint32_t>(documents) > options_.max_match_documents) {
    return absl::InvalidArgumentError(
        absl::StrCat("the request has ", documents, " documents, above the limit of ",
                     options_.max_match_documents, " (--max-match-documents)"));
  }
  tandem::v1::MatchResponse response;
  if (documents == 0) return response;
  const match::Limits& limits = registry_.options().limits;
  std::vector<match::Event> events;
  events.reserve(documents);
  for (int i = 0; i < documents; ++i) {
    const tandem::v1::Document& document = request.documents(i);
    absl::StatusOr<match::Event> event = EventFromProto(document, analyzer_, limits);
    if (!event.ok()) {
      return absl::Status(event.status().code(), absl::StrCat(DocumentPlace(i, document.id()), ": ",
                                                              event.status().message()));
    }
    events.push_back(*std::move(event));
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<match::MatchResult> result = registry_.Match(events);
  if (!result.ok()) return result.status();
  if (metrics_ != nullptr) {
    metrics_->RecordMatch(result->engine, static_cast<uint64_t>(documents), absl::Now() - start);
  }
  if (result->interfaces.size() != events.size()) {
    return absl::InternalError(absl::StrCat("the matcher answered ", result->interfaces.size(),
                                            " events for ", events.size()));
  }
  response.set_engine(result->engine);
  for (int i = 0; i < documents; ++i) {
    tandem::v1::DocumentMatch* match = response.add_matches();
    match->set_document_id(request.documents(i).id());
    for (std::string& interface : result->interfaces[i]) {
      match->add_interfaces(std::move(interface));
    }
  }
  Publish(response, request, events);
  return response;
}

void SubscriptionCalls::Publish(const tandem::v1::MatchResponse& response,
                                const tandem::v1::MatchRequest& request,
                                const std::vector<match::Event>& events) {
  if (hub_ == nullptr || hub_->streams() == 0) return;
  std::vector<absl::string_view> watched;
  for (int i = 0; i < response.matches_size(); ++i) {
    watched.clear();
    for (const std::string& interface : response.matches(i).interfaces()) {
      if (hub_->Watched(interface)) watched.push_back(interface);
    }
    // Encoded once per document, and only for a watched interface.
    if (!watched.empty()) hub_->Publish(watched, EncodeEvent(request.documents(i).id(), events[i]));
  }
}

}  // namespace tandem::server
