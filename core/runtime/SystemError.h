// defines: systemReason: what the operating system said, in words and by name
// ("No space left on device (ENOSPC)"), for messages about files that could not be
// written or read
#pragma once

#include <string>

namespace widelab {

// strerror(error) followed by the error's symbolic name where it is one a user
// can act on (ENOSPC, EDQUOT, EACCES, EPERM, EROFS, ENAMETOOLONG, EFBIG, EIO, ...).
std::string systemReason(int error);

}  // namespace widelab
