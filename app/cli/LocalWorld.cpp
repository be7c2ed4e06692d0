#include "LocalWorld.h"

#include "ExecArguments.h"
#include "dist/Collective.h"

#include <chrono>
#include <csignal>
#include <cstring>
#include <ostream>
#include <thread>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace widelab {
namespace {

struct Rank {
    pid_t pid = -1;
    int status = 0;
    bool running = false;
};

std::string describe(int status)
{
    if (WIFSIGNALED(status))
        return std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) + " ("
               + strsignal(WTERMSIG(status)) + ")";
    return "exited with status " + std::to_string(WEXITSTATUS(status));
}

// argv and envp are made before fork: the child only calls what is safe there.
pid_t startRank(const std::vector<std::string>& argv, const std::vector<std::string>& environment, bool quiet,
                const sigset_t& unblocked)
{
    ExecArguments exec(argv, environment);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid != 0)
        return pid;
    // A rank outlives no launcher: killed with it, it is told to stop.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
        _exit(1);
    // Its own process group: Ctrl-C reaches the launcher alone, which tells every
    // rank once (a second signal to a rank would end it without its checkpoint).
    setpgid(0, 0);
    sigprocmask(SIG_SETMASK, &unblocked, nullptr);
    if (quiet) {
        const int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, STDOUT_FILENO);
    }
    execve("/proc/self/exe", exec.argv.data(), exec.envp.data());
    _exit(127);
}

}  // namespace

int launchLocalWorld(int processes, const std::vector<std::string>& arguments, std::ostream& err, int graceSeconds)
{
    if (const std::string reason = Collective::unavailableReason(); !reason.empty())
        throw CollectiveError("--nproc " + std::to_string(processes) + ": " + reason);
    RendezvousHost store;

    std::vector<std::string> environment;
    for (char** e = environ; *e; ++e) {
        const std::string entry = *e;
        const std::string name = entry.substr(0, entry.find('='));
        // What a launcher around this one set does not describe these ranks.
        if (name != "RANK" && name != "WORLD_SIZE" && name != "LOCAL_RANK" && name != "LOCAL_WORLD_SIZE"
            && name != "MASTER_ADDR" && name != "MASTER_PORT" && name != "TORCHELASTIC_USE_AGENT_STORE"
            && name.rfind("SLURM_", 0) != 0 && name.rfind("OMPI_COMM_WORLD_", 0) != 0)
            environment.push_back(entry);
    }
    std::vector<std::string> argv{"widelab-cli"};
    argv.insert(argv.end(), arguments.begin(), arguments.end());

    // Signals are taken here, one at a time, rather than by a handler.
    sigset_t taken, previous;
    sigemptyset(&taken);
    sigaddset(&taken, SIGINT);
    sigaddset(&taken, SIGTERM);
    sigaddset(&taken, SIGCHLD);
    sigprocmask(SIG_BLOCK, &taken, &previous);

    std::vector<Rank> ranks(static_cast<std::size_t>(processes));
    for (int r = 0; r < processes; ++r) {
        std::vector<std::string> env = environment;
        env.push_back("RANK=" + std::to_string(r));
        env.push_back("LOCAL_RANK=" + std::to_string(r));
        env.push_back("WORLD_SIZE=" + std::to_string(processes));
        env.push_back("LOCAL_WORLD_SIZE=" + std::to_string(processes));
        env.push_back("MASTER_ADDR=127.0.0.1");
        env.push_back("MASTER_PORT=" + std::to_string(store.port()));
        env.push_back("TORCHELASTIC_USE_AGENT_STORE=True");
        Rank& rank = ranks[static_cast<std::size_t>(r)];
        rank.pid = startRank(argv, env, r > 0, previous);
        rank.running = rank.pid > 0;
        if (rank.pid < 0)
            err << "rank " << r << " could not be started: " << std::strerror(errno) << "\n";
    }

    int exitStatus = 0;
    std::string failure;
    bool stopping = false;
    auto stopOthers = [&](int signal) {
        for (const Rank& rank : ranks) {
            if (!rank.running)
                continue;
            kill(rank.pid, signal);
            kill(rank.pid, SIGCONT);  // a stopped rank (SIGSTOP) hears it too
        }
    };
    int interrupts = 0;
    for (const Rank& rank : ranks)
        if (!rank.running)
            stopping = true;
    if (stopping)
        stopOthers(SIGTERM);
    auto deadline = std::chrono::steady_clock::time_point::max();
    if (stopping)
        deadline = std::chrono::steady_clock::now() + std::chrono::seconds(graceSeconds);
    int running = 0;
    for (const Rank& rank : ranks)
        running += rank.running ? 1 : 0;
    while (running > 0) {
        const timespec tick{0, 200'000'000};
        const int signal = sigtimedwait(&taken, nullptr, &tick);
        // Ctrl-C or SIGTERM: every rank stops after the step they agree on and saves
        // one checkpoint; a second Ctrl-C ends them at once, as it ends one process.
        if (signal == SIGTERM || (signal == SIGINT && interrupts++ == 0))
            stopOthers(SIGTERM);
        else if (signal == SIGINT)
            stopOthers(SIGKILL);
        for (std::size_t r = 0; r < ranks.size(); ++r) {
            Rank& rank = ranks[r];
            if (!rank.running || waitpid(rank.pid, &rank.status, WNOHANG) != rank.pid)
                continue;
            rank.running = false;
            --running;
            const bool failed = !(WIFEXITED(rank.status) && WEXITSTATUS(rank.status) == 0);
            if (failed && failure.empty()) {
                failure = "rank " + std::to_string(r) + " " + describe(rank.status);
                exitStatus = WIFEXITED(rank.status) ? WEXITSTATUS(rank.status) : 128 + WTERMSIG(rank.status);
                if (!stopping) {
                    stopping = true;
                    stopOthers(SIGTERM);
                    deadline = std::chrono::steady_clock::now() + std::chrono::seconds(graceSeconds);
                }
            }
        }
        if (running > 0 && std::chrono::steady_clock::now() > deadline) {
            stopOthers(SIGKILL);
            deadline = std::chrono::steady_clock::time_point::max();
        }
    }
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    if (!failure.empty()) {
        err << "widelab-cli: " << failure << "; the other ranks were stopped, the run's last checkpoint is kept\n";
        return exitStatus == 0 ? 1 : exitStatus;
    }
    return 0;
}

}  // namespace widelab
