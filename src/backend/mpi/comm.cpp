#include "backend/mpi/comm.h"

#include <cstdio>
#include <cstdlib>

#ifdef TESSERA_MPI
#include <mpi.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <csignal>
#include <cstring>
#include <deque>
#include <string>
#endif

namespace tessera::mpi {

#ifdef TESSERA_MPI
namespace {

bool g_active = false;
int g_rank = 0;
int g_size = 1;

/// Non-blocking operations not yet waited for; a send keeps its copy of the bytes.
struct Pending {
  MPI_Request request = MPI_REQUEST_NULL;
  std::vector<char> staging;
};
std::deque<Pending> g_pending;
std::vector<uint64_t> g_free_bytes;

uint64_t mem_available() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  unsigned long long kb = 0;
  while (std::fgets(line, sizeof line, f)) {
    if (std::sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
  }
  std::fclose(f);
  return uint64_t(kb) * 1024;
}

char g_term_message[160];
size_t g_term_length = 0;

extern "C" void on_term(int) {
  // Only async-signal-safe calls here.
  ssize_t ignored = write(2, g_term_message, g_term_length);
  (void)ignored;
  _exit(1);
}

Status check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return Status::ok();
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  return Status::error("mpi: rank " + std::to_string(g_rank) + ": " + what + " failed: " +
                       std::string(text, size_t(length)));
}

Status check_size(size_t bytes) {
  if (bytes > size_t(INT_MAX)) {
    return Status::error("mpi: a message of " + std::to_string(bytes) + " bytes is above MPI's int count");
  }
  return Status::ok();
}

/// Releases finished sends (their copies) from the front of the queue.
void reap() {
  while (!g_pending.empty() && !g_pending.front().staging.empty()) {
    int done = 0;
    MPI_Test(&g_pending.front().request, &done, MPI_STATUS_IGNORE);
    if (!done) break;
    g_pending.pop_front();
  }
}

}  // namespace

bool built() { return true; }

