// decodelab: the command-line entry point (see lab/cli/cli.cpp).
#include "lab/cli/cli.h"

int main(int argc, char** argv) { return decodelab::run_cli(argc, argv); }
