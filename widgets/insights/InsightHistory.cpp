#include "InsightHistory.h"

#include "HeadLabel.h"

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

float ProbeCapture::weight(int layer, int head, int query, int key) const
{
    const int n = tokenCount();
    if (layer < 0 || layer >= layers() || head < 0 || head >= attention[layer].size() || query < 0 || query >= n
        || key < 0 || key >= n)
        return 0;
    const QVector<float>& map = attention[layer][head];
    const qsizetype at = static_cast<qsizetype>(query) * n + key;
    return at < map.size() ? map[at] : 0.0f;
}

QVector<float> ProbeCapture::meanOverHeads(int layer) const
{
    const int n = tokenCount();
    QVector<float> mean(static_cast<qsizetype>(n) * n, 0.0f);
    if (layer < 0 || layer >= layers() || attention[layer].isEmpty())
        return mean;
    for (const QVector<float>& map : attention[layer])
        for (qsizetype i = 0; i < std::min(map.size(), mean.size()); ++i)
            mean[i] += map[i];
    const float heads = static_cast<float>(attention[layer].size());
    for (float& value : mean)
        value /= heads;
    return mean;
}

void InsightHistory::addState(TrainingSnapshot state)
{
    insertByStep(m_states, std::move(state));
    thin(m_states, kMaxStates);
    ++m_revision;
}

void InsightHistory::addCapture(ProbeCapture capture)
{
    if (!m_texts.contains(capture.text))
        m_texts.push_back(capture.text);
    QVector<ProbeCapture>& list = m_captures[capture.text];
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

const QVector<ProbeCapture>& InsightHistory::captures(const QString& text) const
{
    static const QVector<ProbeCapture> none;
    auto it = m_captures.constFind(text);
    return it == m_captures.constEnd() ? none : *it;
}

const TrainingSnapshot* InsightHistory::stateAt(qint64 step) const
{
    return lastAtOrBefore(m_states, step);
}

namespace {

// The newest state at or before `step` (any, when step < 0) for which `has` holds.
template <typename Has>
const TrainingSnapshot* lastWith(const QVector<TrainingSnapshot>& states, qint64 step, Has has)
{
    for (auto it = states.rbegin(); it != states.rend(); ++it)
        if ((step < 0 || it->step <= step) && has(*it))
            return &*it;
    return nullptr;
}

bool routed(const TrainingSnapshot& s) { return !s.routing.empty(); }
bool weighted(const TrainingSnapshot& s) { return !s.paths.empty(); }

}  // namespace

const TrainingSnapshot* InsightHistory::routedStateAt(qint64 step) const { return lastWith(m_states, step, routed); }
const TrainingSnapshot* InsightHistory::pathStateAt(qint64 step) const { return lastWith(m_states, step, weighted); }

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

CaptureImage CaptureImage::fromPixels(qint64 width, qint64 height, qint64 channels, const quint8* pixels,
                                      qint64 count, qint64 gridRows, qint64 gridCols)
{
    constexpr qint64 kMaxSide = 1 << 14;
    const bool sized = width > 0 && height > 0 && width <= kMaxSide && height <= kMaxSide
                       && (channels == 1 || channels == 3) && pixels != nullptr && count == width * height * channels;
    const bool gridded = gridRows > 0 && gridCols > 0 && gridRows <= height && gridCols <= width
                         && height % gridRows == 0 && width % gridCols == 0;
    CaptureImage out;
    if (!sized || !gridded)
        return out;
    // The image borrows the bytes only while it is copied into its own.
    const QImage view(pixels, static_cast<int>(width), static_cast<int>(height), static_cast<qsizetype>(width * channels),
                      channels == 1 ? QImage::Format_Grayscale8 : QImage::Format_RGB888);
    out.image = view.copy();
    out.gridRows = static_cast<int>(gridRows);
    out.gridCols = static_cast<int>(gridCols);
    return out;
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
    for (const QVector<ProbeCapture>& captures : m_captures)
        for (const ProbeCapture& capture : captures)
            if (capture.hasImage())
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

const ProbeCapture* InsightHistory::captureAt(const QString& text, qint64 step) const
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
        for (const ProbeCapture& capture : list)
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
