#include "SystemError.h"

#include <cerrno>
#include <cstring>

namespace widelab {
namespace {

const char* errorName(int error)
{
    switch (error) {
    case ENOSPC: return "ENOSPC";
    case EDQUOT: return "EDQUOT";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case EROFS: return "EROFS";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case EFBIG: return "EFBIG";
    case EIO: return "EIO";
    case ENOENT: return "ENOENT";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    default: return nullptr;
    }
}

}  // namespace

std::string systemReason(int error)
{
    const char* name = errorName(error);
    return std::string(std::strerror(error)) + (name ? std::string(" (") + name + ")" : std::string());
}

}  // namespace widelab
