// widelab: the desktop app. `widelab [CONFIG.json | PRESET] [--train]` opens a
// configuration (and starts training it); `widelab RUN_DIR` reopens a run.
#include "MainWindow.h"
#include "runtime/CpuBlockCache.h"
#include "runtime/Runtime.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QTimer>

int main(int argc, char** argv)
{
    widelab::preferPassiveOpenMpWait(argv);
    widelab::installCpuBlockCache();
    widelab::setComputeThreads(0);
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("WideLab"));
    QApplication::setApplicationName(QStringLiteral("WideLab"));
    QApplication::setApplicationVersion(QStringLiteral(WIDELAB_VERSION));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Explore wide Transformers: configure, train and watch them learn."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("what"), QStringLiteral("A configuration (.json), a preset name, or a run directory."));
    const QCommandLineOption train(QStringLiteral("train"), QStringLiteral("Start training the configuration at once."));
    const QCommandLineOption runs(QStringLiteral("runs"), QStringLiteral("Folder for new runs."), QStringLiteral("DIR"));
    parser.addOption(train);
    parser.addOption(runs);
    parser.process(app);

    widelab::MainWindow window(parser.value(runs));
    window.show();
    window.checkRuntime();
    const QStringList what = parser.positionalArguments();
    if (!what.isEmpty()) {
        const QString target = what.first();
        const bool opened = QFileInfo(target).isDir() ? window.openRun(target) : window.openConfiguration(target);
        if (opened && parser.isSet(train))
            QTimer::singleShot(0, &window, [&window] { window.startTraining(); });
    }
    return QApplication::exec();
}
