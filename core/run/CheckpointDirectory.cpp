#include "CheckpointDirectory.h"

#include "RunLayout.h"
#include "runtime/DeviceMemory.h"
#include "runtime/SystemError.h"
#include "vocab/Format.h"

#include <algorithm>
#include <cstdio>

namespace widelab {

CheckpointDirectory::CheckpointDirectory(const std::filesystem::path& runDirectory, bool mayWrite)
    : m_directory(runlayout::checkpointsDirectory(runDirectory)), m_mayWrite(mayWrite)
{
}

std::optional<std::string> lowSpaceText(const std::filesystem::path& folder, std::uintmax_t available,
                                        std::uintmax_t checkpointBytes)
{
    if (available >= 2 * checkpointBytes)
        return std::nullopt;
    return "the disk holding " + folder.string() + " has " + formatBytes(static_cast<double>(available))
           + " free, room for fewer than two more checkpoints of " + formatBytes(static_cast<double>(checkpointBytes))
           + ": make room, or the run stops when a save finds the disk full (its last checkpoint kept)";
}

std::optional<std::string> CheckpointDirectory::lowSpaceWarning(std::uintmax_t checkpointBytes) const
{
    std::error_code error;
    const std::filesystem::space_info space = std::filesystem::space(m_directory, error);
    if (error)
        return std::nullopt;
    return lowSpaceText(m_directory, space.available, checkpointBytes);
}

std::filesystem::path CheckpointDirectory::stepFile(std::int64_t step) const
{
    return m_directory / runlayout::checkpointFileName(step);
}

std::vector<std::filesystem::path> CheckpointDirectory::stepFiles() const
{
    std::vector<std::pair<std::int64_t, std::filesystem::path>> found;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(m_directory, error))
        if (const auto step = runlayout::stepOfCheckpoint(entry.path().filename().string()))
            found.emplace_back(*step, entry.path());
    // A folder that is missing holds no checkpoint yet; one that cannot be read
    // (no permission) is not the same thing.
    if (error && error != std::errc::no_such_file_or_directory)
        throw CheckpointError(m_directory.string() + ": cannot list the checkpoints: " + systemReason(error.value()));
    std::sort(found.begin(), found.end());  // by step: past 10^8 steps the names grow a digit
    std::vector<std::filesystem::path> files;
    for (auto& [step, file] : found)
        files.push_back(std::move(file));
    return files;
}

std::vector<std::string> CheckpointDirectory::removeOrphans() const
{
    return m_mayWrite ? removeInterruptedWrites(m_directory) : std::vector<std::string>();
}

std::filesystem::path CheckpointDirectory::setAside(const std::filesystem::path& file) const
{
    std::filesystem::path aside = file.string() + ".unreadable";
    for (int n = 2; std::filesystem::exists(aside) && n < 1000; ++n)
        aside = file.string() + ".unreadable-" + std::to_string(n);
    std::error_code error;
    std::filesystem::rename(file, aside, error);
    return error ? std::filesystem::path() : aside;
}

LoadedCheckpoint CheckpointDirectory::load(const std::string& which, WideTransformerImpl& model,
                                           torch::optim::Optimizer* optimizer, const Warn& warn)
{
    std::vector<std::filesystem::path> candidates;
    const bool latest = which == "latest";
    if (latest) {
        candidates = stepFiles();
        std::reverse(candidates.begin(), candidates.end());
        if (candidates.empty())
            throw CheckpointError(m_directory.parent_path().string() + ": the run has no checkpoint yet");
    } else {
        candidates.push_back(m_directory / (which == "best" ? std::string(runlayout::kBestCheckpoint) : which));
    }
    std::vector<std::filesystem::path> unreadable;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
        const std::filesystem::path& file = candidates[i];
        LoadedCheckpoint loaded{file, {}};
        try {
            loaded.state = loadCheckpoint(file, model, optimizer);
        } catch (const CheckpointUnreadable& error) {
            if (!latest)
                throw;
            if (i + 1 == candidates.size())
                throw CheckpointUnreadable(std::string(error.what()) + "; none of the run's "
                                           + std::to_string(candidates.size()) + " step checkpoint(s) can be read");
            warn(std::string(error.what()) + "; trying " + candidates[i + 1].filename().string());
            unreadable.push_back(file);
            continue;
        }
        m_intact[file.filename().string()] = true;
        // Only once an older checkpoint has loaded: a problem with every file
        // (this LibTorch, the disk) leaves them all where they were.
        for (const std::filesystem::path& bad : unreadable) {
            if (!m_mayWrite)
                break;
            const std::filesystem::path aside = setAside(bad);
            warn(bad.filename().string()
                 + (aside.empty() ? std::string(" could not be set aside; it stays, and is not counted toward train.keep_last")
                                  : " set aside as " + aside.filename().string()
                                        + "; WideLab does not delete it, nor count it toward train.keep_last"));
            if (aside.empty())
                m_intact[bad.filename().string()] = false;
        }
        if (!loaded.state.verified)
            warn(file.string() + ": a format-1 checkpoint, written before checkpoints had a checksum: its bytes "
                                 "were not verified (its weights were checked to be finite)");
        return loaded;
    }
    throw CheckpointError(m_directory.string() + ": no checkpoint");  // not reached: the last failure throws
}

void CheckpointDirectory::written(const std::filesystem::path& file) { m_intact[file.filename().string()] = true; }

bool CheckpointDirectory::intact(const std::filesystem::path& file, const Warn& warn)
{
    const std::string name = file.filename().string();
    if (const auto known = m_intact.find(name); known != m_intact.end())
        return known->second;
    const auto problem = checkpointIntegrity(file);
    if (!problem) {
        m_intact[name] = true;
        return true;
    }
    const std::filesystem::path aside = m_mayWrite ? setAside(file) : std::filesystem::path();
    if (aside.empty()) {
        m_intact[name] = false;  // warned once
        warn(*problem + "; it stays, and is not counted toward train.keep_last");
    } else {
        warn(*problem + "; set aside as " + aside.filename().string()
             + ": WideLab does not delete it, nor count it toward train.keep_last");
    }
    return false;
}

std::vector<std::filesystem::path> CheckpointDirectory::prune(std::int64_t keepLast, const Warn& warn)
{
    std::vector<std::filesystem::path> removed;
    if (!m_mayWrite)
        return removed;
    std::vector<std::filesystem::path> files = stepFiles();
    std::int64_t kept = 0;
    for (auto it = files.rbegin(); it != files.rend(); ++it) {
        if (!intact(*it, warn) || ++kept <= keepLast)
            continue;
        std::error_code error;
        if (std::filesystem::remove(*it, error)) {
            m_intact.erase(it->filename().string());
            removed.push_back(*it);
        }
    }
    return removed;
}

}  // namespace widelab
