// defines: widelab::DocumentationBrowser, the Help > Documentation window: the
// user's guide (README.md and docs/*.md, rendered from Markdown) with a list of
// its pages, back and forward, and find; pictures scaled to the page's width
#pragma once

#include <QString>
#include <QWidget>

class QLabel;
class QLineEdit;
class QListWidget;
class QTextBrowser;
class QUrl;

namespace widelab {

class DocumentationBrowser : public QWidget {
    Q_OBJECT

public:
    // `folder` holds README.md and docs/ (core's documentationFolder()).
    explicit DocumentationBrowser(const QString& folder, QWidget* parent = nullptr);

    // Shows a page of the guide: a path relative to the folder ("docs/desktop.md").
    void showPage(const QString& relativePath);
    QString currentPage() const;  // relative to the folder
    QStringList pages() const;    // the listed pages, relative to the folder, in list order
    // Selects the next match of `text` after the cursor (from the top when none
    // follows); whether one was found.
    bool find(const QString& text);

private:
    void follow(const QUrl& link);
    void pageShown(const QUrl& page);

    QString m_folder;
    QStringList m_pages;
    QListWidget* m_list = nullptr;
    QTextBrowser* m_text = nullptr;
    QLineEdit* m_find = nullptr;
    QLabel* m_status = nullptr;
};

}  // namespace widelab
