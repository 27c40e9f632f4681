# The server's end-to-end tests, each a script that starts its own `tessera serve` on a
# free loopback port and stops it. Exit code 77 = skipped (a tool could not be installed).
# The reference data: $TESSERA_SHARED as ctest runs them, else ../shared beside the
# checkout (each script's own default), as for the C++ tests.
set(TESSERA_SERVER_TEST_ENV "TESSERA_TEST_OUT=${CMAKE_BINARY_DIR}/test-out")
if(EXISTS ${CMAKE_SOURCE_DIR}/scripts/server_curl_test.sh)
  add_test(NAME server_curl COMMAND bash ${CMAKE_SOURCE_DIR}/scripts/server_curl_test.sh
                                    $<TARGET_FILE:tessera_cli>)
  set_tests_properties(server_curl PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                                              ENVIRONMENT "${TESSERA_SERVER_TEST_ENV}")
endif()
if(EXISTS ${CMAKE_SOURCE_DIR}/tests/server/run_node_tests.sh)
  add_test(NAME server_node COMMAND bash ${CMAKE_SOURCE_DIR}/tests/server/run_node_tests.sh
                                    $<TARGET_FILE:tessera_cli>)
  set_tests_properties(server_node PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
                                              ENVIRONMENT "${TESSERA_SERVER_TEST_ENV}")
endif()
# Real tokenizer.json files (npm, from tests/npm's lock) converted and tokenized against
# transformers.js's ids.
if(EXISTS ${CMAKE_SOURCE_DIR}/tests/npm/run.sh)
  add_test(NAME tokenizers_npm COMMAND bash ${CMAKE_SOURCE_DIR}/tests/npm/run.sh $<TARGET_FILE:tessera_cli>)
  set_tests_properties(tokenizers_npm PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900
                                                 ENVIRONMENT "${TESSERA_SERVER_TEST_ENV}")
endif()
