// The layers of cmake/layers.txt, checked on the sources: every file under src/ and
// include/tessera/ has one owning layer, and every #include "..." line of src/, include/
// and tools/ names a file of its own layer or of one below it (tools: the public headers
// and tools/ only). The build enforces the same table with per-layer include roots
// (cmake/layers.cmake); this test names the file, line and layer of any breach, and also
// catches what a root cannot: an include by a relative path, or of the same folder.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

const fs::path kRoot = TESSERA_SOURCE_DIR;

struct Layer {
  std::string name;
  std::vector<std::string> links;
  std::vector<std::string> owns;  // paths under src/, or tessera/NAME.h
};

std::vector<Layer> read_table() {
  std::ifstream in(kRoot / "cmake/layers.txt");
  std::vector<Layer> out;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line[0] == ' ') continue;
    std::istringstream words(line);
    Layer l;
    std::string links;
    words >> l.name >> links;
    std::istringstream parts(links);
    for (std::string p; std::getline(parts, p, ',');) {
      if (p != "-") l.links.push_back(p);
    }
    for (std::string o; words >> o;) l.owns.push_back(o);
    out.push_back(l);
  }
  return out;
}

class Layers {
 public:
  explicit Layers(std::vector<Layer> table) : table_(std::move(table)) {
    for (const Layer& l : table_) {
      for (const std::string& o : l.owns) owner_[o] = l.name;
    }
  }

  /// The layer owning `rel` (a path under src/, or tessera/NAME.h), or "".
  std::string owner(const std::string& rel) const {
    std::string best, best_path;
    for (const auto& [path, layer] : owner_) {
      const bool covers = rel == path || (rel.size() > path.size() && rel.starts_with(path) && rel[path.size()] == '/');
      if (covers && path.size() > best_path.size()) best = layer, best_path = path;
    }
    return best;
  }

  /// `name` and every layer below it.
  std::set<std::string> visible(const std::string& name) const {
    std::set<std::string> out;
    std::vector<std::string> pending{name};
    while (!pending.empty()) {
      const std::string l = pending.back();
      pending.pop_back();
      if (!out.insert(l).second) continue;
      for (const Layer& t : table_) {
        if (t.name == l) pending.insert(pending.end(), t.links.begin(), t.links.end());
      }
    }
    return out;
  }

  const std::vector<Layer>& table() const { return table_; }

 private:
  std::vector<Layer> table_;
  std::map<std::string, std::string> owner_;
};

/// What an #include "inc" in `file` (a path under the repository) reaches, as a path under
/// src/ or tessera/NAME.h; "tools" for a file of tools/; "" when it names no project file.
std::string resolve(const fs::path& file, const std::string& inc) {
  if (inc.starts_with("tessera/")) return fs::exists(kRoot / "include" / inc) ? inc : "";
  const fs::path here = (kRoot / file).parent_path() / inc;
  if (fs::exists(here)) {  // relative to the including file
    const std::string rel = fs::relative(fs::weakly_canonical(here), kRoot).generic_string();
    if (rel.starts_with("src/")) return rel.substr(4);
    if (rel.starts_with("include/")) return rel.substr(8);
    return rel.starts_with("tools/") ? "tools" : "";
  }
  if (fs::exists(kRoot / "src" / inc)) return inc;
  if (fs::exists(kRoot / "tools" / inc)) return "tools";
  return "";
}

/// The breach of an include line, or "" when the line is allowed.
std::string check_include(const Layers& layers, const fs::path& file, const std::string& inc) {
  const std::string rel = file.generic_string();
  const std::string target = resolve(file, inc);
  if (rel.starts_with("tools/")) {
    if (target.empty() || target == "tools" || target.starts_with("tessera/")) return "";
    return "tools include only the public headers and tools/: '" + inc + "' is src/" + target;
  }
  if (target.empty()) return "";  // a system or generated header
  const std::string from = layers.owner(rel.starts_with("src/") ? rel.substr(4) : rel.substr(8));
  if (target == "tools") return "layer " + from + " includes tools/ ('" + inc + "')";
  const std::string to = layers.owner(target);
  if (to.empty()) return "'" + inc + "' has no layer in cmake/layers.txt";
  if (!layers.visible(from).contains(to)) {
    return "layer " + from + " includes '" + inc + "' of layer " + to + ", which is not below it";
  }
  return "";
}

