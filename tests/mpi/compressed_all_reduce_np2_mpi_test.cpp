// all_to_all and the 1-bit compressed all-reduce on 2 ranks
// (compressed_all_reduce_cases.h).
#include "compressed_all_reduce_cases.h"

int main(int argc, char** argv) { return hybrid::test::mpi_test_main(argc, argv, 240); }
