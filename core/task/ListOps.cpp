// ListOps (Long Range Arena's rules), generated in memory from task.seed.
#include "TaskKinds.h"

#include "data/ListOps.h"
#include "runtime/Clock.h"
#include "runtime/DeviceMemory.h"
#include "vocab/Format.h"


namespace widelab {

namespace {

TaskData prepareListOps(const TaskSetup& setup)
{
    const TaskConfig& task = setup.run.task;
    ListOpsOptions listops;
    listops.minLength = task.minLength;
    listops.maxLength = task.maxLength;
    TaskData data;
    data.tokenizer = listOpsTokenizer();
    // Generated up front, in memory: refused when it cannot fit, reported as it goes when it is long.
    const std::int64_t needed = listOpsMemoryBytes(listops, task.trainSize + task.validationSize + task.testSize);
    if (const std::int64_t available = availableMemory(torch::kCPU); available > 0 && needed > available)
        throw ConfigError({{"task.train_size", std::to_string(task.trainSize) + " ListOps examples (with the "
                                                   "validation and test splits) take up to " + formatBytes(needed)
                                                   + " of memory, more than the " + formatBytes(available)
                                                   + " available; lower task.train_size or task.max_length"}});
    auto generate = [&](std::int64_t count, Split split) {
        double shown = steadySeconds();
        auto progress = [&](std::int64_t done) {
            if (setup.cancelled && setup.cancelled())
                throw SetupCancelled("stopped while generating the ListOps " + toString(split) + " split");
            if (steadySeconds() - shown < 5.0 || !setup.progress)
                return;
            shown = steadySeconds();
            setup.progress("generating the ListOps " + toString(split) + " split: " + std::to_string(100 * done / count)
                           + "% (" + std::to_string(done) + " of " + std::to_string(count) + " examples)");
        };
        return makeListOpsDataset(listops, count, static_cast<std::uint64_t>(task.seed), split,
                                  setup.run.sequenceLength(), progress);
    };
    data.train = generate(task.trainSize, Split::Train);
    data.validation = generate(task.validationSize, Split::Validation);
    data.test = generate(task.testSize, Split::Test);
    for (int value = 0; value < 10; ++value)
        data.labels.push_back(std::to_string(value));
    return data;
}

}  // namespace

const TaskSpec& listOpsTask()
{
    static const TaskSpec spec{TaskKind::ListOps, prepareListOps};
    return spec;
}

}  // namespace widelab
