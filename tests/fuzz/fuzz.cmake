# The libFuzzer harnesses (TESSERA_FUZZ=ON, clang): tessera_fuzz_<target> for each
# tests/fuzz/fuzz_<target>.cpp, the seed generator tessera_fuzz_seeds, and the target
# `fuzz` that builds them all. scripts/fuzz.sh builds and runs them; docs/robustness.md.
set(TESSERA_FUZZ_SUPPORT ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_support.cpp)
file(GLOB TESSERA_FUZZ_HARNESSES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_*.cpp)
list(REMOVE_ITEM TESSERA_FUZZ_HARNESSES ${TESSERA_FUZZ_SUPPORT})
# The server harness decodes requests with the server's own code (tools/server).
file(GLOB TESSERA_FUZZ_SERVER_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tools/server/*.cpp)
add_custom_target(fuzz)

function(tessera_fuzz_executable name)
  add_executable(${name} ${ARGN} ${TESSERA_FUZZ_SUPPORT})
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/tests
                                             ${CMAKE_SOURCE_DIR}/tools)
  target_link_libraries(${name} PRIVATE tessera nlohmann_json::nlohmann_json Boost::headers)
  target_compile_definitions(${name} PRIVATE TESSERA_SHARED_DEFAULT="${CMAKE_SOURCE_DIR}/../shared")
  tessera_target_options(${name})
  add_dependencies(fuzz ${name})
endfunction()

foreach(harness IN LISTS TESSERA_FUZZ_HARNESSES)
  get_filename_component(stem ${harness} NAME_WE)
  string(REGEX REPLACE "^fuzz_" "" target ${stem})
  set(extra "")
  if(target STREQUAL "server")
    set(extra ${TESSERA_FUZZ_SERVER_SOURCES} ${TESSERA_WEBUI_CPP})
  endif()
  tessera_fuzz_executable(tessera_fuzz_${target} ${harness} ${extra})
  target_link_options(tessera_fuzz_${target} PRIVATE -fsanitize=fuzzer)
endforeach()

tessera_fuzz_executable(tessera_fuzz_seeds ${CMAKE_SOURCE_DIR}/tests/fuzz/make_seeds.cpp)
