// defines: TensorBoardEvents, TensorBoardExport, exportTensorBoard, tensorBoardFolder,
// attentionImage, TensorBoardFollower: a run's metrics.jsonl as TensorBoard event
// files, after training (widelab-cli export-tb) or while it trains (train
// --tensorboard). docs/tensorboard.md lists the tags.
#pragma once

#include "run/LineTail.h"
#include "vocab/MetricsCodec.h"
#include "vocab/Snapshot.h"
#include "data/ImageCodec.h"
#include "log/TensorBoardWriter.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace widelab {

// Where a run's events go: LOGDIR/<the run directory's own name>, so that one
// LOGDIR holds several runs side by side for TensorBoard to compare.
std::filesystem::path tensorBoardFolder(const std::filesystem::path& logdir, const std::filesystem::path& runDirectory);

// The attention maps of one probe layer ([head][query][key], T x T each) as one
// RGB image: the heads in a grid of ceil(sqrt(H)) columns, row by row, 2 grey
// pixels apart. A map longer than 256 tokens is first averaged over blocks of
// ceil(T / 256) tokens (n = ceil(T / that) cells a side); each cell is then
// ceil(128 / n) pixels a side. Each head is drawn against its own largest
// weight: white for 0, dark blue for that weight.
Image attentionImage(const std::vector<std::vector<std::vector<float>>>& heads);

// Turns decoded metrics.jsonl lines into summaries for a writer, one event per
// line at the line's step. Counts what it wrote.
class TensorBoardEvents {
public:
    explicit TensorBoardEvents(tensorboard::EventWriter& writer) : m_writer(writer) {}

    void add(const MetricsRecord& record, double wallTime);

    std::int64_t scalars() const { return m_scalars; }
    std::int64_t histograms() const { return m_histograms; }
    std::int64_t images() const { return m_images; }
    // Images were left out because this build cannot encode PNG (no libpng).
    bool imagesLeftOut() const { return m_imagesLeftOut; }

private:
    void addTraining(const MetricsRecord& record, tensorboard::Summary& summary);
    void addEvaluation(const MetricsRecord& record, tensorboard::Summary& summary);
    void addProbe(const ProbeResult& probe, tensorboard::Summary& summary);
    void scalar(tensorboard::Summary& summary, const std::string& tag, double value);
    void image(tensorboard::Summary& summary, const std::string& tag, const Image& image);

    tensorboard::EventWriter& m_writer;
    std::int64_t m_scalars = 0, m_histograms = 0, m_images = 0;
    bool m_imagesLeftOut = false;
};

struct TensorBoardExport {
    std::filesystem::path file;  // the events file written
    std::int64_t lines = 0;      // lines of metrics.jsonl read
    std::int64_t skipped = 0;    // of which refused (each told to `warn`)
    std::int64_t scalars = 0, histograms = 0, images = 0;
    bool imagesLeftOut = false;
};

// Writes every line of RUN_DIR/metrics.jsonl into a new events file in
// tensorBoardFolder(logdir, runDirectory). Wall times: the lines' wall_seconds
// added up over the run's sessions, placed so that the last line is at the file's
// modification time. A line that decodeMetricsLine refuses is skipped, told to
// `warn` as "RUN_DIR/metrics.jsonl, line N: skipped, <reason>". That folder
// holding event files already is an error unless `replace`, which deletes them
// first (only files named events.out.tfevents.*). Throws DataError naming the
// run directory or metrics.jsonl when it is missing or unreadable, and
// std::runtime_error naming the folder or file that cannot be written.
TensorBoardExport exportTensorBoard(const std::filesystem::path& runDirectory, const std::filesystem::path& logdir,
                                    bool replace, const std::function<void(const std::string&)>& warn);

// Writes TensorBoard events while a run trains: an observer of its Trainer,
// made once the trainer is constructed (when a resume has trimmed metrics.jsonl).
// At each snapshot, evaluation, probe and validation it converts the lines the
// trainer has appended to metrics.jsonl since, the same lines export-tb reads,
// into a new events file in tensorBoardFolder(logdir, runDirectory). A run that
// resumes at step S > 0 begins its file with a SessionLog START at S + 1, so that
// TensorBoard drops points an earlier session wrote after the checkpoint.
// Construction throws as EventWriter does (an unwritable LOGDIR); a failure to
// write later stops the events, never the training, and is kept in error().
class TensorBoardFollower : public TrainingObserver {
public:
    TensorBoardFollower(const std::filesystem::path& runDirectory, const std::filesystem::path& logdir,
                        std::int64_t step);
    ~TensorBoardFollower() override;

    void onSnapshot(const TrainingSnapshot&) override { convertNewLines(); }
    void onEvaluation(const EvaluationResult&) override { convertNewLines(); }
    void onProbe(const ProbeResult&) override { convertNewLines(); }
    void onValidationInsights(const ValidationInsights&) override { convertNewLines(); }

    const std::filesystem::path& file() const { return m_writer->file(); }
    const std::string& error() const { return m_error; }

private:
    void convertNewLines();

    LineTail m_tail;
    std::unique_ptr<tensorboard::EventWriter> m_writer;
    std::unique_ptr<TensorBoardEvents> m_events;
    std::string m_error;
};

}  // namespace widelab
