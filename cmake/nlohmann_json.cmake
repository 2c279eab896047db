# nlohmann-json (header-only) for the library and the tests: find_package natively. For cross
# builds the host package holds no CMake config for the target, so reach its headers through a
# link in the build tree: putting the host's /usr/include on the cross compiler's path would
# shadow the target's libc headers.
if(CMAKE_CROSSCOMPILING)
  set(DQ4_NLOHMANN_JSON_DIR /usr/include/nlohmann CACHE PATH "nlohmann-json headers for cross builds")
  if(NOT EXISTS ${DQ4_NLOHMANN_JSON_DIR}/json.hpp)
    message(FATAL_ERROR "nlohmann/json.hpp not found in ${DQ4_NLOHMANN_JSON_DIR} (apt-get install nlohmann-json3-dev)")
  endif()
  set(json_include ${CMAKE_BINARY_DIR}/nlohmann-json-include)
  file(MAKE_DIRECTORY ${json_include})
  file(CREATE_LINK ${DQ4_NLOHMANN_JSON_DIR} ${json_include}/nlohmann SYMBOLIC)
  add_library(nlohmann_json INTERFACE)
  target_include_directories(nlohmann_json SYSTEM INTERFACE ${json_include})
  add_library(nlohmann_json::nlohmann_json ALIAS nlohmann_json)
else()
  find_package(nlohmann_json REQUIRED)
endif()
