# One interface target carries the warning flags; every WideLab target links it.
add_library(widelab_warnings INTERFACE)
target_compile_options(widelab_warnings INTERFACE
  $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wnon-virtual-dtor -Woverloaded-virtual>)
