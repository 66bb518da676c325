// Placeholder CLI until the lab layer lands.
#include "lab/cli.h"

#include <cstdio>

namespace decodelab {

int run_cli(int, char**) {
  std::fprintf(stderr, "decodelab: not implemented yet\n");
  return 1;
}

}  // namespace decodelab
