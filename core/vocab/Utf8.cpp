#include "Utf8.h"

#include <cstdint>
#include <cstring>

namespace widelab {

namespace {

// A sequence's first byte: how many continuation bytes follow it, its bits of the
// code point, and the allowed range of the second byte (which rules out overlong
// forms, surrogates and code points above U+10FFFF). False for a byte that starts none.
bool leadByte(unsigned char b0, std::size_t& need, char32_t& bits, unsigned char& low, unsigned char& high)
{
    low = 0x80, high = 0xbf;
    if (b0 >= 0xc2 && b0 <= 0xdf) {
        need = 1;
        bits = b0 & 0x1f;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
        need = 2;
        bits = b0 & 0x0f;
        if (b0 == 0xe0)
            low = 0xa0;
        if (b0 == 0xed)
            high = 0x9f;
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
        need = 3;
        bits = b0 & 0x07;
        if (b0 == 0xf0)
            low = 0x90;
        if (b0 == 0xf4)
            high = 0x8f;
    } else {
        return false;
    }
    return true;
}

}  // namespace

char32_t decodeUtf8(std::string_view text, std::size_t pos, std::size_t& length)
{
    length = 0;
    const std::size_t n = text.size();
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned char b0 = byte(pos);
    if (b0 < 0x80) {
        length = 1;
        return b0;
    }
    std::size_t need = 0;
    char32_t c = 0;
    unsigned char low = 0x80, high = 0xbf;
    if (!leadByte(b0, need, c, low, high))
        return 0;
    if (pos + need >= n)
        return 0;  // truncated
    for (std::size_t k = 1; k <= need; ++k) {
        const unsigned char b = byte(pos + k);
        if (b < (k == 1 ? low : 0x80) || b > (k == 1 ? high : 0xbf))
            return 0;
        c = (c << 6) | (b & 0x3f);
    }
    length = need + 1;
    return c;
}

std::string replaceInvalidUtf8(std::string_view text)
{
    std::string out;
    out.reserve(text.size());
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    for (std::size_t i = 0; i < text.size();) {
        std::size_t length = 0;
        decodeUtf8(text, i, length);
        if (length > 0) {
            out.append(text.substr(i, length));
            i += length;
            continue;
        }
        // The maximal subpart: a first byte and the continuation bytes that could
        // still have completed it are one replacement; any other byte is one.
        std::size_t need = 0, taken = 1;
        char32_t bits = 0;
        unsigned char low = 0x80, high = 0xbf;
        if (leadByte(byte(i), need, bits, low, high))
            while (taken <= need && i + taken < text.size()
                   && byte(i + taken) >= (taken == 1 ? low : 0x80) && byte(i + taken) <= (taken == 1 ? high : 0xbf))
                ++taken;
        out += "\xEF\xBF\xBD";  // U+FFFD
        i += taken;
    }
    return out;
}

std::size_t findInvalidUtf8(std::string_view text)
{
    const std::size_t n = text.size();
    std::size_t i = 0;
    while (i < n) {
        // Skip ASCII eight bytes at a time where possible.
        while (i + 8 <= n) {
            std::uint64_t word = 0;
            std::memcpy(&word, text.data() + i, sizeof word);
            if (word & 0x8080808080808080ULL)
                break;
            i += 8;
        }
        if (i >= n)
            break;
        std::size_t length = 0;
        decodeUtf8(text, i, length);
        if (length == 0)
            return i;
        i += length;
    }
    return std::string_view::npos;
}

}  // namespace widelab
