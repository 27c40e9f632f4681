#include "cli/bench_report.h"

#include <cstdio>
#include <string>
#include <vector>

namespace tessera::cli {
namespace {

using nlohmann::json;

/// The columns of csv and sql, in order, with their SQL types.
struct Column {
  const char* name;
  const char* sql_type;
};
constexpr Column kColumns[] = {
    {"model", "TEXT"},           {"size_bytes", "INTEGER"},          {"params", "INTEGER"},
    {"threads", "INTEGER"},      {"type_k", "TEXT"},                 {"type_v", "TEXT"},
    {"n_prompt", "INTEGER"},            {"n_gen", "INTEGER"},
    {"n_depth", "INTEGER"},      {"test", "TEXT"},                   {"reps", "INTEGER"},
    {"tokens_per_second", "REAL"}, {"stddev", "REAL"},               {"samples_ts", "TEXT"},
    {"decode_bytes", "REAL"},    {"bandwidth_gbs", "REAL"},          {"roofline_tokens_per_second", "REAL"},
    {"roofline_ratio", "REAL"},  {"roofline_ratio_stddev", "REAL"},  {"fits_in_cache", "INTEGER"},
    {"peak_rss_mib", "REAL"},    {"kv_cache_bytes", "INTEGER"},
};

double mean_of(const json& values) {
  double sum = 0;
  for (const json& v : values) sum += v.get<double>();
  return values.empty() ? 0.0 : sum / double(values.size());
}

/// A row's value of a column as flat JSON (null when the test has none): the per-repetition
/// lists become their mean, the samples one space-separated string.
json flat_value(const json& row, const BenchReport& report, const std::string& column) {
  if (column == "samples_ts") {
    std::string s;
    for (const json& v : row["samples"]) {
      if (!s.empty()) s += ' ';
      s += json(v.get<double>()).dump();
    }
    return s;
  }
  if (column == "peak_rss_mib") return report.peak_rss_mib ? json(*report.peak_rss_mib) : json();
  if (!row.contains(column)) return json();
  const json& v = row[column];
  if (v.is_array()) return mean_of(v);
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  return v;
}

/// RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled.
std::string csv_field(const json& v) {
  if (v.is_null()) return "";
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string sql_value(const json& v) {
  if (v.is_null()) return "NULL";
  if (!v.is_string()) return v.dump();
  std::string out = "'";
  for (char c : v.get<std::string>()) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

/// 1.23 GiB / 45.6 MiB for sizes; 1.10 B / 15.0 M for counts.
std::string human(double v, bool bytes) {
  char buf[32];
  if (bytes) {
    const bool gib = v >= double(1 << 30);
    std::snprintf(buf, sizeof buf, "%.2f %s", v / (gib ? double(1 << 30) : double(1 << 20)), gib ? "GiB" : "MiB");
  } else {
    const bool billions = v >= 1e9;
    std::snprintf(buf, sizeof buf, "%.2f %s", v / (billions ? 1e9 : 1e6), billions ? "B" : "M");
  }
  return buf;
}

/// The roofline lines under the md table for a tg test measured with paired probes.
void print_roofline(const json& r, const BenchReport& report) {
  const double bytes = r["decode_bytes"].get<double>();
  std::printf("\nroofline %s, -t %d (%.1f MB read per token: weights and KV cache; probe before and after "
              "each repetition):\n",
              r["test"].get<std::string>().c_str(), r["threads"].get<int>(), bytes / 1e6);
  const json& tps = r["samples"];
  for (size_t i = 0; i < tps.size(); ++i) {
    const double roof = r["roofline_tokens_per_second"][i].get<double>();
    std::printf("  %.1f GB/s -> roofline %.1f t/s; measured %.2f t/s = %.0f%%\n",
                r["bandwidth_gbs"][i].get<double>(), roof, tps[i].get<double>(), 100.0 * tps[i].get<double>() / roof);
  }
  std::printf("  mean %.0f%% ± %.0f%% of the roofline\n", 100.0 * r["roofline_ratio"].get<double>(),
              100.0 * r["roofline_ratio_stddev"].get<double>());
  if (r["fits_in_cache"].get<bool>()) {
    std::printf("  note: the %.1f MB read per token fit in the CPU's %.1f MB last-level cache, so tokens are read "
                "from cache, not memory: the memory roofline does not bound them, and more than 100%% is expected\n",
                bytes / 1e6, double(report.cache_bytes) / 1e6);
  }
}

void print_md(const BenchReport& report) {
  // The cache types get columns when a test has other than the default (f16), as in
  // llama-bench's table; the cache bytes with --memory.
  bool types = false, kv_bytes = false;
  for (const json& r : report.rows) {
    types = types || r.value("type_k", "f16") != "f16" || r.value("type_v", "f16") != "f16";
    kv_bytes = kv_bytes || r.contains("kv_cache_bytes");
  }
  std::printf("| model | size | params | threads |%s%s test | t/s |\n|---|---:|---:|---:|%s%s---:|---:|\n",
              types ? " type_k | type_v |" : "", kv_bytes ? " kv cache |" : "", types ? "---|---|" : "",
              kv_bytes ? "---:|" : "");
  for (const json& r : report.rows) {
    std::string extra;  // appended piece by piece: GCC 12 warns (-Wrestrict) on "x" + std::string temporaries
    if (types) {
      extra.append(" ").append(r.value("type_k", std::string("f16")));
      extra.append(" | ").append(r.value("type_v", std::string("f16"))).append(" |");
    }
    if (kv_bytes) extra.append(" ").append(human(r.value("kv_cache_bytes", 0.0), true)).append(" |");
    std::printf("| %s | %s | %s | %d |%s %s | %.2f ± %.2f |\n", r["model"].get<std::string>().c_str(),
                human(r["size_bytes"].get<double>(), true).c_str(), human(r["params"].get<double>(), false).c_str(),
                r["threads"].get<int>(), extra.c_str(), r["test"].get<std::string>().c_str(),
                r["tokens_per_second"].get<double>(), r["stddev"].get<double>());
  }
  if (report.peak_rss_mib) std::printf("\npeak RSS: %.1f MiB\n", *report.peak_rss_mib);
  for (const json& r : report.rows) {
    if (r.contains("roofline_ratio")) print_roofline(r, report);
  }
}

void print_csv(const BenchReport& report) {
  std::string line;
  for (const Column& c : kColumns) {
    if (!line.empty()) line += ',';
    line += c.name;
  }
  std::printf("%s\n", line.c_str());
  for (const json& r : report.rows) {
    line.clear();
    for (const Column& c : kColumns) {
      if (&c != &kColumns[0]) line += ',';
      line += csv_field(flat_value(r, report, c.name));
    }
    std::printf("%s\n", line.c_str());
  }
}

void print_sql(const BenchReport& report) {
  std::string names, schema;
  for (const Column& c : kColumns) {
    names += names.empty() ? "" : ", ";
    names += c.name;
    schema += schema.empty() ? "  " : ",\n  ";
    schema += c.name;
    schema += ' ';
    schema += c.sql_type;
  }
  std::printf("CREATE TABLE IF NOT EXISTS tessera_bench (\n%s\n);\n\n", schema.c_str());
  for (const json& r : report.rows) {
    std::string values;
    for (const Column& c : kColumns) {
      values += values.empty() ? "" : ", ";
      values += sql_value(flat_value(r, report, c.name));
    }
    std::printf("INSERT INTO tessera_bench (%s) VALUES (%s);\n", names.c_str(), values.c_str());
  }
}

json full_row(const json& r, const BenchReport& report) {
  json out = r;
  if (report.peak_rss_mib) out["peak_rss_mib"] = *report.peak_rss_mib;
  return out;
}

}  // namespace

bool is_report_format(const std::string& f) {
  return f == "md" || f == "csv" || f == "json" || f == "jsonl" || f == "sql";
}

void print_report(const std::string& format, const BenchReport& report) {
  if (format == "md") return print_md(report);
  if (format == "csv") return print_csv(report);
  if (format == "sql") return print_sql(report);
  if (format == "jsonl") {
    for (const json& r : report.rows) std::printf("%s\n", full_row(r, report).dump().c_str());
    return;
  }
  json out = {{"results", report.rows}};
  if (report.peak_rss_mib) out["peak_rss_mib"] = *report.peak_rss_mib;
  if (report.cache_bytes > 0) out["cache_bytes"] = report.cache_bytes;
  std::printf("%s\n", out.dump(2).c_str());
}

void print_bandwidth(const std::string& format, int threads, double bytes_per_second) {
  const double gbs = bytes_per_second / 1e9;
  const json row = {{"threads", threads}, {"read_bandwidth_gbs", gbs}};
  if (format == "json") {
    std::printf("%s\n", json{{"bandwidth", row}}.dump(2).c_str());
  } else if (format == "jsonl") {
    std::printf("%s\n", row.dump().c_str());
  } else if (format == "csv") {
    std::printf("threads,read_bandwidth_gbs\n%d,%s\n", threads, json(gbs).dump().c_str());
  } else if (format == "sql") {
    std::printf("CREATE TABLE IF NOT EXISTS tessera_bandwidth (\n  threads INTEGER,\n  read_bandwidth_gbs REAL\n);\n\n"
                "INSERT INTO tessera_bandwidth (threads, read_bandwidth_gbs) VALUES (%d, %s);\n",
                threads, json(gbs).dump().c_str());
  } else {
    std::printf("memory read bandwidth, %d threads: %.1f GB/s\n", threads, gbs);
  }
}

}  // namespace tessera::cli
