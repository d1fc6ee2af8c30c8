// File: status_macros.h
//
// The two status macros every component uses at its boundaries. abseil 2022 ships none, so Tandem
// keeps this one small header (Triton's RETURN_IF_ERROR pattern).
//
//   TANDEM_RETURN_IF_ERROR(file.Append(bytes));
//   TANDEM_ASSIGN_OR_RETURN(auto index, Index::Open(dir));
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TANDEM_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::absl::Status tandem_status_ = (expr);          \
    if (!tandem_status_.ok()) return tandem_status_; \
  } while (false)

#define TANDEM_STATUS_CONCAT_INNER_(a, b) a##b
#define TANDEM_STATUS_CONCAT_(a, b) TANDEM_STATUS_CONCAT_INNER_(a, b)

#define TANDEM_ASSIGN_OR_RETURN(lhs, expr) \
  TANDEM_ASSIGN_OR_RETURN_IMPL_(TANDEM_STATUS_CONCAT_(tandem_statusor_, __LINE__), lhs, expr)

#define TANDEM_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()
