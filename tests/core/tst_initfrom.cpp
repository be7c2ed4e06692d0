// Tests of train.init_from (train/InitFrom): a run that starts from another run's
// weights takes the body tensor for tensor, starts a new head for another task,
// reads text with the pretrained run's tokenizer, and refuses a model of another
// shape naming the first tensor that differs; resuming keeps init_from as part
// of the run.
#include "TestSupport.h"
#include "run/ResumeRule.h"
#include "run/RunDirectory.h"
#include "run/RunLayout.h"
#include "train/Trainer.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <sstream>

using namespace widelab;

namespace {

const std::filesystem::path kText = "/usr/share/common-licenses/GPL-3";

std::string readText(const std::filesystem::path& file)
{
    std::ostringstream text;
    text << std::ifstream(file).rdbuf();
    return text.str();
}

// A small model: the language model of the source, the classifier of the runs started from it.
nlohmann::json model(const char* head)
{
    return {{"vocab_size", 128}, {"max_len", 32}, {"d_model", 32}, {"layers", 2}, {"heads", 4}, {"ffn_dim", 64},
            {"dropout", 0.0}, {"head", head}, {"num_classes", 2}, {"pooling", "mean"}};
}

nlohmann::json train(int steps)
{
    return {{"steps", steps}, {"batch_size", 4}, {"warmup_steps", 1}, {"log_every", 1}, {"eval_every", steps},
            {"eval_batches", 1}, {"checkpoint_every", 2}, {"keep_last", 5}, {"threads", 1}, {"device", "cpu"}};
}

}  // namespace

class TestInitFrom : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    std::filesystem::path m_source;  // a language model of the licence's characters, trained 4 steps
    std::filesystem::path m_texts;   // two labels of short texts

    std::filesystem::path path(const char* name) const { return std::filesystem::path(m_dir.path().toStdString()) / name; }

    // A classifier of m_texts started from `initFrom`, with `changes` merged into its document.
    RunDocument classifier(const std::string& initFrom, const nlohmann::json& changes = nlohmann::json::object()) const
    {
        nlohmann::json document = {
            {"model", model("classification")},
            {"task", {{"kind", "classification"}, {"path", m_texts.string()}, {"tokenizer", "character"},
                      {"validation_fraction", 0.2}, {"test_fraction", 0.2}}},
            {"train", train(2)}};
        document["train"]["init_from"] = initFrom;
        document.merge_patch(changes);
        return parseRunDocument(document.dump());
    }

