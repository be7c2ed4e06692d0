// defines: Sha256, sha256Hex: SHA-256 (FIPS 180-4) of bytes given in pieces, as
// the hex digest that Python's hashlib.sha256(...).hexdigest() prints, so that
// an export's record of its files can be checked by either side
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace widelab {

class Sha256 {
public:
    Sha256();
    void add(std::string_view bytes);
    // The 64 lowercase hex digits; the object is spent afterwards.
    std::string hex();

private:
    void block(const unsigned char* data);

    std::array<std::uint32_t, 8> m_state;
    std::array<unsigned char, 64> m_pending{};
    std::size_t m_pendingSize = 0;
    std::uint64_t m_length = 0;  // bytes added
};

// Sha256 of `bytes` in one piece.
std::string sha256Hex(std::string_view bytes);

}  // namespace widelab
