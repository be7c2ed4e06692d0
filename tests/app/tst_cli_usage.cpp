// Tests widelab-cli's command line (app/cli/Commands, through runCli): usage errors, help and version,
// threads, forward and bench; and TextTable (app/cli/TextTable).
#include "CliTestSupport.h"
#include "runtime/Runtime.h"

#include <QRegularExpression>

using namespace widelab;
using namespace widelab::clitest;

class TestCliUsage : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void usageErrors_data();
    void usageErrors();
    void helpAndVersion();
    void threadsPinEveryPool();
    void openBlasSleepsSoonUnlessTheUserSaysOtherwise();
    void openBlasKernelsAreAskedForOnlyWhereItFellBack_data();
    void openBlasKernelsAreAskedForOnlyWhereItFellBack();
    void openBlasRunsKernelsThisCpuRunsUnlessTheUserSaysOtherwise();
    void forward_data();
    void forward();
    void bench_data();
    void bench();
    void benchText();
    void benchDevice();
    void benchDecode();

    void textTableRendersExactly();
    void textTableAlignsColumns();
};

// ---------------------------------------------------------------- usage

void TestCliUsage::usageErrors_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("message");

    QTest::newRow("no arguments") << QStringList{} << "usage:";
    QTest::newRow("unknown command") << QStringList{"frobnicate"} << "unknown command \"frobnicate\"";
    QTest::newRow("unknown option") << QStringList{"params", "widenet", "--bogus"} << "unknown option --bogus";
    QTest::newRow("option of another command") << QStringList{"check", "widenet", "--json"} << "unknown option --json";
    QTest::newRow("batch abc") << QStringList{"forward", "widenet", "--batch", "abc"}
                               << "--batch: expected an integer, got \"abc\"";
    QTest::newRow("batch 2x") << QStringList{"forward", "widenet", "--batch", "2x"}
                              << "--batch: expected an integer, got \"2x\"";
    // Strictly: no space around a number, no empty value, no option twice (which one was meant?).
    QTest::newRow("steps with a space") << QStringList{"train", "widenet", "--out", "r", "--steps", " 3"}
                                        << "--steps: expected an integer, got \" 3\"";
    QTest::newRow("steps with a plus") << QStringList{"train", "widenet", "--out", "r", "--steps", "+3"}
                                       << "--steps: expected an integer, got \"+3\"";
    QTest::newRow("steps beyond int64") << QStringList{"train", "widenet", "--out", "r", "--steps", "99999999999999999999"}
                                        << "--steps: 99999999999999999999 is outside 1..";
    QTest::newRow("device empty") << QStringList{"train", "widenet", "--out", "r", "--device", ""}
                                  << "--device needs a value, not an empty one";
    QTest::newRow("steps twice") << QStringList{"train", "widenet", "--out", "r", "--steps", "3", "--steps", "5"}
                                 << "--steps is given twice";
    QTest::newRow("flag twice") << QStringList{"params", "widenet", "--json", "--json"} << "--json is given twice";
    QTest::newRow("batch without value") << QStringList{"forward", "widenet", "--batch"} << "--batch needs a value";
    QTest::newRow("batch 0") << QStringList{"forward", "widenet", "--batch", "0"} << "--batch: 0 is outside";
    // widenet's max_len is 512.
    QTest::newRow("length above max_len") << QStringList{"forward", "widenet", "--length", "513"}
                                          << "--length: 513 is outside 1..512";
    QTest::newRow("no config") << QStringList{"params"} << "expected exactly one CONFIG";
    QTest::newRow("two configs") << QStringList{"params", "widenet", "albert"} << "expected exactly one CONFIG";
    // Options that mean nothing to a command are refused, not silently ignored.
    QTest::newRow("eval --steps") << QStringList{"eval", "run", "--steps", "5"} << "unknown option --steps";
    QTest::newRow("inspect --threads") << QStringList{"inspect", "run", "--text", "x", "--threads", "2"}
                                       << "unknown option --threads";
    QTest::newRow("export --resume") << QStringList{"export", "run", "--out", "m.pt", "--resume"}
                                     << "unknown option --resume";
    QTest::newRow("train without config") << QStringList{"train", "--out", "run"} << "train --resume --out RUN_DIR";
    QTest::newRow("export --format against the name")
        << QStringList{"export", "run", "--out", "m.pt", "--format", "safetensors"}
        << "--format safetensors disagrees with --out m.pt (a .pt file)";
    QTest::newRow("export --format unknown") << QStringList{"export", "run", "--out", "m.bin", "--format", "onnx"}
                                             << "--format onnx: expected safetensors or pt";
}

