// The Context operations every rank of an MPI job repeats, as ONE table (MirroredOps below).
//
// Rank 0's Context method carries an operation out and calls
// tell_ranks(mirror<&Context::seq_rm>(id, seq, p0, p1)); the other ranks' follow() loop
// (mpi_commands.cpp) reads the row's index and calls the same method with the same
// arguments on its context, so that every rank's KV cells, and so every graph, stay the
// same. Both ends are made from the row: the arguments travel as the method's own
// parameter types say (Wire below), mirror<M> does not compile for a method that is not a
// row or with arguments the method does not take, and the follower's decoding is the same
// template. Adding an operation is one row, plus the tell_ranks call in its method.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <tuple>
#include <type_traits>
#include <vector>

#include "backend/mpi/message.h"
#include "tessera/batch.h"
#include "tessera/context.h"

namespace tessera::mirrored {

/// How a parameter of type T travels: trivially copyable values as bytes, spans as
/// vectors, a Batch as its columns.
template <typename T>
struct Wire {
  using Stored = T;
  static void put(mpi::MessageWriter& w, const T& v) { w.put(v); }
  static T get(mpi::MessageReader& r) { return r.get<T>(); }
};
template <typename T>
struct Wire<std::span<const T>> {
  using Stored = std::vector<T>;
  static void put(mpi::MessageWriter& w, std::span<const T> v) { w.put_vector(std::vector<T>(v.begin(), v.end())); }
  static std::vector<T> get(mpi::MessageReader& r) { return r.get_vector<T>(); }
};
template <>
struct Wire<Batch> {
  using Stored = Batch;
  static void put(mpi::MessageWriter& w, const Batch& b);
  static Batch get(mpi::MessageReader& r);
};

/// A name as a template argument (a row's name for error messages).
template <size_t N>
struct Name {
  char text[N];
  constexpr Name(const char (&s)[N]) { std::copy_n(s, N, text); }  // NOLINT: implicit by design
};

template <typename M>
struct Signature;
template <typename R, typename... A>
struct Signature<R (Context::*)(A...)> {
  using Args = std::tuple<typename Wire<std::remove_cvref_t<A>>::Stored...>;
  template <typename... X>
  static void put(mpi::MessageWriter& w, const X&... x) {
    static_assert(sizeof...(X) == sizeof...(A), "mirror<M>: the arguments of the method, in its order");
    (Wire<std::remove_cvref_t<A>>::put(w, x), ...);
  }
  // Braced initialisation reads the arguments left to right, as put wrote them.
  static Args get(mpi::MessageReader& r) { return Args{Wire<std::remove_cvref_t<A>>::get(r)...}; }
};

/// One row: a Context method and its name.
template <auto M, Name N>
struct Op {
  static constexpr auto method = M;
  static constexpr const char* name = N.text;
  /// Repeats the operation on `c` with the arguments in `r`; the error, if any.
  static Status apply(Context& c, mpi::MessageReader& r) {
    auto args = Signature<decltype(M)>::get(r);
    using R = decltype(std::apply([&](auto&... a) { return (c.*M)(a...); }, args));
    if constexpr (std::is_void_v<R>) {
      std::apply([&](auto&... a) { (c.*M)(a...); }, args);
      return Status::ok();
    } else if constexpr (std::is_same_v<R, Status>) {
      return std::apply([&](auto&... a) { return (c.*M)(a...); }, args);
    } else {  // a Result<T>
      R result = std::apply([&](auto&... a) { return (c.*M)(a...); }, args);
      return result ? Status::ok() : result.status();
    }
  }
};

template <typename... Rows>
struct Table {
  static constexpr size_t size = sizeof...(Rows);
  static_assert(size < 256, "a row's index travels as one byte");

  /// The index of the row whose method is M, or -1.
  template <auto M>
  static constexpr int index_of() {
    int i = 0, found = -1;
    ((same<M, Rows::method>() ? found = i : 0, ++i), ...);
    return found;
  }
  static constexpr std::array<const char*, size> names{Rows::name...};
  static constexpr std::array<Status (*)(Context&, mpi::MessageReader&), size> apply{&Rows::apply...};

 private:
  template <auto A, auto B>
  static constexpr bool same() {
    if constexpr (std::is_same_v<decltype(A), decltype(B)>) {
      return A == B;
    } else {
      return false;
    }
  }
};

inline constexpr auto kDecodeBatch = static_cast<Status (Context::*)(const Batch&)>(&Context::decode);

// ---- the table: one row per mirrored operation ----------------------------------------
using MirroredOps = Table<
    Op<kDecodeBatch, "decode">,
    Op<&Context::clear, "clear">,
    Op<&Context::set_adapter_scales, "set_adapter_scales">,
    Op<&Context::seq_rm, "seq_rm">,
    Op<&Context::seq_cp, "seq_cp">,
    Op<&Context::seq_copy, "seq_copy">,
    Op<&Context::seq_keep, "seq_keep">,
    Op<&Context::seq_add, "seq_add">,
    Op<&Context::context_shift, "context_shift">>;

/// The command that makes the other ranks repeat method M on context `context_id`.
template <auto M, typename... X>
std::vector<uint8_t> mirror(int context_id, const X&... args) {
  constexpr int index = MirroredOps::index_of<M>();
  static_assert(index >= 0, "mirror<M>: M is not a row of MirroredOps (runtime/mirrored_ops.h)");
  mpi::MessageWriter w;
  w.put(mpi::Command::ContextOp);
  w.put(int32_t(context_id));
  w.put(uint8_t(index));
  Signature<decltype(M)>::put(w, args...);
  return w.bytes();
}

}  // namespace tessera::mirrored
