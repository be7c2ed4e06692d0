// defines: letShrink: a combo box that gives up width when its row is narrow
// (a laptop's 1280x720) instead of pushing the row past the window's edge
#pragma once

#include <QComboBox>

#include <initializer_list>

namespace widelab {

// The boxes ask only for `characters` of their text, however long their longest
// item; the drop-down list still shows every item whole.
inline void letShrink(std::initializer_list<QComboBox*> boxes, int characters)
{
    for (QComboBox* box : boxes) {
        box->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        box->setMinimumContentsLength(characters);
    }
}

}  // namespace widelab