void TestCliUsage::usageErrors()
{
    QFETCH(QStringList, args);
    QFETCH(QString, message);

    const CliResult result = cli(args);
    QCOMPARE(result.code, 2);
    QVERIFY2(result.out.isEmpty(), qPrintable(result.out));
    QVERIFY2(result.err.contains(message), qPrintable(result.err));
    QVERIFY2(result.err.contains(QStringLiteral("usage:")), qPrintable(result.err));
}

void TestCliUsage::helpAndVersion()
{
    for (const char* flag : {"--help", "-h", "help"}) {
        const CliResult help = cli({flag});
        QCOMPARE(help.code, 0);
        QVERIFY(help.out.contains(QStringLiteral("usage:")));
        QVERIFY(help.err.isEmpty());
    }
    const CliResult version = cli({"--version"});
    QCOMPARE(version.code, 0);
    QVERIFY2(version.out.startsWith(QStringLiteral("widelab-cli 0.1.0 (")), qPrintable(version.out));
    QVERIFY2(!version.out.contains(QStringLiteral("disabled:")), qPrintable(version.out));
    // WIDELAB_DISABLE is read once per process: the binary, in an environment of its own.
    QProcess process;
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("WIDELAB_DISABLE"), QStringLiteral("fused_adamw,unknown,fused_attention"));
    process.setProcessEnvironment(environment);
    process.start(QStringLiteral(WIDELAB_CLI), {QStringLiteral("--version")});
    QVERIFY(process.waitForFinished(60000));
    const QString disabled = QString::fromUtf8(process.readAllStandardOutput());
    QVERIFY2(disabled.contains(QStringLiteral("disabled: fused_attention,fused_adamw, ")), qPrintable(disabled));
}

namespace {

// widelab-cli --version's line, run with `names` taken out of the environment
// and, unless `value` is empty, the first of them set to it.
QString versionWithSetting(const QStringList& names, const QString& value)
{
    QProcess process;
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    for (const QString& name : names)
        environment.remove(name);
    if (!value.isEmpty())
        environment.insert(names.front(), value);
    process.setProcessEnvironment(environment);
    process.start(QStringLiteral(WIDELAB_CLI), {QStringLiteral("--version")});
    process.waitForFinished(60000);
    return QString::fromUtf8(process.readAllStandardOutput());
}

}  // namespace

// OpenBLAS's threads leave the cores soon after a product (OPENBLAS_THREAD_TIMEOUT
// 16, set before the program starts again), unless the user set a timeout.
void TestCliUsage::openBlasSleepsSoonUnlessTheUserSaysOtherwise()
{
    const QStringList names{QStringLiteral("OPENBLAS_THREAD_TIMEOUT"), QStringLiteral("GOTO_THREAD_TIMEOUT")};
    auto versionWith = [&names](const QString& timeout) { return versionWithSetting(names, timeout); };
    const QString chosen = versionWith(QString());
    if (!chosen.contains(QStringLiteral("BLAS: OpenBLAS (")))
        QSKIP(qPrintable(QStringLiteral("the BLAS loaded is not OpenBLAS: ") + chosen));
    QVERIFY2(chosen.contains(QStringLiteral("idle after 2^16 cycles")), qPrintable(chosen));
    const QString own = versionWith(QStringLiteral("22"));
    QVERIFY2(own.contains(QStringLiteral("idle after 2^22 cycles")), qPrintable(own));
}

