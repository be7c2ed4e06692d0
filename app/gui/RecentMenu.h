// defines: RecentMenu: File > Open Recent: the configurations and runs opened
// last, newest first, kept in the settings for the next session
#pragma once

#include <QObject>
#include <QString>

class QMenu;

namespace widelab {

class RecentMenu : public QObject {
    Q_OBJECT
public:
    // Fills `menu` with what the settings remember.
    explicit RecentMenu(QMenu* menu, QObject* parent = nullptr);

    QMenu* menu() const { return m_menu; }
    // Puts `path` first (once), keeping the newest ten.
    void remember(const QString& path);

Q_SIGNALS:
    void chosen(const QString& path, bool run);  // `run`: the path is a run directory

private:
    void rebuild();

    QMenu* m_menu;
};

}  // namespace widelab