private Q_SLOTS:
    void initTestCase()
    {
        if (!std::filesystem::exists(kText))
            QSKIP("no licence text on this machine");
        m_source = path("pretrained");
        m_texts = path("texts.tsv");
        std::ofstream out(m_texts);
        for (int i = 0; i < 40; ++i)
            out << (i % 2 ? "odd" : "even") << "\tnumber " << i << " is " << (i % 2 ? "odd" : "even") << "\n";
        out.close();
        const RunDocument pretraining = parseRunDocument(nlohmann::json{
            {"model", model("language_model")},
            {"task", {{"kind", "language_model"}, {"path", kText.string()}, {"tokenizer", "character"}}},
            {"train", train(4)}}.dump());
        Trainer trainer(pretraining, m_source);
        std::atomic<bool> stop{false};
        QCOMPARE(trainer.run(stop).step, std::int64_t{4});
    }

    void aClassifierTakesTheLanguageModelsBodyAndANewHead()
    {
        const OpenedRun source = openRun(m_source);
        Trainer trainer(classifier(m_source.string()), path("finetuned"));
        torch::manual_seed(0);  // train.seed: what the new head starts from
        const WideTransformer fresh(trainer.document().model);

        std::map<std::string, torch::Tensor> tuned;
        for (const auto& item : trainer.model()->named_parameters())
            tuned.emplace(item.key(), item.value());
        int body = 0;
        for (const auto& item : source.model->named_parameters()) {
            if (item.key().rfind("lm_head.", 0) == 0) {
                QVERIFY(!tuned.contains(item.key()));
                continue;
            }
            QVERIFY2(torch::equal(tuned.at(item.key()), item.value()), item.key().c_str());
            ++body;
        }
        QCOMPARE(body + 2, static_cast<int>(tuned.size()));  // all but classifier.weight and classifier.bias
        QVERIFY(torch::equal(tuned.at("classifier.weight"), fresh->named_parameters()["classifier.weight"]));
        // Trained: the body is not what the seed alone gives.
        QVERIFY(!torch::equal(tuned.at("embed.token.weight"), fresh->named_parameters()["embed.token.weight"]));

        const std::string log = readText(runlayout::logFile(path("finetuned")));
        for (const std::string& part :
             {"train.init_from: " + std::to_string(body) + " tensors", "loaded from "
                  + (m_source / "checkpoints" / "step-00000004.pt").string() + ", step 4",
              std::string("newly initialised: classifier.weight, classifier.bias"),
              std::string("left out, the source's head: lm_head.bias, lm_head.weight")})
            QVERIFY2(log.find(part) != std::string::npos, (part + " in\n" + log).c_str());
        // The texts are read with the pretrained run's characters, not a vocabulary of their own.
        QCOMPARE(readText(runlayout::tokenizerFile(path("finetuned"))), readText(runlayout::tokenizerFile(m_source)));
    }

    // A pair task's segment embeddings are new to a language model: they start
    // anew, as the head does, and the rest is loaded.
    void aPairClassifierStartsItsSegmentsAnew()
    {
        const std::filesystem::path pairs = path("pairs.tsv");
        std::ofstream out(pairs);
        for (int i = 0; i < 40; ++i)
            out << (i % 2 ? "same" : "other") << "\tnumber " << i << "\tnumber " << (i % 2 ? i : i + 1) << "\n";
        out.close();
        Trainer trainer(classifier(m_source.string(), {{"model", {{"segments", 2}}},
                                                       {"task", {{"kind", "pair_classification"},
                                                                 {"path", pairs.string()}}}}),
                        path("pairs"));
        const OpenedRun source = openRun(m_source);
        QVERIFY(torch::equal(trainer.model()->named_parameters()["embed.token.weight"],
                             source.model->named_parameters()["embed.token.weight"]));
        const std::string log = readText(runlayout::logFile(path("pairs")));
        const std::string anew = "newly initialised: embed.segment.weight, classifier.weight, classifier.bias";
        QVERIFY2(log.find(anew) != std::string::npos, log.c_str());
    }

    void aStepAfterTheColonPicksThatCheckpoint()
    {
        const OpenedRun step2 = openRun(m_source, runlayout::checkpointFileName(2));
        Trainer trainer(classifier(m_source.string() + ":2"), path("from-step-2"));
        QVERIFY(torch::equal(trainer.model()->named_parameters()["embed.token.weight"],
                             step2.model->named_parameters()["embed.token.weight"]));
        QVERIFY(readText(runlayout::logFile(path("from-step-2"))).find("step-00000002.pt, step 2")
                != std::string::npos);
    }

    void theSameTaskKeepsItsHead()
    {
        const OpenedRun source = openRun(m_source);
        nlohmann::json document = {
            {"model", model("language_model")},
            {"task", {{"kind", "language_model"}, {"path", kText.string()}, {"tokenizer", "character"}}},
            {"train", train(2)}};
        document["train"]["init_from"] = m_source.string();
        Trainer trainer(parseRunDocument(document.dump()), path("continued"));
        QVERIFY(torch::equal(trainer.model()->named_parameters()["lm_head.weight"],
                             source.model->named_parameters()["lm_head.weight"]));
        QVERIFY(readText(runlayout::logFile(path("continued"))).find("the task's head included")
                != std::string::npos);
    }

    void anotherShapeIsRefusedNamingTheFirstTensorAndTheKeys()
    {
        const QString wider = test::thrownMessage([&] {
            Trainer refused(classifier(m_source.string(), {{"model", {{"d_model", 64}, {"ffn_dim", 64}}}}), path("wider"));
        });
        for (const char* part : {"train.init_from", "embed.token.weight is [128, 32]", "but [128, 64]", "model.d_model"})
            QVERIFY2(wider.contains(QLatin1String(part)), qPrintable(wider));
        const QString vocabulary = test::thrownMessage([&] {
            Trainer refused(classifier(m_source.string(), {{"model", {{"vocab_size", 100}}}}), path("vocabulary"));
        });
        for (const char* part : {"embed.token.weight is [128, 32]", "but [100, 32]", "model.vocab_size"})
            QVERIFY2(vocabulary.contains(QLatin1String(part)), qPrintable(vocabulary));
        const QString deeper = test::thrownMessage([&] {
            Trainer refused(classifier(m_source.string(), {{"model", {{"layers", 3}}}}), path("deeper"));
        });
        QVERIFY2(deeper.contains(QLatin1String("has no tensor")) && deeper.contains(QLatin1String("model.layers")),
                 qPrintable(deeper));
        // Nothing was started in their folders' place but the log.
        QVERIFY(!std::filesystem::exists(runlayout::configFile(path("wider"))));
    }

    void aClsTokenIsRefusedWithTheFix()
    {
        const QString message = test::thrownMessage([&] {
            Trainer refused(classifier(m_source.string(), {{"model", {{"pooling", "cls"}}}}), path("cls"));
        });
        QVERIFY2(message.contains(QLatin1String("model.pooling")) && message.contains(QLatin1String("\"mean\"")),
                 qPrintable(message));
    }

    void anotherTokenizerIsRefused()
    {
        const QString message = test::thrownMessage([&] {
            Trainer refused(classifier(m_source.string(), {{"task", {{"tokenizer", "byte"}}}, {"model", {{"vocab_size", 258}}}}),
                    path("bytes"));
        });
        QVERIFY2(message.contains(QLatin1String("task.tokenizer")) && message.contains(QLatin1String("\"character\"")),
                 qPrintable(message));
    }

    void aFolderThatHoldsNoRunIsAConfigError()
    {
        const QString message = test::thrownMessage([&] { Trainer refused(classifier(path("nowhere").string()), path("nowhere-run")); });
        QVERIFY2(message.contains(QLatin1String("train.init_from")) && message.contains(QLatin1String("not a run folder")),
                 qPrintable(message));
        const QString missingStep = test::thrownMessage([&] {
            Trainer refused(classifier(m_source.string() + ":3"), path("step-3"));
        });
        QVERIFY2(missingStep.contains(QLatin1String("step-00000003.pt")), qPrintable(missingStep));
    }

    void theSpecSplitsAtAColonBeforeAStepOrAName()
    {
        QCOMPARE(parseInitFrom("runs/a:120").directory.string(), std::string("runs/a"));
        QCOMPARE(parseInitFrom("runs/a:120").checkpoint, std::string("120"));
        QCOMPARE(parseInitFrom("runs/a:007").checkpoint, std::string("7"));
        QCOMPARE(parseInitFrom("runs/a:best").checkpoint, std::string("best"));
        QCOMPARE(parseInitFrom("runs/a").checkpoint, std::string("latest"));
        QCOMPARE(parseInitFrom("runs/a:b").directory.string(), std::string("runs/a:b"));  // a folder's own colon
        QCOMPARE(parseInitFrom("runs/a:b").checkpoint, std::string("latest"));
        QCOMPARE(parseInitFrom("runs/a:latest").text(), std::string("runs/a"));
        QCOMPARE(parseInitFrom("runs/a:best").text(), std::string("runs/a:best"));
    }

    // init_from shapes the weights: resuming with another is another run; with
    // the same one the run continues from its own checkpoint, loading nothing.
    // (Last: it moves the source away and back.)
    void resumingKeepsInitFromAsPartOfTheRun()
    {
        {
            Trainer trainer(classifier(m_source.string()), path("resumed"));
            std::atomic<bool> stop{false};
            QCOMPARE(trainer.run(stop).step, std::int64_t{2});
        }
        const ResumeDecision refused = decideResume(path("resumed"), classifier(m_source.string() + ":2"));
        QCOMPARE(static_cast<int>(refused.kind), static_cast<int>(ResumeKind::Refused));
        QCOMPARE(refused.differences.size(), std::size_t{1});
        QCOMPARE(refused.differences.front().key, std::string("train.init_from"));

        // It needs its own checkpoints only: the run it started from may be gone.
        const std::filesystem::path moved = path("pretrained-moved");
        std::filesystem::rename(m_source, moved);
        const auto back = qScopeGuard([&] { std::filesystem::rename(moved, m_source); });
        TrainerOptions resume;
        resume.resume = true;
        resume.steps = 4;
        Trainer trainer(classifier(m_source.string()), path("resumed"), resume);
        std::atomic<bool> stop{false};
        QCOMPARE(trainer.run(stop).step, std::int64_t{4});
        const std::string log = readText(runlayout::logFile(path("resumed")));
        QCOMPARE(log.find("train.init_from:"), log.rfind("train.init_from:"));  // said once, at the start
    }
};

QTEST_GUILESS_MAIN(TestInitFrom)
#include "tst_initfrom.moc"