void TestCliUsage::openBlasKernelsAreAskedForOnlyWhereItFellBack_data()
{
    QTest::addColumn<QString>("chosen");
    QTest::addColumn<bool>("avx2Fma");
    QTest::addColumn<bool>("avx512");
    QTest::addColumn<QString>("asked");

    // OpenBLAS 0.3.21's fallback for an x86 CPU it does not know is Prescott (SSE3).
    QTest::newRow("unknown Xeon with AVX-512") << "Prescott" << true << true << "SkylakeX";
    QTest::newRow("unknown CPU with AVX2") << "Prescott" << true << false << "Haswell";
    QTest::newRow("older generic set, AVX2") << "Core2" << true << false << "Haswell";
    QTest::newRow("SSE-only CPU keeps Prescott") << "Prescott" << false << false << "";
    QTest::newRow("Sandy Bridge is right for an AVX-only CPU") << "Sandybridge" << false << false << "";
    QTest::newRow("a known Xeon") << "SkylakeX" << true << true << "";
    QTest::newRow("Cooper Lake") << "Cooperlake" << true << true << "";
    QTest::newRow("a Zen, whatever the case") << "ZEN" << true << true << "";
    QTest::newRow("Haswell on an AVX-512 CPU stands") << "Haswell" << true << true << "";
    QTest::newRow("no OpenBLAS") << "" << true << true << "";
}

// OpenBLAS is asked for other kernels only where it chose a set without AVX2 on
// a CPU that has it: the best set the CPU runs, never one it lacks.
void TestCliUsage::openBlasKernelsAreAskedForOnlyWhereItFellBack()
{
    QFETCH(QString, chosen);
    QFETCH(bool, avx2Fma);
    QFETCH(bool, avx512);
    QFETCH(QString, asked);
    CpuVectors cpu;
    cpu.avx2Fma = avx2Fma;
    cpu.avx512 = avx512;
    QCOMPARE(QString::fromStdString(fittingOpenblasCore(chosen.toStdString(), cpu)), asked);
}

// The program runs OpenBLAS's kernels for this CPU (on a CPU OpenBLAS does not
// know, not its SSE3 fallback), and the kernels the user names where they do.
void TestCliUsage::openBlasRunsKernelsThisCpuRunsUnlessTheUserSaysOtherwise()
{
    auto versionWith = [](const QString& coreType) {
        return versionWithSetting({QStringLiteral("OPENBLAS_CORETYPE")}, coreType);
    };
    const QString chosen = versionWith(QString());
    if (!chosen.contains(QStringLiteral("BLAS: OpenBLAS (")))
        QSKIP(qPrintable(QStringLiteral("the BLAS loaded is not OpenBLAS: ") + chosen));
    if (!cpuVectors().avx2Fma)
        QSKIP("this CPU has no AVX2: OpenBLAS's own choice stands");
    const QRegularExpression kernels(QStringLiteral("(\\w+) kernels\\)"));
    const QRegularExpressionMatch match = kernels.match(chosen);
    QVERIFY2(match.hasMatch(), qPrintable(chosen));
    QVERIFY2(fittingOpenblasCore(match.captured(1).toStdString(), cpuVectors()).empty(), qPrintable(chosen));
    // The user's choice, even one below the CPU's best, is kept.
    const QString own = versionWith(QStringLiteral("Haswell"));
    QVERIFY2(own.contains(QStringLiteral("Haswell kernels)")), qPrintable(own));
}

// --threads holds whatever OMP_NUM_THREADS and OPENBLAS_NUM_THREADS say: LibTorch's
// pool and the BLAS's own both run the count asked for.
void TestCliUsage::threadsPinEveryPool()
{
    QProcess process;
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("OMP_NUM_THREADS"), QStringLiteral("2"));
    environment.insert(QStringLiteral("OPENBLAS_NUM_THREADS"), QStringLiteral("2"));
    process.setProcessEnvironment(environment);
    process.start(QStringLiteral(WIDELAB_CLI), {"bench", "widenet", "--batch", "2", "--seq", "16", "--steps", "1",
                                                "--warmup", "0", "--threads", "1", "--json"});
    QVERIFY(process.waitForFinished(120000));
    QCOMPARE(process.exitCode(), 0);
    const auto report = nlohmann::json::parse(process.readAllStandardOutput().toStdString());
    const std::string runtime = report.at("runtime").get<std::string>();
    QVERIFY2(runtime.find(", 1 thread (") != std::string::npos, runtime.c_str());
    if (runtime.find("BLAS: OpenBLAS") != std::string::npos)
        QVERIFY2(runtime.find("BLAS: OpenBLAS (1 thread") != std::string::npos, runtime.c_str());
}

