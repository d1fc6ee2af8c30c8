#include "server/subscription_convert.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace tandem::server {
namespace {

using tandem::v1::Constraint;

// The wire's operators, by match::Op (the wire adds OP_UNSPECIFIED = 0 in front).
constexpr Constraint::Op kWireOps[match::kNumOps] = {
    Constraint::OP_EQ,     Constraint::OP_NE,        Constraint::OP_LT,
    Constraint::OP_GT,     Constraint::OP_LE,        Constraint::OP_GE,
    Constraint::OP_PREFIX, Constraint::OP_SUBSTRING, Constraint::OP_CONTAINS,
};

// `name` as the model's messages write it in a place ("year", or "" for none).
std::string Place(const std::string& prefix, const std::string& name) {
  return name.empty() ? prefix : absl::StrCat(prefix, " (", name, ")");
}

}  // namespace

absl::StatusOr<match::Value> ValueFromProto(const tandem::v1::Value& value) {
  switch (value.kind_case()) {
    case tandem::v1::Value::kIntValue:
      return match::Value::Int(value.int_value());
    case tandem::v1::Value::kDoubleValue:
      return match::Value::Double(value.double_value());
    case tandem::v1::Value::kStringValue:
      return match::Value::String(value.string_value());
    case tandem::v1::Value::KIND_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("the value is not set");
}

void ValueToProto(const match::Value& value, tandem::v1::Value* out) {
  switch (value.type) {
    case match::ValueType::kInt:
      out->set_int_value(value.i);
      return;
    case match::ValueType::kDouble:
      out->set_double_value(value.d);
      return;
    case match::ValueType::kString:
      out->set_string_value(value.s);
      return;
  }
}

absl::StatusOr<match::Predicate> PredicateFromProto(const tandem::v1::Predicate& predicate) {
  match::Predicate out;
  out.filters.reserve(predicate.filters_size());
  for (int f = 0; f < predicate.filters_size(); ++f) {
    const tandem::v1::Filter& filter = predicate.filters(f);
    match::Filter& converted = out.filters.emplace_back();
    converted.constraints.reserve(filter.constraints_size());
    for (int c = 0; c < filter.constraints_size(); ++c) {
      const Constraint& constraint = filter.constraints(c);
      const std::string where =
          Place(absl::StrCat("filter ", f + 1, ", constraint ", c + 1), constraint.name());
      match::Constraint& to = converted.constraints.emplace_back();
      to.name = constraint.name();
      const int op = static_cast<int>(constraint.op());
      if (op == Constraint::OP_UNSPECIFIED) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": the operator is not set"));
      }
      if (op < 1 || op > match::kNumOps) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": unknown operator ", op));
      }
      to.op = static_cast<match::Op>(op - 1);
      absl::StatusOr<match::Value> value = ValueFromProto(constraint.value());
      if (!value.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": ", value.status().message()));
      }
      to.value = *std::move(value);
    }
  }
  return out;
}

void PredicateToProto(const match::Predicate& predicate, tandem::v1::Predicate* out) {
  out->Clear();
  for (const match::Filter& filter : predicate.filters) {
    tandem::v1::Filter* f = out->add_filters();
    for (const match::Constraint& constraint : filter.constraints) {
      Constraint* c = f->add_constraints();
      c->set_name(constraint.name);
      c->set_op(kWireOps[static_cast<int>(constraint.op)]);
      ValueToProto(constraint.value, c->mutable_value());
    }
  }
}

absl::StatusOr<match::Event> EventFromProto(const tandem::v1::Document& document,
                                            const index::Analyzer& analyzer,
                                            const match::Limits& limits) {
  // Counted before anything is copied: a document of a million attributes costs nothing.
  if (document.attributes_size() > limits.max_attributes_per_event) {
    return absl::InvalidArgumentError(absl::StrCat("the document has ", document.attributes_size(),
                                                   " attributes, above the limit of ",
                                                   limits.max_attributes_per_event));
  }
  std::vector<match::Attribute> attributes;
  attributes.reserve(document.attributes_size());
  for (const tandem::v1::Attribute& attribute : document.attributes()) {
    absl::StatusOr<match::Value> value = ValueFromProto(attribute.value());
    if (!value.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Place("attribute", attribute.name()), ": ", value.status().message()));
    }
    attributes.push_back(match::Attribute{attribute.name(), *std::move(value)});
  }
  return match::MakeEvent(std::move(attributes), document.text(), &analyzer, limits);
}

}  // namespace tandem::server
