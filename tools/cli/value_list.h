// Lists of numbers on the command line as llama-bench takes them: values separated by
// commas or the flag given again (`-p 128,512 -p 1024`), and ranges `FIRST-LAST`
// (step 1), `FIRST-LAST+STEP` and `FIRST-LAST*FACTOR`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/status.h"

namespace tessera::cli {

/// The values of `items` (each a number or a range) in order, each within [min, max]. A
/// range yields at most 1024 values. Errors name `flag` and the item.
Result<std::vector<int64_t>> expand_value_list(const std::vector<std::string>& items, const std::string& flag,
                                               int64_t min, int64_t max);

}  // namespace tessera::cli
