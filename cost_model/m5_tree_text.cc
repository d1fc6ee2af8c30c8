// The text form of an M5 tree:
//
//   m5tree 1
//   attributes 2 x z
//   smoothing 15                                  (k; 0 when the tree does not smooth)
//   split 0 10.5 20 <intercept> <coef x> <coef z> (attribute, threshold, instances, model)
//   leaf 10 <intercept> <coef x> <coef z>         (instances, model)
//   leaf 10 ...
//   end
//
// Nodes in preorder: a split is followed by its left subtree, then its right.
#include "absl/strings/str_cat.h"
#include "cost_model/m5_text.h"
#include "cost_model/m5_tree.h"

namespace tandem::cost_model {
namespace {

void AppendNode(const M5Node& node, std::string* out) {
  if (node.leaf) {
    absl::StrAppend(out, "leaf ", node.num_instances);
  } else {
    absl::StrAppend(out, "split ", node.attribute, " ", FormatDouble(node.threshold), " ",
                    node.num_instances);
  }
  AppendModel(node.model, out);
  absl::StrAppend(out, "\n");
  if (!node.leaf) {
    AppendNode(*node.left, out);
    AppendNode(*node.right, out);
  }
}

absl::StatusOr<std::unique_ptr<M5Node>> ReadNode(TextLines& lines, size_t d, int depth) {
  std::vector<absl::string_view> f;
  if (!lines.Next(&f)) return lines.Error("expected a 'split' or 'leaf' node");
  if (depth > kMaxM5Depth) return lines.Error("tree deeper than ", kMaxM5Depth, " levels");
  auto node = std::make_unique<M5Node>();
  size_t model_at;
  if (f[0] == "leaf" && f.size() >= 2) {
    if (!ParseCount(f[1], &node->num_instances))
      return lines.Error("bad instance count '", f[1], "'");
    model_at = 2;
  } else if (f[0] == "split" && f.size() >= 4) {
    size_t attribute;
    if (!ParseCount(f[1], &attribute) || attribute >= d) {
      return lines.Error("split attribute '", f[1], "' is not one of the ", d, " attributes");
    }
    node->leaf = false;
    node->attribute = static_cast<int>(attribute);
    if (!ParseFinite(f[2], &node->threshold)) return lines.Error("bad threshold '", f[2], "'");
    if (!ParseCount(f[3], &node->num_instances))
      return lines.Error("bad instance count '", f[3], "'");
    model_at = 4;
  } else {
    return lines.Error(
        "expected 'leaf <n> <model>' or 'split <attribute> <threshold> <n> <model>', "
        "got '",
        lines.raw(), "'");
  }
  if (absl::Status s = ParseModel(lines, absl::MakeConstSpan(f).subspan(model_at), d, &node->model);
      !s.ok()) {
    return s;
  }
  if (!node->leaf) {
    absl::StatusOr<std::unique_ptr<M5Node>> left = ReadNode(lines, d, depth + 1);
    if (!left.ok()) return left.status();
    node->left = *std::move(left);
    absl::StatusOr<std::unique_ptr<M5Node>> right = ReadNode(lines, d, depth + 1);
    if (!right.ok()) return right.status();
    node->right = *std::move(right);
  }
  return node;
}

}  // namespace

std::string M5Tree::Save() const {
  std::string out = "m5tree 1\n";
  AppendAttributes(attributes_, &out);
  absl::StrAppend(&out, "smoothing ", FormatDouble(smoothing_k_), "\n");
  AppendNode(*root_, &out);
  absl::StrAppend(&out, "end\n");
  return out;
}

absl::StatusOr<M5Tree> M5Tree::Read(TextLines& lines) {
  if (absl::Status s = ReadHeader(lines, "m5tree", "1"); !s.ok()) return s;
  M5Tree tree;
  if (absl::Status s = ReadAttributes(lines, &tree.attributes_); !s.ok()) return s;
  std::vector<absl::string_view> f;
  if (!lines.Next(&f) || f.size() != 2 || f[0] != "smoothing" ||
      !ParseFinite(f[1], &tree.smoothing_k_) || tree.smoothing_k_ < 0) {
    return lines.Error("expected 'smoothing <k >= 0>'");
  }
  absl::StatusOr<std::unique_ptr<M5Node>> root = ReadNode(lines, tree.attributes_.size(), 0);
  if (!root.ok()) return root.status();
  tree.root_ = *std::move(root);
  if (absl::Status s = ReadEnd(lines); !s.ok()) return s;
  return tree;
}

absl::StatusOr<M5Tree> M5Tree::Parse(absl::string_view text) {
  return ParseWhole(text, "<m5tree>", &M5Tree::Read);
}

}  // namespace tandem::cost_model
