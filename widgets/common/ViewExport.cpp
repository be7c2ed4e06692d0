#include "ViewExport.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QImage>
#include <QMainWindow>
#include <QMessageBox>
#include <QPainter>
#include <QPdfWriter>
#include <QRegularExpression>
#include <QSaveFile>
#include <QStatusBar>
#include <QStandardPaths>
#include <QSvgGenerator>
#include <QWidget>

#include <array>
#include <charconv>

namespace widelab::viewexport {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("widelab::viewexport", text); }

}  // namespace

QByteArray csvNumber(double value)
{
    std::array<char, 64> buffer{};
    const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
    return QByteArray(buffer.data(), static_cast<qsizetype>(result.ptr - buffer.data()));
}

QByteArray csvNumber(float value)
{
    std::array<char, 64> buffer{};
    const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
    return QByteArray(buffer.data(), static_cast<qsizetype>(result.ptr - buffer.data()));
}

QByteArray csvField(const QString& text)
{
    QByteArray utf8 = text.toUtf8();
    if (utf8.contains(',') || utf8.contains('"') || utf8.contains('\n') || utf8.contains('\r')) {
        utf8.replace("\"", "\"\"");
        utf8 = '"' + utf8 + '"';
    }
    return utf8;
}

QStringList imageFilters()
{
    return {tr("PNG image (*.png)"), tr("PDF document (*.pdf)"), tr("SVG image (*.svg)")};
}

QString csvFilter() { return tr("CSV table (*.csv)"); }

QString askExportPath(QWidget* parent, const QString& title, const QStringList& filters, QString& directory)
{
    QString base = title.toLower();
    base.replace(QRegularExpression(QStringLiteral("[^a-z0-9]+")), QStringLiteral("_"));
    base.remove(QRegularExpression(QStringLiteral("^_+|_+$")));
    if (base.isEmpty())
        base = QStringLiteral("view");
    static const QRegularExpression suffixPattern(QStringLiteral("\\*\\.(\\w+)"));
    const QString firstSuffix = suffixPattern.match(filters.value(0)).captured(1);
    if (directory.isEmpty())
        directory = QStandardPaths::writableLocation(QStandardPaths::PicturesLocation);
    QString chosenFilter;
    QString path = QFileDialog::getSaveFileName(parent, tr("Export %1").arg(title),
                                                QDir(directory).filePath(base + QLatin1Char('.') + firstSuffix),
                                                filters.join(QStringLiteral(";;")), &chosenFilter);
    if (path.isEmpty())
        return path;
    if (QFileInfo(path).suffix().isEmpty())
        path += QLatin1Char('.') + suffixPattern.match(chosenFilter).captured(1);
    directory = QFileInfo(path).absolutePath();
    return path;
}

void reportExport(QWidget* from, const QString& path, bool written, const QString& error)
{
    if (!written) {
        QMessageBox::warning(from, tr("Export failed"), error);
        return;
    }
    if (auto* window = qobject_cast<QMainWindow*>(from != nullptr ? from->window() : nullptr))
        window->statusBar()->showMessage(tr("Exported %1").arg(QDir::toNativeSeparators(path)), 8000);
}

bool exportWithDialog(QWidget* from, const QString& title, const QStringList& filters, QString& directory,
                      const ExportWriter& write)
{
    const QString path = askExportPath(from, title, filters, directory);
    if (path.isEmpty())
        return false;
    QString error;
    const bool written = write(path, &error);
    reportExport(from, path, written, error);
    return written;
}

bool isCsvPath(const QString& path)
{
    return QFileInfo(path).suffix().compare(QLatin1String("csv"), Qt::CaseInsensitive) == 0;
}

bool exportWidgetImage(QWidget* widget, const QString& path, const QString& title, QString* error)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    auto fail = [&](const QString& why) {
        if (error)
            *error = why;
        return false;
    };
    // A view that was never laid out exports at a readable default size; one
    // sized for export off screen (AttentionView's sheet) keeps its size.
    if ((!widget->isVisible() && !widget->testAttribute(Qt::WA_Resized)) || widget->width() < 200
        || widget->height() < 150)
        widget->resize(std::max(widget->width(), 900), std::max(widget->height(), 600));
    const QSize size = widget->size();
    QFile::remove(path);  // so a stale file cannot pass for success below
    if (suffix == QLatin1String("png")) {
        QImage image(size * 2, QImage::Format_ARGB32_Premultiplied);
        image.setDevicePixelRatio(2.0);
        image.fill(widget->palette().color(QPalette::Window));
        widget->render(&image);
        if (!image.save(path, "PNG"))
            return fail(tr("Could not write %1.").arg(QDir::toNativeSeparators(path)));
        return true;
    }
    if (suffix == QLatin1String("svg")) {
        QSvgGenerator generator;
        generator.setFileName(path);
        generator.setSize(size);
        generator.setViewBox(QRect(QPoint(0, 0), size));
        generator.setTitle(title);
        generator.setDescription(tr("WideLab view"));
        QPainter painter;
        if (!painter.begin(&generator))
            return fail(tr("Could not write %1.").arg(QDir::toNativeSeparators(path)));
        widget->render(&painter);
        painter.end();
        if (QFileInfo(path).size() <= 0)  // QSvgGenerator reports write errors only as warnings
            return fail(tr("Could not write %1.").arg(QDir::toNativeSeparators(path)));
        return true;
    }
    if (suffix == QLatin1String("pdf")) {
        QPdfWriter writer(path);
        writer.setTitle(title);
        writer.setCreator(QStringLiteral("WideLab"));
        writer.setResolution(96);
        writer.setPageSize(QPageSize(QSizeF(size), QPageSize::Point));
        writer.setPageMargins(QMarginsF(0, 0, 0, 0));
        QPainter painter;
        if (!painter.begin(&writer))
            return fail(tr("Could not write %1.").arg(QDir::toNativeSeparators(path)));
        const double scale = std::min(writer.width() / double(size.width()), writer.height() / double(size.height()));
        painter.scale(scale, scale);
        widget->render(&painter);
        painter.end();
        return QFileInfo(path).size() > 0 || fail(tr("Could not write %1.").arg(QDir::toNativeSeparators(path)));
    }
    return fail(tr("Unknown image format \"%1\": use .png, .pdf or .svg.").arg(suffix));
}

bool writeFile(const QString& path, const QByteArray& content, QString* error)
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(content) != content.size() || !file.commit()) {
        if (error)
            *error = tr("Could not write %1: %2").arg(QDir::toNativeSeparators(path), file.errorString());
        return false;
    }
    return true;
}

}  // namespace widelab::viewexport
