// pacerctl's aligned tables.
#include "pacer/control/table.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace pacer::control {
namespace {

TEST(Table, AlignsColumnsLeftOrRightWithoutTrailingSpaces) {
  Table t({"ID", "RATE", "NAME"}, {false, true, false});
  t.add({"spring-sale", "100/s", "Spring"});
  t.add({"vip", "unlimited", ""});
  EXPECT_EQ(t.render(),
            "ID                RATE  NAME\n"
            "spring-sale      100/s  Spring\n"
            "vip          unlimited\n");
}

TEST(Table, CountsUtf8CharactersNotBytes) {
  EXPECT_EQ(textWidth("été"), 3u);
  Table t({"ID", "X"});
  t.add({"été", "1"});
  t.add({"abcd", "2"});
  EXPECT_EQ(t.render(),
            "ID    X\n"
            "été   1\n"
            "abcd  2\n");
}

TEST(Table, RefusesARowWithTheWrongNumberOfCells) {
  Table t({"A", "B"});
  EXPECT_THROW(t.add({"only one"}), std::logic_error);
}

}  // namespace
}  // namespace pacer::control
