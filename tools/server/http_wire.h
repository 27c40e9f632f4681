// The bytes of a response on the wire (HTTP/1.1): status line, headers, body or chunks.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "server/http_message.h"

namespace tessera::server {

/// A whole response with its Content-Length (HEAD: the length, no body; 204: neither);
/// `Connection: close` unless `keep_alive`.
std::string serialize_response(const HttpResponse& res, const HttpRequest& req, bool keep_alive);
/// The head of a streamed response: chunked for HTTP/1.1, else the body runs to the close.
std::string serialize_stream_head(const HttpResponse& res, const HttpRequest& req, bool keep_alive, bool chunked);
/// One chunk of a chunked body.
std::string chunk(std::string_view data);
/// The message of a 413.
std::string body_too_large(size_t limit);

}  // namespace tessera::server
