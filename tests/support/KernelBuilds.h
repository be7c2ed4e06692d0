// defines: test::kernelBuilds, test::forEachKernelBuild: the builds of
// WideLab's own CPU kernels (runtime/TargetClones.h) that this CPU runs, and a
// data-driven test's rows for each
#pragma once

#include "runtime/TargetClones.h"

#include <QtTest>

#include <vector>

Q_DECLARE_METATYPE(widelab::InstructionSet)

namespace widelab::test {

// AVX-512, AVX2 with FMA and the baseline, those this CPU runs: all three on
// one with AVX-512, so the build a user's CPU takes is tested wherever the
// suite runs on such a CPU.
inline std::vector<InstructionSet> kernelBuilds()
{
    std::vector<InstructionSet> builds;
    for (const InstructionSet set : {InstructionSet::Avx512, InstructionSet::Avx2, InstructionSet::Baseline})
        if (cpuRuns(set))
            builds.push_back(set);
    return builds;
}

// Calls addRows(set, row) for each of kernelBuilds(), where row(name) starts a
// row named "name, <build>" and returns it for its columns.
template <class AddRows>
void forEachKernelBuild(AddRows addRows)
{
    for (const InstructionSet set : kernelBuilds())
        addRows(set, [set](const char* name) -> QTestData& {
            return QTest::newRow(qPrintable(QStringLiteral("%1, %2").arg(name, instructionSetName(set))));
        });
}

}  // namespace widelab::test
