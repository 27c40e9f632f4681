#include "runtime/mpi_commands.h"

#include <memory>
#include <string>
#include <unordered_map>

#include "backend/mpi/comm.h"
#include "model/load_command.h"
#include "runtime/mirrored_ops.h"
#include "tessera/mpi.h"
#include "tessera/model.h"

namespace tessera {
namespace {

mpi::MessageWriter begin(mpi::Command c, int context_id) {
  mpi::MessageWriter w;
  w.put(c);
  w.put(int32_t(context_id));
  return w;
}

/// The other ranks' models and contexts, by the ids rank 0 gave them.
struct Follower {
  std::unordered_map<int, std::unique_ptr<Model>> models;
  std::unordered_map<int, std::unique_ptr<Context>> contexts;

  Context& context(int id) {
    auto it = contexts.find(id);
    if (it == contexts.end()) mpi::abort_job("no context " + std::to_string(id) + " (the ranks are out of step)");
    return *it->second;
  }

  static void must(const Status& s, const char* what) {
    if (!s.is_ok()) mpi::abort_job(std::string(what) + ": " + s.message());
  }

  /// Carries out one command; false when the job is over.
  bool run(mpi::MessageReader& r) {
    const auto op = r.get<mpi::Command>();
    switch (op) {
      case mpi::Command::LoadModel: {
        const LoadCommand c = decode_load_command(r);
        Result<std::unique_ptr<Model>> m = c.path.empty() ? Model::load_default(c.params) : Model::load(c.path, c.params);
        must(mpi::gather_status(m ? Status::ok() : m.status()), "load");
        if (m) models[c.id] = std::move(*m);
        return true;
      }
      case mpi::Command::FreeModel:
        models.erase(r.get<int32_t>());
        return true;
      case mpi::Command::Exit:
        return false;
      default:
        break;
    }
    const int id = r.get<int32_t>();
    switch (op) {
      case mpi::Command::CreateContext: {
        const int model_id = r.get<int32_t>();
        const auto params = r.get<ContextParams>();
        auto m = models.find(model_id);
        Result<std::unique_ptr<Context>> c =
            m == models.end() ? Result<std::unique_ptr<Context>>(Status::error("no model " + std::to_string(model_id)))
                              : Context::create(*m->second, params);
        must(mpi::gather_status(c ? Status::ok() : c.status()), "context");
        if (c) contexts[id] = std::move(*c);
        break;
      }
      case mpi::Command::FreeContext:
        contexts.erase(id);
        break;
      case mpi::Command::ContextOp: {
        const size_t row = r.get<uint8_t>();
        if (row >= mirrored::MirroredOps::size) mpi::abort_job("unknown context operation " + std::to_string(row));
        must(mirrored::MirroredOps::apply[row](context(id), r), mirrored::MirroredOps::names[row]);
        break;
      }
      default:
        mpi::abort_job("unknown command " + std::to_string(int(op)));
    }
    return true;
  }
};

}  // namespace

std::vector<uint8_t> encode_create_context(int model_id, int context_id, const ContextParams& params) {
  mpi::MessageWriter w = begin(mpi::Command::CreateContext, context_id);
  w.put(int32_t(model_id));
  w.put(params);
  return w.bytes();
}

std::vector<uint8_t> encode_free_context(int context_id) { return begin(mpi::Command::FreeContext, context_id).bytes(); }

void mirrored::Wire<Batch>::put(mpi::MessageWriter& w, const Batch& batch) {
  std::vector<TokenId> tokens;
  std::vector<Pos> pos;
  std::vector<uint8_t> outputs;
  std::vector<uint32_t> n_seqs;
  std::vector<SeqId> seqs;
  for (int64_t i = 0; i < batch.size(); ++i) {
    tokens.push_back(batch.token(i));
    pos.push_back(batch.pos(i));
    outputs.push_back(uint8_t(batch.output(i)));
    n_seqs.push_back(uint32_t(batch.seqs(i).size()));
    seqs.insert(seqs.end(), batch.seqs(i).begin(), batch.seqs(i).end());
  }
  w.put_vector(tokens);
  w.put_vector(pos);
  w.put_vector(outputs);
  w.put_vector(n_seqs);
  w.put_vector(seqs);
}

Batch mirrored::Wire<Batch>::get(mpi::MessageReader& r) {
  const std::vector<TokenId> tokens = r.get_vector<TokenId>();
  const std::vector<Pos> pos = r.get_vector<Pos>();
  const std::vector<uint8_t> outputs = r.get_vector<uint8_t>();
  const std::vector<uint32_t> n_seqs = r.get_vector<uint32_t>();
  const std::vector<SeqId> seqs = r.get_vector<SeqId>();
  Batch b;
  size_t at = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    TESSERA_CHECK_MSG(at + n_seqs[i] <= seqs.size(), "mpi: a batch's sequences end early");
    b.add(tokens[i], pos[i], std::span<const SeqId>(seqs).subspan(at, n_seqs[i]), outputs[i] != 0);
    at += n_seqs[i];
  }
  return b;
}

namespace mpi {

int follow() {
  Follower f;
  for (;;) {
    Result<std::vector<uint8_t>> msg = recv_command();
    if (!msg) abort_job(msg.status().message());
    MessageReader r(*msg);
    if (!f.run(r)) break;
  }
  f.contexts.clear();
  f.models.clear();
  finalize();
  return 0;
}

void finish() {
  if (!active()) return;
  if (rank() == 0) {
    MessageWriter w;
    w.put(Command::Exit);
    (void)send_command(w.bytes());
  }
  finalize();
}

}  // namespace mpi
}  // namespace tessera
