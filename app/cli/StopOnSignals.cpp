#include "StopOnSignals.h"

namespace widelab {
namespace {

std::atomic<bool> g_stop{false};

extern "C" void requestStop(int) { g_stop.store(true); }

}  // namespace

StopOnSignals::StopOnSignals()
{
    g_stop.store(false);
    struct sigaction action {};
    action.sa_handler = requestStop;
    action.sa_flags = SA_RESETHAND;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &m_int);
    sigaction(SIGTERM, &action, &m_term);
}

StopOnSignals::~StopOnSignals()
{
    sigaction(SIGINT, &m_int, nullptr);
    sigaction(SIGTERM, &m_term, nullptr);
}

const std::atomic<bool>& StopOnSignals::flag() { return g_stop; }

}  // namespace widelab
