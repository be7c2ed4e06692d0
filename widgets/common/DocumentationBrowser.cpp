#include "DocumentationBrowser.h"

#include <QDesktopServices>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QShortcut>
#include <QSplitter>
#include <QStyle>
#include <QTextBrowser>
#include <QTextDocument>
#include <QToolButton>
#include <QUrl>
#include <QVBoxLayout>

#include <algorithm>

namespace widelab {
namespace {

// A page's title: its first "# " heading, else its file name.
QString pageTitle(const QString& file)
{
    QFile in(file);
    if (in.open(QIODevice::ReadOnly | QIODevice::Text))
        for (int line = 0; line < 20 && !in.atEnd(); ++line) {
            const QString text = QString::fromUtf8(in.readLine()).trimmed();
            if (text.startsWith(QStringLiteral("# ")))
                return text.mid(2).trimmed();
        }
    return QFileInfo(file).completeBaseName();
}

// The guide's screenshots are 1366 pixels wide: drawn at most as wide as the page.
class GuideText : public QTextBrowser {
public:
    using QTextBrowser::QTextBrowser;

    QVariant loadResource(int type, const QUrl& name) override
    {
        QVariant resource = QTextBrowser::loadResource(type, name);
        if (type != QTextDocument::ImageResource)
            return resource;
        QImage image = resource.typeId() == QMetaType::QImage ? resource.value<QImage>()
                                                               : QImage::fromData(resource.toByteArray());
        const int width = std::max(200, viewport()->width() - 32);
        if (image.width() > width)
            image = image.scaledToWidth(width, Qt::SmoothTransformation);
        return image.isNull() ? resource : QVariant(image);
    }
};

}  // namespace

DocumentationBrowser::DocumentationBrowser(const QString& folder, QWidget* parent)
    : QWidget(parent, Qt::Window)
    , m_folder(QDir(folder).absolutePath())
{
    setObjectName(QStringLiteral("documentationBrowser"));
    setWindowTitle(tr("WideLab Documentation"));

    m_pages << QStringLiteral("README.md");
    const QDir docs(m_folder + QStringLiteral("/docs"));
    for (const QString& name : docs.entryList({QStringLiteral("*.md")}, QDir::Files, QDir::Name))
        m_pages << QStringLiteral("docs/") + name;

    m_list = new QListWidget(this);
    m_list->setObjectName(QStringLiteral("documentationPages"));
    m_list->setAccessibleName(tr("Pages of the documentation"));
    m_list->setWordWrap(true);  // long titles wrap rather than scroll
    m_list->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    for (const QString& page : m_pages) {
        auto* item = new QListWidgetItem(page == QStringLiteral("README.md") ? tr("WideLab (README)")
                                                                              : pageTitle(m_folder + QLatin1Char('/') + page),
                                         m_list);
        item->setData(Qt::UserRole, page);
        item->setToolTip(page);
    }

    m_text = new GuideText(this);
    m_text->setObjectName(QStringLiteral("documentationText"));
    m_text->setAccessibleName(tr("Documentation page"));
    m_text->setOpenLinks(false);
    m_text->setSearchPaths({m_folder});

    auto* back = new QToolButton(this);
    back->setIcon(style()->standardIcon(QStyle::SP_ArrowBack));
    back->setToolTip(tr("Back (Alt+Left)"));
    back->setAccessibleName(tr("Back"));
    back->setEnabled(false);
    auto* forward = new QToolButton(this);
    forward->setIcon(style()->standardIcon(QStyle::SP_ArrowForward));
    forward->setToolTip(tr("Forward (Alt+Right)"));
    forward->setAccessibleName(tr("Forward"));
    forward->setEnabled(false);
    m_find = new QLineEdit(this);
    m_find->setObjectName(QStringLiteral("documentationFind"));
    m_find->setPlaceholderText(tr("Find in the page (Ctrl+F, Enter for the next)"));
    m_find->setAccessibleName(tr("Find in the page"));
    m_find->setClearButtonEnabled(true);
    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("documentationStatus"));
    m_status->setStyleSheet(QStringLiteral("color: palette(link);"));

