#include "PairInput.h"

#include <stdexcept>
#include <string>

namespace widelab {

std::vector<std::int64_t> encodePair(const Tokenizer& tokenizer, std::string_view first, std::string_view second,
                                     std::int64_t maxLength, std::int64_t separator)
{
    if (maxLength < kShortestPair)
        throw std::invalid_argument("encodePair: a pair needs at least " + std::to_string(kShortestPair)
                                    + " tokens, the length is " + std::to_string(maxLength));
    // Neither text can keep more than the length less the other's token and the separators.
    std::vector<std::int64_t> a = tokenizer.encode(first, maxLength - 3);
    std::vector<std::int64_t> b = tokenizer.encode(second, maxLength - 3);
    while (static_cast<std::int64_t>(a.size() + b.size()) + 2 > maxLength)
        (a.size() > b.size() ? a : b).pop_back();
    a.push_back(separator);
    a.insert(a.end(), b.begin(), b.end());
    a.push_back(separator);
    return a;
}

std::string pairText(const Tokenizer& tokenizer, const std::vector<std::int64_t>& ids, std::int64_t separator)
{
    std::vector<std::int64_t> texts[2];
    std::size_t part = 0;
    for (const std::int64_t id : ids) {
        if (id == separator && ++part == 2)
            break;
        if (id != separator)
            texts[part].push_back(id);
    }
    return part == 0 ? tokenizer.decode(texts[0]) : tokenizer.decode(texts[0]) + " || " + tokenizer.decode(texts[1]);
}

std::pair<std::string_view, std::string_view> splitProbePair(std::string_view text)
{
    if (const std::size_t tab = text.find('\t'); tab != std::string_view::npos)
        return {text.substr(0, tab), text.substr(tab + 1)};
    if (const std::size_t bars = text.find(" || "); bars != std::string_view::npos)
        return {text.substr(0, bars), text.substr(bars + 4)};
    return {text, {}};
}

}  // namespace widelab
