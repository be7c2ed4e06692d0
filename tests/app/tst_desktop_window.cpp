// Tests of the desktop app's main window (app/gui) itself: what products run on, presets saved, picked
// and kept in the user's folder, a 1280x720 screen, and the theme switched across every view.
// Runs offscreen (QT_QPA_PLATFORM=offscreen); no torch header is included here.
#include "ActionCatalog.h"
#include "DesktopTestSupport.h"
#include "HelpWindows.h"
#include "Theme.h"
#include "common/DocumentationBrowser.h"
#include "common/ShortcutSheet.h"
#include "config/ResourceFolder.h"
#include "configuration/ConfigDiffDialog.h"

#include <QCheckBox>
#include <QStandardItemModel>
#include <QStyleOptionButton>
#include <QTextBrowser>

using namespace widelab;
using namespace widelab::desktoptest;

namespace {

// Answers the next modal file dialog with `file` (polling until it is open);
// *folder gets the folder it opened in.
void answerFileDialog(const QString& file, QString* folder, int triesLeft = 300)
{
    QTimer::singleShot(10, [file, folder, triesLeft] {
        if (auto* dialog = qobject_cast<QFileDialog*>(QApplication::activeModalWidget())) {
            *folder = dialog->directory().absolutePath();
            dialog->selectFile(file);
            static_cast<QDialog*>(dialog)->accept();  // public in QDialog
            return;
        }
        if (triesLeft > 0)
            answerFileDialog(file, folder, triesLeft - 1);
    });
}

QByteArray fileBytes(const QString& path)
{
    QFile in(path);
    return in.open(QIODevice::ReadOnly) ? in.readAll() : QByteArray();
}

// The button of `box` with that role.
QAbstractButton* buttonOf(QMessageBox* box, QMessageBox::StandardButton which)
{
    return box ? box->button(which) : nullptr;
}

}  // namespace

class TestDesktopWindow : public DesktopTestCase {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { DesktopTestCase::initTestCase(); }
    void theWindowReportsWhatProductsRunOn();
    // Defects of a first hour (issue 16).
    void savingAShippedPresetAsksWhereAndLeavesItAsShipped();
    void pickingAPresetAsksBeforeDiscardingEdits();
    void aPresetOpensWhateverTheWorkingFolderHolds();
    void theWindowFitsA1280x720Screen();
    void theUserPresetsFolderFollowsTheEnvironment();
    void theThemeSwitchesEveryViewAndIsKept();
    void anUntickedBoxShowsOnTheDarkTheme();
    // Help inside the app (issue 37).
    void everyShortcutComesFromTheCatalogOnce();
    void theShortcutTableInTheDocsIsTheCatalogs();
    void theShortcutSheetListsAndFiltersEveryShortcut();
    void theDocumentationOpensAtTheReadmeAndFollowsItsLinks();
    void theEmptyChartsSayHowToStart();
    // Runs you can manage (issue 37).
    void aRunsConfigurationIsComparedWithThePanels();
    void thePresetPickerGroupsTheShippedPresetsByFamily();
};

void TestDesktopWindow::everyShortcutComesFromTheCatalogOnce()
{
    MainWindow window(m_dir.filePath(QStringLiteral("runs-shortcuts")));
    // Every action in the window that has a key is in the catalog under its
    // name, with that key: the sheet cannot miss one or show a stale key.
    int keyed = 0;
    for (QAction* action : window.findChildren<QAction*>()) {
        if (action->shortcut().isEmpty())
            continue;
        const ActionSpec spec = actionSpec(action->objectName());
        QVERIFY2(!spec.name.isEmpty(), qPrintable(action->text() + QStringLiteral(" (") + action->objectName()
                                                  + QStringLiteral(") has a key but no catalog entry")));
        QCOMPARE(action->shortcut(), spec.key);
        ++keyed;
    }
    // ...and every entry is an action of the window (the panels' toggles and the
    // breakdown's Copy included).
    QSet<QString> keys;
    int entries = 0;
    for (const ActionSpec& spec : actionCatalog()) {
        QAction* action = window.findChild<QAction*>(spec.name);
        QVERIFY2(action, qPrintable(spec.name + QStringLiteral(": in the catalog, not in the window")));
        QVERIFY2(!spec.description.isEmpty(), qPrintable(spec.name));
        if (spec.key.isEmpty())
            continue;
        ++entries;
        const QString key = spec.key.toString(QKeySequence::PortableText);
        QVERIFY2(!keys.contains(key), qPrintable(key + QStringLiteral(" is given to two actions")));
        keys.insert(key);
    }
    QCOMPARE(keyed, entries);
    QCOMPARE(window.action(QStringLiteral("start"))->shortcut(), QKeySequence(Qt::Key_F5));
    QCOMPARE(window.configDock()->toggleViewAction()->shortcut(), QKeySequence(Qt::CTRL | Qt::Key_1));
    QCOMPARE(window.action(QStringLiteral("shortcuts"))->toolTip(), actionSpec(QStringLiteral("shortcuts")).description);
}

