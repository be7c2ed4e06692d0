// defines: valueAt, sizeOf: reading the run's vocabulary (vocab/Snapshot.h), whose
// lists are std::vector, as the views read Qt's containers
#pragma once

#include <QtGlobal>

#include <vector>

namespace widelab {

// values[index], or `fallback` outside the vector (as QVector::value).
template <typename T>
T valueAt(const std::vector<T>& values, qsizetype index, T fallback = T())
{
    return index >= 0 && index < static_cast<qsizetype>(values.size()) ? values[static_cast<std::size_t>(index)] : fallback;
}

// The element count as the views count rows and columns.
template <typename T>
int sizeOf(const std::vector<T>& values)
{
    return static_cast<int>(values.size());
}

}  // namespace widelab
