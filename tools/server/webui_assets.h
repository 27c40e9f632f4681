// The files of the web chat page (tools/server/webui/), compiled into the binary by CMake.
#pragma once

#include <span>
#include <string_view>

namespace tessera::server {

struct WebAsset {
  std::string_view path;  // "/index.html", "/app.js", ...
  std::string_view mime;  // Content-Type
  std::string_view body;
};

/// Every file of the page, in file-name order.
std::span<const WebAsset> web_assets();

}  // namespace tessera::server