void TestDesktopWindow::theShortcutTableInTheDocsIsTheCatalogs()
{
    // docs/desktop.md holds `widelab --shortcuts`'s table, whole, between its markers.
    const QString docs = QStringLiteral(QT_TESTCASE_SOURCEDIR "/../../docs/desktop.md");
    const QString text = QString::fromUtf8(fileBytes(docs));
    QVERIFY2(!text.isEmpty(), qPrintable(docs));
    const QString begin = QStringLiteral("<!-- shortcuts: `widelab --shortcuts` writes this table -->\n");
    const QString end = QStringLiteral("<!-- end of shortcuts -->");
    const qsizetype from = text.indexOf(begin);
    const qsizetype to = text.indexOf(end);
    QVERIFY2(from >= 0 && to > from, "docs/desktop.md: the shortcut table's markers are missing");
    const QString table = text.mid(from + begin.size(), to - from - begin.size());
    QCOMPARE(table, shortcutTableMarkdown());
    QVERIFY(table.contains(QStringLiteral("| Start | F5 | ")));
    QVERIFY(table.contains(QStringLiteral("| Keyboard Shortcuts | Ctrl+/ | ")));
}

void TestDesktopWindow::theShortcutSheetListsAndFiltersEveryShortcut()
{
    MainWindow window(m_dir.filePath(QStringLiteral("runs-sheet")));
    QVERIFY(!window.help()->shortcuts());
    window.action(QStringLiteral("shortcuts"))->trigger();
    ShortcutSheet* sheet = window.help()->shortcuts();
    QVERIFY(sheet);
    QVERIFY(sheet->isVisible());
    // 39 entries in the catalog; runsFolder and about have no key.
    QCOMPARE(sheet->visibleRows(), 37);
    // F5: Start, Stop (Shift+F5), and the three study actions (Ctrl+F5, Ctrl+Shift+F5, Ctrl+Alt+F5).
    sheet->setFilter(QStringLiteral("F5"));
    QCOMPARE(sheet->visibleRows(), 5);
    sheet->setFilter(QStringLiteral("no such words"));
    QCOMPARE(sheet->visibleRows(), 0);
    sheet->setFilter(QString());
    QCOMPARE(sheet->visibleRows(), 37);
    // Asked again: the same window, raised.
    window.action(QStringLiteral("shortcuts"))->trigger();
    QCOMPARE(window.help()->shortcuts(), sheet);
}

