// defines: ExecArguments: the null-terminated argv and envp arrays execve and
// posix_spawn take, over strings that outlive them (LocalWorld, DistributedBench)
#pragma once

#include <string>
#include <vector>

namespace widelab {

struct ExecArguments {
    std::vector<char*> argv, envp;

    ExecArguments(const std::vector<std::string>& arguments, const std::vector<std::string>& environment)
    {
        for (const std::string& a : arguments)
            argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        for (const std::string& e : environment)
            envp.push_back(const_cast<char*>(e.c_str()));
        envp.push_back(nullptr);
    }
};

}  // namespace widelab
