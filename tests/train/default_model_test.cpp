// The default model built into tessera (models/README.md): it loads without a file, its
// perplexity on text it was not trained on (models/kjv-heldout.txt, the end of the held-out
// slice) stays under the figure models/README.md states, and the tools use it without -m
// from any directory. Skipped when the build has no default model.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "common/cli_run.h"
#include "tessera/model.h"
#include "tessera/perplexity.h"

namespace tessera::test {
namespace {

// models/README.md: the perplexity of the held-out text at -c 256 (measured, then
// rounded up by about 5%: a retrained model must be at least about as good).
constexpr double kHeldOutPplBound = 60.0;  // measured 57.55 (Q8_0)

#define TESSERA_REQUIRE_DEFAULT_MODEL()                                                   \
  if (Model::default_model_name().empty()) GTEST_SKIP() << "this build has no default model"

std::string held_out_text() {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/models/kjv-heldout.txt");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(DefaultModel, LoadsAndKeepsItsPerplexityOnHeldOutText) {
  TESSERA_REQUIRE_DEFAULT_MODEL();
  Result<std::unique_ptr<Model>> m = Model::load_default();
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  EXPECT_EQ((*m)->info().arch, "llama");
  const std::string text = held_out_text();
  ASSERT_GT(text.size(), 10000u);
  PerplexityParams p;
  p.n_ctx = 256;
  p.n_batch = 256;
  Result<PerplexityResult> r = perplexity(**m, text, p);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_LT(r->ppl, kHeldOutPplBound) << "chunks " << r->n_chunks;
}

TEST(DefaultModel, RunWithoutAModelFileWritesEnglish) {
  TESSERA_REQUIRE_DEFAULT_MODEL();
  // The model is inside the binary: the working directory does not matter.
  const CliOutput r = run_tessera("run -p 'And God said' -n 40 --temp 0 -t 2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("And God said", 0), 0u) << r.out;
  for (const char* word : {" the ", " unto ", " of "}) EXPECT_NE(r.out.find(word), std::string::npos) << r.out;
}

}  // namespace
}  // namespace tessera::test
