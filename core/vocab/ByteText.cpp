#include "ByteText.h"

#include <cstring>

#include "Utf8.h"

namespace widelab {
namespace {

constexpr char kDigits[] = "0123456789abcdef";

int hexValue(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

}  // namespace

std::string hexByte(unsigned char c) { return std::string("\\x") + kDigits[c >> 4] + kDigits[c & 15]; }

std::string legibleBytes(std::string_view bytes)
{
    std::string text;
    text.reserve(bytes.size());
    for (std::size_t i = 0; i < bytes.size();) {
        std::size_t length = 1;
        if (static_cast<unsigned char>(bytes[i]) >= 0x80)
            decodeUtf8(bytes, i, length);
        if (length == 0) {
            text += hexByte(static_cast<unsigned char>(bytes[i]));
            ++i;
            continue;
        }
        text.append(bytes.substr(i, length));
        i += length;
    }
    return text;
}

nlohmann::json bytesToJson(std::string_view bytes)
{
    if (findInvalidUtf8(bytes) == std::string_view::npos)
        return std::string(bytes);
    std::string hex;
    hex.reserve(2 * bytes.size());
    for (const char ch : bytes) {
        const auto c = static_cast<unsigned char>(ch);
        hex += kDigits[c >> 4];
        hex += kDigits[c & 15];
    }
    return {{"hex", hex}};
}

std::optional<std::string> bytesFromJson(const nlohmann::json& value)
{
    if (value.is_string())
        return value.get<std::string>();
    if (!value.is_object() || value.size() != 1 || !value.contains("hex") || !value.at("hex").is_string())
        return std::nullopt;
    const std::string& hex = value.at("hex").get_ref<const std::string&>();
    if (hex.size() % 2 != 0)
        return std::nullopt;
    std::string bytes;
    bytes.reserve(hex.size() / 2);
    for (std::size_t i = 0; i < hex.size(); i += 2) {
        const int high = hexValue(hex[i]), low = hexValue(hex[i + 1]);
        if (high < 0 || low < 0)
            return std::nullopt;
        bytes += static_cast<char>(high * 16 + low);
    }
    return bytes;
}

namespace {

const char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

}  // namespace

std::string toBase64(const std::vector<std::uint8_t>& bytes)
{
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    for (std::size_t i = 0; i < bytes.size(); i += 3) {
        const std::uint32_t n = (std::uint32_t{bytes[i]} << 16) | (i + 1 < bytes.size() ? std::uint32_t{bytes[i + 1]} << 8 : 0)
                                | (i + 2 < bytes.size() ? std::uint32_t{bytes[i + 2]} : 0);
        out += kBase64[(n >> 18) & 63];
        out += kBase64[(n >> 12) & 63];
        out += i + 1 < bytes.size() ? kBase64[(n >> 6) & 63] : '=';
        out += i + 2 < bytes.size() ? kBase64[n & 63] : '=';
    }
    return out;
}

std::optional<std::vector<std::uint8_t>> fromBase64(std::string_view text)
{
    if (text.size() % 4 != 0)
        return std::nullopt;
    std::vector<std::uint8_t> out;
    out.reserve(text.size() / 4 * 3);
    for (std::size_t i = 0; i < text.size(); i += 4) {
        std::uint32_t n = 0;
        int padding = 0;
        for (std::size_t k = 0; k < 4; ++k) {
            const char c = text[i + k];
            const char* found = c == '\0' ? nullptr : std::strchr(kBase64, c);
            if (c == '=' && i + 4 == text.size() && k >= 2 && (k == 3 || text[i + 3] == '=')) {
                ++padding;
                n <<= 6;
            } else if (found != nullptr && padding == 0) {
                n = (n << 6) | static_cast<std::uint32_t>(found - kBase64);
            } else {
                return std::nullopt;
            }
        }
        out.push_back(static_cast<std::uint8_t>(n >> 16));
        if (padding < 2)
            out.push_back(static_cast<std::uint8_t>((n >> 8) & 0xff));
        if (padding < 1)
            out.push_back(static_cast<std::uint8_t>(n & 0xff));
    }
    return out;
}

}  // namespace widelab