Status init(int* argc, char*** argv) {
  if (g_active) return Status::ok();
  int provided = 0;
  TESSERA_RETURN_IF_ERROR(check(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread"));
  if (provided < MPI_THREAD_SERIALIZED) {
    return Status::error("mpi: this MPI library does not allow calls from more than one thread "
                         "(MPI_THREAD_SERIALIZED), which tessera needs");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  g_active = true;
  Result<std::vector<uint64_t>> free = all_gather(mem_available());
  if (!free) return free.status();
  g_free_bytes = std::move(*free);
  const int n = std::snprintf(g_term_message, sizeof g_term_message,
                              "tessera: rank %d: stopped by mpirun (another rank of the job ended, "
                              "or the job was cancelled)\n", g_rank);
  g_term_length = n > 0 ? std::min(size_t(n), sizeof g_term_message - 1) : 0;
  std::signal(SIGTERM, on_term);
  return Status::ok();
}

bool active() { return g_active; }
const std::vector<uint64_t>& free_bytes() { return g_free_bytes; }
int rank() { return g_rank; }
int size() { return g_size; }

void finalize() {
  if (!g_active) return;
  (void)wait_all();
  MPI_Finalize();
  g_active = false;
}

void abort_job(const std::string& message) {
  std::fprintf(stderr, "tessera: rank %d: %s\n", g_rank, message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

Status send(int dst, Tag tag, const void* data, size_t bytes) {
  TESSERA_RETURN_IF_ERROR(check_size(bytes));
  return check(MPI_Send(data, int(bytes), MPI_BYTE, dst, int(tag), MPI_COMM_WORLD), "MPI_Send");
}

Status recv(int src, Tag tag, void* data, size_t bytes) {
  TESSERA_RETURN_IF_ERROR(check_size(bytes));
  MPI_Status st;
  TESSERA_RETURN_IF_ERROR(check(MPI_Recv(data, int(bytes), MPI_BYTE, src, int(tag), MPI_COMM_WORLD, &st), "MPI_Recv"));
  int count = 0;
  MPI_Get_count(&st, MPI_BYTE, &count);
  if (size_t(count) != bytes) {
    return Status::error("mpi: rank " + std::to_string(g_rank) + ": expected " + std::to_string(bytes) +
                         " bytes from rank " + std::to_string(src) + ", got " + std::to_string(count) +
                         " (the ranks disagree on the graph: same model and flags on every rank?)");
  }
  return Status::ok();
}

Result<std::vector<uint8_t>> recv_message(int src, Tag tag) {
  MPI_Status st;
  TESSERA_RETURN_IF_ERROR(check(MPI_Probe(src, int(tag), MPI_COMM_WORLD, &st), "MPI_Probe"));
  int count = 0;
  MPI_Get_count(&st, MPI_BYTE, &count);
  std::vector<uint8_t> bytes(static_cast<size_t>(count));
  TESSERA_RETURN_IF_ERROR(check(MPI_Recv(bytes.data(), count, MPI_BYTE, src, int(tag), MPI_COMM_WORLD,
                                         MPI_STATUS_IGNORE), "MPI_Recv"));
  return bytes;
}

Status isend_copy(int dst, Tag tag, const void* data, size_t bytes) {
  TESSERA_RETURN_IF_ERROR(check_size(bytes));
  reap();
  Pending& p = g_pending.emplace_back();
  p.staging.assign(static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
  if (p.staging.empty()) p.staging.push_back(0);  // non-empty marks a send
  return check(MPI_Isend(p.staging.data(), int(bytes), MPI_BYTE, dst, int(tag), MPI_COMM_WORLD, &p.request),
               "MPI_Isend");
}

Status irecv(int src, Tag tag, void* data, size_t bytes) {
  TESSERA_RETURN_IF_ERROR(check_size(bytes));
  Pending& p = g_pending.emplace_back();
  return check(MPI_Irecv(data, int(bytes), MPI_BYTE, src, int(tag), MPI_COMM_WORLD, &p.request), "MPI_Irecv");
}

Status wait_all() {
  Status status;
  for (Pending& p : g_pending) {
    Status s = check(MPI_Wait(&p.request, MPI_STATUS_IGNORE), "MPI_Wait");
    if (status.is_ok() && !s.is_ok()) status = s;
  }
  g_pending.clear();
  return status;
}

Result<std::vector<uint64_t>> all_gather(uint64_t value) {
  std::vector<uint64_t> all(static_cast<size_t>(g_size));
  TESSERA_RETURN_IF_ERROR(check(MPI_Allgather(&value, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD),
                                "MPI_Allgather"));
  return all;
}

#else  // without MPI

namespace {
Status no_mpi() {
  return Status::error("this build of tessera has no MPI: configure with -DTESSERA_MPI=ON "
                       "(Debian: apt install libopenmpi-dev openmpi-bin)");
}
}  // namespace

bool built() { return false; }
Status init(int*, char***) { return no_mpi(); }
bool active() { return false; }
const std::vector<uint64_t>& free_bytes() {
  static const std::vector<uint64_t> none;
  return none;
}
int rank() { return 0; }
int size() { return 1; }
void finalize() {}
void abort_job(const std::string& message) {
  std::fprintf(stderr, "tessera: %s\n", message.c_str());
  std::_Exit(1);
}
Status send(int, Tag, const void*, size_t) { return no_mpi(); }
Status recv(int, Tag, void*, size_t) { return no_mpi(); }
Result<std::vector<uint8_t>> recv_message(int, Tag) { return no_mpi(); }
Status isend_copy(int, Tag, const void*, size_t) { return no_mpi(); }
Status irecv(int, Tag, void*, size_t) { return no_mpi(); }
Status wait_all() { return Status::ok(); }
Result<std::vector<uint64_t>> all_gather(uint64_t) { return no_mpi(); }

#endif

Status send_command(const std::vector<uint8_t>& bytes) {
  for (int r = 1; r < size(); ++r) TESSERA_RETURN_IF_ERROR(send(r, Tag::Command, bytes.data(), bytes.size()));
  return Status::ok();
}

Result<std::vector<uint8_t>> recv_command() { return recv_message(0, Tag::Command); }

Status gather_status(const Status& mine) {
  if (rank() != 0) {
    const std::string text = mine.is_ok() ? std::string() : mine.message().empty() ? "failed" : mine.message();
    return send(0, Tag::Reply, text.data(), text.size());
  }
  Status first = mine;
  for (int r = 1; r < size(); ++r) {
    Result<std::vector<uint8_t>> reply = recv_message(r, Tag::Reply);
    if (!reply) return reply.status();
    if (!reply->empty() && first.is_ok()) {
      first = Status::error("rank " + std::to_string(r) + ": " + std::string(reply->begin(), reply->end()));
    }
  }
  return first;
}

}  // namespace tessera::mpi
