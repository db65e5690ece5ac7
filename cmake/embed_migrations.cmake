# Writes OUT: a C++ array of the SQL migrations in DIR (NNN_name.sql, in order).
file(GLOB files "${DIR}/*.sql")
list(SORT files)
set(body "// Generated from config/migrations by embed_migrations.cmake. Do not edit.\n#pragma once\n#include <string_view>\nnamespace pacer::ledger {\nstruct Migration {\n  int version;\n  std::string_view name;\n  const char* sql;\n};\ninline constexpr Migration kMigrations[] = {\n")
# Versions strictly increase; a gap is allowed (migrations written on
# branches merge in either order), since migrate() applies every version the
# database has not recorded, not only those above its highest.
set(last 0)
foreach(f IN LISTS files)
  get_filename_component(name "${f}" NAME_WE)
  string(REGEX MATCH "^([0-9]+)_" _ "${name}")
  math(EXPR version "${CMAKE_MATCH_1}")
  if(NOT version GREATER last)
    message(FATAL_ERROR "migration ${name}: version ${version} is not above ${last}; each version once, increasing")
  endif()
  set(last ${version})
  file(READ "${f}" sql)
  string(APPEND body "    {${version}, \"${name}\", R\"pacer_sql(${sql})pacer_sql\"},\n")
endforeach()
string(APPEND body "};\n}  // namespace pacer::ledger\n")
file(WRITE "${OUT}.tmp" "${body}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
