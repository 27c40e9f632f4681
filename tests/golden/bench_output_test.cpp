// `tessera bench`'s output as programs read it (issue 31, finding 4): CSV that Python's
// csv module reads (one header, one line per test, nothing else), JSON and JSONL that a
// JSON parser reads with everything the table and the roofline lines show, SQL
// statements, with --bandwidth on and off; and llama-bench's value lists (-p 8,16 -t 1,2).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "common/cli_run.h"
#include "common/test_util.h"

namespace tessera {
namespace {

using nlohmann::json;
using test::CliOutput;

/// Python's csv.DictReader over `csv_text`, the rows as a JSON list of objects (all
/// values strings, as csv gives them). Fails the test when python3 is absent or the text
/// does not read as CSV with the same number of fields on every line.
json read_with_python_csv(const std::string& csv_text) {
  const std::string path = test::write_temp_file("bench.csv", csv_text);
  const CliOutput py = test::run_shell(
      "python3 -c 'import csv, json, sys\n"
      "rows = list(csv.reader(open(sys.argv[1], newline=\"\"), strict=True))\n"
      "assert len(rows) >= 2 and all(len(r) == len(rows[0]) for r in rows), rows\n"
      "print(json.dumps([dict(zip(rows[0], r)) for r in rows[1:]]))' " +
      path);
  EXPECT_EQ(py.status, 0) << py.err << csv_text;
  return json::parse(py.out, nullptr, false);
}

TEST(BenchOutput, CsvIsReadByPythonsCsvModuleWithAndWithoutBandwidth) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  for (const bool bandwidth : {false, true}) {
    SCOPED_TRACE(bandwidth ? "--bandwidth" : "no --bandwidth");
    const CliOutput o = test::run_tessera("bench -m " + model + " -p 8 -n 4 -r 2 -t 1 -o csv" +
                                          (bandwidth ? " --bandwidth" : " --memory"));
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_EQ(o.out.find('#'), std::string::npos) << o.out;
    const json rows = read_with_python_csv(o.out);
    ASSERT_TRUE(rows.is_array()) << o.out;
    ASSERT_EQ(rows.size(), 2u) << o.out;
    EXPECT_EQ(rows[0]["test"], "pp8");
    EXPECT_EQ(rows[1]["test"], "tg4");
    EXPECT_GT(std::stod(rows[1]["tokens_per_second"].get<std::string>()), 0.0);
    EXPECT_EQ(rows[0]["roofline_ratio"], "") << "pp is not paired with probes";
    if (bandwidth) {
      EXPECT_GT(std::stod(rows[1]["roofline_ratio"].get<std::string>()), 0.0);
      EXPECT_GT(std::stod(rows[1]["bandwidth_gbs"].get<std::string>()), 0.0);
      EXPECT_TRUE(rows[1]["fits_in_cache"] == "0" || rows[1]["fits_in_cache"] == "1");
    } else {
      EXPECT_GT(std::stod(rows[0]["peak_rss_mib"].get<std::string>()), 0.0);
      EXPECT_EQ(rows[1]["roofline_ratio"], "");
    }
  }
}

TEST(BenchOutput, JsonCarriesTheRooflineAndJsonlIsOneObjectPerLine) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const CliOutput o = test::run_tessera("bench -m " + model + " -p 8 -n 4 -r 2 -t 1 -o json --bandwidth");
  ASSERT_EQ(o.status, 0) << o.err;
  const json j = json::parse(o.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << o.out;
  const json& tg = j["results"][1];
  ASSERT_EQ(tg["roofline_tokens_per_second"].size(), 2u) << o.out;
  for (size_t i = 0; i < 2; ++i) {  // what the md lines print: bandwidth / bytes per token
    EXPECT_NEAR(tg["roofline_tokens_per_second"][i].get<double>(),
                tg["bandwidth_gbs"][i].get<double>() * 1e9 / tg["decode_bytes"].get<double>(), 1e-6);
  }
  ASSERT_TRUE(tg["fits_in_cache"].is_boolean());
  if (j.contains("cache_bytes")) {
    EXPECT_EQ(tg["fits_in_cache"].get<bool>(), tg["decode_bytes"].get<double>() <= j["cache_bytes"].get<double>());
  }
  const CliOutput l = test::run_tessera("bench -m " + model + " -p 8 -n 4 -r 1 -t 1 -o jsonl --bandwidth");
  ASSERT_EQ(l.status, 0) << l.err;
  std::istringstream lines(l.out);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    const json row = json::parse(line, nullptr, false);
    ASSERT_TRUE(row.is_object()) << line;
    EXPECT_EQ(row["test"], n == 0 ? "pp8" : "tg4");
    ++n;
  }
  EXPECT_EQ(n, 2) << l.out;
}

