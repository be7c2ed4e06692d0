// defines: HeadRole, HeadRoleAccumulator, dominantRole: what each
// attention head does, scored from its attention maps (TransformerLens's head
// detector, extended): 0..1 per role, averaged over the queries of a sample
#pragma once

#include "vocab/Snapshot.h"

#include <torch/types.h>

#include <string>
#include <vector>

namespace widelab {

// Role order in HeadRoleScores. Over the real tokens of each sequence, for a
// query at position i of n (the sequence as the model sees it, CLS first when used):
enum class HeadRole {
    PreviousToken,   // weight on i-1, queries 1..n-1
    NextToken,       // weight on i+1, queries 0..n-2 (0 for a language model, which cannot look ahead)
    FirstToken,      // weight on position 0 (CLS, or the first token), queries 1..n-1
    Self,            // weight on i
    Local,           // weight within kLocalWindow positions of i, i included
    Broad,           // entropy of the row over log(keys the query may see), queries that see 2 or more
    DuplicateToken,  // language models, on repeated random sequences [r r] of period L: weight on i-L
    Induction,       // the same: weight on i-L+1 (the token after the earlier copy), queries L..2L-1
};
inline constexpr std::int64_t kLocalWindow = 3;

// Their names, in this order: headRoleNames (vocab/Snapshot.h).

// The role a head is drawn as: the pointer role (previous, next, first, self,
// duplicate, induction) with the highest score when it is at least 0.4; else
// local when its score is at least 0.5; else broad.
std::int64_t dominantRole(const std::vector<double>& scores);

// Sums the scores' numerators and query counts over batches of maps.
class HeadRoleAccumulator {
public:
    HeadRoleAccumulator(std::int64_t layers, std::int64_t heads, bool languageModel);

    // maps: [B, H, T, T] one layer's attention (row = query); valid: [B, T] bool,
    // true for real tokens, a prefix of each row (undefined: all real). Causal
    // when the model is a language model. Adds every role but the repeated ones.
    void addMaps(std::int64_t layer, const torch::Tensor& maps, const torch::Tensor& valid);
    // maps: [B, H, 2L, 2L] of repeated random sequences [r r] (no padding).
    void addRepeated(std::int64_t layer, const torch::Tensor& maps, std::int64_t period);

    HeadRoleScores scores() const;

private:
    void add(std::int64_t layer, HeadRole role, const torch::Tensor& values, const torch::Tensor& weight);

    std::int64_t m_layers, m_heads;
    bool m_languageModel;
    torch::Tensor m_sum;    // [layers, heads, roles] float64
    torch::Tensor m_count;  // [layers, roles] float64: queries counted
};

}  // namespace widelab
