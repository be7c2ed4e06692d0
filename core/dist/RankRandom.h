#pragma once

// While it lives, the device's default generator draws from a stream of this
// rank and step, so that dropout and router noise differ between the ranks of a
// distributed step as they differ between a batch's examples in one process.
// The shared stream (initialisation, the Performer's features, which every
// rank must draw alike) is restored afterwards as it was.

#include <ATen/Context.h>
#include <ATen/core/Generator.h>

#include <cstdint>
#include <mutex>

namespace widelab {

class RankRandom {
public:
    RankRandom(const c10::Device& device, std::uint64_t seed)
        : m_generator(at::globalContext().defaultGenerator(device))
    {
        std::lock_guard lock(m_generator.mutex());
        m_saved = m_generator.get_state();
        m_generator.set_current_seed(seed);
    }
    ~RankRandom()
    {
        std::lock_guard lock(m_generator.mutex());
        m_generator.set_state(m_saved);
    }
    RankRandom(const RankRandom&) = delete;
    RankRandom& operator=(const RankRandom&) = delete;

private:
    at::Generator m_generator;
    at::Tensor m_saved;
};

}  // namespace widelab