    auto* bar = new QHBoxLayout;
    bar->addWidget(back);
    bar->addWidget(forward);
    bar->addWidget(m_find, 1);
    bar->addWidget(m_status, 1);

    auto* splitter = new QSplitter(this);
    splitter->addWidget(m_list);
    splitter->addWidget(m_text);
    splitter->setStretchFactor(1, 1);
    splitter->setSizes({260, 780});

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(bar);
    layout->addWidget(splitter, 1);
    resize(1040, 680);

    connect(back, &QToolButton::clicked, m_text, &QTextBrowser::backward);
    connect(forward, &QToolButton::clicked, m_text, &QTextBrowser::forward);
    connect(m_text, &QTextBrowser::backwardAvailable, back, &QToolButton::setEnabled);
    connect(m_text, &QTextBrowser::forwardAvailable, forward, &QToolButton::setEnabled);
    connect(m_text, &QTextBrowser::anchorClicked, this, &DocumentationBrowser::follow);
    connect(m_text, &QTextBrowser::sourceChanged, this, &DocumentationBrowser::pageShown);
    connect(m_list, &QListWidget::itemActivated, this,
            [this](QListWidgetItem* item) { showPage(item->data(Qt::UserRole).toString()); });
    connect(m_list, &QListWidget::currentItemChanged, this, [this](QListWidgetItem* item) {
        if (item && item->data(Qt::UserRole).toString() != currentPage())
            showPage(item->data(Qt::UserRole).toString());
    });
    connect(m_find, &QLineEdit::returnPressed, this, [this] { find(m_find->text()); });
    auto* findKey = new QShortcut(QKeySequence::Find, this);
    connect(findKey, &QShortcut::activated, this, [this] {
        m_find->setFocus();
        m_find->selectAll();
    });

    showPage(m_pages.front());
}

void DocumentationBrowser::showPage(const QString& relativePath)
{
    m_text->setSource(QUrl::fromLocalFile(m_folder + QLatin1Char('/') + relativePath), QTextDocument::MarkdownResource);
}

QString DocumentationBrowser::currentPage() const
{
    return QDir(m_folder).relativeFilePath(m_text->source().toLocalFile());
}

QStringList DocumentationBrowser::pages() const { return m_pages; }

bool DocumentationBrowser::find(const QString& text)
{
    if (text.isEmpty())
        return false;
    bool found = m_text->find(text);
    if (!found) {  // wrap around
        m_text->moveCursor(QTextCursor::Start);
        found = m_text->find(text);
    }
    m_status->setText(found ? QString() : tr("\"%1\" is not on this page").arg(text));
    return found;
}

void DocumentationBrowser::follow(const QUrl& link)
{
    if (!link.isRelative() && !link.isLocalFile()) {  // https:, mailto:
        QDesktopServices::openUrl(link);
        return;
    }
    QUrl target = m_text->source().resolved(link);
    target.setFragment(QString());
    const QFileInfo file(target.toLocalFile());
    if (!file.exists()) {
        m_status->setText(tr("%1 is not part of the installed documentation").arg(link.toString()));
        return;
    }
    if (file.isFile() && file.suffix().compare(QStringLiteral("md"), Qt::CaseInsensitive) == 0)
        m_text->setSource(target, QTextDocument::MarkdownResource);
    else
        QDesktopServices::openUrl(target);  // a folder, a JSON file: the desktop's own program
}

void DocumentationBrowser::pageShown(const QUrl& source)
{
    const QString page = QDir(m_folder).relativeFilePath(source.toLocalFile());
    m_status->clear();
    const int row = static_cast<int>(m_pages.indexOf(page));
    {
        const QSignalBlocker quiet(m_list);
        m_list->setCurrentRow(row);  // -1 (none) for a page not listed, e.g. docs/attention/*.md
    }
    setWindowTitle(tr("%1 — WideLab Documentation").arg(pageTitle(source.toLocalFile())));
}

}  // namespace widelab