// ---------------------------------------------------------------- forward

void TestCliUsage::forward_data()
{
    QTest::addColumn<QString>("preset");
    QTest::addColumn<double>("maxBalance");  // 0: no routing, so the balance loss is exactly 0

    QTest::newRow("transformer-1x48, dense") << "transformer-1x48" << 0.0;
    // Each routing call adds E * sum_e m_e P_e, which is in (0, E] (sum m_e = 1,
    // P_e <= 1); widenet routes G = layers = 6 times with E = 4.
    QTest::newRow("widenet, 6 routing calls") << "widenet" << 4.0 * 6;
}

void TestCliUsage::forward()
{
    QFETCH(QString, preset);
    QFETCH(double, maxBalance);

    const CliResult result = cli({"forward", preset, "--batch", "2", "--length", "8", "--threads", "1"});
    QCOMPARE(result.code, 0);
    QVERIFY2(result.err.isEmpty(), qPrintable(result.err));

    const ModelDocument document = loadModelDocument(resolveConfigPath(preset.toStdString()));
    const QString line = lineStartingWith(result.out, q(document.name) + QStringLiteral(": "));
    QVERIFY2(!line.isEmpty(), qPrintable(result.out));
    QVERIFY2(line.contains(QStringLiteral("batch 2 x 8 tokens")), qPrintable(line));

    const QRegularExpression pattern(QStringLiteral("task loss (\\S+), balance loss (\\S+),"));
    const QRegularExpressionMatch match = pattern.match(line);
    QVERIFY2(match.hasMatch(), qPrintable(line));
    bool ok = false;
    const double task = match.captured(1).toDouble(&ok);
    QVERIFY2(ok, qPrintable(match.captured(1)));
    QVERIFY2(std::isfinite(task), qPrintable(line));
    QVERIFY2(task > 0.0, qPrintable(line));  // cross-entropy of a model that is not certain
    const double balance = match.captured(2).toDouble(&ok);
    QVERIFY2(ok, qPrintable(match.captured(2)));
    QVERIFY2(std::isfinite(balance), qPrintable(line));
    if (maxBalance == 0.0) {
        QCOMPARE(balance, 0.0);
    } else {
        QVERIFY2(balance > 0.0 && balance <= maxBalance, qPrintable(line));
    }
}

// ---------------------------------------------------------------- bench

void TestCliUsage::bench_data()
{
    QTest::addColumn<QString>("preset");
    QTest::addColumn<QString>("mode");

    QTest::newRow("transformer-1x48, train") << "transformer-1x48" << "train";
    QTest::newRow("widenet, train") << "widenet" << "train";
    QTest::newRow("multipath-3x4-features, infer") << "multipath-3x4-features" << "infer";
}

