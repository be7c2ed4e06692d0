// The configuration panel's training-memory estimate (core/train/MemoryEstimate)
// by hand, and against the bytes a training step really holds on the CPU,
// counted by an allocator of this test's own in front of LibTorch's.
#include "TestSupport.h"

#include "model/ParameterCount.h"
#include "benchmark/Benchmark.h"
#include "train/MemoryEstimate.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <torch/version.h>

#include <QtTest>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>

using namespace widelab;
using test::tinyRun;

namespace {

// Every CPU tensor's bytes, live now and at their peak since reset(). Each
// block carries its size in a header one alignment unit before the data, so
// that raw_deleter (one function for every block) can count it back.
class CountingAllocator final : public c10::Allocator {
public:
    // allocate() is const in LibTorch 1.x and early 2.x, non-const later: both.
    c10::DataPtr allocate(std::size_t bytes) const { return serve(bytes); }
    c10::DataPtr allocate(std::size_t bytes) { return serve(bytes); }
    void copy_data(void* dest, const void* src, std::size_t count) const { std::memcpy(dest, src, count); }
    c10::DeleterFnPtr raw_deleter() const { return &release; }

    static void reset() { s_peak = s_live.load(); }
    static std::int64_t live() { return s_live; }
    static std::int64_t peak() { return s_peak; }

private:
    static constexpr std::size_t kHeader = 64;

    static c10::DataPtr serve(std::size_t bytes)
    {
        auto* block = static_cast<char*>(std::aligned_alloc(kHeader, kHeader + (bytes + kHeader - 1) / kHeader * kHeader));
        TORCH_CHECK(block, "out of memory in the test's counting allocator");
        std::memcpy(block, &bytes, sizeof bytes);
        const std::int64_t now = s_live += static_cast<std::int64_t>(bytes);
        std::int64_t seen = s_peak;
        while (now > seen && !s_peak.compare_exchange_weak(seen, now)) {
        }
        void* data = block + kHeader;
        return {data, data, &release, c10::Device(c10::DeviceType::CPU)};
    }

    static void release(void* data)
    {
        if (!data)
            return;
        char* block = static_cast<char*>(data) - kHeader;
        std::size_t bytes = 0;
        std::memcpy(&bytes, block, sizeof bytes);
        s_live -= static_cast<std::int64_t>(bytes);
        std::free(block);
    }

    static inline std::atomic<std::int64_t> s_live = 0;
    static inline std::atomic<std::int64_t> s_peak = 0;
};

ModelConfig model(const std::string& json)
{
    nlohmann::json document = nlohmann::json::parse(R"({"vocab_size": 200, "max_len": 64, "d_model": 64,
        "layers": 2, "heads": 4, "ffn_dim": 256, "dropout": 0.1, "num_classes": 10})");
    document.merge_patch(nlohmann::json::parse(json));
    return parseModelDocument(nlohmann::json{{"model", document}}.dump()).model;
}

}  // namespace

class TestMemoryEstimate : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void byHand();
    void byHandForAMixtureLanguageModel();
    void againstTheBytesATrainingStepHolds_data();
    void againstTheBytesATrainingStepHolds();
};

