#include "ListOps.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace widelab {
namespace {

// Token codes: the operators, the closing bracket, then the digits (the order of listOpsTokenizer()).
enum Operator : int { kMin = 0, kMax = 1, kMed = 2, kSum = 3 };
constexpr int kClose = 4;
constexpr int kFirstDigit = 5;
const std::array<std::string, 15> kTokenText = {
    "[MIN", "[MAX", "[MED", "[SM", "]", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};

constexpr std::int64_t kMaxTries = 1'000'000;

std::uint64_t splitmix64(std::uint64_t& state)
{
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

// An operator's arguments so far, as a histogram of their values: enough for all four operators.
struct ListOpsGenerator::Node {
    int op = kMin;
    std::int64_t remaining = 0;  // arguments still to come (generation only)
    std::int64_t count = 0;
    std::array<std::int64_t, 10> histogram{};

    void add(int value)
    {
        ++histogram[static_cast<std::size_t>(value)];
        ++count;
    }

    // The k-th smallest argument, k counted from 0.
    int kth(std::int64_t k) const
    {
        for (int v = 0; v < 10; ++v) {
            k -= histogram[static_cast<std::size_t>(v)];
            if (k < 0)
                return v;
        }
        return 9;
    }

    int value() const
    {
        switch (op) {
        case kMin:
            return kth(0);
        case kMax:
            return kth(count - 1);
        case kMed:
            return count % 2 == 1 ? kth(count / 2) : (kth(count / 2 - 1) + kth(count / 2)) / 2;
        default: {
            std::int64_t sum = 0;
            for (int v = 0; v < 10; ++v)
                sum += v * histogram[static_cast<std::size_t>(v)];
            return static_cast<int>(sum % 10);
        }
        }
    }
};

namespace {

using Node = ListOpsGenerator::Node;

// Most and fewest tokens an expression can have, saturating at `cap`: with operators on the maxDepth - 1 levels
// above the values, each level adds an operator and its closing bracket around maxArgs (most) or 2 (fewest,
// when every node that can be an operator is one) subexpressions.
std::int64_t treeLength(const ListOpsOptions& o, std::int64_t arguments, std::int64_t cap)
{
    std::int64_t length = 1;
    for (int level = 1; level < o.maxDepth && length < cap; ++level)
        length = length > (cap - 2) / arguments ? cap : 2 + arguments * length;
    return length;
}

std::int64_t longestTree(const ListOpsOptions& o, std::int64_t cap)
{
    return o.operatorProbability > 0.0 ? treeLength(o, o.maxArgs, cap) : 1;
}

std::int64_t shortestTree(const ListOpsOptions& o, std::int64_t cap)
{
    return o.operatorProbability >= 1.0 ? treeLength(o, 2, cap) : 1;
}

// Draws one expression into `tokens` (token codes) and returns its value, or -1 when it grew past
// maxLength (the rest is not drawn: the expression is rejected anyway).
int drawTree(const ListOpsOptions& o, DataRandom& random, std::vector<int>& tokens, std::vector<Node>& stack)
{
    tokens.clear();
    stack.clear();
    const auto tooLong = [&] { return static_cast<std::int64_t>(tokens.size()) > o.maxLength; };
    for (;;) {
        // A new node, at depth stack.size() + 1.
        const int depth = static_cast<int>(stack.size()) + 1;
        if (depth < o.maxDepth && random.uniform() < o.operatorProbability) {
            Node node;
            node.op = static_cast<int>(random.below(4));
            node.remaining = 2 + static_cast<std::int64_t>(random.below(static_cast<std::uint64_t>(o.maxArgs - 1)));
            tokens.push_back(node.op);
            stack.push_back(node);
            if (tooLong())
                return -1;
            continue;
        }
        int value = static_cast<int>(random.below(10));
        tokens.push_back(kFirstDigit + value);
        // Hand the value up, closing every operator that is complete.
        for (;;) {
            if (tooLong())
                return -1;
            if (stack.empty())
                return value;
            Node& parent = stack.back();
            parent.add(value);
            if (--parent.remaining > 0)
                break;
            value = parent.value();
            tokens.push_back(kClose);
            stack.pop_back();
        }
    }
}

std::string joinTokens(const std::vector<int>& tokens)
{
    std::string text;
    for (const int token : tokens) {
        if (!text.empty())
            text += ' ';
        text += kTokenText[static_cast<std::size_t>(token)];
    }
    return text;
}

void checkOptions(const ListOpsOptions& o, std::int64_t count)
{
    const auto fail = [](const std::string& reason) { throw std::invalid_argument("ListOps: " + reason); };
    if (count < 0)
        fail("negative example count " + std::to_string(count));
    if (o.minLength < 1)
        fail("min length " + std::to_string(o.minLength) + " is below 1");
    if (o.maxLength < o.minLength)
        fail("max length " + std::to_string(o.maxLength) + " is below min length " + std::to_string(o.minLength));
    if (o.maxDepth < 1)
        fail("max depth " + std::to_string(o.maxDepth) + " is below 1");
    if (o.maxArgs < 2)
        fail("max args " + std::to_string(o.maxArgs) + " is below 2");
    if (!(o.operatorProbability >= 0.0 && o.operatorProbability <= 1.0))
        fail("operator probability " + std::to_string(o.operatorProbability) + " is outside [0, 1]");
}

std::string describe(const ListOpsOptions& o)
{
    return "max depth " + std::to_string(o.maxDepth) + ", max args " + std::to_string(o.maxArgs)
           + ", operator probability " + std::to_string(o.operatorProbability);
}

}  // namespace

DataRandom::DataRandom(std::uint64_t seed)
{
    for (auto& word : m_state)
        word = splitmix64(seed);
}

std::uint64_t DataRandom::next()
{
    const std::uint64_t result = rotl(m_state[1] * 5, 7) * 9;
    const std::uint64_t t = m_state[1] << 17;
    m_state[2] ^= m_state[0];
    m_state[3] ^= m_state[1];
    m_state[1] ^= m_state[2];
    m_state[0] ^= m_state[3];
    m_state[2] ^= t;
    m_state[3] = rotl(m_state[3], 45);
    return result;
}

std::uint64_t DataRandom::below(std::uint64_t bound)
{
    if (bound <= 1)
        return 0;
    // Reject the lowest 2^64 mod bound values so that every residue is equally likely.
    const std::uint64_t threshold = (0 - bound) % bound;
    for (;;) {
        const std::uint64_t r = next();
        if (r >= threshold)
            return r % bound;
    }
}

double DataRandom::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

std::uint64_t mixSeed(std::uint64_t seed, std::uint64_t stream)
{
    std::uint64_t state = seed;
    std::uint64_t mixed = splitmix64(state);
    state = mixed ^ (stream * 0xd1342543de82ef95ULL + 0x632be59bd9b4e019ULL);
    return splitmix64(state);
}

ListOpsGenerator::ListOpsGenerator(const ListOpsOptions& options, std::uint64_t seed)
    : m_options(options), m_random(seed)
{
    checkOptions(options, 0);
    constexpr std::int64_t kCap = std::numeric_limits<std::int64_t>::max() / 4;
    const std::int64_t longest = longestTree(options, kCap);
    const std::int64_t shortest = shortestTree(options, kCap);
    if (longest < options.minLength || shortest > options.maxLength)
        throw DataError("ListOps: no expression has " + std::to_string(options.minLength) + ".."
                        + std::to_string(options.maxLength) + " tokens: with " + describe(options)
                        + " they have " + std::to_string(shortest) + ".." + std::to_string(longest) + " tokens");
}

ListOpsGenerator::~ListOpsGenerator() = default;

TextExample ListOpsGenerator::next()
{
    for (std::int64_t tries = 0; tries < kMaxTries; ++tries) {
        const int value = drawTree(m_options, m_random, m_tokens, m_stack);
        if (value >= 0 && static_cast<std::int64_t>(m_tokens.size()) >= m_options.minLength)
            return {joinTokens(m_tokens), value};
    }
    throw DataError("ListOps: no expression with " + std::to_string(m_options.minLength) + ".."
                    + std::to_string(m_options.maxLength) + " tokens in " + std::to_string(kMaxTries) + " tries ("
                    + describe(m_options) + "); widen the length range");
}

std::vector<TextExample> generateListOps(const ListOpsOptions& options, std::int64_t count, std::uint64_t seed)
{
    checkOptions(options, count);
    ListOpsGenerator generator(options, seed);
    std::vector<TextExample> examples;
    examples.reserve(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i)
        examples.push_back(generator.next());
    return examples;
}

std::int64_t evaluateListOps(std::string_view text)
{
    std::vector<Node> stack;
    int result = -1;
    std::int64_t position = 0;  // 1-based token number, for messages
    const auto fail = [&](const std::string& reason) {
        throw DataError("ListOps: " + reason + " (token " + std::to_string(position) + " of \""
                        + std::string(text.substr(0, 200)) + (text.size() > 200 ? "...\")" : "\")"));
    };
    detail::splitFixed(
        text,
        [&](std::string_view token) {
            ++position;
            if (result >= 0)
                fail("text after the end of the expression");
            const auto found = std::find(kTokenText.begin(), kTokenText.end(), token);
            if (found == kTokenText.end())
                fail("unknown token \"" + std::string(token) + "\"");
            const auto code = static_cast<int>(found - kTokenText.begin());
            int value = 0;
            if (code < kClose) {
                Node node;
                node.op = code;
                stack.push_back(node);
                return;
            }
            if (code == kClose) {
                if (stack.empty())
                    fail("\"]\" without an operator");
                if (stack.back().count == 0)
                    fail("operator without arguments");
                value = stack.back().value();
                stack.pop_back();
            } else {
                value = code - kFirstDigit;
            }
            if (stack.empty())
                result = value;
            else
                stack.back().add(value);
        },
        Tokenizer::kNoLimit);
    if (!stack.empty()) {
        position = std::max<std::int64_t>(position, 1);
        fail(std::to_string(stack.size()) + " operator(s) not closed by \"]\" at the end");
    }
    if (result < 0)
        throw DataError("ListOps: empty expression");
    return result;
}

Tokenizer listOpsTokenizer()
{
    return Tokenizer::fixed(std::vector<std::string>(kTokenText.begin(), kTokenText.end()));
}

}  // namespace widelab
