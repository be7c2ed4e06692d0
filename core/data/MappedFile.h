// defines: MappedFile, a read-only memory mapping of a whole file (the token
// caches and the classification files are read through one)
#pragma once

#include <cstddef>
#include <filesystem>
#include <string_view>

namespace widelab {

class MappedFile {
public:
    explicit MappedFile(const std::filesystem::path& path);
    // Maps the whole file open at `fd` (which the caller keeps and closes); `name` for messages.
    MappedFile(int fd, const std::filesystem::path& name);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    std::string_view bytes() const { return {m_data, m_size}; }
    void adviseSequential() const;

private:
    void map(int fd, std::size_t size, const std::filesystem::path& name);

    const char* m_data = nullptr;
    std::size_t m_size = 0;
};

}  // namespace widelab
