// defines: launchLocalWorld: `widelab-cli train --nproc N` starts N copies of
// itself as torchrun would (the same environment variables, the rendezvous store
// hosted here), waits for them and stops them all when one fails
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace widelab {

// Runs this program (/proc/self/exe) `processes` times with `arguments`, each
// with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT
// and TORCHELASTIC_USE_AGENT_STORE set. Rank 0 keeps standard output; the
// others write only errors. The ranks have a process group of their own: Ctrl-C
// or SIGTERM to this process is passed on to them once, as SIGTERM (they agree
// on the step to stop at and save one checkpoint); a second Ctrl-C kills them.
// When a rank fails, the others are stopped (SIGTERM, then SIGKILL after
// `graceSeconds`) and the error names the rank. Returns the exit status: 0 when
// every rank exits 0.
int launchLocalWorld(int processes, const std::vector<std::string>& arguments, std::ostream& err,
                     int graceSeconds = 90);

}  // namespace widelab
