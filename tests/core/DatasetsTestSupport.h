// defines: the helpers the data/Datasets and data/Batch tests share (widelab::datasetstest): token
// ids (a text's bytes), files written for a test, the message of a DataError, a substring test, and
// fractions that keep every row for training
#pragma once

#include "TestSupport.h"
#include "data/Batch.h"
#include "data/Datasets.h"

#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <numeric>
#include <set>

namespace widelab::datasetstest {

using Ids = std::vector<std::int64_t>;

inline std::filesystem::path writeFile(const QTemporaryDir& dir, const std::string& name, const std::string& content)
{
    const std::filesystem::path path = std::filesystem::path(dir.path().toStdString()) / name;
    std::ofstream(path, std::ios::binary) << content;
    return path;
}

// The message of the DataError that `f` throws, or "" when it throws none.
template <typename F>
std::string dataErrorOf(F&& f)
{
    try {
        f();
    } catch (const DataError& e) {
        return e.what();
    }
    return "";
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

inline Ids bytesOf(const std::string& text)
{
    Ids ids;
    for (const char c : text)
        ids.push_back(static_cast<unsigned char>(c) + 2);
    return ids;
}

inline const SplitFractions kAllTrain{0.0, 0.0};

}  // namespace widelab::datasetstest
