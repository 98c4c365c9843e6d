// all_to_all and the 1-bit compressed all-reduce on 4 ranks
// (compressed_all_reduce_cases.h; oversubscribed on small machines: tensors
// stay small but for the one whose bytes are measured).
#include "compressed_all_reduce_cases.h"

int main(int argc, char** argv) { return hybrid::test::mpi_test_main(argc, argv, 240); }