// The JSON report is complete and consistent with itself; nothing is timed.
void TestCliUsage::bench()
{
    QFETCH(QString, preset);
    QFETCH(QString, mode);

    const CliResult result = cli({"bench", preset, "--mode", mode, "--batch", "2", "--seq", "8", "--steps", "2",
                                  "--warmup", "1", "--threads", "1", "--json"});
    QCOMPARE(result.code, 0);
    QVERIFY2(result.err.isEmpty(), qPrintable(result.err));
    const nlohmann::json r = nlohmann::json::parse(result.out.toStdString());

    QCOMPARE(r.at("mode").get<std::string>(), mode.toStdString());
    // A dense classifier read at its CLS token computes its last block's CLS row alone in inference.
    QCOMPARE(r.at("cls_row_only").get<bool>(), mode == QStringLiteral("infer"));
    QCOMPARE(r.at("batch").get<int>(), 2);
    QCOMPARE(r.at("sequence").get<int>(), 8);
    QCOMPARE(r.at("threads").get<int>(), 1);
    QCOMPARE(r.at("step_seconds").size(), std::size_t{2});
    QVERIFY(!r.at("blas").get<std::string>().empty());
    QVERIFY(r.at("runtime").get<std::string>().find("BLAS: ") != std::string::npos);

    const double step = r.at("step_seconds_median").get<double>();
    const double tokensPerSecond = r.at("tokens_per_second").get<double>();
    const double achieved = r.at("achieved_flops").get<double>();
    const double peak = r.at("peak_flops").get<double>();
    QVERIFY(step > 0.0 && peak > 0.0);
    QVERIFY(std::abs(tokensPerSecond * step - 16.0) < 1e-6 * 16.0);
    QVERIFY(std::abs(achieved * step - r.at("flops_per_step").get<double>()) < 1e-6 * achieved * step);
    QVERIFY(std::abs(r.at("peak_ratio").get<double>() - achieved / peak) < 1e-9 * achieved / peak);

    // Model FLOPs: the forward count per token over 8 tokens (9 with a CLS
    // token) of each of 2 sequences, three times over when training.
    const double passes = mode == QStringLiteral("train") ? 3.0 : 1.0;
    const double perPosition = passes * 2.0 * r.at("forward_flops_per_token").get<double>();
    const double flops = r.at("flops_per_step").get<double>();
    QVERIFY2(flops >= 8.0 * perPosition * (1 - 1e-9) && flops <= 9.0 * perPosition * (1 + 1e-9),
             qPrintable(result.out));
    QVERIFY(r.at("flops_per_step_at_capacity").get<double>() >= flops * (1 - 1e-9));

    const auto& phases = r.at("phase_seconds_per_step");
    for (const char* name : {"attention", "ffn_experts", "routing_dispatch_combine", "paths_residual", "backward",
                             "optimizer", "measurement", "other"}) {
        QVERIFY2(phases.contains(name), name);
        QVERIFY2(phases.at(name).get<double>() >= 0.0, name);
    }
    QVERIFY(phases.at("attention").get<double>() > 0.0);
    QCOMPARE(phases.at("routing_dispatch_combine").get<double>() > 0.0, preset == QStringLiteral("widenet"));
    QCOMPARE(phases.at("optimizer").get<double>() > 0.0, mode == QStringLiteral("train"));

    QCOMPARE(r.at("device").get<std::string>(), std::string("cpu"));
    QCOMPARE(r.at("dtype").get<std::string>(), std::string("fp32"));
    QCOMPARE(r.at("peak_dtype").get<std::string>(), std::string("fp32"));
    QCOMPARE(r.at("mfu").get<double>(), r.at("peak_ratio").get<double>());
    QVERIFY(r.at("mfu_nominal").is_null());
    QVERIFY(r.at("peak_allocated_bytes").get<double>() > 0.0);
    QCOMPARE(r.at("moe_routing_share").is_null(), preset != QStringLiteral("widenet"));
    // A mixture's experts multiply their own pairs on the CPU, one product each, not the capacity buffer.
    if (preset == QStringLiteral("widenet"))
        QCOMPARE(r.at("expert_products").get<std::string>(), std::string("grouped"));
    else
        QVERIFY(r.at("expert_products").is_null());
    // The panel's estimate for training steps (none for inference); the host's
    // queue time and CUDA graphs are for GPUs only.
    QCOMPARE(r.at("memory_estimate_bytes").is_null(), mode != QStringLiteral("train"));
    if (mode == QStringLiteral("train"))
        QVERIFY(r.at("memory_estimate_bytes").get<double>() > 0.0);
    QVERIFY(r.at("queue_seconds_median").is_null());
    QCOMPARE(r.at("cuda_graph").get<bool>(), false);

    // Operators of one more step: the innermost ones are among all, and the
    // phases share them out exactly; only a mixture routes, only training
    // runs backward and the optimizer.
    const auto& ops = r.at("operators_per_step");
    const std::int64_t all = ops.at("all").get<std::int64_t>(), innermost = ops.at("innermost").get<std::int64_t>();
    QVERIFY2(innermost > 0 && all > innermost, qPrintable(QString::fromStdString(ops.dump())));
    std::int64_t shared = 0;
    for (const auto& [name, count] : ops.at("innermost_by_phase").items()) {
        QVERIFY2(phases.contains(name), name.c_str());
        shared += count.get<std::int64_t>();
    }
    QCOMPARE(shared, innermost);
    const auto& byPhase = ops.at("innermost_by_phase");
    QCOMPARE(byPhase.at("routing_dispatch_combine").get<std::int64_t>() > 0, preset == QStringLiteral("widenet"));
    QCOMPARE(byPhase.at("backward").get<std::int64_t>() > 0, mode == QStringLiteral("train"));
    QCOMPARE(byPhase.at("optimizer").get<std::int64_t>() > 0, mode == QStringLiteral("train"));
    std::int64_t listed = 0;
    for (const auto& entry : ops.at("most_frequent"))
        listed += entry.at("count").get<std::int64_t>();
    QVERIFY(listed > 0 && listed <= innermost);
}