void TestDesktopWindow::theDocumentationOpensAtTheReadmeAndFollowsItsLinks()
{
    // WIDELAB_DOCS comes first when it holds a README.md, as an installed copy would.
    QTemporaryDir guide;
    QVERIFY(guide.isValid());
    QVERIFY(QDir(guide.path()).mkpath(QStringLiteral("docs/images")));
    auto write = [&guide](const QString& name, const QByteArray& bytes) {
        QFile out(guide.filePath(name));
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(bytes);
    };
    write(QStringLiteral("README.md"), "# WideLab\n\nSee [the app](docs/desktop.md) and [nothing](docs/gone.md).\n");
    write(QStringLiteral("docs/desktop.md"), "# The desktop app\n\n![wide](images/wide.png)\n\nBack to [the start](../README.md).\n");
    write(QStringLiteral("docs/attention.md"), "# Attention mechanisms\n\nTen of them.\n");
    QImage wide(3000, 40, QImage::Format_RGB32);
    wide.fill(Qt::red);
    QVERIFY(wide.save(guide.filePath(QStringLiteral("docs/images/wide.png"))));
    qputenv("WIDELAB_DOCS", guide.path().toLocal8Bit());
    QCOMPARE(QString::fromStdString(documentationFolder().string()), guide.path());

    MainWindow window(m_dir.filePath(QStringLiteral("runs-docs")));
    window.action(QStringLiteral("documentation"))->trigger();
    qunsetenv("WIDELAB_DOCS");
    DocumentationBrowser* docs = window.help()->documentation();
    QVERIFY(docs);
    QCOMPARE(docs->currentPage(), QStringLiteral("README.md"));
    // README first, then docs/*.md by file name.
    QCOMPARE(docs->pages(), QStringList({QStringLiteral("README.md"), QStringLiteral("docs/attention.md"),
                                         QStringLiteral("docs/desktop.md")}));
    auto* text = docs->findChild<QTextBrowser*>(QStringLiteral("documentationText"));
    QVERIFY(text);
    QVERIFY(text->toPlainText().contains(QStringLiteral("See the app")));
    // A link to another page shows it (rendered from Markdown: no '#' left);
    // the picture is drawn no wider than the page.
    Q_EMIT text->anchorClicked(QUrl(QStringLiteral("docs/desktop.md")));
    QCOMPARE(docs->currentPage(), QStringLiteral("docs/desktop.md"));
    QVERIFY(text->toPlainText().startsWith(QStringLiteral("The desktop app")));
    const QImage drawn = text->document()->resource(QTextDocument::ImageResource,
                                                    QUrl::fromLocalFile(guide.filePath(QStringLiteral("docs/images/wide.png"))))
                             .value<QImage>();
    QVERIFY2(!drawn.isNull() && drawn.width() < 3000, qPrintable(QString::number(drawn.width())));
    // Relative links resolve from the page shown.
    Q_EMIT text->anchorClicked(QUrl(QStringLiteral("../README.md")));
    QCOMPARE(docs->currentPage(), QStringLiteral("README.md"));
    // A link to a file the guide lacks: said, the page kept.
    Q_EMIT text->anchorClicked(QUrl(QStringLiteral("docs/gone.md")));
    QCOMPARE(docs->currentPage(), QStringLiteral("README.md"));
    auto* status = docs->findChild<QLabel*>(QStringLiteral("documentationStatus"));
    QVERIFY(status && status->text().contains(QStringLiteral("docs/gone.md")));
    // Find wraps around and says when a word is not on the page.
    QVERIFY(docs->find(QStringLiteral("nothing")));
    QVERIFY(!docs->find(QStringLiteral("zebra")));
    QVERIFY(status->text().contains(QStringLiteral("zebra")));
}

void TestDesktopWindow::theEmptyChartsSayHowToStart()
{
    MainWindow window(m_dir.filePath(QStringLiteral("runs-empty")));
    CurvesView* curves = window.curves();
    QVERIFY(curves->emptyHintShown());
    auto* hint = curves->findChild<QLabel*>(QStringLiteral("curvesEmptyHint"));
    QVERIFY(hint);
    QVERIFY2(hint->text().contains(QStringLiteral("preset")) && hint->text().contains(QStringLiteral("F5")),
             qPrintable(hint->text()));
    curves->addRun(QStringLiteral("a"), QStringLiteral("a run"), 1000);
    QVERIFY(!curves->emptyHintShown());
    curves->removeRun(QStringLiteral("a"));
    QVERIFY(curves->emptyHintShown());
}

void TestDesktopWindow::theWindowReportsWhatProductsRunOn()
{
    // The check runs on a worker thread; its report names the threads in use and
    // the BLAS, lands in the log, and is what Help > About shows.
    MainWindow window(m_dir.filePath(QStringLiteral("runs-runtime")));
    QVERIFY(window.action(QStringLiteral("about")));
    window.checkRuntime();
    QTRY_VERIFY_WITH_TIMEOUT(!window.runtimeReport().isEmpty(), 30000);
    const QString report = window.runtimeReport();
    const int threads = computeThreads();
    QVERIFY2(report.contains(QStringLiteral(", %1 thread").arg(threads)), qPrintable(report));
    QVERIFY2(report.contains(QStringLiteral("BLAS: ")), qPrintable(report));
    QVERIFY2(report.contains(QStringLiteral("GFLOP/s")), qPrintable(report));
    const QStringList logged = window.log()->visibleLines().filter(QStringLiteral("GFLOP/s"));
    QCOMPARE(logged.size(), 1);
    QVERIFY(logged.first().contains(report.section(QLatin1Char('\n'), 0, 0)));

    // A run's log replaces the panel's lines; the report stays first.
    const QString file = m_dir.filePath(QStringLiteral("tiny-runtime.json"));
    QVERIFY(writeJson(file, tinyDocument(4)));
    QVERIFY(window.openConfiguration(file));
    QSignalSpy finished(&window.controller(), &TrainingController::finished);
    QVERIFY(window.startTraining());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
    const QStringList lines = window.log()->visibleLines();
    QVERIFY2(lines.size() > 1 && lines.first().contains(QStringLiteral("GFLOP/s")), qPrintable(lines.join('\n')));
    QCOMPARE(lines.filter(QStringLiteral("GFLOP/s")).size(), 1);
    QVERIFY(!lines.filter(QStringLiteral("device cpu")).isEmpty());
}