// tinyRun: batch 16 of ListOps examples of at most 30 tokens (max_len 40),
// and a CLS token: T = 31, 496 positions. d 32, 4 heads of 8 (W = 32), FFN 64
// (GELU), 2 blocks, dropout 0.1, 10 classes, AdamW. Per position and block, in
// bytes, fp32 on the CPU:
//   attention: LayerNorm input 4 x 32, QKV input 4 x 32, q k v 3 x 32 x 4,
//              output dropout mask 32                                   = 672
//     WideLab's softmax (LibTorch 2.x's fused kernel runs on the CPU only without
//              dropout): scaled q and context 2 x 32 x 4, and per head
//              31 x (probabilities 4 + mask 1 + dropped copy 4)       = 256 + 1116
//   FFN: LayerNorm input 128, mask 32, input 128, hidden 2 x 64 x 4     = 800
// and once: embedding dropout mask 32, final LayerNorm input 128 and the
// classifier's input 128. Logits 16 x 10, kept with two gradients, fp32.
void TestMemoryEstimate::byHand()
{
    const RunDocument run = tinyRun();
    const std::int64_t stored = 12345;
    const MemoryEstimate cpu = estimateTrainingMemory(run, stored, false);
    QCOMPARE(cpu.parameterBytes, std::int64_t{16 * 12345});
    const std::int64_t block = 672 + 1372 + 800;
    QCOMPARE(cpu.activationBytes, std::int64_t{496 * (2 * block + 32 + 256)});
    QCOMPARE(cpu.headBytes, std::int64_t{3 * 4 * 16 * 10});

    // Longer examples make more positions and longer rows of probabilities.
    const RunDocument longer = tinyRun(R"({"task": {"max_length": 40}})");
    const std::int64_t longerBlock = 672 + 256 + 4 * 41 * 9 + 800;
    QCOMPARE(estimateTrainingMemory(longer, stored, false).activationBytes,
             std::int64_t{656 * (2 * longerBlock + 32 + 256)});

    // bf16 on a GPU: products keep bf16, LayerNorms fp32, and the bf16 copies of
    // the weights (2 bytes each) join the parameters. Attention: 128 + 64 + 192
    // + 32 = 416, then LibTorch 2.x's fused kernel keeps the output and the log-
    // sum-exp (64 + 4 x 4), 1.x's own softmax 2 x 32 x 2 + 4 x 31 x (4 + 1 + 2);
    // FFN: 128 + 32 + 64 + 2 x 64 x 2 = 480; once: 32 + 128 + 64.
    const MemoryEstimate gpu = estimateTrainingMemory(run, stored, true);
    QCOMPARE(gpu.parameterBytes, std::int64_t{18 * 12345});
    const std::int64_t gpuBlock = TORCH_VERSION_MAJOR >= 2 ? 416 + 80 + 480 : 416 + 996 + 480;
    QCOMPARE(gpu.activationBytes, std::int64_t{496 * (2 * gpuBlock + 32 + 192)});
    // Without bf16 a GPU keeps fp32 (and LibTorch 2.x runs the fused kernel, dropout and all).
    const RunDocument fp32 = tinyRun(R"({"train": {"bf16": false}})");
    const std::int64_t fp32Block = TORCH_VERSION_MAJOR >= 2 ? 672 + 144 + 800 : 672 + 1372 + 800;
    QCOMPARE(estimateTrainingMemory(fp32, stored, true).activationBytes, std::int64_t{496 * (2 * fp32Block + 288)});
    // SGD keeps one momentum instead of two moments.
    const RunDocument sgd = tinyRun(R"({"train": {"optimizer": "sgd"}})");
    QCOMPARE(estimateTrainingMemory(sgd, stored, false).parameterBytes, std::int64_t{12 * 12345});
    // CUDA graphs on a GPU: the graphs' pool and the measured steps' each hold a
    // step's activations and logits; the CPU records none.
    const RunDocument graphs = tinyRun(R"({"train": {"cuda_graph": true}})");
    QCOMPARE(estimateTrainingMemory(graphs, stored, true).activationBytes, 2 * gpu.activationBytes);
    QCOMPARE(estimateTrainingMemory(graphs, stored, true).headBytes, 2 * gpu.headBytes);
    QCOMPARE(estimateTrainingMemory(graphs, stored, true).parameterBytes, gpu.parameterBytes);
    QCOMPARE(estimateTrainingMemory(graphs, stored, false).activationBytes, cpu.activationBytes);
}

// A WideNet-like language model: 4 experts, top-2, capacity 1.25, no dropout,
// 2 blocks, batch 4 x 32 tokens (S = 128 routed per call), d 32, 4 heads of 8,
// FFN 64, vocabulary 300, label smoothing. Capacity ceil(2 x 1.25 x 128 / 4) =
// 80 slots, so 320 buffer rows over 128 tokens: 2.5 per token, but the CPU's
// experts multiply only the kept pairs: at most 2 per token. Per token and
// block, fp32: attention 128 + 128 + 384 (no masks), LibTorch 2.x fused (no
// dropout): 128 + 16, 1.x: 256 + 4 x 32 x 4; MoE: LayerNorm input 128, router
// input 128 and its logits and probabilities 2 x 4 x 4, per expert row the
// input 128 and hidden 2 x 256, the two chosen outputs 2 x 128.
void TestMemoryEstimate::byHandForAMixtureLanguageModel()
{
    const RunDocument run = parseRunDocument(R"({
        "model": {"vocab_size": 300, "max_len": 32, "d_model": 32, "layers": 2, "heads": 4, "ffn_dim": 64,
                  "dropout": 0.0, "head": "language_model", "experts": 4, "top_k": 2, "capacity_factor": 1.25},
        "task": {"kind": "language_model", "path": "/dev/null", "tokenizer": "byte"},
        "train": {"batch_size": 4, "label_smoothing": 0.1}})",
                                                "", false);
    const MemoryEstimate cpu = estimateTrainingMemory(run, 1000, false);
    const double attention = 640.0 + (TORCH_VERSION_MAJOR >= 2 ? 144.0 : 256.0 + 512.0);
    const double moe = 128.0 + 128.0 + 32.0 + 2.0 * (128.0 + 512.0) + 256.0;
    // once: the final LayerNorm's input and the head's input, no embedding mask
    QCOMPARE(cpu.activationBytes, static_cast<std::int64_t>(128.0 * (2.0 * (attention + moe) + 256.0)));
    // log-softmax output, the loss's gradient, the smoothing term's and the log-softmax's
    QCOMPARE(cpu.headBytes, std::int64_t{4 * 4 * 128 * 300});
}

