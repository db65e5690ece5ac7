# Every package the build needs, found once for the whole tree: CMake config
# packages as imported targets, and what has no config file (librdkafka,
# libpqxx, hiredis, libmicrohttpd) through pkg-config, GLOBAL so that every
# folder's target can link it. Why each is there: README "Dependencies".
find_package(fmt CONFIG REQUIRED)
find_package(spdlog CONFIG REQUIRED)
find_package(yaml-cpp CONFIG REQUIRED)
find_package(nlohmann_json CONFIG REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(CURL REQUIRED)
find_package(prometheus-cpp CONFIG REQUIRED)
find_package(date CONFIG REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(RDKAFKA REQUIRED IMPORTED_TARGET GLOBAL rdkafka)
pkg_check_modules(RDKAFKAXX REQUIRED IMPORTED_TARGET GLOBAL rdkafka++)
pkg_check_modules(PQXX REQUIRED IMPORTED_TARGET GLOBAL libpqxx)
pkg_check_modules(HIREDIS REQUIRED IMPORTED_TARGET GLOBAL hiredis)
pkg_check_modules(MHD REQUIRED IMPORTED_TARGET GLOBAL libmicrohttpd)
# The fake push providers (src/fakes/push): nghttp2's server sessions and OpenSSL's TLS and signatures.
find_package(OpenSSL 3 REQUIRED)
pkg_check_modules(NGHTTP2 REQUIRED IMPORTED_TARGET GLOBAL libnghttp2)