std::vector<fs::path> project_files(const std::string& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(kRoot / dir)) {
    const std::string ext = e.path().extension().string();
    const std::string rel = fs::relative(e.path(), kRoot).generic_string();
    if (rel.find("node_modules") != std::string::npos) continue;
    if (ext == ".cpp" || ext == ".h" || ext == ".cu" || ext == ".cuh") out.push_back(fs::relative(e.path(), kRoot));
  }
  return out;
}

TEST(Layers, EachLinksOnlyLayersAboveItInTheTable) {
  const std::vector<Layer> table = read_table();
  ASSERT_GE(table.size(), 10u);
  std::set<std::string> seen;
  for (const Layer& l : table) {
    for (const std::string& link : l.links) EXPECT_TRUE(seen.contains(link)) << l.name << " links " << link;
    seen.insert(l.name);
  }
}

TEST(Layers, EveryFileHasOneOwner) {
  const Layers layers(read_table());
  for (const fs::path& f : project_files("src")) {
    EXPECT_NE(layers.owner(f.generic_string().substr(4)), "") << f << " is in no layer of cmake/layers.txt";
  }
  for (const fs::path& f : project_files("include")) {
    EXPECT_NE(layers.owner(f.generic_string().substr(8)), "") << f << " is in no layer of cmake/layers.txt";
  }
}

TEST(Layers, EveryIncludeNamesItsOwnLayerOrOneBelow) {
  const Layers layers(read_table());
  int lines = 0;
  for (const char* dir : {"src", "include", "tools"}) {
    for (const fs::path& f : project_files(dir)) {
      std::ifstream in(kRoot / f);
      int n = 0;
      for (std::string line; std::getline(in, line);) {
        ++n;
        const size_t at = line.find("#include \"");
        if (at == std::string::npos || line.find_first_not_of(" \t") != at) continue;
        const size_t end = line.find('"', at + 10);
        ++lines;
        const std::string breach = check_include(layers, f, line.substr(at + 10, end - at - 10));
        EXPECT_EQ(breach, "") << f.generic_string() << ":" << n;
      }
    }
  }
  EXPECT_GT(lines, 500);
}

// The check itself: an upward include, a tool reaching into src/, and a relative path
// around the include roots are each named.
TEST(Layers, TheCheckNamesUpwardIncludes) {
  const Layers layers(read_table());
  EXPECT_EQ(check_include(layers, "src/model/blocks.cpp", "runtime/kv_cache.h"),
            "layer model includes 'runtime/kv_cache.h' of layer runtime, which is not below it");
  EXPECT_EQ(check_include(layers, "src/core/graph.cpp", "../backend/backend.h"),
            "layer core includes '../backend/backend.h' of layer backend, which is not below it");
  EXPECT_EQ(check_include(layers, "src/backend/cpu/cpu_backend.cpp", "backend/registry.h"),
            "layer backend_cpu includes 'backend/registry.h' of layer backends, which is not below it");
  EXPECT_EQ(check_include(layers, "include/tessera/model.h", "tessera/context.h"),
            "layer model includes 'tessera/context.h' of layer runtime, which is not below it");
  EXPECT_EQ(check_include(layers, "tools/cli/cmd_run.cpp", "runtime/context_impl.h"),
            "tools include only the public headers and tools/: 'runtime/context_impl.h' is src/runtime/context_impl.h");
  EXPECT_EQ(check_include(layers, "src/runtime/context.cpp", "model/model_impl.h"), "");
  EXPECT_EQ(check_include(layers, "tools/cli/cmd_serve.cpp", "server/server_options.h"), "");
}

}  // namespace
