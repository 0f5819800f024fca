#include <gtest/gtest.h>

#include "core/strings.h"

namespace yoloc {
namespace {

using Fields = std::vector<std::string>;

TEST(Strings, SplitKeepsEmptyFields) {
  EXPECT_EQ(split("a,b", ','), (Fields{"a", "b"}));
  EXPECT_EQ(split("a,,b", ','), (Fields{"a", "", "b"}));
  EXPECT_EQ(split(",a,", ','), (Fields{"", "a", ""}));
  EXPECT_EQ(split("", ','), (Fields{""}));
  EXPECT_EQ(split("a;b,c", ';'), (Fields{"a", "b,c"}));
}

}  // namespace
}  // namespace yoloc