// --- Defects of a first hour (issue 16) ---------------------------------------

void TestDesktopWindow::savingAShippedPresetAsksWhereAndLeavesItAsShipped()
{
    MainWindow window(m_dir.filePath(QStringLiteral("runs-presets")));
    const QString userFolder = QString::fromStdString(userPresetDirectory().string());
    QCOMPARE(userFolder, m_dir.filePath(QStringLiteral("user-presets")));
    // The window opens the WideNet preset; an edit, then Ctrl+S.
    const QString shipped = QString::fromStdString(resolveConfigPath("widenet").string());
    QVERIFY(isShippedPreset(shipped.toStdString()));
    const QByteArray before = fileBytes(shipped);
    QVERIFY(!before.isEmpty());
    QJsonObject document = window.configPanel()->document();
    document.insert(QStringLiteral("name"), QStringLiteral("My WideNet"));
    window.configPanel()->setDocument(document);
    Q_EMIT window.configPanel()->documentChanged();
    QVERIFY(window.isWindowModified());

    QCOMPARE(window.action(QStringLiteral("save"))->shortcut(), QKeySequence(QStringLiteral("Ctrl+S")));
    QCOMPARE(window.action(QStringLiteral("saveAs"))->shortcut(), QKeySequence(QStringLiteral("Ctrl+Shift+S")));
    QString folder;
    const QString mine = QDir(userFolder).filePath(QStringLiteral("my-widenet.json"));
    answerFileDialog(mine, &folder);
    window.action(QStringLiteral("save"))->trigger();
    QCOMPARE(folder, userFolder);  // the dialog opened among the user's presets
    QCOMPARE(fileBytes(shipped), before);
    QVERIFY(QFile::exists(mine));
    QCOMPARE(QJsonDocument::fromJson(fileBytes(mine)).object().value(QStringLiteral("name")).toString(),
             QStringLiteral("My WideNet"));
    QVERIFY(!window.isWindowModified());

    // The picker lists it beside the shipped ones, marked; the CLI's lookup finds it by name.
    const QStringList choices = window.document().presetChoices();
    QVERIFY(choices.contains(QStringLiteral("widenet")));
    QVERIFY2(choices.contains(QStringLiteral("my-widenet (yours)")), qPrintable(choices.join(QStringLiteral(", "))));
    QVERIFY(!choices.contains(QStringLiteral("my-widenet")));
    QCOMPARE(QFileInfo(QString::fromStdString(resolveConfigPath("my-widenet").string())).canonicalFilePath(),
             QFileInfo(mine).canonicalFilePath());
    // Saved again: Ctrl+S writes the user's file without asking.
    document.insert(QStringLiteral("name"), QStringLiteral("My WideNet 2"));
    window.configPanel()->setDocument(document);
    Q_EMIT window.configPanel()->documentChanged();
    QVERIFY(window.document().save());
    QCOMPARE(QJsonDocument::fromJson(fileBytes(mine)).object().value(QStringLiteral("name")).toString(),
             QStringLiteral("My WideNet 2"));

    // Writing over a shipped preset is refused with a message naming it.
    QVERIFY(!window.document().saveConfiguration(shipped));
    QCOMPARE(fileBytes(shipped), before);
    auto* problem = window.findChild<QMessageBox*>(QStringLiteral("problem"));
    QVERIFY(problem);
    QVERIFY2(problem->text().contains(QDir::toNativeSeparators(shipped)), qPrintable(problem->text()));
    problem->close();
}

