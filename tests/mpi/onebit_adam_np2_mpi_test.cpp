// 1-bit Adam on 2 MPI ranks (tests/mpi/onebit_adam_cases.h).
#include "onebit_adam_cases.h"

int main(int argc, char** argv) { return hybrid::test::mpi_test_main(argc, argv, 300); }
