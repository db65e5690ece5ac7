// libpq connection strings as pacerd and pacerctl take them (keyword=value
// pairs, or a postgresql:// URL): shown without the password, and given a
// connect timeout. Pure string functions.
#pragma once

#include <string>
#include <string_view>

namespace pacer {

// `conninfo` with any password (keyword, URL user info, URL query) replaced
// by ***. Something it cannot parse is hidden whole.
std::string redactConninfo(std::string_view conninfo);
// `text` (a library's error message) with every password in `conninfo`
// replaced by ***: libpq quotes pieces of a string it cannot use. Hidden
// whole when `conninfo` cannot be parsed.
std::string hidePasswords(std::string text, std::string_view conninfo);
// Whether redactConninfo can parse `conninfo`: libpq's keyword syntax or a
// postgresql:// (postgres://) URL. libpq refuses what this refuses.
bool conninfoParses(std::string_view conninfo);
// `conninfo` with connect_timeout=`seconds` added in its own syntax, unless it has one.
std::string withConnectTimeout(const std::string& conninfo, int seconds);

}  // namespace pacer