void TestMemoryEstimate::againstTheBytesATrainingStepHolds_data()
{
    QTest::addColumn<QString>("json");
    QTest::addColumn<int>("batch");
    QTest::addColumn<int>("sequence");
    QTest::newRow("deep, dropout") << R"({})" << 8 << 64;
    QTest::newRow("deep, no dropout, ReLU") << R"({"dropout": 0.0, "activation": "relu"})" << 8 << 64;
    QTest::newRow("wide 1x16") << R"({"layers": 1, "heads": 16, "head_dim": 16})" << 8 << 64;
    QTest::newRow("multi-path, PathNorm, extra features, language model")
        << R"({"paths": 3, "path_norm": true, "learnable_path_weights": true, "path_extra_features": true,
              "head": "language_model", "vocab_size": 1000})"
        << 8 << 64;
    QTest::newRow("WideNet mixture, factorised embedding")
        << R"({"experts": 4, "top_k": 2, "capacity_factor": 1.2, "share_attention": true, "share_ffn": true,
              "embedding_dim": 16, "pooler": true})"
        << 8 << 64;
    QTest::newRow("ViT mixture, images")
        << R"({"input": "image", "image_size": 32, "patch_size": 4, "channels": 3, "pooling": "mean",
              "experts": 4, "top_k": 2, "share_router": false})"
        << 8 << 64;
}

// One warm-up and one measured AdamW step of the benchmark (the trainer's
// step on random tokens), fp32: the most bytes in CPU tensors at once, model
// and optimizer state included, against the estimate. The estimate is a
// first-order count of the large tensors, so it may miss small ones (indices,
// routing decisions, LayerNorm statistics) and transient copies; it must come
// within 20 % under and 25 % over.
void TestMemoryEstimate::againstTheBytesATrainingStepHolds()
{
    QFETCH(QString, json);
    QFETCH(int, batch);
    QFETCH(int, sequence);
    const ModelConfig config = model(json.toStdString());
    BenchmarkOptions options;
    options.batch = batch;
    options.sequence = sequence;
    options.steps = 1;
    options.warmup = 1;
    options.peakSize = 16;  // the peak measurement's matrices: 3 KiB
    const std::int64_t before = CountingAllocator::live();
    CountingAllocator::reset();
    runBenchmark(config, options);
    const std::int64_t measured = CountingAllocator::peak() - before;

    const RunDocument run = benchmarkRunDocument(config, options);
    const MemoryEstimate estimate = estimateTrainingMemory(run, modelCost(run.model).total.stored, false);
    const double ratio = static_cast<double>(estimate.totalBytes()) / static_cast<double>(measured);
    const QString figures = QString("estimated %1 bytes (parameters %2, activations %3, head %4), measured %5: %6x")
                                .arg(estimate.totalBytes()).arg(estimate.parameterBytes).arg(estimate.activationBytes)
                                .arg(estimate.headBytes).arg(measured).arg(ratio, 0, 'f', 3);
    qInfo().noquote() << figures;
    QVERIFY2(ratio > 0.8 && ratio < 1.25, qPrintable(figures));
}

int main(int argc, char** argv)
{
    // Before any LibTorch work: every CPU tensor from here on is counted.
    static auto* allocator = new CountingAllocator;
    c10::SetCPUAllocator(allocator, std::numeric_limits<std::uint8_t>::max());
    if (c10::GetCPUAllocator() != allocator)
        qFatal("the counting allocator was not installed");
    TestMemoryEstimate test;
    return QTest::qExec(&test, argc, argv);
}

#include "tst_memoryestimate.moc"
