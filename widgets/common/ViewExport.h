// defines: viewexport::csvNumber, csvField, askExportPath, exportWithDialog,
// reportExport, exportWidgetImage, writeFile: what every view's export shares
// (CSV fields, the file dialog, the confirmation, a widget drawn into PNG, SVG or PDF)
#pragma once

#include <QByteArray>
#include <QString>
#include <QStringList>

#include <functional>

class QWidget;

namespace widelab::viewexport {

// The shortest decimal text that reads back to the same double.
QByteArray csvNumber(double value);
QByteArray csvNumber(float value);  // the shortest text that reads back to the same float
// `text` as one CSV field: quoted (RFC 4180) when it holds a comma, quote or line break.
QByteArray csvField(const QString& text);

// The file filters every view offers.
QStringList imageFilters();   // PNG, PDF, SVG
QString csvFilter();

// Asks where to export `title` (the suggested name is the title in lower case
// with underscores, in `directory`); adds the chosen filter's suffix when the
// name has none and remembers the folder in `directory`. Empty when cancelled.
QString askExportPath(QWidget* parent, const QString& title, const QStringList& filters, QString& directory);

// How an export ended, told to the user: a failure as a warning with the
// reason; a success as "Exported PATH" in the status bar of `from`'s window
// (for 8 s) when that window has one.
void reportExport(QWidget* from, const QString& path, bool written, const QString& error);

// Asks for a path (askExportPath), writes it with `write` (the path, where a
// failure's reason goes) and reports it (reportExport). Whether a file was written.
using ExportWriter = std::function<bool(const QString& path, QString* error)>;
bool exportWithDialog(QWidget* from, const QString& title, const QStringList& filters, QString& directory,
                      const ExportWriter& write);

// Whether `path` names a CSV file (the suffix, in any case): the views that
// offer an image or their numbers write the one the user picked.
bool isCsvPath(const QString& path);

// Draws `widget` as it is on screen into a PNG (at twice the pixels), PDF or
// SVG file, chosen by the suffix. false with *error set when the suffix is not
// one of them or the file cannot be written.
bool exportWidgetImage(QWidget* widget, const QString& path, const QString& title, QString* error);

// Writes `content` whole (through a temporary file), or sets *error.
bool writeFile(const QString& path, const QByteArray& content, QString* error);

}  // namespace widelab::viewexport
