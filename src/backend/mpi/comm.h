// The MPI layer: the processes of one `mpirun` job (ranks) and the messages between them.
// Only this file's implementation includes <mpi.h>; without TESSERA_MPI every call
// reports that this build has no MPI, so callers need no #ifdef.
//
// Messages are point to point on MPI_COMM_WORLD, one tag per kind. MPI keeps the order of
// the messages between two ranks on one tag, so both sides only need to agree on the
// sequence of messages, never on numbered ids. Calls are serialized (MPI_THREAD_SERIALIZED):
// one thread at a time, which need not be the thread that called init (the server's
// engine thread decodes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/mpi.h"
#include "tessera/status.h"

namespace tessera::mpi {

// built(), init(), rank() and size() are in tessera/mpi.h. init() also makes SIGTERM
// (what mpirun sends every rank when one of them dies) end the process with a message.

/// Whether init succeeded (and finalize has not run).
bool active();
/// Each rank's free memory (MemAvailable) in bytes when MPI started, by rank.
const std::vector<uint64_t>& free_bytes();
/// Ends MPI (after every message has been delivered).
void finalize();
/// Ends every rank of the job at once, after printing "tessera: rank N: <message>".
[[noreturn]] void abort_job(const std::string& message);

enum class Tag : int {
  Command = 1,     // rank 0 to the others: what to do next (runtime/mpi_commands.h)
  Reply = 2,       // the others to rank 0: how it went
  Activation = 3,  // a tensor crossing a split point, rank to rank
  Output = 4,      // logits and embeddings, from the rank that computes them to rank 0
};

/// Blocking send and receive of exactly `bytes` bytes.
Status send(int dst, Tag tag, const void* data, size_t bytes);
Status recv(int src, Tag tag, void* data, size_t bytes);
/// Receives the next message on `tag` from `src`, whatever its size.
Result<std::vector<uint8_t>> recv_message(int src, Tag tag);

/// Non-blocking send of a copy of the bytes (the caller may overwrite them at once).
Status isend_copy(int dst, Tag tag, const void* data, size_t bytes);
/// Non-blocking receive into `data`, which must stay valid until wait_all().
Status irecv(int src, Tag tag, void* data, size_t bytes);
/// Waits for every non-blocking send and receive started so far.
Status wait_all();

/// Rank 0: sends a command to every other rank.
Status send_command(const std::vector<uint8_t>& bytes);
/// Ranks other than 0: the next command from rank 0.
Result<std::vector<uint8_t>> recv_command();
/// After a command that may fail: each rank other than 0 sends its status, and rank 0
/// returns the first failure ("rank N: message"), or `mine` when it failed itself.
Status gather_status(const Status& mine);

/// Every rank's `value`, by rank (a collective: every rank calls it).
Result<std::vector<uint64_t>> all_gather(uint64_t value);

}  // namespace tessera::mpi
