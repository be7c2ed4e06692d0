#include "ParameterHistograms.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

namespace widelab {

std::string parameterGroupOf(const std::string& parameterName)
{
    std::size_t begin = 0;
    while (begin <= parameterName.size()) {
        std::size_t end = parameterName.find('.', begin);
        if (end == std::string::npos)
            end = parameterName.size();
        const bool number = end > begin && std::all_of(parameterName.begin() + static_cast<std::ptrdiff_t>(begin),
                                                       parameterName.begin() + static_cast<std::ptrdiff_t>(end),
                                                       [](unsigned char c) { return std::isdigit(c) != 0; });
        if (number)
            return parameterName.substr(0, end);
        begin = end + 1;
    }
    return parameterName.substr(0, parameterName.find('.'));
}

std::vector<ParameterGroup> parameterGroups(const torch::nn::Module& model)
{
    std::vector<ParameterGroup> groups;
    std::map<std::string, std::size_t> index;
    for (const auto& named : model.named_parameters()) {
        if (!named.value().requires_grad())
            continue;
        const std::string group = parameterGroupOf(named.key());
        const auto [found, added] = index.try_emplace(group, groups.size());
        if (added)
            groups.push_back({group, {}});
        groups[found->second].parameters.push_back(named.value());
    }
    return groups;
}

namespace {

// [2 + buckets]: the smallest value, the largest, and the counts, all on the device.
torch::Tensor histogramRow(const std::vector<torch::Tensor>& values)
{
    std::vector<torch::Tensor> lows, highs;
    for (const torch::Tensor& v : values) {
        lows.push_back(v.min().to(torch::kFloat64));
        highs.push_back(v.max().to(torch::kFloat64));
    }
    const torch::Tensor low = torch::stack(lows).min();
    const torch::Tensor high = torch::stack(highs).max();
    const torch::Tensor range = high - low;
    // All values equal: every one lands in the first bucket.
    const torch::Tensor perValue = kHistogramBuckets / torch::where(range > 0, range, torch::ones_like(range));
    torch::Tensor counts = torch::zeros({kHistogramBuckets}, low.options().dtype(torch::kInt64));
    for (const torch::Tensor& v : values) {
        const torch::Tensor bucket = ((v.reshape({-1}).to(torch::kFloat64) - low) * perValue)
                                         .floor()
                                         .clamp(0, kHistogramBuckets - 1)
                                         .to(torch::kInt64);
        counts.index_add_(0, bucket, torch::ones_like(bucket));  // not bincount, which waits for the device
    }
    return torch::cat({low.view({1}), high.view({1}), counts.to(torch::kFloat64)});
}

}  // namespace

HistogramsOnDevice histogramsOnDevice(const std::vector<ParameterGroup>& groups, HistogramOf what)
{
    torch::NoGradGuard noGrad;
    HistogramsOnDevice out;
    std::vector<torch::Tensor> rows;
    for (const ParameterGroup& group : groups) {
        std::vector<torch::Tensor> values;
        for (const torch::Tensor& parameter : group.parameters) {
            const torch::Tensor& value = what == HistogramOf::Weights ? parameter : parameter.grad();
            if (value.defined() && value.numel() > 0)
                values.push_back(value.detach());
        }
        if (values.empty())
            continue;
        out.groups.push_back(group.name);
        rows.push_back(histogramRow(values));
    }
    if (!rows.empty())
        out.table = torch::stack(rows);
    return out;
}

std::vector<ValueHistogram> readHistograms(const HistogramsOnDevice& histograms)
{
    std::vector<ValueHistogram> out;
    if (histograms.empty())
        return out;
    const torch::Tensor table = histograms.table.to(torch::kCPU).contiguous();
    const auto columns = table.size(1);
    const double* row = table.data_ptr<double>();
    for (std::size_t g = 0; g < histograms.groups.size(); ++g, row += columns) {
        ValueHistogram h;
        h.group = histograms.groups[g];
        h.low = row[0];
        h.high = row[1];
        if (!std::isfinite(h.low) || !std::isfinite(h.high))
            continue;  // a step that is not finite stops the run before its line is written
        for (std::int64_t b = 2; b < columns; ++b)
            h.counts.push_back(static_cast<std::int64_t>(row[b]));
        out.push_back(std::move(h));
    }
    return out;
}

bool histogramsDue(std::int64_t first, std::int64_t last, std::int64_t every, std::int64_t total)
{
    return first <= 1 || last == total || (every > 0 && last / every > (first - 1) / every);
}

}  // namespace widelab
