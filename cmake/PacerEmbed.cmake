# Build-time embedding of files into C++ headers under ${PROJECT_BINARY_DIR}/generated,
# regenerated when their source changes (scripts beside this file).

# pacer_embed_lua(OUT_VAR IN NAME NS HEADER): the Lua file IN as the string constant NAME in
# namespace NS, in generated/HEADER; OUT_VAR is set to the generated path (a source to add).
function(pacer_embed_lua out_var in name ns header)
  set(out ${PROJECT_BINARY_DIR}/generated/${header})
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DIN=${in} -DOUT=${out} -DNAME=${name} -DNS=${ns} -P ${PROJECT_SOURCE_DIR}/cmake/embed_lua.cmake
    DEPENDS ${in} ${PROJECT_SOURCE_DIR}/cmake/embed_lua.cmake
    COMMENT "Embedding ${header}")
  set(${out_var} ${out} PARENT_SCOPE)
endfunction()

# pacer_embed_migrations(OUT_VAR DIR): the schema migrations NNN_name.sql of DIR, in order.
function(pacer_embed_migrations out_var dir)
  file(GLOB sql CONFIGURE_DEPENDS ${dir}/*.sql)
  set(out ${PROJECT_BINARY_DIR}/generated/ledger/migrations.inc)
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DDIR=${dir} -DOUT=${out} -P ${PROJECT_SOURCE_DIR}/cmake/embed_migrations.cmake
    DEPENDS ${sql} ${PROJECT_SOURCE_DIR}/cmake/embed_migrations.cmake
    COMMENT "Embedding schema migrations")
  set(${out_var} ${out} PARENT_SCOPE)
endfunction()

# pacer_embed_assets(OUT_VAR DIR): the console's pages and assets in DIR.
function(pacer_embed_assets out_var dir)
  file(GLOB assets CONFIGURE_DEPENDS ${dir}/*)
  set(out ${PROJECT_BINARY_DIR}/generated/console/console_assets.h)
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DDIR=${dir} -DOUT=${out} -P ${PROJECT_SOURCE_DIR}/cmake/embed_assets.cmake
    DEPENDS ${assets} ${PROJECT_SOURCE_DIR}/cmake/embed_assets.cmake
    COMMENT "Embedding the console's pages and assets")
  set(${out_var} ${out} PARENT_SCOPE)
endfunction()
