// Errors of the HTTP layer, in OpenAI's shape: {"error": {message, type, param, code}}.
//
// Decoding a request throws an ApiError (the first problem found); the route wrapper in
// http_server.cpp catches it and writes it as the response. Anything else that escapes a
// handler becomes a 500 with the same shape, so no input reaches the client as a crash.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace tessera::server {

struct ApiError : std::runtime_error {
  ApiError(int status_, std::string message_, std::string type_, std::string param_ = {},
           std::string code_ = {})
      : std::runtime_error(message_),
        status(status_),
        type(std::move(type_)),
        param(std::move(param_)),
        code(std::move(code_)) {}

  int status;
  std::string type;
  std::string param;  // the request field at fault ("" when none)
  std::string code;   // a short machine-readable reason ("" when none)
};

/// 400: a field is missing, of the wrong type or out of range; `param` names it.
inline ApiError bad_field(const std::string& param, const std::string& message) {
  return ApiError(400, message, "invalid_request_error", param, "invalid_value");
}
/// 400 without a field (bad JSON, a prompt that does not fit).
inline ApiError bad_request(const std::string& message, const std::string& code = "invalid_request") {
  return ApiError(400, message, "invalid_request_error", {}, code);
}
inline ApiError not_found(const std::string& message, const std::string& code = "not_found") {
  return ApiError(404, message, "invalid_request_error", {}, code);
}
inline ApiError unavailable(const std::string& message, const std::string& code = "unavailable") {
  return ApiError(503, message, "unavailable_error", {}, code);
}
inline ApiError not_supported(const std::string& message) {
  return ApiError(501, message, "not_supported_error", {}, "not_supported");
}
inline ApiError internal_error(const std::string& message) {
  return ApiError(500, message, "server_error", {}, "internal_error");
}

/// The JSON body of an error; empty param and code are written as null.
inline nlohmann::json error_json(const ApiError& e) {
  nlohmann::json err = {{"message", e.what()}, {"type", e.type}, {"param", nullptr}, {"code", nullptr}};
  if (!e.param.empty()) err["param"] = e.param;
  if (!e.code.empty()) err["code"] = e.code;
  return nlohmann::json{{"error", err}};
}

/// Every JSON text this server writes: invalid UTF-8 (a token may hold part of a
/// character) becomes U+FFFD instead of throwing.
inline std::string dump_json(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tessera::server
