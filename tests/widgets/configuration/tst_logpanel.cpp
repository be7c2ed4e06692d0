// Tests LogPanel (level and text filters, the line cap, auto-scroll, clearing) and
// the spdlog line parser.
#include "configuration/LogLine.h"
#include "configuration/LogPanel.h"

#include <QComboBox>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollBar>
#include <QTest>

using namespace widelab;

class TestLogPanel : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void parsesSpdlogsDefaultPattern()
    {
        const auto line = parseSpdlogLine("[2026-11-22 05:12:03.123] [run] [info] step 10: loss 2.31 [acc 0.4]");
        QVERIFY(line.has_value());
        QCOMPARE(line->time, QStringLiteral("2026-11-22 05:12:03.123"));
        QCOMPARE(line->logger, QStringLiteral("run"));
        QCOMPARE(line->level, QStringLiteral("info"));
        QCOMPARE(line->text, QStringLiteral("step 10: loss 2.31 [acc 0.4]"));

        const auto warning = parseSpdlogLine("[2026-11-22 05:12:04.000] [run] [warning] loss spike\n");
        QVERIFY(warning.has_value());
        QCOMPARE(warning->level, QStringLiteral("warning"));
        QCOMPARE(warning->text, QStringLiteral("loss spike"));

        // No logger name: spdlog leaves the part out.
        const auto unnamed = parseSpdlogLine("[2026-11-22 05:12:05.5] [error] NaN in step 12");
        QVERIFY(unnamed.has_value());
        QCOMPARE(unnamed->logger, QString());
        QCOMPARE(unnamed->level, QStringLiteral("error"));
        QCOMPARE(unnamed->text, QStringLiteral("NaN in step 12"));

        QCOMPARE(parseSpdlogLine("[2026-11-22 05:12:05.5] [run] [critical] out of memory")->level,
                 QStringLiteral("critical"));
        QVERIFY(!parseSpdlogLine("  continued from the previous line").has_value());
        QVERIFY(!parseSpdlogLine("[not a date] [run] [info] text").has_value());
        QVERIFY(!parseSpdlogLine("").has_value());
    }

    void levelsNormaliseAndOrder()
    {
        QCOMPARE(normalizedLogLevel("WARN"), QStringLiteral("warning"));
        QCOMPARE(normalizedLogLevel("err"), QStringLiteral("error"));
        QCOMPARE(normalizedLogLevel("something"), QStringLiteral("info"));
        QVERIFY(logLevelRank("trace") < logLevelRank("debug"));
        QVERIFY(logLevelRank("info") < logLevelRank("warn"));
        QVERIFY(logLevelRank("warning") < logLevelRank("error"));
        QVERIFY(logLevelRank("error") < logLevelRank("critical"));
    }

    void filtersByMinimumLevel()
    {
        LogPanel panel;
        panel.appendLine("debug", "batch shapes");
        panel.appendLine("info", "step 10");
        panel.appendLine("warn", "slow step");
        panel.appendLine("error", "NaN loss");
        QCOMPARE(panel.lineCount(), 4);
        QCOMPARE(panel.visibleLines().size(), 4);  // everything by default

        auto* level = panel.findChild<QComboBox*>();
        QVERIFY(level);
        level->setCurrentIndex(logLevelRank("warning"));  // as the user picks it
        QCOMPARE(panel.minimumLevel(), QStringLiteral("warning"));
        const QStringList shown = panel.visibleLines();
        QCOMPARE(shown.size(), 2);
        QVERIFY(shown[0].contains("slow step") && shown[0].contains("WARNING"));
        QVERIFY(shown[1].contains("NaN loss") && shown[1].contains("ERROR"));
        QCOMPARE(panel.lineCount(), 4);  // hidden, not dropped

        // New lines go through the same filter.
        panel.appendLine("info", "step 20");
        panel.appendLine("critical", "out of memory");
        QCOMPARE(panel.visibleLines().size(), 3);
        panel.setMinimumLevel("trace");
        QCOMPARE(panel.visibleLines().size(), 6);
    }

    void filtersByText()
    {
        LogPanel panel;
        panel.appendLine("info", "step 10 loss 2.3");
        panel.appendLine("info", "checkpoint saved");
        panel.appendLine("warning", "step 20 LOSS 9.1 spike");
        auto* filter = panel.findChild<QLineEdit*>();
        QVERIFY(filter);
        QTest::keyClicks(filter, "loss");
        const QStringList shown = panel.visibleLines();
        QCOMPARE(shown.size(), 2);
        QVERIFY(shown[0].contains("step 10"));
        QVERIFY(shown[1].contains("step 20"));
        panel.appendLine("info", "eval loss 2.0");
        panel.appendLine("info", "eval accuracy 0.5");
        QCOMPARE(panel.visibleLines().size(), 3);
        filter->clear();
        QCOMPARE(panel.visibleLines().size(), 5);
    }

    void capsLines()
    {
        LogPanel panel;
        panel.setMaximumLines(100);
        for (int i = 0; i < 250; ++i)
            panel.appendLine(i % 2 ? "warning" : "info", QStringLiteral("line %1").arg(i));
        QCOMPARE(panel.lineCount(), 100);
        QStringList shown = panel.visibleLines();
        QCOMPARE(shown.size(), 100);
        QVERIFY(shown.first().endsWith("line 150"));
        QVERIFY(shown.last().endsWith("line 249"));

        // With a filter the view drops exactly the lines the panel forgets.
        panel.setMinimumLevel("warning");
        QCOMPARE(panel.visibleLines().size(), 50);
        for (int i = 250; i < 260; ++i)
            panel.appendLine(i % 2 ? "warning" : "info", QStringLiteral("line %1").arg(i));
        shown = panel.visibleLines();
        QCOMPARE(shown.size(), 50);
        QVERIFY(shown.first().endsWith("line 161"));
        QVERIFY(shown.last().endsWith("line 259"));

        // The default cap.
        QCOMPARE(LogPanel().maximumLines(), 20000);
    }

    void multiLineTextBecomesLines()
    {
        LogPanel panel;
        panel.appendLine("error", "training stopped\nstep 12: non-finite gradient\n");
        QCOMPARE(panel.lineCount(), 2);
        panel.setMinimumLevel("error");
        QCOMPARE(panel.visibleLines().size(), 2);
    }

    void readsSpdlogLines()
    {
        LogPanel panel;
        panel.appendSpdlogLine("[2026-11-22 05:12:03.123] [run] [info] started");
        panel.appendSpdlogLine("[2026-11-22 05:12:04.000] [run] [error] failed:");
        panel.appendSpdlogLine("  details on the next line");
        QCOMPARE(panel.lineCount(), 3);
        panel.setMinimumLevel("error");
        const QStringList shown = panel.visibleLines();
        QCOMPARE(shown.size(), 2);  // the continuation keeps the error level
        QVERIFY(shown[0].startsWith("05:12:04.000"));
        QVERIFY(shown[1].contains("details on the next line"));

        LogPanel file;
        file.appendSpdlogLines({"[2026-11-22 05:12:03.123] [run] [info] a", "[2026-11-22 05:12:03.124] [run] [warning] b", ""});
        QCOMPARE(file.lineCount(), 2);
        QVERIFY(file.visibleLines().last().contains("WARNING b"));
    }

    void clearButtonEmpties()
    {
        LogPanel panel;
        panel.appendLine("info", "one");
        panel.appendLine("info", "two");
        auto* clear = panel.findChild<QPushButton*>();
        QVERIFY(clear);
        QTest::mouseClick(clear, Qt::LeftButton);
        QCOMPARE(panel.lineCount(), 0);
        QCOMPARE(panel.visibleLines(), QStringList());
        panel.appendLine("info", "three");
        QCOMPARE(panel.visibleLines().size(), 1);
    }

    void followsTheEndUnlessScrolledUp()
    {
        LogPanel panel;
        panel.resize(400, 200);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        for (int i = 0; i < 200; ++i)
            panel.appendLine("info", QStringLiteral("line %1").arg(i));
        QScrollBar* bar = panel.findChild<QPlainTextEdit*>()->verticalScrollBar();
        QVERIFY(bar->maximum() > 0);
        QCOMPARE(bar->value(), bar->maximum());

        bar->setValue(0);  // the user reads the start
        for (int i = 0; i < 20; ++i)
            panel.appendLine("info", QStringLiteral("more %1").arg(i));
        QCOMPARE(bar->value(), 0);

        bar->setValue(bar->maximum());  // and comes back down
        panel.appendLine("info", "latest");
        QCOMPARE(bar->value(), bar->maximum());
    }
};

QTEST_MAIN(TestLogPanel)
#include "tst_logpanel.moc"
