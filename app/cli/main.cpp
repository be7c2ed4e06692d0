// widelab-cli: a thin shell around runCli (Commands.cpp).
#include "Commands.h"
#include "runtime/CpuBlockCache.h"
#include "runtime/Runtime.h"

#include <iostream>

int main(int argc, char** argv)
{
    widelab::settleNativeLibraries(argv);
    widelab::installCpuBlockCache();
    const std::vector<std::string> args(argv + 1, argv + argc);
    return widelab::runCli(args, std::cout, std::cerr);
}