// Without -m (and without --bandwidth), the built-in model is measured, and named.
TEST(BenchOutput, WithoutAModelTheBuiltInOneIsMeasured) {
  const CliOutput o = test::run_tessera("bench -p 4 -n 2 -r 1 -t 1 -o json");
  ASSERT_EQ(o.status, 0) << o.err;
  const json j = json::parse(o.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << o.out;
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["model"], "tessera-kjv-6m-q8_0.gguf");
}

TEST(BenchOutput, BandwidthAloneInEveryFormat) {
  const CliOutput j = test::run_tessera("bench --bandwidth -t 1 -o json");
  ASSERT_EQ(j.status, 0) << j.err;
  const json doc = json::parse(j.out, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << j.out;
  EXPECT_GT(doc["bandwidth"]["read_bandwidth_gbs"].get<double>(), 0.0);
  EXPECT_EQ(doc["bandwidth"]["threads"], 1);
  const CliOutput c = test::run_tessera("bench --bandwidth -t 1 -o csv");
  ASSERT_EQ(c.status, 0) << c.err;
  const json rows = read_with_python_csv(c.out);
  ASSERT_EQ(rows.size(), 1u) << c.out;
  EXPECT_GT(std::stod(rows[0]["read_bandwidth_gbs"].get<std::string>()), 0.0);
}

TEST(BenchOutput, SqlIsOneCreateAndAnInsertPerTest) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const CliOutput o = test::run_tessera("bench -m " + model + " -p 8 -n 4 -r 1 -t 1 -o sql");
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(o.out.rfind("CREATE TABLE IF NOT EXISTS tessera_bench (", 0), 0u) << o.out;
  size_t inserts = 0;
  for (size_t at = o.out.find("INSERT INTO"); at != std::string::npos; at = o.out.find("INSERT INTO", at + 1)) {
    ++inserts;
  }
  EXPECT_EQ(inserts, 2u) << o.out;
  EXPECT_NE(o.out.find("'pp8'"), std::string::npos) << o.out;
}

// llama-bench's lists: every combination of -p, -n, -t (and -d) is a test.
TEST(BenchOutput, ValueListsAndRangesAreEveryCombination) {
  TESSERA_REQUIRE_SHARED(model, "models/stories260K.gguf");
  const CliOutput o = test::run_tessera("bench -m " + model + " -p 8,16 -n 4 -t 1,2 -r 1 -o json");
  ASSERT_EQ(o.status, 0) << o.err;
  const json rows = json::parse(o.out)["results"];
  ASSERT_EQ(rows.size(), 6u) << o.out;
  const char* tests[] = {"pp8", "pp16", "tg4"};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(rows[i]["test"], tests[i % 3]);
    EXPECT_EQ(rows[i]["threads"], i < 3 ? 1 : 2);
  }
  const CliOutput r = test::run_tessera("bench -m " + model + " -p '4-16*2' -p 3 -n 0 -r 1 -t 1 -o json");
  ASSERT_EQ(r.status, 0) << r.err;
  const json ranged = json::parse(r.out);
  std::string names;
  for (const json& row : ranged["results"]) names += row["test"].get<std::string>() + " ";
  EXPECT_EQ(names, "pp4 pp8 pp16 pp3 ");
  for (const std::string bad : {"-p 1-a", "-t 0", "-p 9-3", "-o xml"}) {
    const CliOutput e = test::run_tessera("bench -m " + model + " -r 1 " + bad);
    EXPECT_NE(e.status, 0) << bad;
    EXPECT_NE(e.err.find(bad.substr(0, 2)), std::string::npos) << e.err;
  }
}

}  // namespace
}  // namespace tessera
