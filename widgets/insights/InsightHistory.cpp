#include "InsightHistory.h"

#include "HeadLabel.h"

#include "vocab/ByteText.h"

#include <QCoreApplication>

#include <algorithm>

namespace widelab {

namespace {

// Whether thinning must keep `item` whatever its place: a state that raised or
// cleared an alarm (the alarm lists replay them; dropping one would leave a
// warning in force forever, or lose it).
template <typename T>
bool keptWhenThinning(const T&)
{
    return false;
}
template <>
bool keptWhenThinning(const TrainingSnapshot& state)
{
    return !state.alarms.empty();
}

// Halves the density of the older half of `items` once it holds more than `limit`.
template <typename T>
void thin(QVector<T>& items, int limit)
{
    if (items.size() <= limit)
        return;
    const qsizetype older = items.size() / 2;
    QVector<T> kept;
    kept.reserve(items.size() - older / 2);
    for (qsizetype i = 0; i < items.size(); ++i)
        if (i >= older || i % 2 == 0 || keptWhenThinning(items[i]))
            kept.push_back(std::move(items[i]));
    items = std::move(kept);
}

// Inserts `item` in step order; an item of the same step is replaced.
template <typename T>
void insertByStep(QVector<T>& items, T item)
{
    auto at = std::lower_bound(items.begin(), items.end(), item.step,
                               [](const T& held, qint64 step) { return held.step < step; });
    if (at != items.end() && at->step == item.step)
        *at = std::move(item);
    else
        items.insert(at, std::move(item));
}

// The last item with step <= `step` (any, when step < 0).
template <typename T>
const T* lastAtOrBefore(const QVector<T>& items, qint64 step)
{
    if (items.isEmpty())
        return nullptr;
    if (step < 0)
        return &items.back();
    auto after = std::upper_bound(items.begin(), items.end(), step,
                                  [](qint64 s, const T& held) { return s < held.step; });
    return after == items.begin() ? nullptr : &*(after - 1);
}

}  // namespace

QString visibleToken(const QString& token)
{
    QString shown = token;
    shown.replace(QLatin1Char('\n'), QChar(0x23CE));
    shown.replace(QLatin1Char('\t'), QChar(0x21E5));
    if (shown.trimmed().isEmpty())
        shown.replace(QLatin1Char(' '), QChar(0x2423));
    return shown;
}

QString probeTextOf(const ProbeResult& probe) { return QString::fromStdString(legibleBytes(probe.text)); }

namespace {

QStringList qstrings(const std::vector<std::string>& strings)
{
    QStringList out;
    out.reserve(static_cast<qsizetype>(strings.size()));
    for (const std::string& s : strings)
        out.push_back(QString::fromStdString(s));
    return out;
}

// The map of a head, nullptr outside the layers and heads.
const std::vector<std::vector<float>>* mapOf(const ProbeResult& probe, int layer, int head)
{
    if (layer < 0 || layer >= probeLayers(probe) || head < 0)
        return nullptr;
    const auto& heads = probe.attention[static_cast<std::size_t>(layer)];
    return static_cast<std::size_t>(head) < heads.size() ? &heads[static_cast<std::size_t>(head)] : nullptr;
}

}  // namespace

QStringList probeTokens(const ProbeResult& probe) { return qstrings(probe.tokens); }
QStringList probeLabels(const ProbeResult& probe) { return qstrings(probe.predictionLabels); }

QString lensStageName(const LensStage& stage)
{
    return QStringLiteral("block %1 %2").arg(stage.block + 1).arg(QString::fromStdString(stage.sublayer));
}

int probeTokenCount(const ProbeResult& probe) { return static_cast<int>(probe.tokens.size()); }
int probeLayers(const ProbeResult& probe) { return static_cast<int>(probe.attention.size()); }
int probeHeads(const ProbeResult& probe)
{
    return probe.attention.empty() ? 0 : static_cast<int>(probe.attention.front().size());
}

float probeWeight(const ProbeResult& probe, int layer, int head, int query, int key)
{
    const int n = probeTokenCount(probe);
    const auto* map = mapOf(probe, layer, head);
    if (map == nullptr || query < 0 || query >= n || key < 0 || key >= n
        || static_cast<std::size_t>(query) >= map->size())
        return 0;
    const std::vector<float>& row = (*map)[static_cast<std::size_t>(query)];
    return static_cast<std::size_t>(key) < row.size() ? row[static_cast<std::size_t>(key)] : 0.0f;
}

QVector<float> headMap(const ProbeResult& probe, int layer, int head)
{
    QVector<float> flat;
    if (const auto* map = mapOf(probe, layer, head))
        for (const std::vector<float>& row : *map)
            flat.append(QVector<float>(row.begin(), row.end()));
    return flat;
}

QVector<QVector<float>> layerMaps(const ProbeResult& probe, int layer)
{
    QVector<QVector<float>> maps;
    if (layer < 0 || layer >= probeLayers(probe))
        return maps;
    const int heads = static_cast<int>(probe.attention[static_cast<std::size_t>(layer)].size());
    for (int head = 0; head < heads; ++head)
        maps.push_back(headMap(probe, layer, head));
    return maps;
}

QVector<float> meanOverHeads(const ProbeResult& probe, int layer)
{
    const int n = probeTokenCount(probe);
    QVector<float> mean(static_cast<qsizetype>(n) * n, 0.0f);
    if (layer < 0 || layer >= probeLayers(probe) || probe.attention[static_cast<std::size_t>(layer)].empty())
        return mean;
    const auto& heads = probe.attention[static_cast<std::size_t>(layer)];
    for (const auto& map : heads)
        for (int q = 0; q < std::min(n, static_cast<int>(map.size())); ++q) {
            const std::vector<float>& row = map[static_cast<std::size_t>(q)];
            for (int k = 0; k < std::min(n, static_cast<int>(row.size())); ++k)
                mean[static_cast<qsizetype>(q) * n + k] += row[static_cast<std::size_t>(k)];
        }
    const float count = static_cast<float>(heads.size());
    for (float& value : mean)
        value /= count;
    return mean;
}

bool validProbeImage(const ProbeImage& image)
{
    constexpr std::int64_t kMaxSide = 1 << 14;
    const std::int64_t width = image.width, height = image.height, channels = image.channels;
    const bool sized = width > 0 && height > 0 && width <= kMaxSide && height <= kMaxSide
                       && (channels == 1 || channels == 3)
                       && static_cast<std::int64_t>(image.pixels.size()) == width * height * channels;
    const bool gridded = image.gridRows > 0 && image.gridCols > 0 && image.gridRows <= height
                         && image.gridCols <= width && height % image.gridRows == 0 && width % image.gridCols == 0;
    return sized && gridded;
}

QImage probeQImage(const ProbeImage& image)
{
    if (!validProbeImage(image))
        return {};
    // The image borrows the bytes only while it is copied into its own.
    const QImage view(image.pixels.data(), static_cast<int>(image.width), static_cast<int>(image.height),
                      static_cast<qsizetype>(image.width * image.channels),
                      image.channels == 1 ? QImage::Format_Grayscale8 : QImage::Format_RGB888);
    return view.copy();
}

bool probeHasImage(const ProbeResult& probe) { return validProbeImage(probe.image); }

int probePatchCount(const ProbeResult& probe)
{
    return probeHasImage(probe) ? static_cast<int>(probe.image.gridRows * probe.image.gridCols) : 0;
}

void InsightHistory::addState(TrainingSnapshot state)
{
    insertByStep(m_states, std::move(state));
    thin(m_states, kMaxStates);
    ++m_revision;
}

void InsightHistory::addCapture(ProbeResult capture)
{
    const QString text = probeTextOf(capture);
    if (!m_texts.contains(text))
        m_texts.push_back(text);
    QVector<ProbeResult>& list = m_captures[text];
    insertByStep(list, std::move(capture));
    thin(list, kMaxCapturesPerText);
    ++m_revision;
}

void InsightHistory::addValidationInsight(ValidationInsights insight)
{
    insertByStep(m_validation, std::move(insight));
    thin(m_validation, kMaxStates);
    ++m_revision;
}

const ValidationInsights* InsightHistory::validationInsightAt(qint64 step) const
{
    return lastAtOrBefore(m_validation, step);
}

void InsightHistory::truncateAfter(qint64 step)
{
    auto later = [step](const auto& item) { return item.step > step; };
    m_states.erase(std::remove_if(m_states.begin(), m_states.end(), later), m_states.end());
    m_validation.erase(std::remove_if(m_validation.begin(), m_validation.end(), later), m_validation.end());
    for (auto& list : m_captures)
        list.erase(std::remove_if(list.begin(), list.end(), later), list.end());
    ++m_revision;
}

void InsightHistory::clear()
{
    m_states.clear();
    m_texts.clear();
    m_captures.clear();
    m_validation.clear();
    ++m_revision;
}

const QVector<ProbeResult>& InsightHistory::captures(const QString& text) const
{
    static const QVector<ProbeResult> none;
    auto it = m_captures.constFind(text);
    return it == m_captures.constEnd() ? none : *it;
}

const TrainingSnapshot* InsightHistory::stateAt(qint64 step) const
{
    return lastAtOrBefore(m_states, step);
}

namespace {

bool routed(const TrainingSnapshot& s) { return !s.routing.empty(); }
bool weighted(const TrainingSnapshot& s) { return !s.paths.empty(); }

}  // namespace

const TrainingSnapshot* InsightHistory::routedStateAt(qint64 step) const { return lastStateWith(step, routed); }
const TrainingSnapshot* InsightHistory::pathStateAt(qint64 step) const { return lastStateWith(step, weighted); }

void InsightHistory::setArchitecture(const ArchitectureSketch& sketch)
{
    m_architecture = sketch;
    ++m_revision;
}

void InsightHistory::setHeadCaptions(const QVector<HeadMapCaption>& captions)
{
    m_headCaptions = captions;
    ++m_revision;
}

void InsightHistory::setImageInput(bool images)
{
    m_imageInput = images;
    ++m_revision;
}

bool InsightHistory::imageInput() const
{
    if (m_imageInput)
        return *m_imageInput;
    for (const QVector<ProbeResult>& captures : m_captures)
        for (const ProbeResult& capture : captures)
            if (probeHasImage(capture))
                return true;
    return false;
}

QString headCaptionText(const QVector<HeadMapCaption>& captions, int head, int heads, int paths)
{
    if (captions.isEmpty() || head < 0)
        return {};
    // A multi-path model's heads are path-major (HeadLabel.h): every path has
    // the same mechanisms, head by head.
    const int perPath = headsPerPath(heads, paths);
    const HeadMapCaption& caption = captions.value(perPath > 0 ? head % perPath : head);
    if (caption.mechanism.isEmpty())
        return {};
    return caption.kind.isEmpty() ? caption.mechanism
                                  : QStringLiteral("%1 (%2)").arg(caption.mechanism, caption.kind);
}

QString mapKindLegend(const QVector<HeadMapCaption>& captions)
{
    QStringList lines;
    auto has = [&](const QString& kind) {
        return std::any_of(captions.begin(), captions.end(), [&](const HeadMapCaption& c) { return c.kind == kind; });
    };
    if (has(QStringLiteral("sparse pattern")))
        lines << QCoreApplication::translate("AttentionView",
                                             "sparse pattern: the exact weights, zero outside the mechanism's window");
    if (has(QStringLiteral("implied")))
        lines << QCoreApplication::translate(
            "AttentionView", "implied: the map a kernel or low-rank mechanism acts as, computed for the probe only "
                             "(it never forms one while training)");
    return lines.join(QStringLiteral("; "));
}

bool InsightHistory::hasExperts() const
{
    if (!m_architecture)
        return routedStateAt(-1) != nullptr;
    const ArchitectureSketch& a = *m_architecture;
    return a.experts > 1 && (a.moeAtBlock.isEmpty() || a.moeAtBlock.contains(true));
}

bool InsightHistory::hasPathWeights() const
{
    if (!m_architecture)
        return pathStateAt(-1) != nullptr;
    return m_architecture->paths > 1;  // fixed weights are measured too
}

const ProbeResult* InsightHistory::captureAt(const QString& text, qint64 step) const
{
    return lastAtOrBefore(captures(text), step);
}

QVector<qint64> InsightHistory::steps() const
{
    QVector<qint64> all;
    for (const TrainingSnapshot& state : m_states)
        all.push_back(state.step);
    for (const ValidationInsights& insight : m_validation)
        all.push_back(insight.step);
    for (const auto& list : m_captures)
        for (const ProbeResult& capture : list)
            all.push_back(capture.step);
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    return all;
}

qint64 InsightHistory::lastStep() const
{
    const QVector<qint64> all = steps();
    return all.isEmpty() ? -1 : all.back();
}

}  // namespace widelab
