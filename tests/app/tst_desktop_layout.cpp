// Tests that every page of the window fits a laptop's screen: at 1280x720 and
// 1366x768, in the light and the dark theme, with the default panels and three
// runs with long names shown, no widget is cut off by its parent or drawn over
// another, and every chart keeps a plot area a user can read (LayoutChecks.h).
// The runs are one tiny WideNet trained here, copied under two more names.
#include "DesktopTestSupport.h"
#include "LayoutChecks.h"
#include "RunsWorkspace.h"
#include "Theme.h"
#include "insights/InsightPage.h"

#include <QTabWidget>

using namespace widelab;
using namespace widelab::desktoptest;

namespace {

QString compact(const QJsonObject& object) { return QString::fromUtf8(QJsonDocument(object).toJson(QJsonDocument::Compact)); }

bool copyFolder(const QString& from, const QString& to)
{
    QDir source(from);
    if (!QDir().mkpath(to))
        return false;
    for (const QFileInfo& entry : source.entryInfoList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot)) {
        const QString target = QDir(to).filePath(entry.fileName());
        if (entry.isDir() ? !copyFolder(entry.filePath(), target) : !QFile::copy(entry.filePath(), target))
            return false;
    }
    return true;
}

}  // namespace

class TestDesktopLayout : public DesktopTestCase {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void theCurvesPageFits_data() { screens(); }
    void theCurvesPageFits();
    void everyInsightsPageFits_data() { screens(); }
    void everyInsightsPageFits();
    void theStudiesPageFits_data() { screens(); }
    void theStudiesPageFits();
    void theWorkspacePageFits_data() { screens(); }
    void theWorkspacePageFits();

private:
    void screens();
    // A window of the row's size and theme, the three runs shown, the first open.
    std::unique_ptr<MainWindow> window();
    // The problems of the window's central page and its panels, each prefixed with `page`.
    QStringList problems(MainWindow& window, const QString& page);

    QString m_root;
    QStringList m_runs;
};

void TestDesktopLayout::initTestCase()
{
    DesktopTestCase::initTestCase();
    m_root = m_dir.filePath(QStringLiteral("runs"));
    const QString first = QDir(m_root).filePath(QStringLiteral("widenet-shared-4-experts-listops-seed-1"));
    QJsonObject document = tinyDocument(40, 5);
    QJsonObject train = document.value(QStringLiteral("train")).toObject();
    train.insert(QStringLiteral("eval_every"), 20);
    document.insert(QStringLiteral("train"), train);
    TrainingController controller;
    QSignalSpy finished(&controller, &TrainingController::finished);
    QVERIFY(controller.start(compact(document), first, false));
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
    m_runs = QStringList{first, QDir(m_root).filePath(QStringLiteral("widenet-shared-4-experts-listops-seed-2")),
                         QDir(m_root).filePath(QStringLiteral("another-run-with-a-rather-long-name-to-compare"))};
    for (int i = 1; i < m_runs.size(); ++i)
        QVERIFY(copyFolder(first, m_runs[i]));
}

void TestDesktopLayout::screens()
{
    QTest::addColumn<QSize>("size");
    QTest::addColumn<bool>("dark");
    for (const QSize size : {QSize(1280, 720), QSize(1366, 768)})
        for (const bool dark : {false, true})
            QTest::newRow(qPrintable(QStringLiteral("%1x%2 %3").arg(size.width()).arg(size.height())
                                         .arg(dark ? QStringLiteral("dark") : QStringLiteral("light"))))
                << size << dark;
}

std::unique_ptr<MainWindow> TestDesktopLayout::window()
{
    QFETCH(QSize, size);
    QFETCH(bool, dark);
    applyTheme(dark ? Theme::Dark : Theme::Light);
    QSettings().clear();  // the default panels, not the last test's
    auto window = std::make_unique<MainWindow>(m_root);
    window->resize(size);
    window->show();
    if (!QTest::qWaitForWindowExposed(window.get()))
        return nullptr;
    if (!window->openRun(m_runs[0]) || !window->compared().add(m_runs[1]) || !window->compared().add(m_runs[2]))
        return nullptr;
    return window;
}

QStringList TestDesktopLayout::problems(MainWindow& window, const QString& page)
{
    QTest::qWait(2 * InsightsView::kRefreshMs);  // the views redraw on timers
    QStringList found = layoutProblems(window.centralWidget());
    for (QDockWidget* dock : window.findChildren<QDockWidget*>())
        if (dock->isVisible())
            found << layoutProblems(dock);
    found << plotAreaProblems(window.centralWidget(), 60);
    for (QString& problem : found)
        problem.prepend(page + QStringLiteral(": "));
    return found;
}

void TestDesktopLayout::theCurvesPageFits()
{
    const std::unique_ptr<MainWindow> w = window();
    QVERIFY(w);
    w->centralTabs()->setCurrentWidget(w->curves());
    const QStringList found = problems(*w, QStringLiteral("Curves"));
    QVERIFY2(found.isEmpty(), qPrintable(found.join(QLatin1Char('\n'))));
}

void TestDesktopLayout::everyInsightsPageFits()
{
    const std::unique_ptr<MainWindow> w = window();
    QVERIFY(w);
    w->centralTabs()->setCurrentWidget(w->insights());
    w->insights()->setComparisonRun(m_runs[1]);
    QStringList found;
    // Every tab, the ones after Ablation (residual stream, weights, translation) too.
    auto* tabs = w->insights()->findChild<QTabWidget*>(QString(), Qt::FindDirectChildrenOnly);
    QVERIFY(tabs != nullptr && tabs->count() > static_cast<int>(InsightsView::Page::Ablation) + 1);
    for (int page = 0; page < tabs->count(); ++page) {
        tabs->setCurrentIndex(page);
        const QString name = QStringLiteral("Insights page %1").arg(tabs->tabText(page));
        found << problems(*w, name);
        // A page wider than its view scrolls sideways, and what is on its right is cut off.
        const QWidget* shown = w->insights()->currentPage();
        if (shown->width() > shown->parentWidget()->width())
            found << QStringLiteral("%1: %2 pixels wide in a view of %3")
                         .arg(name)
                         .arg(shown->width())
                         .arg(shown->parentWidget()->width());
    }
    QVERIFY2(found.isEmpty(), qPrintable(found.join(QLatin1Char('\n'))));
}

void TestDesktopLayout::theStudiesPageFits()
{
    const std::unique_ptr<MainWindow> w = window();
    QVERIFY(w);
    QVERIFY(w->showBuiltinStudy(QStringLiteral("wide-attention-aspect-ratio")));
    const QStringList found = problems(*w, QStringLiteral("Studies"));
    QVERIFY2(found.isEmpty(), qPrintable(found.join(QLatin1Char('\n'))));
}

void TestDesktopLayout::theWorkspacePageFits()
{
    const std::unique_ptr<MainWindow> w = window();
    QVERIFY(w);
    w->centralTabs()->setCurrentWidget(w->runsTable());
    QVERIFY(w->workspace().waitForReading(10000));
    const QStringList found = problems(*w, QStringLiteral("Workspace"));
    QVERIFY2(found.isEmpty(), qPrintable(found.join(QLatin1Char('\n'))));
}

QTEST_MAIN(TestDesktopLayout)
#include "tst_desktop_layout.moc"
