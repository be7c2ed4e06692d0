#include "ActionCatalog.h"

#include <QCoreApplication>
#include <QRegularExpression>
#include <QStringList>

namespace widelab {
namespace {

QString tr(const char* text) { return QCoreApplication::translate("ActionCatalog", text); }

}  // namespace

QList<ActionSpec> actionCatalog()
{
    const auto key = [](const char* keys) { return QKeySequence(QString::fromLatin1(keys), QKeySequence::PortableText); };
    QList<ActionSpec> catalog{
        {QStringLiteral("start"), tr("&Start"), key("F5"),
         tr("Starts a new run in the runs folder (named after the configuration and the time), or continues the open "
            "run when its configuration is unchanged")},
        {QStringLiteral("pause"), tr("&Pause"), key("F6"),
         tr("Pauses between two steps, or resumes; checkpoints can still be saved while paused")},
        {QStringLiteral("stop"), tr("S&top"), key("Shift+F5"), tr("Stops after the current step and saves a checkpoint")},
        {QStringLiteral("checkpoint"), tr("Save &Checkpoint Now"), key("F7"), tr("Writes a checkpoint without stopping")},
        {QStringLiteral("open"), tr("&Open Configuration..."), key("Ctrl+O"),
         tr("A .json configuration (or a run's config.json)")},
        {QStringLiteral("save"), tr("&Save Configuration"), key("Ctrl+S"), tr("The document in the panel, as JSON")},
        // Spelled out: QKeySequence::SaveAs has no key on some platforms.
        {QStringLiteral("saveAs"), tr("Save Configuration &As..."), key("Ctrl+Shift+S"),
         tr("The document in the panel, as JSON, under a new name")},
        {QStringLiteral("openRun"), tr("Open &Run..."), key("Ctrl+Shift+O"),
         tr("A run directory: configuration, curves and log")},
        {QStringLiteral("compare"), tr("&Compare With Run..."), key("Ctrl+Shift+A"), tr("Adds a run's curves to the charts")},
        {QStringLiteral("runsFolder"), tr("Runs &Folder..."), {},
         tr("The folder new runs are written to, which the Workspace tab lists")},
        {QStringLiteral("exportChart"), tr("&Export Chart or View..."), key("Ctrl+E"),
         tr("The chart last clicked, as PNG, SVG, PDF or CSV; on the Insights tab, the view shown; on the Studies "
            "tab, its chart")},
        {QStringLiteral("exportData"), tr("Export View &Data (CSV)..."), key("Ctrl+Shift+E"),
         tr("The numbers of the chart or view shown, as CSV; on the Studies tab, its table")},
        {QStringLiteral("view0"), tr("&Curves"), key("Alt+1"), tr("The training charts")},
        {QStringLiteral("view1"), tr("&Attention"), key("Alt+2"), tr("Insights: attention per head on the probes")},
        {QStringLiteral("view2"), tr("E&xperts"), key("Alt+3"), tr("Insights: expert load and routing")},
        {QStringLiteral("view3"), tr("&LayerNorm"), key("Alt+4"), tr("Insights: LayerNorm gamma and beta across blocks")},
        {QStringLiteral("view4"), tr("Pa&ths"), key("Alt+5"), tr("Insights: path weights and diversity")},
        {QStringLiteral("view5"), tr("&Studies"), key("Alt+6"), tr("The Studies tab")},
        {QStringLiteral("view6"), tr("&Workspace"), key("Alt+7"),
         tr("Every run in the runs folder: sort, filter, show in the charts, rename, tag, note, delete")},
        {QStringLiteral("studyNew"), tr("&New Study from Configuration..."), key("Ctrl+Shift+N"),
         tr("A study of the configuration in the panel")},
        {QStringLiteral("studyOpen"), tr("&Open Study..."), key("Ctrl+Alt+O"), tr("A study folder")},
        {QStringLiteral("studyStart"), tr("&Start Study"), key("Ctrl+F5"), tr("The built-in study picked in the Studies tab")},
        {QStringLiteral("studyContinue"), tr("&Continue Study"), key("Ctrl+Shift+F5"), tr("The study shown, where it stopped")},
        {QStringLiteral("studyStop"), tr("S&top Study"), key("Ctrl+Alt+F5"),
         tr("The study's running members, each saving a checkpoint")},
        {QStringLiteral("live"), tr("&Live"), key("Ctrl+L"), tr("The views follow training (off: they stay at their step)")},
        {QStringLiteral("stepBack"), tr("Step &Back"), key("Alt+Left"), tr("The views show the insight step before")},
        {QStringLiteral("stepForward"), tr("Step &Forward"), key("Alt+Right"), tr("The views show the insight step after")},
        {QStringLiteral("addProbe"), tr("Add &Probe..."), key("Ctrl+Shift+P"),
         tr("A text whose attention, routing and prediction the views show")},
        {QStringLiteral("resetView"), tr("&Reset Chart Views"), key("Ctrl+0"), tr("Fits every chart to all its data")},
        {QStringLiteral("configurationDock"), tr("Configuration"), key("Ctrl+1"), tr("Shows or hides the configuration panel")},
        {QStringLiteral("logDock"), tr("Log"), key("Ctrl+2"), tr("Shows or hides the log")},
        {QStringLiteral("runsDock"), tr("Runs"), key("Ctrl+3"), tr("Shows or hides the runs panel")},
        {QStringLiteral("documentation"), tr("&Documentation"), key("F1"),
         tr("The user's guide (README and docs), installed with WideLab")},
        {QStringLiteral("shortcuts"), tr("&Keyboard Shortcuts"), key("Ctrl+/"), tr("Lists every shortcut (this table), with a filter")},
        {QStringLiteral("about"), tr("&About WideLab"), {}, tr("The version, and what matrix products run on")},
        {QStringLiteral("quit"), tr("&Quit"), key("Ctrl+Q"), tr("Asks first when a run or a study is training")},
        {QStringLiteral("copyBreakdown"), tr("&Copy Table"), key("Ctrl+C"),
         tr("In the configuration's cost breakdown: the table as tab-separated text")},
        {QStringLiteral("workspaceOpen"), tr("&Open Run"), key("Return"),
         tr("In the Workspace tab: opens the selected run (asking to add it or show it alone)")},
        {QStringLiteral("workspaceDelete"), tr("&Delete Runs..."), key("Del"),
         tr("In the Workspace tab: moves the selected runs to the trash, after asking")},
    };
    return catalog;
}

ActionSpec actionSpec(const QString& name)
{
    for (const ActionSpec& spec : actionCatalog())
        if (spec.name == name)
            return spec;
    return {};
}

QString plainActionText(const ActionSpec& spec)
{
    QString text = spec.text;
    text.remove(QRegularExpression(QStringLiteral("&(?!&)")));
    if (text.endsWith(QStringLiteral("...")))
        text.chop(3);
    return text;
}

QString shortcutTableMarkdown()
{
    QStringList lines{QStringLiteral("| Action | Key | What it does |"), QStringLiteral("| --- | --- | --- |")};
    for (const ActionSpec& spec : actionCatalog())
        if (!spec.key.isEmpty())
            lines << QStringLiteral("| %1 | %2 | %3 |")
                         .arg(plainActionText(spec), spec.key.toString(QKeySequence::PortableText), spec.description);
    return lines.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

}  // namespace widelab
