// defines: RunLog: a run's log.txt, in spdlog's default pattern, behind an
// interface that includes neither spdlog nor fmt
#pragma once

#include <filesystem>
#include <memory>
#include <string>

namespace widelab {

// spdlog is compiled against Debian's fmt, while PyPI's LibTorch puts its own,
// newer fmt on the include path of everything that uses torch: spdlog's headers
// must never meet torch's. This class is compiled in a library that does not
// see torch (core/log/), and its header includes nothing of either.
class RunLog {
public:
    // Appends to `file`, flushing every line of level info and above; an empty
    // path logs nowhere (a read-only trainer).
    explicit RunLog(const std::filesystem::path& file);
    ~RunLog();
    RunLog(const RunLog&) = delete;
    RunLog& operator=(const RunLog&) = delete;

    // `level`: trace, debug, info, warning, error or critical.
    void write(const std::string& level, const std::string& text);

private:
    struct Sink;
    std::unique_ptr<Sink> m_sink;
};

}  // namespace widelab
