// defines: what the desktop app's tests share (widelab::desktoptest): a tiny run document, a JSON file
// written, and DesktopTestCase: each test's own folder, with the user's settings and presets kept out
#pragma once

#include "insights/AttentionView.h"
#include "ComparedRuns.h"
#include "ConfigAssessment.h"
#include "insights/ExpertsView.h"
#include "insights/InsightHistory.h"
#include "InsightFacts.h"
#include "insights/InsightsView.h"
#include "configuration/ConfigPanel.h"
#include "curves/CurvePlot.h"
#include "curves/CurvesView.h"
#include "configuration/LogPanel.h"
#include "MainWindow.h"
#include "insights/PatchMaps.h"
#include "SampleSnapshot.h"
#include "SavedRunProbe.h"
#include "TrainingController.h"
#include "TrainRecords.h"
#include "config/Presets.h"
#include "runtime/Runtime.h"
#include "vocab/MetricsCodec.h"
#include "vocab/Snapshot.h"

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QListWidget>
#include <QMessageBox>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTimer>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QStatusBar>
#include <QTabWidget>
#include <QToolBar>
#include <QtTest>

#include <cmath>
#include <functional>
#include <numbers>

namespace widelab::desktoptest {

// A ListOps run small enough for a test: two blocks of width 32 with four experts.
inline QJsonObject tinyDocument(int steps, int logEvery = 2)
{
    const QByteArray json = QStringLiteral(R"({
        "name": "tiny",
        "model": {"vocab_size": 20, "max_len": 40, "d_model": 32, "layers": 2, "heads": 4, "ffn_dim": 64,
                  "num_classes": 10, "experts": 4, "top_k": 2, "pooling": "mean",
                  "share_attention": true, "share_ffn": true},
        "task": {"kind": "listops", "min_length": 5, "max_length": 30, "train_size": 256,
                 "validation_size": 64, "test_size": 64},
        "train": {"steps": %1, "batch_size": 16, "learning_rate": 0.003, "warmup_steps": 5,
                  "log_every": %2, "eval_every": 10, "checkpoint_every": 1000, "threads": 1}})")
                                .arg(steps)
                                .arg(logEvery)
                                .toUtf8();
    return QJsonDocument::fromJson(json).object();
}

// Writes `document` to `path`; false when the file cannot be written.
inline bool writeJson(const QString& path, const QJsonObject& document)
{
    QFile out(path);
    return out.open(QIODevice::WriteOnly) && out.write(QJsonDocument(document).toJson()) > 0;
}

// The start every desktop test shares: its own folder (m_dir), the user's settings
// cleared in test mode, and the user's presets folder inside m_dir. Each test class
// derives from it and calls initTestCase() from its own initTestCase slot.
class DesktopTestCase : public QObject {
protected:
    void initTestCase();

    QTemporaryDir m_dir;
};

inline void DesktopTestCase::initTestCase()
{
    QVERIFY(m_dir.isValid());
    // Keep the user's settings out of it.
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("WideLabTests"));
    QSettings().clear();
    // The user's presets folder (Presets.h: userPresetDirectory) is the test's own.
    qputenv("WIDELAB_USER_PRESETS", m_dir.filePath(QStringLiteral("user-presets")).toLocal8Bit());
}

}  // namespace widelab::desktoptest