// --device takes only a device this LibTorch can use, else it is a usage
// error; --bf16 runs under autocast (on the CPU too) and the JSON says so.
// Where CUDA is usable, the same on the GPU: the allocator's peaks, the
// routing share from the synchronised phase pass, the nominal MFU.
// Greedy decoding of a tiny translation model both ways: the figures' relations
// hold (tokens over seconds, the speedup their ratio); a model that cannot
// decode is a usage error.
void TestCliUsage::benchDecode()
{
    QTemporaryDir directory;
    const QString model = writeFile(directory, QStringLiteral("translation.json"),
                                    R"({"model": {"head": "translation", "vocab_size": 40, "max_len": 16, "d_model": 16,
                                                  "heads": 2, "ffn_dim": 32, "layers": 1, "decoder_layers": 1}})");
    const CliResult result = cli({"bench", model, "--mode", "decode", "--batch", "2", "--seq", "6", "--steps", "1",
                                  "--threads", "1", "--json"});
    QCOMPARE(result.code, 0);
    const nlohmann::json r = nlohmann::json::parse(result.out.toStdString());
    QCOMPARE(r.at("mode").get<std::string>(), std::string("decode"));
    QCOMPARE(r.at("rows").size(), std::size_t{2});
    QCOMPARE(r.at("rows")[0].at("target_tokens").get<int>(), 50);
    QCOMPARE(r.at("rows")[1].at("target_tokens").get<int>(), 200);
    for (const nlohmann::json& row : r.at("rows")) {
        const double cached = row.at("cached_tokens_per_second").get<double>();
        const double recomputed = row.at("recomputed_tokens_per_second").get<double>();
        QVERIFY(cached > 0.0 && recomputed > 0.0);
        QVERIFY(std::abs(row.at("speedup").get<double>() - cached / recomputed) < 1e-6 * cached / recomputed);
    }
    const CliResult encoder = cli({"bench", "widenet", "--mode", "decode", "--steps", "1"});
    QCOMPARE(encoder.code, 2);
    QVERIFY2(encoder.err.contains("not a translation model"), qPrintable(encoder.err));
}

