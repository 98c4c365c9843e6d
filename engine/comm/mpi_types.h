// MPI has no 16-bit float types: fp16 and bf16 travel as user-defined 2-byte
// contiguous datatypes, and sum/max/min on them are user-defined MPI_Ops that
// widen to fp32, combine, and round back (nearest even), element by element.
// Create and free them on the thread that makes the MPI calls.
#pragma once

#include <mpi.h>

#include "engine/comm/communicator.h"

namespace hybrid::engine::comm {

class MpiTypes {
 public:
  MpiTypes() = default;
  MpiTypes(const MpiTypes&) = delete;
  MpiTypes& operator=(const MpiTypes&) = delete;
  ~MpiTypes();  // frees what create() made, unless MPI is already finalised

  void create();  // throws std::runtime_error naming the failing MPI call
  void free();

  MPI_Datatype datatype(DType dt) const;
  MPI_Op op(DType dt, ReduceOp op) const;

 private:
  bool created_ = false;
  MPI_Datatype half_[2] = {MPI_DATATYPE_NULL, MPI_DATATYPE_NULL};  // f16, bf16
  MPI_Op ops_[2][3] = {{MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL},
                       {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL}};
};

// The user function behind MpiTypes::op for a 16-bit dtype (inout[i] = in[i] ∘
// inout[i]); exposed so it can be checked against a scalar reference directly.
MPI_User_function* half_reduce_function(DType dt, ReduceOp op);

// Throws std::runtime_error("<what>: <MPI error string>") unless rc is MPI_SUCCESS.
void check_mpi(int rc, const char* what);

}  // namespace hybrid::engine::comm
