// decodelab: the command-line entry point (see lab/cli.cpp).
#include "lab/cli.h"

int main(int argc, char** argv) { return decodelab::run_cli(argc, argv); }
