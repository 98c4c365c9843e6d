// 1-bit LAMB on 2 MPI ranks (tests/mpi/onebit_lamb_cases.h).
#include "onebit_lamb_cases.h"

int main(int argc, char** argv) { return hybrid::test::mpi_test_main(argc, argv, 300); }
