#include "OutOfMemory.h"

#include "model/ParameterCount.h"
#include "runtime/DeviceMemory.h"
#include "runtime/Runtime.h"
#include "vocab/Format.h"

#include <c10/util/Exception.h>

#include <new>

namespace widelab {

bool isOutOfMemory(const std::exception& error)
{
    if (dynamic_cast<const std::bad_alloc*>(&error) || dynamic_cast<const c10::OutOfMemoryError*>(&error))
        return true;
    // Older LibTorch CPU allocators raise a plain c10::Error.
    if (const auto* torchError = dynamic_cast<const c10::Error*>(&error)) {
        const std::string what = torchError->what_without_backtrace();
        return what.find("out of memory") != std::string::npos || what.find("can't allocate memory") != std::string::npos
               || what.find("not enough memory") != std::string::npos;
    }
    return false;
}

std::string outOfMemoryMessage(const std::string& where, const c10::Device& device, const ModelConfig& model,
                               std::int64_t batch, std::int64_t sequence)
{
    const double stored = static_cast<double>(modelCost(model).total.stored);
    // fp32 weights and gradients, and AdamW's two moments: 16 bytes a parameter.
    std::string text = "out of memory on " + device.str() + " in " + where + ": the model (";
    text += shortCount(stored) + " parameters, " + formatBytes(stored * 16.0)
            + " with gradients and optimizer state) with a batch of " + std::to_string(batch) + " x "
            + std::to_string(sequence) + " tokens did not fit";
    for (const DeviceInfo& info : availableDevices())
        if (info.id == device.str() && info.memoryBytes > 0)
            text += " in its " + formatBytes(info.memoryBytes);
    const DeviceMemory memory = deviceMemory(device);
    if (memory.cuda)
        text += " (the run held " + formatBytes(memory.peakAllocated) + " in tensors at its peak, "
                + formatBytes(memory.peakReserved) + " reserved)";
    text += "; try a smaller train.batch_size or sequence length";
    if (device.is_cuda())
        text += ", train.bf16: true";
    text += ", or a smaller model (d_model, ffn_dim, experts)";
    return text;
}

}  // namespace widelab
