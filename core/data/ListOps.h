// defines: ListOpsOptions, TextExample, generateListOps, ListOpsGenerator, evaluateListOps, listOpsTokenizer (the
// Long Range Arena ListOps task, generated in-process); DataRandom, mixSeed (the data layer's portable randomness)
#pragma once

#include "Tokenizer.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace widelab {

// xoshiro256** seeded through splitmix64: the same numbers on every machine and compiler (the standard library's
// distributions are implementation-defined). Used for everything random in the data layer.
class DataRandom {
public:
    explicit DataRandom(std::uint64_t seed);
    std::uint64_t next();
    std::uint64_t below(std::uint64_t bound);  // uniform in [0, bound) without modulo bias; bound >= 1
    double uniform();                          // uniform in [0, 1), 53 random bits

private:
    std::uint64_t m_state[4];
};

// A well-mixed 64-bit seed for stream `stream` of `seed` (splits, epochs, rows): different pairs give unrelated
// values.
std::uint64_t mixSeed(std::uint64_t seed, std::uint64_t stream);

// The generator of LRA's ListOps: a node is an operator with probability `operatorProbability` while its depth
// is below `maxDepth` (the root has depth 1), else a value 0-9; an operator (MIN, MAX, MED, SM, uniformly) takes
// 2..maxArgs arguments (uniformly). Expressions are drawn until their token count lies in [minLength, maxLength].
struct ListOpsOptions {
    std::int64_t minLength = 16;   // tokens, inclusive
    std::int64_t maxLength = 128;  // tokens, inclusive (LRA: 500..2000)
    int maxDepth = 10;
    int maxArgs = 10;
    double operatorProbability = 0.25;
};

struct TextExample {
    std::string text;
    std::int64_t label = 0;
};

// `count` expressions with their values as labels, e.g. {"[MAX 4 3 [MIN 2 3 ] 1 0 ]", 4}: tokens separated by
// single spaces, an operator's arguments closed by "]". Deterministic for (options, seed) on every machine.
// Throws std::invalid_argument for impossible options (minLength < 1, minLength > maxLength, maxDepth < 1,
// maxArgs < 2, a probability outside [0, 1], count < 0), and DataError when the length range cannot be reached
// (decided up front where the tree shape rules it out, else after a million rejected expressions in a row).
std::vector<TextExample> generateListOps(const ListOpsOptions& options, std::int64_t count, std::uint64_t seed);

// The same examples one at a time: generateListOps(options, n, seed) is the first n of next().
class ListOpsGenerator {
public:
    ListOpsGenerator(const ListOpsOptions& options, std::uint64_t seed);  // throws as generateListOps
    ~ListOpsGenerator();
    TextExample next();  // throws DataError as generateListOps

    struct Node;  // an open operator, defined in ListOps.cpp

private:
    ListOpsOptions m_options;
    DataRandom m_random;
    std::vector<int> m_tokens;  // scratch: token codes of the expression being drawn
    std::vector<Node> m_stack;  // scratch: open operators
};

// The value of an expression in that form (tokens separated by any ASCII whitespace). MIN, MAX; MED the median,
// for an even count the mean of the two middle values truncated; SM the sum mod 10. Throws DataError naming the
// token for malformed text: an unknown token, an operator without arguments, an unmatched "]", an unclosed
// operator, or more than one expression.
std::int64_t evaluateListOps(std::string_view text);

// Fixed: "[MIN", "[MAX", "[MED", "[SM", "]", "0".."9" get ids 2..16 (vocabSize 17).
Tokenizer listOpsTokenizer();

}  // namespace widelab