void TestDesktopWindow::pickingAPresetAsksBeforeDiscardingEdits()
{
    MainWindow window(m_dir.filePath(QStringLiteral("runs-discard")));
    const QString file = m_dir.filePath(QStringLiteral("edited.json"));
    QVERIFY(writeJson(file, tinyDocument(10)));
    QVERIFY(window.openConfiguration(file));
    QJsonObject document = window.configPanel()->document();
    document.insert(QStringLiteral("name"), QStringLiteral("edited, not saved"));
    window.configPanel()->setDocument(document);
    Q_EMIT window.configPanel()->documentChanged();
    QVERIFY(window.isWindowModified());

    // Cancel keeps the edits.
    Q_EMIT window.configPanel()->presetChosen(QStringLiteral("transformer-6x8"));
    auto* question = window.findChild<QMessageBox*>(QStringLiteral("unsavedQuestion"));
    QVERIFY(question);
    QVERIFY(question->isVisible());
    QCOMPARE(window.configPanel()->document().value(QStringLiteral("name")).toString(), QStringLiteral("edited, not saved"));
    buttonOf(question, QMessageBox::Cancel)->click();
    QCOMPARE(window.configPanel()->document().value(QStringLiteral("name")).toString(), QStringLiteral("edited, not saved"));
    QVERIFY(window.isWindowModified());
    QTRY_VERIFY(window.findChild<QMessageBox*>(QStringLiteral("unsavedQuestion")) == nullptr);

    // Discard opens the preset.
    const QJsonObject preset =
        QJsonDocument::fromJson(fileBytes(QString::fromStdString(resolveConfigPath("transformer-6x8").string()))).object();
    Q_EMIT window.configPanel()->presetChosen(QStringLiteral("transformer-6x8"));
    question = window.findChild<QMessageBox*>(QStringLiteral("unsavedQuestion"));
    QVERIFY(question);
    buttonOf(question, QMessageBox::Discard)->click();
    QCOMPARE(window.configPanel()->document().value(QStringLiteral("name")).toString(),
             preset.value(QStringLiteral("name")).toString());
    QVERIFY(!window.isWindowModified());
    QCOMPARE(window.configPanel()->shownPreset(), QStringLiteral("transformer-6x8"));  // the picker says which
    QTRY_VERIFY(window.findChild<QMessageBox*>(QStringLiteral("unsavedQuestion")) == nullptr);

    // Save writes the edits to their file first, then opens the preset.
    QVERIFY(window.openConfiguration(file));
    QCOMPARE(window.configPanel()->shownPreset(), QString());  // a file of the user's: no preset named
    document = window.configPanel()->document();
    document.insert(QStringLiteral("name"), QStringLiteral("saved on the way"));
    window.configPanel()->setDocument(document);
    Q_EMIT window.configPanel()->documentChanged();
    Q_EMIT window.configPanel()->presetChosen(QStringLiteral("transformer-6x8"));
    question = window.findChild<QMessageBox*>(QStringLiteral("unsavedQuestion"));
    QVERIFY(question);
    buttonOf(question, QMessageBox::Save)->click();
    QCOMPARE(QJsonDocument::fromJson(fileBytes(file)).object().value(QStringLiteral("name")).toString(),
             QStringLiteral("saved on the way"));
    QCOMPARE(window.configPanel()->document().value(QStringLiteral("name")).toString(),
             preset.value(QStringLiteral("name")).toString());

    // With nothing edited, a pick opens at once.
    QTRY_VERIFY(window.findChild<QMessageBox*>(QStringLiteral("unsavedQuestion")) == nullptr);
    Q_EMIT window.configPanel()->presetChosen(QStringLiteral("widenet"));
    QVERIFY(window.findChild<QMessageBox*>(QStringLiteral("unsavedQuestion")) == nullptr);
    QCOMPARE(window.configPanel()->document().value(QStringLiteral("model")).toObject().value(QStringLiteral("experts")).toInt(), 4);
}

// `widelab-cli train widenet --out widenet` leaves a run folder named as the preset; a window
// started there, or a pick of the preset, opens the preset, not that folder (which opening a
// path would: a file or folder named on the command line comes first).
void TestDesktopWindow::aPresetOpensWhateverTheWorkingFolderHolds()
{
    const QString working = m_dir.filePath(QStringLiteral("working"));
    QVERIFY(QDir().mkpath(working + QStringLiteral("/widenet")));
    QVERIFY(QDir().mkpath(working + QStringLiteral("/transformer-6x8")));
    const QString before = QDir::currentPath();
    QVERIFY(QDir::setCurrent(working));
    {
        MainWindow window(m_dir.filePath(QStringLiteral("runs-working")));
        QCOMPARE(window.configPanel()->shownPreset(), QStringLiteral("widenet"));
        QCOMPARE(window.configPanel()->document().value(QStringLiteral("model")).toObject().value(QStringLiteral("experts")).toInt(), 4);
        Q_EMIT window.configPanel()->presetChosen(QStringLiteral("transformer-6x8"));
        QCOMPARE(window.configPanel()->shownPreset(), QStringLiteral("transformer-6x8"));
        QVERIFY(window.findChildren<QMessageBox*>().isEmpty());
    }
    QVERIFY(QDir::setCurrent(before));
}