void TestCliUsage::benchDevice()
{
    const QStringList common = {"bench", "widenet", "--batch", "2", "--seq", "8", "--steps", "2",
                                "--warmup", "1", "--threads", "1", "--json"};
    const CliResult bf16 = cli(common + QStringList{"--bf16"});
    QCOMPARE(bf16.code, 0);
    const nlohmann::json cpu = nlohmann::json::parse(bf16.out.toStdString());
    QCOMPARE(cpu.at("dtype").get<std::string>(), std::string("bf16"));
    QCOMPARE(cpu.at("peak_dtype").get<std::string>(), std::string("bf16"));
    QVERIFY(std::isfinite(cpu.at("loss").get<double>()));

    const CliResult badName = cli({"bench", "widenet", "--device", "gpu0"});
    QCOMPARE(badName.code, 2);
    QVERIFY2(badName.err.contains(QLatin1String("--device")), qPrintable(badName.err));
    const CliResult badPeak = cli({"bench", "widenet", "--peak-tflops", "fast"});
    QCOMPARE(badPeak.code, 2);
    const CliResult graphOnCpu = cli(common + QStringList{"--cuda-graph"});
    QCOMPARE(graphOnCpu.code, 2);
    QVERIFY2(graphOnCpu.err.contains(QLatin1String("--cuda-graph")), qPrintable(graphOnCpu.err));

    // --kernels: one more step's operators by self time on the CPU, at most
    // as many as asked, most time first, within what the whole profile counts.
    const CliResult profiled = cli(common + QStringList{"--kernels", "4"});
    QCOMPARE(profiled.code, 0);
    const nlohmann::json kernels = nlohmann::json::parse(profiled.out.toStdString()).at("kernel_profile");
    QCOMPARE(kernels.at("time").get<std::string>(), std::string("host self"));
    QVERIFY(kernels.at("unavailable").is_null());
    QCOMPARE(kernels.at("by_operator").size(), std::size_t{4});
    QVERIFY(kernels.at("by_kernel").empty());
    double listed = 0.0, before = 1e300;
    for (const nlohmann::json& entry : kernels.at("by_operator")) {
        const double seconds = entry.at("seconds").get<double>();
        QVERIFY(seconds <= before && entry.at("calls").get<std::int64_t>() >= 1);
        before = seconds;
        listed += seconds;
    }
    QVERIFY(listed > 0.0 && listed <= kernels.at("seconds").get<double>() * (1.0 + 1e-9));
    QVERIFY(nlohmann::json::parse(cli(common).out.toStdString()).at("kernel_profile").is_null());
    const CliResult none = cli(common + QStringList{"--kernels", "0"});
    QCOMPARE(none.code, 0);
    QVERIFY(nlohmann::json::parse(none.out.toStdString()).at("kernel_profile").is_null());
    const CliResult profiledReplays = cli(common + QStringList{"--kernels", "4", "--cuda-graph"});
    QCOMPARE(profiledReplays.code, 2);
    QVERIFY2(profiledReplays.err.contains(QLatin1String("--kernels")), qPrintable(profiledReplays.err));

    if (!torch::cuda::is_available()) {
        const CliResult noCuda = cli({"bench", "widenet", "--device", "cuda"});
        QCOMPARE(noCuda.code, 2);
        QVERIFY2(noCuda.err.contains(QLatin1String("CUDA")), qPrintable(noCuda.err));
        return;
    }
    const CliResult gpu = cli(common + QStringList{"--device", "cuda", "--bf16", "--peak-tflops", "1000"});
    QCOMPARE(gpu.code, 0);
    const nlohmann::json r = nlohmann::json::parse(gpu.out.toStdString());
    QCOMPARE(r.at("device").get<std::string>(), std::string("cuda:0"));
    QCOMPARE(r.at("dtype").get<std::string>(), std::string("bf16"));
    QVERIFY(std::isfinite(r.at("loss").get<double>()));
    const double allocated = r.at("peak_allocated_bytes").get<double>();
    QVERIFY(allocated > 0.0 && allocated <= r.at("peak_reserved_bytes").get<double>());
    const double share = r.at("moe_routing_share").get<double>();
    QVERIFY(share > 0.0 && share < 1.0);
    QVERIFY(std::abs(r.at("mfu_nominal").get<double>() - r.at("achieved_flops").get<double>() / 1e15) < 1e-9);
    const double queued = r.at("queue_seconds_median").get<double>();
    QVERIFY(queued > 0.0 && queued <= r.at("step_seconds_median").get<double>());
    QVERIFY(r.at("memory_estimate_bytes").get<double>() > 0.0);

    // On the GPU --kernels lists the device's work: kernels by name, and by
    // the operators that launched them.
    const CliResult gpuKernels = cli(common + QStringList{"--device", "cuda", "--bf16", "--kernels", "6"});
    QCOMPARE(gpuKernels.code, 0);
    const nlohmann::json device = nlohmann::json::parse(gpuKernels.out.toStdString()).at("kernel_profile");
    QVERIFY2(device.at("unavailable").is_null(), device.dump().c_str());
    QCOMPARE(device.at("time").get<std::string>(), std::string("device"));
    QVERIFY(device.at("seconds").get<double>() > 0.0);
    QCOMPARE(device.at("by_kernel").size(), std::size_t{6});
    QVERIFY(!device.at("by_operator").empty());
    bool launchedByAnOperator = false;
    for (const nlohmann::json& entry : device.at("by_operator"))
        launchedByAnOperator = launchedByAnOperator || entry.at("name").get<std::string>().rfind("aten::", 0) == 0;
    QVERIFY2(launchedByAnOperator, device.dump().c_str());

    // The same steps captured once as a CUDA graph and replayed: they train
    // (a finite loss), and leave the host almost nothing to queue.
    const CliResult graph = cli(common + QStringList{"--device", "cuda", "--bf16", "--cuda-graph"});
    QCOMPARE(graph.code, 0);
    const nlohmann::json g = nlohmann::json::parse(graph.out.toStdString());
    QCOMPARE(g.at("cuda_graph").get<bool>(), true);
    QVERIFY(std::isfinite(g.at("loss").get<double>()));
    QVERIFY(g.at("tokens_per_second").get<double>() > 0.0);
    QVERIFY(g.at("moe_routing_share").is_null());  // no phase pass for replays
}

