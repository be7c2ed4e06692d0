// widelab: the desktop app. `widelab [CONFIG.json | PRESET] [--train]` opens a
// configuration (and starts training it); `widelab RUN_DIR` reopens a run;
// `widelab STUDY_DIR [--train]` shows a study (and continues it); `widelab
// --study NAME [--train]` picks a built-in study (and starts it).
#include "ActionCatalog.h"
#include "MainWindow.h"
#include "StudiesPage.h"
#include "StudyData.h"
#include "Theme.h"
#include "runtime/CpuBlockCache.h"
#include "runtime/Runtime.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QTimer>

#include <cstdio>

int main(int argc, char** argv)
{
    widelab::settleNativeLibraries(argv);
    widelab::installCpuBlockCache();
    widelab::setComputeThreads(0);
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("WideLab"));
    QApplication::setApplicationName(QStringLiteral("WideLab"));
    QApplication::setApplicationVersion(QStringLiteral(WIDELAB_VERSION));
    // The installed menu entry (packaging/linux): Wayland shells match the window to
    // it, and its icon, by this name; X11 ones by the window class (StartupWMClass).
    QGuiApplication::setDesktopFileName(QStringLiteral(WIDELAB_APP_ID));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Explore wide Transformers: configure, train and watch them learn."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("what"), QStringLiteral("A configuration (.json), a preset name, a run directory or a study directory."));
    const QCommandLineOption train(QStringLiteral("train"), QStringLiteral("Start training the configuration at once."));
    const QCommandLineOption runs(QStringLiteral("runs"), QStringLiteral("Folder for new runs."), QStringLiteral("DIR"));
    const QCommandLineOption theme(QStringLiteral("theme"),
                                   QStringLiteral("The look: system, light or dark (default: the last one chosen)."),
                                   QStringLiteral("THEME"));
    const QCommandLineOption study(QStringLiteral("study"),
                                   QStringLiteral("Show the Studies tab with this built-in study picked (with --train: start it)."),
                                   QStringLiteral("NAME"));
    const QCommandLineOption shortcuts(QStringLiteral("shortcuts"),
                                       QStringLiteral("Print the keyboard shortcuts as a Markdown table, and exit."));
    parser.addOption(train);
    parser.addOption(study);
    parser.addOption(shortcuts);
    parser.addOption(runs);
    parser.addOption(theme);
    parser.process(app);
    if (parser.isSet(shortcuts)) {
        std::fputs(qPrintable(widelab::shortcutTableMarkdown()), stdout);
        return 0;
    }

    widelab::Theme look = widelab::savedTheme();
    if (parser.isSet(theme)) {
        const QString name = parser.value(theme);
        bool known = false;
        for (widelab::Theme candidate : {widelab::Theme::System, widelab::Theme::Light, widelab::Theme::Dark})
            if (name == widelab::themeName(candidate)) {
                look = candidate;
                known = true;
            }
        if (!known) {
            std::fprintf(stderr, "widelab: --theme %s: not a theme; use system, light or dark\n", qPrintable(name));
            return 2;
        }
    }
    widelab::applyTheme(look);

    widelab::MainWindow window(parser.value(runs));
    window.show();
    window.checkRuntime();
    const QStringList what = parser.positionalArguments();
    const bool studyDirectory = !what.isEmpty() && widelab::isStudyDirectory(what.first());
    if (studyDirectory) {
        if (window.openStudy(what.first()) && parser.isSet(train))
            QTimer::singleShot(0, &window, [&window] { window.studiesPage()->continueStudy(1); });
    } else {
        window.studiesPage()->reopenLast();
    }
    if (parser.isSet(study)) {
        if (window.showBuiltinStudy(parser.value(study)) && parser.isSet(train))
            QTimer::singleShot(0, &window, [&window] { window.studiesPage()->startBuiltin(window.studyStartOptions()); });
    } else if (!what.isEmpty() && !studyDirectory) {
        const QString target = what.first();
        const bool opened = QFileInfo(target).isDir() ? window.openRun(target) : window.openConfiguration(target);
        if (opened && parser.isSet(train))
            QTimer::singleShot(0, &window, [&window] { window.startTraining(); });
    }
    return QApplication::exec();
}