void TestDesktopWindow::theWindowFitsA1280x720Screen()
{
    MainWindow window(m_dir.filePath(QStringLiteral("runs-small")));
    // Long texts where a window shows them: a long run name, a state, a reason.
    const QString file = m_dir.filePath(QStringLiteral("a-configuration-with-a-rather-long-file-name.json"));
    QVERIFY(writeJson(file, tinyDocument(10)));
    QVERIFY(window.openConfiguration(file));
    const QSize screen(1280, 720);
    auto sizes = [&window] {
        QStringList parts;
        parts << QStringLiteral("window %1x%2").arg(window.minimumSizeHint().width()).arg(window.minimumSizeHint().height());
        for (QDockWidget* dock : window.findChildren<QDockWidget*>())
            parts << QStringLiteral("%1 %2x%3").arg(dock->objectName()).arg(dock->minimumSizeHint().width()).arg(dock->minimumSizeHint().height());
        for (QToolBar* bar : window.findChildren<QToolBar*>())
            parts << QStringLiteral("%1 %2x%3").arg(bar->objectName()).arg(bar->minimumSizeHint().width()).arg(bar->minimumSizeHint().height());
        parts << QStringLiteral("central %1x%2").arg(window.centralWidget()->minimumSizeHint().width()).arg(window.centralWidget()->minimumSizeHint().height());
        for (int i = 0; i < window.centralTabs()->count(); ++i)
            parts << QStringLiteral("tab %1 %2x%3").arg(i).arg(window.centralTabs()->widget(i)->minimumSizeHint().width()).arg(window.centralTabs()->widget(i)->minimumSizeHint().height());
        parts << QStringLiteral("status bar %1x%2").arg(window.statusBar()->minimumSizeHint().width()).arg(window.statusBar()->minimumSizeHint().height());
        return parts.join(QStringLiteral("; "));
    };
    QVERIFY2(window.minimumSizeHint().width() <= screen.width() && window.minimumSizeHint().height() <= screen.height(),
             qPrintable(sizes()));

    window.resize(screen);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QCOMPARE(window.size(), screen);
    const QRect inside = window.rect();
    auto shownInside = [&](QWidget* widget) {
        return widget->isVisible() && widget->width() > 0 && widget->height() > 0
               && inside.contains(QRect(widget->mapTo(&window, QPoint(0, 0)), widget->size()));
    };
    QVERIFY2(shownInside(window.runsDock()), qPrintable(sizes()));
    QVERIFY2(shownInside(window.configDock()), qPrintable(sizes()));
    QVERIFY2(shownInside(window.statusBar()), qPrintable(sizes()));
    QVERIFY(shownInside(window.stateLabel()));
    // The log's controls: the level, the filter, Clear.
    const QList<QWidget*> controls = window.log()->findChildren<QWidget*>();
    int checked = 0;
    for (QWidget* control : controls)
        if (qobject_cast<QComboBox*>(control) || qobject_cast<QLineEdit*>(control) || qobject_cast<QPushButton*>(control)) {
            QVERIFY2(shownInside(control), qPrintable(control->metaObject()->className() + QStringLiteral(": ") + sizes()));
            ++checked;
        }
    QVERIFY(checked >= 3);
    // Usable: the charts keep most of the width, the log shows a few lines.
    QVERIFY2(window.centralWidget()->width() >= screen.width() / 3, qPrintable(sizes()));
    QVERIFY2(window.log()->height() >= 60, qPrintable(sizes()));
}

void TestDesktopWindow::theUserPresetsFolderFollowsTheEnvironment()
{
    // Presets.h: $WIDELAB_USER_PRESETS, else $XDG_CONFIG_HOME/widelab/presets, else ~/.config/widelab/presets.
    const QByteArray saved[] = {qgetenv("WIDELAB_USER_PRESETS"), qgetenv("XDG_CONFIG_HOME"), qgetenv("HOME")};
    auto folder = [] { return QString::fromStdString(userPresetDirectory().string()); };
    qputenv("WIDELAB_USER_PRESETS", "/tmp/chosen");
    qputenv("XDG_CONFIG_HOME", "/tmp/xdg");
    QCOMPARE(folder(), QStringLiteral("/tmp/chosen"));
    qunsetenv("WIDELAB_USER_PRESETS");
    QCOMPARE(folder(), QStringLiteral("/tmp/xdg/widelab/presets"));
    qunsetenv("XDG_CONFIG_HOME");
    qputenv("HOME", "/home/someone");
    QCOMPARE(folder(), QStringLiteral("/home/someone/.config/widelab/presets"));
    // Put back as it was.
    qputenv("WIDELAB_USER_PRESETS", saved[0]);
    if (saved[1].isEmpty())
        qunsetenv("XDG_CONFIG_HOME");
    else
        qputenv("XDG_CONFIG_HOME", saved[1]);
    qputenv("HOME", saved[2]);
    QCOMPARE(folder(), m_dir.filePath(QStringLiteral("user-presets")));
}

