// 0/1 Adam on 2 MPI ranks (tests/mpi/zero_one_adam_cases.h).
#include "zero_one_adam_cases.h"

int main(int argc, char** argv) { return hybrid::test::mpi_test_main(argc, argv, 300); }
