// File: attribute_merge.h
//
// The attributes of a merged segment (segment_merge.h), rebuilt from the inputs' bitmaps through
// index_builder's AttributeCollector, so that they are those a fresh build of the live documents
// stores: the dictionaries hold the values of live documents only, and integer buckets are chosen
// again over the merged values. Internal to live/.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "filter/attribute_index.h"
#include "live/segment_merge.h"

namespace tandem::live {

// new_docids[i][d]: the merged docID of document d of input i, or this when it is dropped.
inline constexpr uint32_t kDroppedDocument = UINT32_MAX;

// OK when every input stores no attributes, or every input stores the same fields (names and
// kinds, in one order) in one bitmap codec; INVALID_ARGUMENT naming the two inputs otherwise.
absl::Status CheckAttributesAgree(absl::Span<const MergeInput> inputs);

// The merged index's attributes over `num_docs` documents; nullptr when the inputs store none.
// UNIMPLEMENTED naming the field when a live document's integer value lies in a bucket of several
// values (the value itself is gone), unless the field is "length", whose values are the documents'
// lengths; UNIMPLEMENTED too when a field "length" does not hold them.
absl::StatusOr<std::unique_ptr<filter::AttributeIndex>> MergeAttributes(
    absl::Span<const MergeInput> inputs, const std::vector<std::vector<uint32_t>>& new_docids,
    uint32_t num_docs);

}  // namespace tandem::live