// View > Theme: dark and light whatever the desktop says, and back to the
// system's look; the charts follow (light text on a dark plot and the reverse),
// and the choice is kept for the next session.
// Fusion frames a check box in the window colour darkened, invisible on the dark
// theme's base: the frame must stand out from the box's inside by a clear step
// of lightness (Fusion's own differs by about 5 of 255).
void TestDesktopWindow::anUntickedBoxShowsOnTheDarkTheme()
{
    const Theme before = currentTheme();
    for (const Theme theme : {Theme::Dark, Theme::Light}) {
        applyTheme(theme);
        QCheckBox box(QStringLiteral("Shown"));
        box.resize(box.sizeHint());
        const QImage image = box.grab().toImage();
        QStyleOptionButton option;
        option.initFrom(&box);
        const QRect indicator = box.style()->subElementRect(QStyle::SE_CheckBoxIndicator, &option, &box);
        const int inside = box.palette().color(QPalette::Base).lightness();
        int frame = 0;
        for (int y = indicator.top(); y <= indicator.bottom(); ++y)
            for (int x = indicator.left(); x <= indicator.right(); ++x)
                frame = std::max(frame, std::abs(QColor(image.pixel(x, y)).lightness() - inside));
        QVERIFY2(frame >= 60, qPrintable(QStringLiteral("%1: the frame differs by %2").arg(themeName(theme)).arg(frame)));
    }
    applyTheme(before);
}

void TestDesktopWindow::theThemeSwitchesEveryViewAndIsKept()
{
    const QPalette system = QApplication::palette();
    MainWindow window(m_dir.filePath(QStringLiteral("runs-theme")));
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* dark = window.findChild<QAction*>(QStringLiteral("theme-dark"));
    auto* light = window.findChild<QAction*>(QStringLiteral("theme-light"));
    auto* followSystem = window.findChild<QAction*>(QStringLiteral("theme-system"));
    QVERIFY(dark && light && followSystem);
    QVERIFY(followSystem->isChecked());
    CurvePlot* loss = window.curves()->chart(QStringLiteral("loss"));
    QVERIFY(loss);

    dark->trigger();
    QVERIFY(dark->isChecked());
    QVERIFY(QApplication::palette().color(QPalette::Window).lightness() < 80);
    QCoreApplication::processEvents();
    QVERIFY(window.palette().color(QPalette::WindowText).lightness() > 200);
    QVERIFY(loss->palette().color(QPalette::Base).lightness() < 80);
    QVERIFY2(loss->xAxis->tickLabelColor().lightness() > 150, qPrintable(loss->xAxis->tickLabelColor().name()));
    // The toolbar's icons are painted in the theme's text colour: light on dark.
    auto iconCentre = [&window] {
        const QImage icon = window.action(QStringLiteral("stop"))->icon().pixmap(32, 32).toImage();
        return icon.pixelColor(16, 16);
    };
    QVERIFY2(iconCentre().alpha() > 200 && iconCentre().lightness() > 150, qPrintable(iconCentre().name()));
    QCOMPARE(QSettings().value(QStringLiteral("appearance/theme")).toString(), QStringLiteral("dark"));

    light->trigger();
    QCoreApplication::processEvents();
    QVERIFY(QApplication::palette().color(QPalette::Window).lightness() > 200);
    QVERIFY2(loss->xAxis->tickLabelColor().lightness() < 100, qPrintable(loss->xAxis->tickLabelColor().name()));
    QVERIFY2(iconCentre().alpha() > 200 && iconCentre().lightness() < 100, qPrintable(iconCentre().name()));
    QCOMPARE(QSettings().value(QStringLiteral("appearance/theme")).toString(), QStringLiteral("light"));

    followSystem->trigger();
    QCoreApplication::processEvents();
    QCOMPARE(QApplication::palette().color(QPalette::Window), system.color(QPalette::Window));
    QCOMPARE(QApplication::palette().color(QPalette::Text), system.color(QPalette::Text));
    QCOMPARE(QSettings().value(QStringLiteral("appearance/theme")).toString(), QStringLiteral("system"));
}

