# Turns a Lua file into a C++ header: a string constant NAME in namespace NS.
# cmake -DIN=file.lua -DOUT=file.h -DNAME=kFoo -DNS=pacer::foo -P embed_lua.cmake
file(READ ${IN} body)
string(FIND "${body}" ")lua\"" bad)
if(NOT bad EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string terminator )lua\"")
endif()
file(WRITE ${OUT}.tmp "// Generated from ${IN} by embed_lua.cmake; do not edit.\n#pragma once\n\nnamespace ${NS} {\ninline constexpr const char* ${NAME} = R\"lua(${body})lua\";\n}  // namespace ${NS}\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
