#include "TensorBoardExport.h"

#include "run/RunLayout.h"
#include "data/Tokenizer.h"  // DataError
#include "vocab/MetricScalars.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <system_error>

namespace widelab {
namespace {

// A probe's name in its tags: its text when short and plain, else its first 40
// characters made plain and a hash of the whole text (FNV-1a, 32 bits), so that
// two texts never share a tag.
std::string probeName(const std::string& text)
{
    constexpr std::size_t kLongest = 40;
    std::string plain;
    for (const char c : text.substr(0, kLongest))
        plain += (c >= ' ' && c < 0x7f && c != '/') ? c : '_';
    if (plain == text && !plain.empty())
        return plain;
    std::uint32_t hash = 2166136261u;
    for (const char c : text)
        hash = (hash ^ static_cast<unsigned char>(c)) * 16777619u;
    char suffix[16];
    std::snprintf(suffix, sizeof suffix, "~%08x", static_cast<unsigned>(hash));
    return plain + suffix;
}


double unixSeconds()
{
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Expert e (1-based) as the values from e - 0.5 to e + 0.5, weighted by the
// tokens it received: TensorBoard draws each expert's load as one bar.
tensorboard::Histogram expertHistogram(const std::vector<std::int64_t>& tokens)
{
    tensorboard::Histogram h;
    std::int64_t first = -1, last = -1;
    for (std::size_t e = 0; e < tokens.size(); ++e) {
        const auto count = static_cast<double>(std::max<std::int64_t>(tokens[e], 0));
        const double x = static_cast<double>(e + 1);
        h.bucketLimits.push_back(x + 0.5);
        h.bucketCounts.push_back(count);
        h.num += count;
        h.sum += x * count;
        h.sumSquares += x * x * count;
        if (count > 0) {
            if (first < 0)
                first = static_cast<std::int64_t>(e);
            last = static_cast<std::int64_t>(e);
        }
    }
    if (first >= 0) {
        h.min = static_cast<double>(first + 1) - 0.5;
        h.max = static_cast<double>(last + 1) + 0.5;
    }
    return h;
}

tensorboard::Histogram valuesHistogram(const std::vector<float>& values)
{
    return tensorboard::histogramOf(std::vector<double>(values.begin(), values.end()));
}

// A parameter group's buckets as they are (their sum and sum of squares taken
// at the buckets' middles); equal values are one bucket.
tensorboard::Histogram groupHistogram(const ValueHistogram& values)
{
    tensorboard::Histogram h;
    h.min = values.low;
    h.max = values.high;
    const std::size_t n = values.high > values.low ? values.counts.size() : 1;
    const double width = (values.high - values.low) / static_cast<double>(n);
    for (std::size_t i = 0; i < n; ++i) {
        const double count = n == 1 ? static_cast<double>(values.total()) : static_cast<double>(values.counts[i]);
        const double middle = values.low + width * (static_cast<double>(i) + 0.5);
        h.bucketLimits.push_back(i + 1 == n ? values.high : values.low + width * static_cast<double>(i + 1));
        h.bucketCounts.push_back(count);
        h.num += count;
        h.sum += middle * count;
        h.sumSquares += middle * middle * count;
    }
    return h;
}

}  // namespace

std::filesystem::path tensorBoardFolder(const std::filesystem::path& logdir, const std::filesystem::path& runDirectory)
{
    // Absolute first, so that "." and "runs/wide/" name the folder too.
    std::error_code error;
    std::filesystem::path run = std::filesystem::absolute(runDirectory, error).lexically_normal();
    if (!run.has_filename())
        run = run.parent_path();
    const std::string name = run.filename().string();
    return logdir / (name.empty() ? std::string("run") : name);
}

Image attentionImage(const std::vector<std::vector<std::vector<float>>>& heads)
{
    constexpr std::int64_t kLargestMap = 256, kSmallestCell = 128, kGap = 2;
    constexpr std::uint8_t kGrey = 128;
    const auto count = static_cast<std::int64_t>(heads.size());
    const auto tokens = heads.empty() ? std::int64_t{0} : static_cast<std::int64_t>(heads.front().size());
    Image image;
    if (count == 0 || tokens == 0)
        return image;
    const std::int64_t pool = (tokens + kLargestMap - 1) / kLargestMap;
    const std::int64_t cells = (tokens + pool - 1) / pool;
    const std::int64_t scale = (kSmallestCell + cells - 1) / cells;
    const std::int64_t side = cells * scale;
    std::int64_t columns = 1;
    while (columns * columns < count)
        ++columns;
    const std::int64_t rows = (count + columns - 1) / columns;
    image.channels = 3;
    image.width = columns * side + (columns - 1) * kGap;
    image.height = rows * side + (rows - 1) * kGap;
    image.pixels.assign(static_cast<std::size_t>(image.width * image.height * 3), kGrey);

    std::vector<double> pooled(static_cast<std::size_t>(cells * cells));
    for (std::int64_t h = 0; h < count; ++h) {
        const auto& map = heads[static_cast<std::size_t>(h)];
        std::fill(pooled.begin(), pooled.end(), 0.0);
        for (std::int64_t i = 0; i < cells; ++i)
            for (std::int64_t j = 0; j < cells; ++j) {
                double sum = 0.0;
                std::int64_t n = 0;
                for (std::int64_t q = i * pool; q < std::min(tokens, (i + 1) * pool); ++q) {
                    const auto& row = map[static_cast<std::size_t>(q)];
                    for (std::int64_t k = j * pool; k < std::min<std::int64_t>(static_cast<std::int64_t>(row.size()), (j + 1) * pool); ++k, ++n)
                        sum += row[static_cast<std::size_t>(k)];
                }
                pooled[static_cast<std::size_t>(i * cells + j)] = n > 0 ? sum / static_cast<double>(n) : 0.0;
            }
        const double largest = *std::max_element(pooled.begin(), pooled.end());
        const std::int64_t left = (h % columns) * (side + kGap), top = (h / columns) * (side + kGap);
        for (std::int64_t y = 0; y < side; ++y)
            for (std::int64_t x = 0; x < side; ++x) {
                const double v = pooled[static_cast<std::size_t>((y / scale) * cells + x / scale)];
                const double t = largest > 0.0 && std::isfinite(v) ? std::clamp(v / largest, 0.0, 1.0) : 0.0;
                std::uint8_t* pixel = &image.pixels[static_cast<std::size_t>(((top + y) * image.width + left + x) * 3)];
                pixel[0] = static_cast<std::uint8_t>(std::lround(255.0 - t * (255.0 - 8.0)));
                pixel[1] = static_cast<std::uint8_t>(std::lround(255.0 - t * (255.0 - 48.0)));
                pixel[2] = static_cast<std::uint8_t>(std::lround(255.0 - t * (255.0 - 107.0)));
            }
    }
    return image;
}

// ---- TensorBoardEvents

void TensorBoardEvents::scalar(tensorboard::Summary& summary, const std::string& tag, double value)
{
    summary.scalar(tag, value);
    ++m_scalars;
}

void TensorBoardEvents::image(tensorboard::Summary& summary, const std::string& tag, const Image& picture)
{
    if (!hasPngSupport()) {
        m_imagesLeftOut = true;
        return;
    }
    const std::vector<std::uint8_t> png = encodePng(picture, tag);
    summary.image(tag, picture.width, picture.height, static_cast<int>(picture.channels),
                  std::string_view(reinterpret_cast<const char*>(png.data()), png.size()));
    ++m_images;
}

void TensorBoardEvents::add(const MetricsRecord& record, double wallTime)
{
    tensorboard::Summary summary;
    switch (record.type) {
    case MetricsRecord::Type::Train:
        addTraining(record, summary);
        break;
    case MetricsRecord::Type::Eval:
        addEvaluation(record, summary);
        break;
    case MetricsRecord::Type::Probe:
        addProbe(record.probe, summary);
        break;
    case MetricsRecord::Type::Insights:  // head roles and expert intake: the app's views, not curves
    case MetricsRecord::Type::Other:
        break;
    }
    m_writer.write(wallTime, record.step, summary);
}

// Every scalar as metricScalars tags it (the app's chart chooser uses the same
// tags), then what only TensorBoard draws: histograms of expert loads, of
// LayerNorm rows, and of each parameter group's weights and gradients.
void TensorBoardEvents::addTraining(const MetricsRecord& record, tensorboard::Summary& summary)
{
    for (const MetricScalar& s : metricScalars(record))
        scalar(summary, s.tag, s.value);
    const TrainingSnapshot& s = record.train;
    for (const RoutingStats& r : s.routing) {
        if (r.tokensPerExpert.empty())
            continue;
        summary.histogram("experts/" + numberedTag("block_", r.block) + "/tokens_per_expert", expertHistogram(r.tokensPerExpert));
        ++m_histograms;
    }
    const std::pair<const char*, const std::vector<std::vector<float>>*> norms[] = {
        {"attention_gamma", &s.attentionGamma}, {"attention_beta", &s.attentionBeta},
        {"ffn_gamma", &s.ffnGamma},             {"ffn_beta", &s.ffnBeta}};
    for (const auto& [name, rows] : norms)
        for (std::size_t b = 0; b < rows->size(); ++b) {
            summary.histogram("layernorm/" + numberedTag("block_", static_cast<std::int64_t>(b)) + "/" + name,
                              valuesHistogram((*rows)[b]));
            ++m_histograms;
        }
    const std::pair<const char*, const std::vector<ValueHistogram>*> parameters[] = {
        {"weights/", &s.weightHistograms}, {"gradients/", &s.gradientHistograms}};
    for (const auto& [kind, groups] : parameters)
        for (const ValueHistogram& group : *groups) {
            summary.histogram(std::string(kind) + metricTagPart(group.group), groupHistogram(group));
            ++m_histograms;
        }
}

void TensorBoardEvents::addEvaluation(const MetricsRecord& record, tensorboard::Summary& summary)
{
    for (const MetricScalar& s : metricScalars(record))
        scalar(summary, s.tag, s.value);
}

void TensorBoardEvents::addProbe(const ProbeResult& probe, tensorboard::Summary& summary)
{
    const std::string prefix = "probe/" + probeName(probe.text) + "/";
    if (probe.image.width > 0) {
        Image input;
        input.width = probe.image.width;
        input.height = probe.image.height;
        input.channels = probe.image.channels;
        input.pixels = probe.image.pixels;
        image(summary, prefix + "input", input);
    }
    for (std::size_t layer = 0; layer < probe.attention.size(); ++layer) {
        const Image picture = attentionImage(probe.attention[layer]);
        if (picture.width > 0)
            image(summary, prefix + numberedTag("attention/layer_", static_cast<std::int64_t>(layer)), picture);
    }
}

// ---- export-tb

TensorBoardExport exportTensorBoard(const std::filesystem::path& runDirectory, const std::filesystem::path& logdir,
                                    bool replace, const std::function<void(const std::string&)>& warn)
{
    std::error_code error;
    if (!std::filesystem::is_directory(runDirectory, error))
        throw DataError(runDirectory.string() + ": no such run directory");
    const std::filesystem::path metrics = runlayout::metricsFile(runDirectory);
    if (!std::filesystem::exists(metrics, error))
        throw DataError(metrics.string() + ": missing (not a run directory, or a run that has not started)");
    const auto modified = std::filesystem::last_write_time(metrics, error);
    if (error)
        throw DataError(metrics.string() + ": cannot be read (" + error.message() + ")");
    const double modifiedSeconds =
        std::chrono::duration<double>(std::chrono::file_clock::to_sys(modified).time_since_epoch()).count();

    // Pass 1: each line's training time, added up over the sessions (wall_seconds
    // starts again at a resume), and the lines refused, told once.
    auto open = [&] {
        std::ifstream in(metrics, std::ios::binary);
        if (!in)
            throw DataError(metrics.string() + ": cannot be read");
        return in;
    };
    std::vector<double> trainingTime;
    std::vector<bool> refused;
    TensorBoardExport result;
    {
        std::ifstream in = open();
        double sessions = 0.0, session = 0.0;
        std::string line;
        while (std::getline(in, line)) {
            std::string reason;
            const auto record = line.empty() ? std::nullopt : decodeMetricsLine(line, &reason);
            if (!line.empty() && !record) {
                warn(metrics.string() + ", line " + std::to_string(trainingTime.size() + 1) + ": skipped, " + reason);
                ++result.skipped;
            }
            if (record && record->type == MetricsRecord::Type::Train) {
                if (record->train.wallSeconds < session)
                    sessions += session;
                session = record->train.wallSeconds;
            }
            trainingTime.push_back(sessions + session);
            refused.push_back(!record);
        }
        if (in.bad())
            throw DataError(metrics.string() + ": cannot be read");
    }
    const double start = modifiedSeconds - (trainingTime.empty() ? 0.0 : trainingTime.back());

    const std::filesystem::path folder = tensorBoardFolder(logdir, runDirectory);
    std::vector<std::filesystem::path> earlier;
    if (std::filesystem::is_directory(folder, error))
        for (const auto& entry : std::filesystem::directory_iterator(folder, error))
            if (entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0)
                earlier.push_back(entry.path());
    if (!earlier.empty() && !replace)
        throw std::runtime_error(folder.string() + " already holds TensorBoard events (" + earlier.front().filename().string()
                                 + "); --replace deletes them and writes the run again");
    for (const auto& file : earlier)
        if (!std::filesystem::remove(file, error) && error)
            throw std::runtime_error(file.string() + ": cannot delete (" + error.message() + ")");

    // Pass 2: the events.
    tensorboard::EventWriter writer(folder, start);
    TensorBoardEvents events(writer);
    std::ifstream in = open();
    std::string line;
    for (std::size_t index = 0; std::getline(in, line) && index < trainingTime.size(); ++index) {
        ++result.lines;
        if (line.empty() || refused[index])
            continue;
        std::string reason;
        if (const auto record = decodeMetricsLine(line, &reason))
            events.add(*record, start + trainingTime[index]);
    }
    result.file = writer.file();
    result.scalars = events.scalars();
    result.histograms = events.histograms();
    result.images = events.images();
    result.imagesLeftOut = events.imagesLeftOut();
    return result;
}

// ---- While training

TensorBoardFollower::TensorBoardFollower(const std::filesystem::path& runDirectory, const std::filesystem::path& logdir,
                                         std::int64_t step)
    : m_tail(runlayout::metricsFile(runDirectory))
{
    // The lines already there are the sessions before this one (export-tb's).
    while (m_tail.poll().more) {
    }
    m_writer = std::make_unique<tensorboard::EventWriter>(tensorBoardFolder(logdir, runDirectory), unixSeconds());
    if (step > 0)
        m_writer->sessionStart(unixSeconds(), step + 1);
    m_events = std::make_unique<TensorBoardEvents>(*m_writer);
}

TensorBoardFollower::~TensorBoardFollower() = default;

void TensorBoardFollower::convertNewLines()
{
    if (!m_error.empty())
        return;
    try {
        LineTail::Update update;
        do {
            update = m_tail.poll();
            for (const std::string& line : update.lines)
                if (const auto record = decodeMetricsLine(line, nullptr))
                    m_events->add(*record, unixSeconds());
        } while (update.more);
    } catch (const std::exception& failure) {
        m_error = failure.what();
    }
}

}  // namespace widelab