void TestDesktopWindow::aRunsConfigurationIsComparedWithThePanels()
{
    MainWindow window(m_dir.filePath(QStringLiteral("runs-diff")));
    const QString panelFile = m_dir.filePath(QStringLiteral("diff-panel.json"));
    QVERIFY(writeJson(panelFile, tinyDocument(20)));
    QVERIFY(window.openConfiguration(panelFile));
    // A run trained with 10 steps and 8 heads: its config.json, nothing else needed.
    const QString run = m_dir.filePath(QStringLiteral("diff-run"));
    QVERIFY(QDir().mkpath(run));
    QJsonObject config = tinyDocument(10);
    QJsonObject model = config.value(QStringLiteral("model")).toObject();
    model.insert(QStringLiteral("heads"), 8);
    config.insert(QStringLiteral("model"), model);
    QVERIFY(writeJson(run + QStringLiteral("/config.json"), config));

    ConfigDiffDialog* diff = window.showConfigDiff(run, QStringLiteral("diff-run"));
    QVERIFY(diff);
    QMap<QString, QString> rows;
    for (int r = 0; r < diff->rowCount(); ++r)
        rows.insert(diff->cell(r, 0), diff->cell(r, 1) + QStringLiteral(" | ") + diff->cell(r, 2));
    // steps 20 against 10; heads 4 against 8, so head_dim (d_model 32 / heads) 8 against 4.
    QCOMPARE(rows, (QMap<QString, QString>{{QStringLiteral("model.head_dim"), QStringLiteral("8 | 4")},
                                            {QStringLiteral("model.heads"), QStringLiteral("4 | 8")},
                                            {QStringLiteral("train.steps"), QStringLiteral("20 | 10")}}));
    QVERIFY(diff->tableText().startsWith(QStringLiteral("Key\tthe Configuration panel\tdiff-run\n")));
    diff->close();

    // A damaged config.json: said, naming the file; no window.
    QVERIFY(writeJson(run + QStringLiteral("/config.json"), QJsonObject()));
    QFile damage(run + QStringLiteral("/config.json"));
    QVERIFY(damage.open(QIODevice::WriteOnly));
    damage.write("{\"name\": ");
    damage.close();
    QVERIFY(!window.showConfigDiff(run, QStringLiteral("diff-run")));
    auto* box = window.findChild<QMessageBox*>(QStringLiteral("problem"));
    QVERIFY(box);
    QVERIFY2(box->text().contains(QStringLiteral("config.json")), qPrintable(box->text()));
}

void TestDesktopWindow::thePresetPickerGroupsTheShippedPresetsByFamily()
{
    MainWindow window(m_dir.filePath(QStringLiteral("runs-presets")));
    auto* combo = window.configPanel()->findChild<QComboBox*>();  // the first: the preset picker
    QVERIFY(combo);
    // Each preset's heading: the last disabled item above it.
    QMap<QString, QString> groupOf;
    QStringList headings;
    QString heading;
    const auto* model = qobject_cast<const QStandardItemModel*>(combo->model());
    QVERIFY(model);
    for (int i = 1; i < combo->count(); ++i) {
        if (!(model->item(i)->flags() & Qt::ItemIsEnabled)) {
            heading = combo->itemText(i);
            headings << heading;
        } else {
            groupOf.insert(combo->itemData(i).toString(), heading);
        }
    }
    // The shipped families, then the user's own (an earlier test saved one there).
    QStringList expected{QStringLiteral("Wide Attention"), QStringLiteral("WideNet"), QStringLiteral("Multi-Path"),
                         QStringLiteral("Translation"), QStringLiteral("Vision")};
    if (!listUserPresets().empty())
        expected << QStringLiteral("Yours");
    QCOMPARE(headings, expected);
    // By what each model is: dense (deep or wide), experts or sharing, paths, a decoder's task, pictures.
    QCOMPARE(groupOf.value(QStringLiteral("transformer-6x8")), QStringLiteral("Wide Attention"));
    QCOMPARE(groupOf.value(QStringLiteral("attention-performer-1x48")), QStringLiteral("Wide Attention"));
    QCOMPARE(groupOf.value(QStringLiteral("widenet")), QStringLiteral("WideNet"));
    QCOMPARE(groupOf.value(QStringLiteral("albert")), QStringLiteral("WideNet"));
    QCOMPARE(groupOf.value(QStringLiteral("multipath-6x2")), QStringLiteral("Multi-Path"));
    QCOMPARE(groupOf.value(QStringLiteral("translation-bible")), QStringLiteral("Translation"));
    QCOMPARE(groupOf.value(QStringLiteral("vit-widenet")), QStringLiteral("Vision"));
    // Listed by the document's name, its description as the tooltip.
    const int widenet = combo->findData(QStringLiteral("widenet"));
    QCOMPARE(combo->itemText(widenet), QStringLiteral("WideNet (laptop scale)"));
    QVERIFY(combo->itemData(widenet, Qt::ToolTipRole).toString().endsWith(QStringLiteral("(widenet)")));
}

QTEST_MAIN(TestDesktopWindow)
#include "tst_desktop_window.moc"