void TestCliUsage::benchText()
{
    const CliResult result =
        cli({"bench", "transformer-1x48", "--batch", "1", "--seq", "4", "--steps", "1", "--warmup", "0"});
    QCOMPARE(result.code, 0);
    for (const char* expected : {"tokens/s", "achieved / peak", "fp32 matmul peak", "BLAS: ", "routing_dispatch_combine",
                                 "ATen operators per step", "the most frequent:"})
        QVERIFY2(result.out.contains(QLatin1String(expected)), qPrintable(result.out));
    const CliResult profiled =
        cli({"bench", "transformer-1x48", "--batch", "1", "--seq", "4", "--steps", "1", "--warmup", "0", "--kernels", "3"});
    QCOMPARE(profiled.code, 0);
    QVERIFY2(profiled.out.contains(QLatin1String("Self time of one more step's operators")), qPrintable(profiled.out));
    QVERIFY2(profiled.out.contains(QLatin1String("aten::")), qPrintable(profiled.out));

    const CliResult wrongMode = cli({"bench", "transformer-1x48", "--mode", "fast"});
    QCOMPARE(wrongMode.code, 2);
}

// ---------------------------------------------------------------- TextTable

void TestCliUsage::textTableRendersExactly()
{
    // Widths 3 and 2; two spaces between columns; the first column padded on the
    // right, the others on the left; a rule as wide as a row.
    TextTable table({"a", "bb"});
    table.addRow({"ccc", "d"});
    table.addRule();
    table.addRow({"e", "ff"});
    QCOMPARE(q(table.render()), QStringLiteral("a    bb\n"
                                               "-------\n"
                                               "ccc   d\n"
                                               "-------\n"
                                               "e    ff\n"));
}

void TestCliUsage::textTableAlignsColumns()
{
    TextTable table({"part", "stored", "active"});
    table.addRow({"embeddings", widelab::groupDigits(139264), widelab::groupDigits(139264)});
    table.addRow({"experts", widelab::groupDigits(2102272), widelab::groupDigits(1051136)});
    table.addRow({"x", "1", "22"});
    table.addRule();
    table.addRow({"total", widelab::groupDigits(2514954), widelab::groupDigits(1463818)});
    const QStringList all = lines(q(table.render()));
    QCOMPARE(all.size(), 7);  // header, rule, 3 rows, rule, total

    // Widths: "embeddings" 10, "2,102,272" 9 and "2,514,954" 9 -> 10 + 2 + 9 + 2 + 9 = 32.
    for (const auto& line : all)
        QCOMPARE(line.size(), 32);
    QCOMPARE(all[1], QString(32, QLatin1Char('-')));
    QCOMPARE(all[5], QString(32, QLatin1Char('-')));
    // First column left-aligned, the others right-aligned.
    QVERIFY(all[4].startsWith(QStringLiteral("x ")));
    QVERIFY(all[4].endsWith(QStringLiteral(" 22")));
    QCOMPARE(all[4].mid(12, 9), QStringLiteral("        1"));
    QCOMPARE(all[6], QStringLiteral("total       2,514,954  1,463,818"));
}

QTEST_GUILESS_MAIN(TestCliUsage)
#include "tst_cli_usage.moc"
