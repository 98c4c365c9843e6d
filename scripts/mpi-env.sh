# Open MPI settings for running as root inside a container, on one host:
#   source scripts/mpi-env.sh && mpirun -np 4 build/tests/comm_np4_mpi_test
# (tests get the same through CTest's ENVIRONMENT; see tests/CMakeLists.txt).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# More ranks than cores (4 ranks on a 2-core machine).
export OMPI_MCA_rmaps_base_oversubscribe=1
# Shared-memory transport only; the container has no CMA/ptrace rights for single copy.
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_hwloc_base_binding_policy=none
