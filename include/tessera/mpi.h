// Running one model across the processes (ranks) of an MPI job: `mpirun -n R tessera
// run|perplexity|bench|serve --mpi -m MODEL ...`. Every rank starts the same command;
// rank 0 runs it (tokenizes, samples, prints, serves HTTP) and the others follow its
// commands: each loads only its own layers (ModelParams::mpi), and every context
// operation on rank 0 (decode, the sequence operations) is carried out on every rank,
// the activations passing from rank to rank at the split points. See README ("Across
// machines") and docs/architecture.md.
#pragma once

#include "tessera/status.h"

namespace tessera::mpi {

/// Whether this build has MPI (TESSERA_MPI=ON).
bool built();
/// Starts MPI; every rank calls it first. Fails without MPI, or when MPI cannot start.
Status init(int* argc, char*** argv);
/// This process's rank and the number of ranks (0 and 1 when MPI is not running).
int rank();
int size();
/// Ranks other than 0: carries out rank 0's commands until it ends the job; returns the
/// process's exit status (a command that fails ends the whole job with its message).
int follow();
/// Rank 0, when done: tells the other ranks that the job is over, and stops MPI.
void finish();

}  // namespace tessera::mpi
